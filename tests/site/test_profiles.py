"""Profile reports on the site (services/profiles.py): a contestant asks for a profile of a passed run of theirs,
an agent sends the .ncu-rep and the report, the owner (and organizers) read and download it, nobody else does;
a profile is rate-limited per contestant and season, and never changes a ranking, a standing or a board."""
import copy
import gzip
import hashlib

import pytest

from leaderboard import selectors as board_selectors
from submissions import selectors
from submissions.models import AuditEntry, GpuStanding, ProfileFile, Run, Standing, Submission, SubmissionMode
from submissions.rules import ranked_runs
from submissions.services import judging, profiles, submitting
from submissions.services.accounts import create_api_token
from tests.site.bundle_files import valid_files
from tests.site.judging_helpers import accept, hand_out_to_token, passed_result, report_all, submit

EN = {"Accept-Language": "en-US,en;q=0.9"}
NCU_REP = b"NVIDIA Nsight Compute report\x00\x01\x02 stand-in bytes"
GELU = "lb_bias_gelu_kernel(const float *, const float *, float *, long, long)"


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


def kernel(model, launch, name, **figures):
    record = {"model": model, "launch": launch, "name": name, "duration_ms": 0.00512, "grid": [512, 1, 1],
              "block": [256, 1, 1], "registers": 16, "achieved_occupancy_pct": 86.4, "theoretical_occupancy_pct": 100.0,
              "sm_pct": 31.25, "memory_pct": 78.5, "dram_pct": 78.5, "l2_pct": 40.1,
              "stalls": [{"reason": "long_scoreboard", "share_pct": 69.4, "cycles_per_instruction": 12.5},
                         {"reason": "wait", "share_pct": 13.9, "cycles_per_instruction": 2.5}],
              "flops": 1048576.0, "dram_bytes": 1048576.0, "flop_per_s": 2.048e11, "arithmetic_intensity": 1.0}
    record.update(figures)
    return record


def profiled_result(speedup=None):
    """What an agent reports for a profile run: the trials' verdict and the report (a bogus speedup when
    asked: a profile must rank nowhere whatever its agent says)."""
    result = passed_result()
    result["timing"] = {"reference": {"median_ms": None}, "candidate": {"median_ms": None}, "speedup": speedup}
    result["device"] = {"kind": "cuda", "name": "NVIDIA H200", "peak_gbps": 4800.0, "peak_tflops": 67.0}
    result["profile"] = {
        "available": True, "tool": "ncu", "version": "Version 2025.3.1.0", "vendor": "nvidia", "reason": None,
        "kernels_per_model": 20, "sections": ["SpeedOfLight", "Occupancy", "LaunchStats", "WarpStateStats"],
        "clock_control": "none", "metrics": "listed", "table_source": "profile run",
        "kernels": [kernel("candidate", 0, "ampere_sgemm_64x64_nn", duration_ms=0.009, arithmetic_intensity=8.0,
                           flop_per_s=3.7e12),
                    kernel("candidate", 1, GELU),
                    kernel("reference", 2, "ampere_sgemm_64x64_nn", duration_ms=0.009)],
        "models": {"candidate": {"kernels": 2, "duration_ms": 0.01412, "capped": False},
                   "reference": {"kernels": 1, "duration_ms": 0.009, "capped": False}},
        "report_file": {"name": "profile.ncu-rep", "bytes": len(NCU_REP), "sha256": hashlib.sha256(NCU_REP).hexdigest(),
                        "stored": True, "why": None},
        "duration_s": 14.2,
    }
    return result


@pytest.fixture
def judged(season, alice, organizer, agent_and_token, django_capture_on_commit_callbacks):
    """Alice's ranked submission, passed at 2x on both GPU types and accepted."""
    agent, _ = agent_and_token
    issue = submitting.open_issue(season, alice, title="ReLU")
    submission = submit(django_capture_on_commit_callbacks, alice, issue, valid_files())
    report_all(submission, agent, passed_result(speedup=2.0))
    accept(submission, organizer.user)
    return submission


def ask(capture, run, user):
    with capture(execute=True):
        return profiles.request_profile(run.pk, user)


def start(client, run, token):
    """The agent's start of the profile run, through the API: its answer."""
    hand_out_to_token(run, token)
    return client.post(f"/api/v1/agent/runs/{run.pk}/start", {"attempt": run.attempts},
                       content_type="application/json", headers=bearer(token)).json()


