"""`python -m profiler_agent bench-upload FILE`: a result written by `bench --json FILE` on a GPU machine
that cannot reach the site, sent later from one that can. Run as its own process with torch made
unimportable, against the live server over real HTTP."""
import hashlib
import json
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from leaderboard.gpu_comparison import gpu_comparison
from submissions.models import BenchmarkRun, DatasetExport
from submissions.services import accounts
from tests.agent.test_benchmark import PASSING, _measurement, _record, write_sums
from tests.site.test_benchmark_runs import CHECKSUM, bench_result

ROOT = Path(__file__).resolve().parents[2]
# `--token=T`, not `--token T`: a token may start with "-" (secrets.token_urlsafe), which argparse takes for an option
# torch made unimportable: the upload must not need it (the site's machine has no torch)
WITHOUT_TORCH = ("import sys; sys.modules['torch'] = None; from profiler_agent.__main__ import main; "
                 "sys.exit(main(sys.argv[1:]))")


def bench_upload(*args, env=None):
    done = subprocess.run([sys.executable, "-c", WITHOUT_TORCH, "bench-upload", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, env=env)
    return done.returncode, done.stdout, done.stderr


def write(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


@pytest.mark.django_db(transaction=True)
def test_a_result_file_is_uploaded_as_a_benchmark_run(live_server, season, alice, tmp_path):
    export = DatasetExport.objects.create(season=season, number=1, sample_count=3, manifest_sha256=CHECKSUM,
                                          archive_sha256="0" * 64, archive_bytes=1, folder="S1/v1")
    _, token = accounts.create_api_token(alice)
    content = bench_result()
    # what the judge measured rides in each row's whole result: the throughput goes up, the logs do not
    content["samples"][0]["result"].update(metrics={"tflops": None, "bandwidth_gbs": 3000.0},
                                           device={"peak_tflops": 66.9, "peak_gbps": 3352.32})
    content["samples"][1]["result"].update(metrics={"tflops": 40.0, "bandwidth_gbs": 50.0},
                                           device={"peak_tflops": 66.9, "peak_gbps": 3352.32})
    result = write(tmp_path, "bench-h100.json", content)

    code, out, err = bench_upload(result, "--site", live_server.url, f"--token={token}")
    assert code == 0, err
    saved = BenchmarkRun.objects.get()
    assert out.strip() == f"uploaded: benchmark run {saved.pk} ({live_server.url}/api/v1/benchmark-runs/{saved.pk})"
    assert (saved.gpu_name, saved.dataset_export, saved.season, saved.contestant) == ("NVIDIA H100", export, season,
                                                                                     alice)
    assert [s["id"] for s in saved.samples] == ["AAAAAA", "BBBBBB", "CCCCCC"] and "result" not in saved.samples[0]
    assert [(s["tflops"], s["gbps"]) for s in saved.samples] == [(None, 3000.0), (40.0, 50.0), (None, None)]
    # the roofline position: GB/s over both samples with a byte count, TFLOP/s over the one with FLOPs
    roof = next(g for g in gpu_comparison(season)["gpus"] if g.key == saved.comparison_key).roofline
    assert roof["samples"] == 2 and roof["tflops"] == 40.0 and roof["gbps"] == pytest.approx(1525.0)
    assert roof["tflops_pct"] == pytest.approx(100 * 40.0 / 66.9)
    assert roof["gbps_pct"] == pytest.approx(100 * 1525.0 / 3352.32)

    # the token may come from the environment, as for `bench --upload`
    env = {"PATH": "/usr/bin:/bin", "PROFILER_AGENT_USER_TOKEN": token, "PROFILER_AGENT_SITE": live_server.url}
    code, out, err = bench_upload(result, env=env)
    assert code == 0, err
    assert BenchmarkRun.objects.count() == 2


@pytest.mark.django_db(transaction=True)
def test_incomplete_or_malformed_files_are_refused_before_sending(live_server, season, alice, tmp_path):
    _, token = accounts.create_api_token(alice)
    site = ["--site", live_server.url, f"--token={token}"]
    incomplete = bench_result(complete=False)
    incomplete["samples"] = incomplete["samples"][:2]
    cases = [
        (write(tmp_path, "partial.json", incomplete), 1,
         "is an incomplete run: 2 of 3 samples judged; run the same `bench` command again"),
        (write(tmp_path, "short.json", bench_result(samples=bench_result()["samples"][:1])), 1,
         "incomplete run: 1 of 3 samples judged"),
        (write(tmp_path, "cut.json", json.dumps(bench_result())[:200]), 2, "cut.json is not JSON: "),
        (write(tmp_path, "other.json", {"rows": []}), 2, "is not a result of `profiler_agent bench --json`"),
        (write(tmp_path, "list.json", [1, 2]), 2, "is not a result of `profiler_agent bench --json`"),
        (write(tmp_path, "v2.json", bench_result(schema=2)), 2, "says schema 2; this agent uploads schema 1 only"),
        (write(tmp_path, "bare.json", {"schema": 1, "complete": True, "samples": []}), 2,
         "lacks dataset, device, harness_version, scores"),
        (write(tmp_path, "rows.json", bench_result(samples=[1, 2, 3])), 2, "\"samples\" is not a list of judged"),
        (tmp_path / "absent.json", 2, "cannot read"),
    ]
    for path, expected_code, message in cases:
        code, out, err = bench_upload(path, *site)
        assert (code, out) == (expected_code, ""), (path.name, err)
        assert err.startswith("error: ") and message in err, (path.name, err)
    assert not BenchmarkRun.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_refusals_of_the_site_and_an_unreachable_site_are_reported(live_server, season, tmp_path):
    result = write(tmp_path, "bench-h200.json", bench_result())
    code, out, err = bench_upload(result, "--site", live_server.url, "--token", "not-a-token")
    assert code == 1 and err.startswith("error: upload refused (401)")

    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    code, out, err = bench_upload(result, "--site", f"http://127.0.0.1:{port}", "--token", "t")
    assert code == 1 and err.startswith(f"error: cannot reach http://127.0.0.1:{port}: ") and "Traceback" not in err
    assert not BenchmarkRun.objects.exists()


def test_site_and_token_are_required(tmp_path):
    code, out, err = bench_upload(tmp_path / "x.json", env={"PATH": "/usr/bin:/bin"})
    assert code == 2 and "bench-upload needs --site and --token" in err


@pytest.mark.django_db(transaction=True)
def test_bench_uploads_at_once_with_upload(live_server, season, alice, tmp_path):
    """`bench DATASET --upload SITE` (the machine reaches the site): the same sending as bench-upload's."""
    root = tmp_path / "gpucodeforces-S1"
    folder = root / "samples" / "BBBBBB"
    folder.mkdir(parents=True)
    shutil.copy(ROOT / "examples" / "relu-cpu" / "torchcode.py", folder / "torchcode.py")
    (folder / "cudacode.py").write_text(textwrap.dedent(PASSING))
    (root / "manifest.jsonl").write_text(json.dumps(_record("BBBBBB", folder, 1.0, [_measurement("cpu", 1.2)]),
                                                    sort_keys=True) + "\n")
    (root / "dataset.json").write_text(json.dumps({"name": "gpucodeforces-S1", "schema": 1, "season": {"code": "S1"},
                                                   "sample_count": 1}))
    write_sums(root)
    manifest_sha = hashlib.sha256((root / "manifest.jsonl").read_bytes()).hexdigest()
    export = DatasetExport.objects.create(season=season, number=3, sample_count=1, manifest_sha256=manifest_sha,
                                          archive_sha256="0" * 64, archive_bytes=1, folder="S1/v3")
    _, token = accounts.create_api_token(alice)
    done = subprocess.run([sys.executable, "-m", "profiler_agent", "bench", str(root), "--device", "cpu",
                           "--timing-budget", "0.3", "--json", str(tmp_path / "run.json"), "--upload", live_server.url,
                           f"--token={token}"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    saved = BenchmarkRun.objects.get()
    assert f"uploaded: benchmark run {saved.pk} ({live_server.url}/api/v1/benchmark-runs/{saved.pk})" in done.stdout
    assert (saved.dataset_export, saved.dataset_version, saved.passed_count) == (export, 3, 1)
    # the file it wrote uploads again through bench-upload: a second run of the same GPU
    code, out, err = bench_upload(tmp_path / "run.json", "--site", live_server.url, f"--token={token}")
    assert code == 0, err
    assert BenchmarkRun.objects.count() == 2
