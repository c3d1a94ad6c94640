"""A profile asked for through the API and judged by a real agent worker on the CPU: the worker takes the site's
profile options, runs the correctness trials, and its report says that no profiler exists on a CPU host; the
run ends passed, nothing ranks it, and the report reads back through the API (live server, real Redis)."""
import requests

import pytest

from submissions.models import Standing
from live_platform.agents import wait_for_runs
from tests.e2e.test_judging_end_to_end import contest, submit  # noqa: F401  (the fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_cpu_agent_judges_a_profile_and_says_there_is_no_profiler(live_server, contest, start_agent):  # noqa: F811
    site, headers = live_server.url, {"Authorization": f"Bearer {contest['token']}"}
    agent = start_agent(site, contest["agent_token"], contest["queue"], redis_url=contest["redis_url"])
    ranked = wait_for_runs(site, contest["token"], submit(site, contest, "relu-cpu"), agent)
    (run,) = ranked["runs"]
    assert run["verdict"] == "passed", run["result"]["logs"]
    standing = Standing.objects.values_list("best_speedup", "submission_count").get()

    asked = requests.post(f"{site}/api/v1/runs/{run['id']}/profile", headers=headers, timeout=30)
    assert asked.status_code == 201, asked.text
    profile = wait_for_runs(site, contest["token"], asked.json()["id"], agent)
    (profile_run,) = profile["runs"]
    assert profile["mode"] == "profile" and profile_run["verdict"] == "passed", profile_run["result"]["logs"]
    assert profile_run["speedup"] is None and profile_run["result"]["timing"]["candidate"]["median_ms"] is None

    report = requests.get(f"{site}/api/v1/runs/{profile_run['id']}/profile", headers=headers, timeout=30).json()
    assert report["profile_of"] == run["id"] and report["report"]["available"] is False
    assert report["report"]["vendor"] == "cpu" and report["report"]["kernels"] == []
    assert report["report"]["reason"].startswith("no profiler exists on a CPU host")
    assert Standing.objects.values_list("best_speedup", "submission_count").get() == standing