def upload(client, answer, run, token, data=NCU_REP, secret=None, attempt=None):
    return client.generic("POST", f"{answer['profile_file_url']}?attempt={run.attempts if attempt is None else attempt}",
                          data, content_type="application/octet-stream",
                          headers={**bearer(token), "X-Job-Secret": secret or answer["job_secret"]})


def board_state(season):
    return (list(Standing.objects.filter(season=season).values_list("contestant_id", "best_speedup",
                                                                     "submission_count", "accepted_count",
                                                                     "total_score", "board_key")),
            list(GpuStanding.objects.values_list("contestant_id", "gpu_type_id", "best_speedup", "geomean_speedup",
                                                "passed_count", "board_key")),
            sorted(board_selectors.passed_speedups(season)))


def test_a_profile_of_a_passed_run_is_judged_on_its_gpu_type_and_never_changes_a_ranking(
        client, season, alice, organizer, agent_and_token, judged, django_capture_on_commit_callbacks):
    agent, token = agent_and_token
    run = judged.runs.get(gpu_type__slug="c500")
    before = board_state(season)
    ranked_before = ranked_runs.summary(list(judged.runs.all()))

    profile = ask(django_capture_on_commit_callbacks, run, alice.user)
    assert profile.mode == SubmissionMode.PROFILE and profile.profile_of == run and profile.issue == judged.issue
    assert {f.path: f.sha256 for f in profile.files.all()} == {f.path: f.sha256 for f in judged.files.all()}
    assert [r.gpu_type.slug for r in profile.runs.all()] == ["c500"]  # the asked run's type alone
    profile_run = profile.runs.get()

    answer = start(client, profile_run, token)
    assert answer["options"]["mode"] == "profile" and answer["options"]["correctness_only"] is True
    assert answer["options"]["profile"] == {"kernels_per_model": 20, "timeout_s": 600, "max_file_bytes": 8 * 1024 * 1024}
    assert answer["profile_file_url"] == f"/api/v1/agent/runs/{profile_run.pk}/profile-file"
    assert "profile_file_url" not in judging.judging_options(run)  # a ranked run's options name no profile
    assert upload(client, answer, profile_run, token).status_code == 200
    stored = ProfileFile.objects.get(run=profile_run)
    assert bytes(stored.content) == NCU_REP and stored.sha256 == hashlib.sha256(NCU_REP).hexdigest()
    # the agent says 99x: a profile ranks nowhere whatever it reports
    reported = client.post(answer["result_url"], profiled_result(speedup=99.0), content_type="application/json",
                           headers={**bearer(token), "X-Job-Secret": answer["job_secret"]})
    assert reported.status_code == 200
    profile_run.refresh_from_db()
    assert profile_run.verdict == "passed" and profile_run.result["profile"]["kernels"][1]["name"] == GELU

    assert board_state(season) == before
    assert ranked_runs.summary(list(judged.runs.all())) == ranked_before
    assert profile not in selectors.review_queue(include_reviewed=True)
    assert [s.pk for s, _ in selectors.accepted_samples(season)] == [judged.pk]
    client.force_login(organizer.user)
    body = b"".join(client.get("/organizer/export/submissions.csv").streaming_content).decode()
    assert f"\n{profile.pk}," not in body


def test_a_profile_is_asked_for_from_ones_own_passed_run_alone(
        client, season, alice, bob, agent_and_token, judged, django_capture_on_commit_callbacks):
    agent, _ = agent_and_token
    run = judged.runs.get(gpu_type__slug="cpu")
    with pytest.raises(profiles.NotYours, match=f"run {run.pk} is not yours"):
        ask(django_capture_on_commit_callbacks, run, bob.user)
    wrong = submit(django_capture_on_commit_callbacks, alice, judged.issue, valid_files(), mode=SubmissionMode.TEST)
    report_all(wrong, agent, {**passed_result(), "status": "wrong_answer"})
    with pytest.raises(profiles.ProfileRefused, match="only a passed run can be profiled; run .* is wrong answer"):
        ask(django_capture_on_commit_callbacks, wrong.runs.first(), alice.user)
    queued = submit(django_capture_on_commit_callbacks, alice, judged.issue, valid_files(), mode=SubmissionMode.BENCHMARK)
    with pytest.raises(profiles.ProfileRefused, match="is queued"):
        ask(django_capture_on_commit_callbacks, queued.runs.first(), alice.user)
    profile = ask(django_capture_on_commit_callbacks, run, alice.user)
    report_all(profile, agent, profiled_result())
    with pytest.raises(profiles.ProfileRefused, match="is a profile run already"):
        ask(django_capture_on_commit_callbacks, profile.runs.get(), alice.user)

    # the API's answers: 201 with the new submission, 403 for another's run, 409 for one not passed, 404 for none
    _, alice_token = create_api_token(alice)
    _, bob_token = create_api_token(bob)
    with django_capture_on_commit_callbacks(execute=True):
        made = client.post(f"/api/v1/runs/{run.pk}/profile", headers=bearer(alice_token))
    assert made.status_code == 201 and made.json()["mode"] == "profile"
    assert [r["gpu_type"] for r in made.json()["runs"]] == ["cpu"]
    assert client.post(f"/api/v1/runs/{run.pk}/profile", headers=bearer(bob_token)).status_code == 403
    assert client.post(f"/api/v1/runs/{wrong.runs.first().pk}/profile", headers=bearer(alice_token)).status_code == 409
    assert client.post("/api/v1/runs/999999/profile", headers=bearer(alice_token)).status_code == 404


