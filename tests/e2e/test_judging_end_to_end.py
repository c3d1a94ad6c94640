"""The whole path with real parts: HTTP API -> database -> Redis -> a real agent worker -> verdict."""
import uuid

import pytest
import requests

from submissions import queueing
from submissions.models import AuditEntry, GpuType, Run, Season
from submissions.services import accounts, submitting
from live_platform import kernels
from tests.conftest import EXAMPLES
from live_platform.agents import wait_for_runs

pytestmark = pytest.mark.django_db(transaction=True)


def bundle_files(example):
    """The example's files as a new kernel (kernels.distinct): tests here submit one example several times."""
    files = [(p.name, p.read_bytes()) for p in sorted((EXAMPLES / example).iterdir()) if p.is_file()]
    return [("files", pair) for pair in kernels.distinct(files)]


@pytest.fixture
def contest(queue_prefix, agent_redis_users):
    season = Season.objects.create(second_judging="off", code="S1", name="Season one")
    cpu = GpuType.objects.create(slug="cpu", name="CPU")
    season.gpu_types.add(cpu)
    alice = accounts.register_contestant("alice", "pw-alice-123", display_name="Alice")
    _, contestant_token = accounts.create_api_token(alice)
    issue = submitting.open_issue(season, alice, title="ReLU")
    agent, agent_token = accounts.create_agent(f"e2e-{uuid.uuid4().hex[:8]}", [cpu])  # Redis users are server-wide
    # The agent's worker runs as a volunteer's host would: under its own Redis ACL user.
    redis_url = agent_redis_users(agent.name)
    return {"issue": issue, "token": contestant_token, "agent_token": agent_token, "queue": f"{queue_prefix}cpu",
            "redis_url": redis_url, "agent_name": agent.name}


def submit(site, contest, example):
    response = requests.post(f"{site}/api/v1/submissions", data={"issue": contest["issue"].code},
                             files=bundle_files(example), headers={"Authorization": f"Bearer {contest['token']}"},
                             timeout=30)
    assert response.status_code == 201, response.text
    return response.json()["id"]


def test_a_correct_and_a_wrong_bundle_get_their_verdicts(live_server, contest, start_agent):
    site = live_server.url
    agent = start_agent(site, contest["agent_token"], contest["queue"], redis_url=contest["redis_url"])
    correct_id = submit(site, contest, "relu-cpu")
    wrong_id = submit(site, contest, "relu-cpu-wrong")

    correct = wait_for_runs(site, contest["token"], correct_id, agent)
    wrong = wait_for_runs(site, contest["token"], wrong_id, agent)

    (run,) = correct["runs"]
    assert run["verdict"] == "passed", run["result"]["logs"]
    assert run["speedup"] > 0 and run["candidate_median_ms"] > 0
    result = run["result"]
    assert result["schema"] == 1 and result["device"]["kind"] == "cpu"
    assert result["correctness"]["passed"] is True and result["correctness"]["trials"] >= 3
    assert result["inputs"] == [{"dtype": "float32", "shape": [4096, 1024]}]  # kept for the dataset's metadata
    (bad,) = wrong["runs"]
    assert bad["verdict"] == "wrong_answer" and bad["speedup"] is None
    assert bad["result"]["correctness"]["max_abs_err"] > 0
    assert Run.objects.get(pk=run["id"]).agent.name == contest["agent_name"]
    assert AuditEntry.objects.filter(action="run.verdict").count() == 2
    # The submission page shows the verdict (and stops polling).
    page = requests.get(f"{site}/submissions/{correct_id}/runs/", timeout=10).text
    assert "Passed" in page and 'data-live="false"' in page


def test_a_run_whose_job_was_lost_is_judged_after_the_agent_calls_in(live_server, contest, start_agent, settings):
    settings.RUN_REQUEUE_AFTER_SECONDS = 0
    site = live_server.url
    submission_id = submit(site, contest, "relu-cpu-wrong")
    queueing.judging_queue(contest["queue"]).empty()  # as if Redis lost it
    agent = start_agent(site, contest["agent_token"], contest["queue"], heartbeat_seconds=1,
                        redis_url=contest["redis_url"])
    body = wait_for_runs(site, contest["token"], submission_id, agent, timeout=120)
    (run,) = body["runs"]
    assert run["verdict"] == "wrong_answer" and run["attempts"] == 2
    assert AuditEntry.objects.filter(action="run.requeued", object_id=str(run["id"])).exists()


# relu-cpu's candidate in plain torch: nothing to build (a changed cudacode.py is a build of its own, 20-30 s
# of g++ on CI), and the NUL goes through the logs all the same.
PRINTS_NUL_ON_IMPORT = b"""print("before\\x00after")
import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


def test_a_bundle_that_prints_nul_gets_its_verdict(live_server, contest, start_agent):
    """What it prints goes into the result's logs; PostgreSQL stores no NUL, so the site replaces each one
    (U+FFFD) instead of failing the result until the run ends as internal_error."""
    site = live_server.url
    agent = start_agent(site, contest["agent_token"], contest["queue"])
    files = [(field, (name, PRINTS_NUL_ON_IMPORT if name == "cudacode.py" else data))
             for field, (name, data) in bundle_files("relu-cpu")]
    response = requests.post(f"{site}/api/v1/submissions", data={"issue": contest["issue"].code}, files=files,
                             headers={"Authorization": f"Bearer {contest['token']}"}, timeout=30)
    assert response.status_code == 201, response.text

    (run,) = wait_for_runs(site, contest["token"], response.json()["id"], agent)["runs"]
    assert (run["verdict"], run["attempts"]) == ("passed", 1), run
    assert "before\ufffdafter" in run["result"]["logs"]["compile"], run["result"]["logs"]  # printed on import
