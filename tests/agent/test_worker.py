"""`python -m profiler_agent work` against a real Redis and a small real HTTP site that records what
the agent sends: the job protocol end to end (start, bundle, result, heartbeat, headers)."""

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import profiler_agent
from profiler_agent.protocol.result_schema import validate_result
from profiler_agent.worker.judge_job import ForeignUrl, site_url
from profiler_agent.worker.site_client import SiteClient, SiteError
from tests.agent.conftest import REDIS_URL, REPO
from tests.agent.fake_site import zipped

TOKEN = "agent-token-1"


@pytest.fixture
def build_cache(examples_build_cache) -> Path:
    return examples_build_cache  # examples/relu-cpu, judged here, is built there once a run


def enqueue(queue, site, run_id: str, bundle: str, attempt: int = 1):
    """What the site enqueues: the run and its attempt, JSON; the rest comes from start."""
    site.run_bundles[run_id] = bundle
    return queue.enqueue("profiler_agent.service.jobs.judge_run", kwargs={"run_id": int(run_id), "attempt": attempt},
                         job_timeout=1200)


def test_a_burst_worker_judges_queued_runs_and_reports_them(site, queue, build_cache):
    site.bundles = {"relu-cpu.zip": zipped("relu-cpu"), "relu-cpu-wrong.zip": zipped("relu-cpu-wrong")}
    site.start_codes = {"3": 409, "5": 404}  # run 3 is already finished; run 5 is gone from the site
    site.start_answers = {"1": {"bundle_url": f"{site.url}/bundles/relu-cpu.zip"}}  # absolute, on the site: fine
    jobs = {
        "1": enqueue(queue, site, "1", "relu-cpu.zip", attempt=3),
        "2": enqueue(queue, site, "2", "relu-cpu-wrong.zip"),
        "3": enqueue(queue, site, "3", "relu-cpu.zip"),
        "4": enqueue(queue, site, "4", "missing.zip"),  # the download fails: our fault
        "5": enqueue(queue, site, "5", "relu-cpu.zip"),
    }
    name = f"test-agent-{uuid.uuid4().hex[:6]}"
    completed = subprocess.run(
        [sys.executable, "-m", "profiler_agent", "work", "--site", site.url, "--token", TOKEN,
         "--queue", queue.name, "--redis", REDIS_URL, "--name", name, "--device", "cpu", "--burst",
         "--heartbeat-seconds", "1", "--cache-dir", str(build_cache)],
        cwd=REPO, capture_output=True, text=True, timeout=900,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]

    starts, results = site.posts("/start"), site.posts("/result")
    assert set(starts) == {"1", "2", "3", "4", "5"}
    assert set(results) == {"1", "2", "4"}  # nothing for run 3 (finished already) nor run 5 (no such run)
    for run_id, request in starts.items():
        assert request["headers"]["Authorization"] == f"Bearer {TOKEN}" and "X-Job-Secret" not in request["headers"]
        assert request["path"] == f"/api/v1/agent/runs/{run_id}/start"
    for run_id, request in results.items():
        assert request["headers"]["Authorization"] == f"Bearer {TOKEN}"
        assert request["headers"]["X-Job-Secret"] == f"secret-{run_id}"  # the secret start answered
    assert starts["1"]["json"] == {"attempt": 3, "agent": name, "worker": name, "gpu_uuid": None,
                                   "harness_version": profiler_agent.HARNESS_VERSION}
    assert starts["2"]["json"]["attempt"] == 1
    downloads = [r for r in site.requests if r["method"] == "GET"]
    assert sorted(r["path"] for r in downloads) == ["/bundles/missing.zip", "/bundles/relu-cpu-wrong.zip",
                                                    "/bundles/relu-cpu.zip"]
    assert all(r["headers"]["X-Job-Secret"].startswith("secret-") for r in downloads)

    # the stages of each judged run, as they began, with its attempt and secret (worker.stage_reporter)
    progress = [r for r in site.requests if r["path"] == "/runs/1/progress"]
    assert all(r["headers"]["X-Job-Secret"] == "secret-1" and r["json"]["attempt"] == 3 for r in progress)
    stages = [r["json"]["stage"] for r in progress]
    assert stages[0] == "compiling" and stages[-1] == "self_test", stages
    assert {"checking", "timing"} <= set(stages), stages
    assert not [r for r in site.requests if r["path"] == "/runs/4/progress"]  # its download failed first

    passed, wrong, broken = (results[i]["json"] for i in ("1", "2", "4"))
    for result in (passed, wrong, broken):
        validate_result(result)
    assert passed["status"] == "passed" and passed["timing"]["speedup"] > 0
    assert passed["self_test"]["exit_code"] == 0
    assert wrong["status"] == "wrong_answer" and wrong["correctness"]["passed"] is False
    assert broken["status"] == "internal_error" and "HTTP 404" in broken["logs"]["stderr"]
    assert wrong["reason"].startswith("trial 0: output 0:") and passed["reason"] is None
    assert "HTTP 404" in broken["reason"]  # the traceback's last line
    assert "Traceback" in broken["logs"]["stderr"]

    assert passed["correctness"]["trials"] >= 3
    assert jobs["1"].get_status(refresh=True) == "finished"
    assert jobs["3"].get_status(refresh=True) == "finished"
    assert jobs["4"].get_status(refresh=True) == "failed"  # re-raised so RQ records it

    beats = [r for r in site.requests if r["path"] == "/api/v1/agent/heartbeat"]
    assert beats, "no heartbeat was sent"
    beat = beats[0]
    assert beat["headers"]["Authorization"] == f"Bearer {TOKEN}" and "X-Job-Secret" not in beat["headers"]
    # a final system test's queue first, rejudges after
    assert beat["json"]["name"] == name
    assert beat["json"]["queues"] == [f"{queue.name}.final", queue.name, f"{queue.name}.rejudge"]
    assert beat["json"]["worker"] == {"name": name, "gpu": None, "harness_version": profiler_agent.HARNESS_VERSION,
                                      "current_run": None}
    (device,) = beat["json"]["inventory"]["devices"]
    assert device["kind"] == "cpu" and device["memory_bytes"] > 0 and device["uuid"] is None
    versions = beat["json"]["versions"]
    assert versions["agent"] == profiler_agent.__version__ and versions["python"].count(".") == 2
    assert versions["torch"] and versions["driver"] is None  # no NVIDIA driver here: null