def test_profiles_are_limited_per_contestant_and_season(
        client, settings, alice, judged, django_capture_on_commit_callbacks):
    settings.PROFILE_SUBMISSIONS_PER_HOUR = 2
    run = judged.runs.get(gpu_type__slug="cpu")
    ask(django_capture_on_commit_callbacks, run, alice.user)
    ask(django_capture_on_commit_callbacks, run, alice.user)
    with pytest.raises(submitting.TooManyRequests, match="you asked for 2 profiles in season S1 in the last hour"):
        ask(django_capture_on_commit_callbacks, run, alice.user)
    _, token = create_api_token(alice)
    answer = client.post(f"/api/v1/runs/{run.pk}/profile", headers={**bearer(token), **EN})
    assert answer.status_code == 429 and int(answer["Retry-After"]) > 3000
    # the other modes keep their own limits: a test submission still goes in
    submit(django_capture_on_commit_callbacks, alice, judged.issue, valid_files(), mode=SubmissionMode.TEST)
    assert Submission.objects.filter(mode=SubmissionMode.PROFILE).count() == 2


@pytest.fixture
def reported_profile(client, alice, agent_and_token, judged, django_capture_on_commit_callbacks):
    """Alice's profile of her CPU run, judged, with its file kept."""
    _, token = agent_and_token
    profile = ask(django_capture_on_commit_callbacks, judged.runs.get(gpu_type__slug="cpu"), alice.user)
    run = profile.runs.get()
    answer = start(client, run, token)
    assert upload(client, answer, run, token).status_code == 200
    client.post(answer["result_url"], profiled_result(), content_type="application/json",
                headers={**bearer(token), "X-Job-Secret": answer["job_secret"]})
    run.refresh_from_db()
    return run


def test_the_report_and_its_file_are_the_owners_and_the_organizers_alone(client, alice, bob, organizer,
                                                                         reported_profile):
    run = reported_profile
    page, download = f"/runs/{run.pk}/profile/", f"/runs/{run.pk}/profile.ncu-rep"
    assert client.get(page).status_code == 404 and client.get(download).status_code == 404  # a visitor
    client.force_login(bob.user)
    assert client.get(page).status_code == 404 and client.get(download).status_code == 404
    for user in (alice.user, organizer.user):
        client.force_login(user)
        answer = client.get(download)
        assert answer.status_code == 200 and answer.content == NCU_REP
        assert answer["Content-Disposition"] == f'attachment; filename="run-{run.pk}.ncu-rep"'
        assert client.get(page).status_code == 200
    tokens = {name: create_api_token(person)[1] for name, person in (("a", alice), ("b", bob), ("o", organizer))}
    for name, code in (("a", 200), ("o", 200), ("b", 404)):
        assert client.get(f"/api/v1/runs/{run.pk}/profile/report", headers=bearer(tokens[name])).status_code == code
        assert client.get(f"/api/v1/runs/{run.pk}/profile", headers=bearer(tokens[name])).status_code == code
    # a ranked run has no profile to read
    ranked = Run.objects.exclude(submission__mode=SubmissionMode.PROFILE).first()
    assert client.get(f"/api/v1/runs/{ranked.pk}/profile", headers=bearer(tokens["a"])).status_code == 404


