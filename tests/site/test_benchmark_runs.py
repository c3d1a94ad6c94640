"""POST /api/v1/benchmark-runs: a benchmark run uploaded by `profiler_agent bench --upload` (its own
upload function, over real HTTP to the live server), with a signed-in user's personal token."""
import math

import pytest

from profiler_agent.benchmark import run as bench_run  # no torch: the upload is urllib alone
from submissions.models import BenchmarkRun, DatasetExport
from submissions.services import accounts

CHECKSUM = "ab" * 32


def _row(code, weight, status, speedup, relative):
    return {"id": code, "title": f"sample {code}", "weight": weight, "status": status, "reason": None,
            "flags": [], "reference_ms": 2.0, "candidate_ms": 2.0 / speedup if speedup else None,
            "speedup": speedup, "baseline_ms": 1.0 if relative else None, "relative_time": relative,
            "not_scored": None if status == "passed" else f"not passed: {status}", "device_name": "NVIDIA H100",
            "judged_at": "2026-11-24T00:00:00Z", "result": {"logs": {"stderr": "x" * 1000}}}


def bench_result(**changes):
    rows = [_row("AAAAAA", 2.0, "passed", 4.0, 0.5), _row("BBBBBB", 1.0, "passed", 1.0, None),
            _row("CCCCCC", 3.0, "wrong_answer", None, None)]
    result = {"schema": 1, "complete": True,
              "dataset": {"name": "gpucodeforces-S1", "season": "S1", "as_of": "2026-11-01T00:00:00Z",
                          "checksum": CHECKSUM, "sample_count": 3},
              "device": {"kind": "cuda", "name": "NVIDIA H100"}, "harness_version": "1.0", "agent_version": "0.1.0",
              "state_file": "/home/someone/.cache/x.jsonl", "scores": {"baseline": "h100", "speedup": 2.52},
              "samples": rows}
    result.update(changes)
    return result


@pytest.mark.django_db(transaction=True)
def test_a_signed_in_users_token_uploads_a_benchmark_run(live_server, season, alice):
    export = DatasetExport.objects.create(season=season, number=1, sample_count=3, manifest_sha256=CHECKSUM,
                                          archive_sha256="0" * 64, archive_bytes=1, folder="S1/v1")
    _, token = accounts.create_api_token(alice)

    status, answer = bench_run.upload(bench_result(), live_server.url, "not-a-token")
    assert status == 401 and not BenchmarkRun.objects.exists()

    status, answer = bench_run.upload(bench_result(), live_server.url, token)
    assert status == 201, answer
    saved = BenchmarkRun.objects.get(pk=answer["id"])
    assert (saved.gpu_name, saved.dataset_export, saved.dataset_version, saved.season) == ("NVIDIA H100", export, 1,
                                                                                         season)
    assert saved.contestant == alice and saved.passed_count == 2 and saved.sample_count == 3
    # computed on the site from the rows: weights 2 and 1 over speedups 4 and 1; relative time of AAAAAA alone
    assert saved.speedup_score == pytest.approx(math.exp((2 * math.log(4.0)) / 3))
    assert answer["speedup_score"] == pytest.approx(saved.speedup_score)
    assert saved.relative_time_score == pytest.approx(0.5)
    assert [s["id"] for s in saved.samples] == ["AAAAAA", "BBBBBB", "CCCCCC"]
    assert "result" not in saved.samples[0]  # each sample's whole judge result (its logs) stays on the machine


@pytest.mark.django_db(transaction=True)
def test_an_incomplete_run_or_another_schema_is_refused(live_server, season, alice):
    _, token = accounts.create_api_token(alice)
    status, answer = bench_run.upload(bench_result(complete=False), live_server.url, token)
    assert status == 422 and "incomplete" in answer["detail"]
    status, answer = bench_run.upload(bench_result(schema=2), live_server.url, token)
    assert status == 422 and "schema: Input should be 1" in answer["detail"]
    assert not BenchmarkRun.objects.exists()


def test_without_a_token_it_is_401(client, db):
    answer = client.post("/api/v1/benchmark-runs", data=bench_result(), content_type="application/json")
    assert answer.status_code == 401


@pytest.mark.django_db(transaction=True)
def test_an_upload_names_its_uploader_and_outlives_the_account(live_server, client, season, bob, organizer):
    _, bobs = accounts.create_api_token(bob)
    _, organizers = accounts.create_api_token(organizer)
    status, mine = bench_run.upload(bench_result(), live_server.url, bobs)
    assert status == 201 and (mine["uploaded_by"], mine["uploaded_by_organizer"]) == ("Bob", False)
    status, theirs = bench_run.upload(bench_result(), live_server.url, organizers)
    assert status == 201 and (theirs["uploaded_by"], theirs["uploaded_by_organizer"]) == ("Org", True)
    html = client.get("/seasons/S1/hardware/").content.decode()
    assert "NVIDIA H100, measured by Org (organizer), uploaded" in html  # marked, yet still an upload
    assert "NVIDIA H100, measured by Bob, uploaded" in html
    # the uploader's account deleted: the run stays, from an unknown uploader
    bob.user.delete()
    run = BenchmarkRun.objects.get(pk=mine["id"])
    assert run.contestant is None and run.speedup_score == pytest.approx(math.exp((2 * math.log(4.0)) / 3))
    answer = client.get(f"/api/v1/benchmark-runs/{run.pk}", headers={"Authorization": f"Bearer {organizers}"})
    assert answer.status_code == 200 and answer.json()["uploaded_by"] is None
    body = client.get("/api/v1/seasons/S1/hardware/comparison").json()
    assert sorted((g["uploaded_by"] or "", g["benchmark_run"]) for g in body["gpus"] if g["source"] == "benchmark") == [
        ("", run.pk), ("Org", theirs["id"])]
    html = client.get("/seasons/S1/hardware/").content.decode()
    assert "unknown uploader" in html and "NVIDIA H100, uploaded by an unknown uploader" in html