def test_the_site_client_retries_server_errors_but_not_client_errors(site):
    client = SiteClient(TOKEN, "secret-9", attempts=3, backoff_s=0.01)
    site.fail_next = [503, 502]
    assert client.post_json(f"{site.url}/runs/9/result", {"status": "passed"}) == 200
    assert len(site.requests) == 3

    site.fail_next = [503, 503, 503]
    with pytest.raises(SiteError, match="failed 3 times, last: HTTP 503"):
        client.post_json(f"{site.url}/runs/9/result", {})

    site.requests.clear()
    with pytest.raises(SiteError, match="HTTP 404"):
        client.get_bytes(f"{site.url}/bundles/nothing.zip")
    assert len(site.requests) == 1  # a 404 is an answer, not a transient failure


def test_a_plain_rq_worker_with_the_judge_worker_class_judges_a_run(site, queue, build_cache, tmp_path):
    """`rq worker -w profiler_agent.worker.job_guard.JudgeWorker` (not our CLI) works too, configured by
    the environment; the class forces its JSON serializer and guarded job class over the CLI's."""
    site.bundles = {"wrong.zip": zipped("relu-cpu-wrong")}
    enqueue(queue, site, "21", "wrong.zip")
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "PYTHONPATH": str(REPO),
        "PROFILER_AGENT_SITE": site.url,
        "PROFILER_AGENT_TOKEN": TOKEN,
        "PROFILER_AGENT_NAME": "env-agent",
        "PROFILER_AGENT_CACHE_DIR": str(build_cache),
    }
    completed = subprocess.run(
        [str(Path(sys.executable).parent / "rq"), "worker", "--burst", "--url", REDIS_URL,
         "-w", "profiler_agent.worker.job_guard.JudgeWorker", queue.name],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    starts, results = site.posts("/start"), site.posts("/result")
    assert starts["21"]["json"]["agent"] == starts["21"]["json"]["worker"] == "env-agent"
    result = results["21"]["json"]
    validate_result(result)
    assert result["status"] == "wrong_answer" and result["device"]["kind"] == "cpu"
    assert results["21"]["headers"]["Authorization"] == f"Bearer {TOKEN}"


@pytest.mark.parametrize(
    "site_address, url, joined",
    [
        ("http://site:8000", "/api/v1/agent/runs/7/start", "http://site:8000/api/v1/agent/runs/7/start"),
        ("https://x.org/contest/", "/api/v1/runs/7/result", "https://x.org/contest/api/v1/runs/7/result"),
        ("http://site:8000", "http://site:8000/api/v1/runs/7/bundle", "http://site:8000/api/v1/runs/7/bundle"),
    ],
)
def test_job_paths_are_joined_to_the_site_address(site_address, url, joined):
    assert site_url(site_address, url) == joined


@pytest.mark.parametrize("url", ["http://other:9000/runs/7/bundle", "//other:9000/runs/7/bundle",
                                 "https://site:8000/runs/7/bundle", "http://site:8000.evil.org/x",
                                 "http://site:8000/other-contest/x"])
def test_an_absolute_url_off_the_agents_own_site_is_refused(url):
    with pytest.raises(ForeignUrl):
        site_url("http://site:8000/contest", url)


def test_a_warm_worker_judges_job_after_job_with_processes_started_before_each(site, queue, build_cache):
    """--keep-warm: jobs run in the worker process, where the next judging's processes wait."""
    from profiler_agent.judge.judging import WARM_NOTE

    site.bundles = {"relu-cpu.zip": zipped("relu-cpu"), "relu-cpu-wrong.zip": zipped("relu-cpu-wrong")}
    for run_id, bundle in (("1", "relu-cpu.zip"), ("2", "relu-cpu-wrong.zip"), ("3", "relu-cpu.zip")):
        enqueue(queue, site, run_id, bundle)
    completed = subprocess.run(
        [sys.executable, "-m", "profiler_agent", "work", "--site", site.url, "--token", TOKEN,
         "--queue", queue.name, "--redis", REDIS_URL, "--name", f"warm-{uuid.uuid4().hex[:6]}", "--device", "cpu",
         "--burst", "--keep-warm", "--cache-dir", str(build_cache)],
        cwd=REPO, capture_output=True, text=True, timeout=900,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    results = {run_id: request["json"] for run_id, request in site.posts("/result").items()}
    assert [results[i]["status"] for i in ("1", "2", "3")] == ["passed", "wrong_answer", "passed"]
    # a work-horse forked per job could not find processes a previous job's horse started
    assert [WARM_NOTE in results[i]["logs"]["stderr"] for i in ("1", "2", "3")] == [False, True, True]
    stages = [r["json"]["stage"] for r in site.requests if r["path"] == "/runs/3/progress"]
    assert stages[0] == "compiling" and "timing" in stages, stages  # the waiting process reports to its job