def test_the_api_gives_the_report_per_kernel(client, alice, reported_profile):
    run = reported_profile
    _, token = create_api_token(alice)
    answer = client.get(f"/api/v1/runs/{run.pk}/profile", headers={**bearer(token), **EN}).json()
    assert (answer["run"], answer["gpu_type"], answer["verdict"], answer["device"]) == (run.pk, "cpu", "passed",
                                                                                        "NVIDIA H200")
    assert answer["profile_of"] == run.submission.profile_of_id
    report = answer["report"]
    assert report["available"] is True and report["version"] == "Version 2025.3.1.0"
    assert [(k["model"], k["name"]) for k in report["kernels"]] == [
        ("candidate", "ampere_sgemm_64x64_nn"), ("candidate", GELU), ("reference", "ampere_sgemm_64x64_nn")]
    gelu = report["kernels"][1]
    assert (gelu["grid"], gelu["block"], gelu["registers"], gelu["achieved_occupancy_pct"]) == ([512, 1, 1],
                                                                                              [256, 1, 1], 16, 86.4)
    assert gelu["stalls"][0] == {"reason": "long_scoreboard", "share_pct": 69.4, "cycles_per_instruction": 12.5,
                                 "label": "Long scoreboard (waiting on global or local memory)"}
    assert report["report_file"]["stored"] is True and report["report_file"]["bytes"] == len(NCU_REP)
    assert report["report_file"]["url"].endswith(f"/api/v1/runs/{run.pk}/profile/report")


def test_what_an_agent_sends_is_shown_only_where_it_has_the_documented_type(client, alice, agent_and_token, judged,
                                                                           django_capture_on_commit_callbacks):
    agent, _ = agent_and_token
    profile = ask(django_capture_on_commit_callbacks, judged.runs.get(gpu_type__slug="cpu"), alice.user)
    result = profiled_result()
    result["profile"]["kernels"] = [{"model": "attacker", "name": "<script>x</script>" * 100, "grid": [1, "2", 3],
                                     "registers": True, "sm_pct": "99", "duration_ms": 1,
                                     "stalls": [{"reason": "wait", "share_pct": "all"}, "junk"]}, "junk"]
    result["profile"]["report_file"] = {"bytes": 10, "sha256": "0" * 64, "stored": True}  # no file was sent
    report_all(profile, agent, result)
    client.force_login(alice.user)
    page = client.get(f"/runs/{profile.runs.get().pk}/profile/", headers=EN).content.decode()
    assert "<script>x</script>" not in page and "&lt;script&gt;" in page
    from submissions import profile_reports
    shown = profile_reports.report(profile.runs.get())
    assert shown["kernels"][0]["model"] is None and len(shown["kernels"][0]["name"]) == 512
    assert shown["kernels"][0]["grid"] is None and shown["kernels"][0]["registers"] is None
    assert shown["kernels"][0]["sm_pct"] is None and shown["kernels"][0]["duration_ms"] == 1.0
    assert shown["kernels"][0]["stalls"] == [{"reason": "wait", "label": "Wait (a fixed latency)", "share_pct": None,
                                              "cycles_per_instruction": None}]
    assert len(shown["kernels"]) == 1
    assert "Download the .ncu-rep" not in page  # the agent said sent, the site has none


def test_a_compressed_profile_file_is_kept_as_nsight_compute_wrote_it_within_its_sizes(
        client, settings, alice, agent_and_token, judged, django_capture_on_commit_callbacks):
    agent, token = agent_and_token
    run = ask(django_capture_on_commit_callbacks, judged.runs.get(gpu_type__slug="cpu"), alice.user).runs.get()
    answer = start(client, run, token)
    report = NCU_REP * 4000  # 176 kB that compresses to about 1 kB, as .ncu-rep files do five to ten times
    settings.PROFILE_FILE_MAX_BYTES = 4096
    assert upload(client, answer, run, token, data=gzip.compress(report)).status_code == 200
    stored = ProfileFile.objects.get(run=run)
    assert bytes(stored.content) == report and stored.size == len(report)
    assert stored.sha256 == hashlib.sha256(report).hexdigest()  # the agent's report_file names this digest
    settings.PROFILE_REPORT_MAX_BYTES = len(report) - 1  # a small body that inflates past the bound
    too_large = upload(client, answer, run, token, data=gzip.compress(report))
    assert too_large.status_code == 413 and "once decompressed" in too_large.json()["detail"]
    broken = upload(client, answer, run, token, data=gzip.compress(report)[:200])
    assert broken.status_code == 422 and "not valid gzip" in broken.json()["detail"]
    assert bytes(ProfileFile.objects.get(run=run).content) == report  # the refused ones replaced nothing


def test_only_the_judging_agent_sends_a_profile_file_within_its_size_while_the_run_runs(
        client, settings, alice, agent_and_token, judged, django_capture_on_commit_callbacks):
    agent, token = agent_and_token
    from submissions.models import GpuType
    from submissions.services import accounts

    _, other_token = accounts.create_agent("other-agent", GpuType.objects.all())
    profile = ask(django_capture_on_commit_callbacks, judged.runs.get(gpu_type__slug="cpu"), alice.user)
    run = profile.runs.get()
    answer = start(client, run, token)
    assert upload(client, answer, run, token, secret="not-the-secret").status_code == 403
    assert AuditEntry.objects.filter(action="run.profile_file_refused").count() == 1
    assert upload(client, answer, run, other_token).status_code == 403
    assert upload(client, answer, run, token, attempt=run.attempts + 1).status_code == 403
    assert upload(client, answer, run, token, data=b"").status_code == 422
    settings.PROFILE_FILE_MAX_BYTES = 16
    too_large = upload(client, answer, run, token)
    assert too_large.status_code == 413 and "at most 16 bytes" in too_large.json()["detail"]
    assert not ProfileFile.objects.exists()
    settings.PROFILE_FILE_MAX_BYTES = 1024
    assert upload(client, answer, run, token, data=b"first").status_code == 200
    assert upload(client, answer, run, token).status_code == 200  # a second one replaces the first
    assert bytes(ProfileFile.objects.get(run=run).content) == NCU_REP
    client.post(answer["result_url"], profiled_result(), content_type="application/json",
                headers={**bearer(token), "X-Job-Secret": answer["job_secret"]})
    assert upload(client, answer, run, token).status_code == 409  # the run is done
    # a run of another mode keeps no profile file
    ranked = submit(django_capture_on_commit_callbacks, alice, judged.issue, valid_files(), mode=SubmissionMode.BENCHMARK)
    ranked_run = ranked.runs.get(gpu_type__slug="cpu")
    hand_out_to_token(ranked_run, token)
    ranked_answer = client.post(f"/api/v1/agent/runs/{ranked_run.pk}/start", {"attempt": ranked_run.attempts},
                                content_type="application/json", headers=bearer(token)).json()
    assert ranked_answer["profile_file_url"] is None
    refused = client.generic("POST", f"/api/v1/agent/runs/{ranked_run.pk}/profile-file?attempt={ranked_run.attempts}",
                             NCU_REP, content_type="application/octet-stream",
                             headers={**bearer(token), "X-Job-Secret": ranked_answer["job_secret"]})
    assert refused.status_code == 409 and "not a profile run" in refused.json()["detail"]


def test_the_profile_page_shows_a_row_per_kernel_the_stalls_and_the_roofline(client, alice, reported_profile):
    client.force_login(alice.user)
    page = client.get(f"/runs/{reported_profile.pk}/profile/", headers=EN).content.decode()
    assert page.count('<tr data-model="candidate">') == 2 and page.count('<tr data-model="reference">') == 1
    assert "lb_bias_gelu_kernel(const float *, const float *, float *, …" in page  # the name whole in its title
    assert 'data-stall="long_scoreboard"' in page and "long_scoreboard 69%" in page
    assert "512×1×1" in page and "256×1×1" in page
    assert 'id="profile-roofline"' in page and "figure-profile-roofline" in page
    assert f'href="/runs/{reported_profile.pk}/profile.ncu-rep"' in page
    assert "Candidate: 2 kernels, 0.014 ms in all" in page


def test_a_cpu_profile_says_no_profiler_exists_there(client, alice, agent_and_token, judged,
                                                    django_capture_on_commit_callbacks):
    agent, _ = agent_and_token
    profile = ask(django_capture_on_commit_callbacks, judged.runs.get(gpu_type__slug="cpu"), alice.user)
    result = passed_result()
    result["profile"] = {"available": False, "tool": None, "version": None, "vendor": "cpu",
                         "reason": "no profiler exists on a CPU host: Nsight Compute profiles NVIDIA GPUs",
                         "kernels_per_model": None, "sections": [], "clock_control": None, "metrics": None,
                         "table_source": None, "kernels": [], "models": {}, "report_file": None, "duration_s": None}
    report_all(profile, agent, result)
    run = profile.runs.get()
    assert run.verdict == "passed"
    client.force_login(alice.user)
    page = client.get(f"/runs/{run.pk}/profile/", headers=EN).content.decode()
    assert "No profiler exists on a CPU host" in page and 'id="profile-kernels"' not in page
    page = client.get(f"/submissions/{profile.pk}/", headers=EN).content.decode()
    assert f'href="/runs/{run.pk}/profile/"' in page and "A profile submission" in page


def test_a_passed_run_of_ones_own_offers_a_profile_and_another_contestants_does_not(
        client, alice, bob, judged, django_capture_on_commit_callbacks):
    run = judged.runs.get(gpu_type__slug="cpu")
    client.force_login(bob.user)
    assert f'id="request-profile-{run.pk}"' not in client.get(f"/submissions/{judged.pk}/").content.decode()
    client.force_login(alice.user)
    assert f'id="request-profile-{run.pk}"' in client.get(f"/submissions/{judged.pk}/").content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(f"/runs/{run.pk}/profile/request/", headers=EN)
    profile = Submission.objects.get(mode=SubmissionMode.PROFILE)
    assert answer.status_code == 302 and answer["Location"] == f"/submissions/{profile.pk}/"
    client.force_login(bob.user)
    answer = client.post(f"/runs/{run.pk}/profile/request/", headers=EN, follow=True)
    assert f"run {run.pk} is not yours" in answer.content.decode()
    assert Submission.objects.filter(mode=SubmissionMode.PROFILE).count() == 1


def test_a_submission_in_profile_mode_profiles_every_gpu_type_that_judges_it(alice, judged,
                                                                            django_capture_on_commit_callbacks):
    profile = submit(django_capture_on_commit_callbacks, alice, judged.issue, valid_files(), mode=SubmissionMode.PROFILE)
    assert sorted(r.gpu_type.slug for r in profile.runs.all()) == ["c500", "cpu"] and profile.profile_of is None
    run = profile.runs.get(gpu_type__slug="cpu")
    assert judging.judging_options(run)["profile"]["kernels_per_model"] == 20
    assert copy.deepcopy(judging.judging_options(run))["correctness_only"] is True


@pytest.mark.django_db(transaction=True)
def test_the_agents_upload_of_a_report_file_lands_on_the_site(live_server, tmp_path, alice, agent_and_token, judged,
                                                             django_capture_on_commit_callbacks):
    """The agent's own uploader (profiler_agent.worker.judge_job), over HTTP, to the site's endpoint."""
    from profiler_agent.judge.profile_report import REPORT_FILE
    from profiler_agent.worker.judge_job import upload_profile_report
    from profiler_agent.worker.site_client import SiteClient

    agent, token = agent_and_token
    run = ask(django_capture_on_commit_callbacks, judged.runs.get(gpu_type__slug="cpu"), alice.user).runs.get()
    _, secret = judging.start_run(run.pk, agent, run.attempts)
    (tmp_path / REPORT_FILE).write_bytes(NCU_REP)
    url = f"{live_server.url}/api/v1/agent/runs/{run.pk}/profile-file?attempt={run.attempts}"
    refused = profiled_result()
    upload_profile_report(SiteClient(token, "not-the-secret", attempts=1), url, refused, tmp_path, 8 * 1024 * 1024)
    assert refused["profile"]["report_file"]["stored"] is False
    assert refused["profile"]["report_file"]["why"].startswith("refused (403): the job secret does not match")
    assert not ProfileFile.objects.exists()
    sent = profiled_result()
    upload_profile_report(SiteClient(token, secret, attempts=1), url, sent, tmp_path, 8 * 1024 * 1024)
    assert sent["profile"]["report_file"]["stored"] is True and sent["profile"]["report_file"]["why"] is None
    assert bytes(ProfileFile.objects.get(run=run).content) == NCU_REP


def test_the_page_of_a_profile_of_one_run_says_it_is_judged_on_that_runs_gpu_type_alone(
        client, alice, judged, django_capture_on_commit_callbacks):
    profile = ask(django_capture_on_commit_callbacks, judged.runs.get(gpu_type__slug="c500"), alice.user)
    client.force_login(alice.user)
    page = client.get(f"/submissions/{profile.pk}/", headers=EN).content.decode()
    assert '<span class="tag" data-gpu-type="c500">' in page and 'data-gpu-type="cpu">CPU' not in page
    assert (f'data-gpu-type="cpu">Not judged on CPU: a profile of run #{profile.profile_of_id} is made on its GPU '
            'type alone') in page
