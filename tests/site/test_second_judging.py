"""No single GPU host decides what the public sees: a passed result that would change the public board
waits, out of every ranking and public view, for a second judging on another host (or comes from a
host the organizer trusts). Through the agent HTTP API, with the jobs in the real Redis."""
import html
import re

import pytest
from django.utils import timezone

from submissions import queueing
from submissions.bundles import build_bundle
from submissions.models import AgentWorker, AuditEntry, Contestant, GpuStanding, GpuType, Run, RunStatus, Season, Standing
from submissions.services import accounts, clearing, reviewing, submitting
from tests.site.bundle_files import valid_files
from tests.site.judging_helpers import hand_out_to_token, passed_result
from tests.site.test_agent_api import agent_headers

EN = {"Accept-Language": "en-US,en;q=0.9"}
ZH = {"Accept-Language": "zh-CN,zh;q=0.9"}


# 999 as a figure (999, 999.0, 999.00×), never the digits inside a timestamp's microseconds or inside
# a token's hex digits ("…a999f…" in a CSRF token or a key)
FIGURE_999 = re.compile(r"(?<![\w.])999(?:\.\d+)?(?!\w)")

def text(response):
    assert response.status_code == 200, response.status_code
    return html.unescape(response.content.decode())


@pytest.fixture
def cpu_season(db):
    """A season judged on the CPU alone (one run per submission), with the default second judging."""
    cpu = GpuType.objects.create(slug="cpu", name="CPU")
    season = Season.objects.create(code="S1", name="Season one")
    season.gpu_types.add(cpu)
    assert season.second_judging == "board_changes"
    return season


def online_host(name):
    """An agent with one worker that sent a heartbeat just now (a second judging waits for such a host)."""
    agent, token = accounts.create_agent(name, GpuType.objects.all())
    AgentWorker.objects.create(agent=agent, name=f"{name}-gpu0", last_heartbeat_at=timezone.now())
    return agent, token


@pytest.fixture
def host_a(cpu_season):
    return online_host("host-a")


@pytest.fixture
def host_b(cpu_season):
    return online_host("host-b")


def submit(capture, contestant, season, title="ReLU"):
    """A submission an organizer accepted before it was judged: the public board shows accepted samples
    only, so these tests ask whether one host's figure for an accepted sample reaches it."""
    issue = submitting.open_issue(season, contestant, title=title)
    with capture(execute=True):
        submission = submitting.create_submission(contestant, issue, build_bundle(valid_files()))
    reviewer = (Contestant.objects.filter(user__username="reviewer").first()
                or accounts.register_contestant("reviewer", "pw-reviewer-123", display_name="Reviewer", is_staff=True))
    reviewing.review_submission(submission, reviewer.user, "accepted", rubric={"execution_time": 5},
                                override_reason="test data: fixed points",
                                acceptance_override="test data: accepted before its judging")
    return submission


def start(client, capture, run, token, worker=None):
    hand_out_to_token(run, token)
    body = {"attempt": Run.objects.get(pk=run.pk).attempts}
    if worker:
        body["worker"] = worker
    with capture(execute=True):
        return client.post(f"/api/v1/agent/runs/{run.pk}/start", body, content_type="application/json",
                           headers=agent_headers(token))


def judge(client, capture, run, host, speedup, *, status="passed"):
    """The host starts the run and reports it, as its agent would, over HTTP."""
    _, token = host
    answer = start(client, capture, run, token, worker=f"{host[0].name}-gpu0")
    assert answer.status_code == 200, answer.json()
    result = passed_result(speedup=speedup)
    if status != "passed":
        result.update(status=status, timing=None)
    with capture(execute=True):
        reported = client.post(f"/api/v1/agent/runs/{run.pk}/result", result, content_type="application/json",
                               headers=agent_headers(token, answer.json()["job_secret"]))
    assert reported.status_code == 200, reported.json()
    return Run.objects.get(pk=run.pk)


def public_views(client, season, contestant, submission):
    """Everything the public sees of the season and of this contestant, as one text."""
    client.logout()
    parts = [
        client.get(f"/api/v1/seasons/{season.code}/leaderboard").content.decode(),
        client.get(f"/api/v1/seasons/{season.code}/gpus/cpu/leaderboard").content.decode(),
        client.get(f"/api/v1/seasons/{season.code}/hardware").content.decode(),
        client.get(f"/api/v1/contestants/{contestant.pk}").content.decode(),
        client.get(f"/api/v1/issues/{submission.issue.code}").content.decode(),
        text(client.get(f"/seasons/{season.code}/leaderboard/", headers=EN)),
        text(client.get(f"/seasons/{season.code}/", headers=EN)),
        text(client.get("/", headers=EN)),
        text(client.get(f"/contestants/{contestant.pk}/", headers=EN)),
        text(client.get(f"/submissions/{submission.pk}/", headers=EN)),
        text(client.get(f"/submissions/{submission.pk}/runs/", headers=EN)),
        text(client.get(f"/submissions/{submission.pk}/charts/", headers=EN)),
        text(client.get("/issues/", headers=EN)),
        text(client.get(f"/issues/{submission.issue.code}/", headers=EN)),
    ]
    return "\n".join(parts)


def board_best(client, season):
    client.logout()
    rows = client.get(f"/api/v1/seasons/{season.code}/leaderboard").json()["rows"]
    return {row["contestant"]: row["best_speedup"] for row in rows}


def test_one_host_reporting_999x_is_not_public_until_a_second_host_judges(
        client, cpu_season, alice, organizer, host_a, host_b, django_capture_on_commit_callbacks):
    """The attack: host A reports passed 999x (for a sample already accepted). Nothing public shows 999."""
    submission = submit(django_capture_on_commit_callbacks, alice, cpu_season)
    run = judge(client, django_capture_on_commit_callbacks, submission.runs.get(), host_a, 999.0)

    # nothing public shows the figure: boards, APIs, hardware table, contestant, issue and submission pages
    assert board_best(client, cpu_season) == {"Alice": None}
    assert not FIGURE_999.search(public_views(client, cpu_season, alice, submission))
    assert Standing.objects.get(season=cpu_season, contestant=alice).best_speedup is None
    assert GpuStanding.objects.get(season=cpu_season, contestant=alice).best_speedup is None
    assert run.verdict == "passed" and "awaiting_second_judging" in run.flags

    # its owner sees the figure, marked provisional (page and contestant API), in both languages
    client.force_login(alice.user)
    own = text(client.get(f"/submissions/{submission.pk}/", headers=EN))
    assert "999.00×" in own and "awaiting a second judging" in own
    assert "等待另一台主机的第二次评测" in text(client.get(f"/submissions/{submission.pk}/", headers=ZH))
    _, token = accounts.create_api_token(alice)
    mine = client.get(f"/api/v1/submissions/{submission.pk}", headers={"Authorization": f"Bearer {token}"}).json()
    (own_run,) = [r for r in mine["runs"] if r["id"] == run.pk]
    assert own_run["speedup"] == 999.0 and own_run["provisional"] is True
    assert mine["ranked"] == {}
    public_runs = client.get(f"/api/v1/contestants/{alice.pk}").json()["submissions"][0]["runs"]
    assert [(r["speedup"], r["provisional"]) for r in public_runs if r["id"] == run.pk] == [(None, True)]

    # one confirming run, queued behind fresh runs on the rejudge queue, naming the provisional run
    confirming = Run.objects.get(confirms=run)
    assert confirming.status == RunStatus.QUEUED and confirming.queue_name.endswith(".rejudge")
    assert confirming.rq_job_id in queueing.judging_queue(confirming.queue_name).get_job_ids()
    assert AuditEntry.objects.filter(action="run.awaiting_second_judging", object_id=str(run.pk)).exists()


def test_the_judging_host_is_refused_its_own_second_judging_and_the_run_goes_back_to_the_front(
        client, cpu_season, alice, host_a, host_b, django_capture_on_commit_callbacks, settings):
    submission = submit(django_capture_on_commit_callbacks, alice, cpu_season)
    run = judge(client, django_capture_on_commit_callbacks, submission.runs.get(), host_a, 999.0)
    confirming = Run.objects.get(confirms=run)
    attempt = confirming.attempts
    queue = queueing.judging_queue(confirming.queue_name)

    for worker in ("host-a-gpu1", None):  # a sibling worker of the same host, and an agent naming none
        refused = start(client, django_capture_on_commit_callbacks, confirming, host_a[1], worker=worker)
        assert refused.status_code == 403
        answer = refused.json()
        assert answer["accept_jobs"] is False and answer["retry_after_s"] == settings.CONFIRMATION_REFUSAL_PAUSE_SECONDS
        assert "another host" in answer["detail"]
        confirming.refresh_from_db()
        assert confirming.status == RunStatus.QUEUED and confirming.agent is None
        assert confirming.attempts == attempt + 1 and confirming.spent_attempts == 1  # no attempt used up
        assert queue.get_job_ids()[0] == confirming.rq_job_id  # the front of its queue, the new attempt
        attempt = confirming.attempts
    assert AuditEntry.objects.filter(action="run.requeued", object_id=str(confirming.pk)).count() == 2
    assert AuditEntry.objects.filter(action="run.start_refused", object_id=str(confirming.pk)).count() == 2
    assert "awaiting_second_judging" in Run.objects.get(pk=run.pk).flags


def test_a_second_judging_waits_in_the_database_while_no_other_host_is_online(
        client, cpu_season, alice, host_a, django_capture_on_commit_callbacks):
    """With one host of the GPU type online, its workers would take and hand back the second judging
    forever: it waits, with no job in Redis, until another host calls in."""
    from submissions.services import recovery

    submission = submit(django_capture_on_commit_callbacks, alice, cpu_season)
    run = judge(client, django_capture_on_commit_callbacks, submission.runs.get(), host_a, 999.0)
    confirming = Run.objects.get(confirms=run)
    assert (confirming.status, confirming.rq_job_id) == (RunStatus.WAITING, "")
    recovery.sweep_runs()
    assert Run.objects.get(pk=confirming.pk).status == RunStatus.WAITING
    host_b = online_host("host-b")
    with django_capture_on_commit_callbacks(execute=True):
        recovery.sweep_runs()
    confirming.refresh_from_db()
    assert confirming.status == RunStatus.QUEUED
    assert queueing.judging_queue(confirming.queue_name).get_job_ids()[0] == confirming.rq_job_id
    judge(client, django_capture_on_commit_callbacks, confirming, host_b, 998.0)
    assert "second_judging_confirmed" in Run.objects.get(pk=run.pk).flags


def test_a_second_host_that_agrees_makes_the_figure_public(
        client, cpu_season, alice, host_a, host_b, django_capture_on_commit_callbacks):
    submission = submit(django_capture_on_commit_callbacks, alice, cpu_season)
    run = judge(client, django_capture_on_commit_callbacks, submission.runs.get(), host_a, 3.0)
    assert board_best(client, cpu_season) == {"Alice": None}

    second = judge(client, django_capture_on_commit_callbacks, Run.objects.get(confirms=run), host_b, 2.8)
    run.refresh_from_db()
    assert "second_judging_confirmed" in run.flags and "awaiting_second_judging" not in run.flags
    assert "second_judging_confirmed" in second.flags
    # both rank: the ranked figure is their (lower) median
    assert Standing.objects.get(season=cpu_season, contestant=alice).best_speedup == 2.8
    assert board_best(client, cpu_season) == {"Alice": 2.8}
    assert client.get(f"/api/v1/contestants/{alice.pk}").json()["submissions"][0]["ranked"]["cpu"]["runs_counted"] == 2
    assert "2.80×" in public_views(client, cpu_season, alice, submission)
    entry = AuditEntry.objects.get(action="run.second_judging_confirmed", object_id=str(run.pk))
    assert entry.actor_label == "agent:host-b" and entry.after["confirming_run"] == second.pk
    assert AuditEntry.objects.filter(action="standing.changed", actor_label="agent:host-b").exists()
    assert not Run.objects.filter(confirms=second).exists()  # a second judging is never judged a third time


@pytest.mark.parametrize("second_speedup, second_status", [(2.0, "passed"), (None, "wrong_answer")])
def test_a_second_host_that_disagrees_keeps_it_out_and_flags_it_for_an_organizer(
        client, cpu_season, alice, organizer, host_a, host_b, django_capture_on_commit_callbacks,
        second_speedup, second_status):
    submission = submit(django_capture_on_commit_callbacks, alice, cpu_season)
    run = judge(client, django_capture_on_commit_callbacks, submission.runs.get(), host_a, 999.0)
    second = judge(client, django_capture_on_commit_callbacks, Run.objects.get(confirms=run), host_b,
                   second_speedup or 1.0, status=second_status)

    run.refresh_from_db()
    assert "second_judging_disagrees" in run.flags and "awaiting_second_judging" not in run.flags
    assert board_best(client, cpu_season) == {"Alice": None}
    assert not FIGURE_999.search(public_views(client, cpu_season, alice, submission))
    assert AuditEntry.objects.filter(action="run.second_judging_disagrees", object_id=str(run.pk)).exists()

    # the organizer's review page says so and offers to clear it
    client.force_login(organizer.user)
    review = text(client.get(f"/organizer/submissions/{submission.pk}/", headers=EN))
    assert "Second judging disagrees" in review and f"/organizer/runs/{run.pk}/clear-second-judging/" in review
    if second_status == "passed":
        # the second host's own figure is no more certain: it waits too, until the organizer picks one
        assert "second_judging_disagrees" in second.flags
        response = client.post(f"/organizer/runs/{second.pk}/clear-second-judging/", {"reason": "B's host is ours"})
        assert response.status_code == 302
        assert board_best(client, cpu_season) == {"Alice": 2.0}
        assert AuditEntry.objects.filter(action="run.second_judging_cleared", object_id=str(second.pk)).exists()
    else:
        # the latest judgement failed: the submission has no figure, whatever the organizer clears
        assert second.verdict == "wrong_answer"
        with pytest.raises(clearing.ClearingRefused):
            clearing.clear_second_judging(second.pk, organizer.user, "nothing to clear")


def test_a_trusted_hosts_result_is_public_at_once_and_it_confirms_another(
        client, cpu_season, alice, bob, host_a, host_b, django_capture_on_commit_callbacks):
    trusted, _ = host_b
    trusted.trusted = True
    trusted.save()
    submission = submit(django_capture_on_commit_callbacks, alice, cpu_season)
    run = judge(client, django_capture_on_commit_callbacks, submission.runs.get(), host_b, 5.0)
    assert run.flags == [] and not Run.objects.filter(confirms=run).exists()
    assert board_best(client, cpu_season) == {"Alice": 5.0}

    other = submit(django_capture_on_commit_callbacks, bob, cpu_season, title="GELU")
    provisional = judge(client, django_capture_on_commit_callbacks, other.runs.get(), host_a, 4.0)
    assert "awaiting_second_judging" in provisional.flags
    judge(client, django_capture_on_commit_callbacks, Run.objects.get(confirms=provisional), host_b, 4.2)
    assert board_best(client, cpu_season) == {"Alice": 5.0, "Bob": 4.0}


def test_an_unreviewed_submissions_figure_is_on_no_public_board_until_it_is_accepted(
        client, cpu_season, alice, organizer, host_b, django_capture_on_commit_callbacks):
    trusted, _ = host_b
    trusted.trusted = True
    trusted.save()
    issue = submitting.open_issue(cpu_season, alice, title="Unreviewed")
    with django_capture_on_commit_callbacks(execute=True):
        submission = submitting.create_submission(alice, issue, build_bundle(valid_files()))
    judge(client, django_capture_on_commit_callbacks, submission.runs.get(), host_b, 7.0)  # a trusted host's word
    assert board_best(client, cpu_season) == {"Alice": None}
    client.logout()
    board = text(client.get(f"/seasons/{cpu_season.code}/leaderboard/", headers=EN))
    assert "7.00" not in board
    reviewing.review_submission(submission, organizer.user, "accepted", rubric={"execution_time": 5},
                                override_reason="test data: fixed points")
    assert board_best(client, cpu_season) == {"Alice": 7.0}


def test_with_second_judging_off_one_hosts_word_is_public_at_once(
        client, cpu_season, alice, host_a, django_capture_on_commit_callbacks):
    cpu_season.second_judging = "off"
    cpu_season.save()
    submission = submit(django_capture_on_commit_callbacks, alice, cpu_season)
    run = judge(client, django_capture_on_commit_callbacks, submission.runs.get(), host_a, 999.0)
    assert run.flags == [] and not Run.objects.filter(confirms=run).exists()
    assert board_best(client, cpu_season) == {"Alice": 999.0}


def test_a_result_that_changes_nothing_public_needs_no_second_judging_unless_every_result_does(
        client, cpu_season, alice, bob, host_a, host_b, django_capture_on_commit_callbacks, settings):
    settings.SECOND_JUDGING_TOP_N = 1
    host_b[0].trusted = True
    host_b[0].save()
    judge(client, django_capture_on_commit_callbacks, submit(django_capture_on_commit_callbacks, bob, cpu_season).runs.get(),
          host_b, 10.0)
    judge(client, django_capture_on_commit_callbacks,
          submit(django_capture_on_commit_callbacks, alice, cpu_season, title="GELU").runs.get(), host_b, 3.0)

    # alice's 2.0 is no new best of hers (3.0), not the season's top 1 (bob's 10.0), the submission's first run
    quiet = judge(client, django_capture_on_commit_callbacks,
                  submit(django_capture_on_commit_callbacks, alice, cpu_season, title="SiLU").runs.get(), host_a, 2.0)
    assert quiet.flags == []
    # a rejudge far from that run's figure is held (more than 25% off the median of the others)
    from submissions.services import rejudging
    with django_capture_on_commit_callbacks(execute=True):
        rejudging.rejudge("submission", quiet.submission, None, "again")
    far = judge(client, django_capture_on_commit_callbacks,
                quiet.submission.runs.filter(status=RunStatus.QUEUED, confirms=None).get(), host_a, 2.9)
    assert "awaiting_second_judging" in far.flags
    assert "off the median" in AuditEntry.objects.get(action="run.awaiting_second_judging", object_id=str(far.pk)).reason

    cpu_season.second_judging = "every_passed"
    cpu_season.save()
    held = judge(client, django_capture_on_commit_callbacks,
                 submit(django_capture_on_commit_callbacks, alice, cpu_season, title="Tanh").runs.get(), host_a, 1.5)
    assert "awaiting_second_judging" in held.flags


def test_organizers_set_the_season_setting_and_trust_a_host_in_the_admin_and_see_it_on_the_fleet_page(
        client, cpu_season, organizer, host_a):
    from django.contrib.auth import get_user_model

    from tests.site.test_ranking import _admin_form

    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "pw-123456789"))
    form = client.get(f"/admin/submissions/season/{cpu_season.pk}/change/", headers=EN)
    assert 'name="second_judging"' in form.content.decode()
    saved = client.post(f"/admin/submissions/season/{cpu_season.pk}/change/",
                        _admin_form(cpu_season, second_judging="every_passed"))
    assert saved.status_code == 302
    cpu_season.refresh_from_db()
    assert cpu_season.second_judging == "every_passed"

    agent, _ = host_a
    changelist = client.get("/admin/submissions/agent/")
    assert 'name="form-0-trusted"' in changelist.content.decode()
    saved = client.post("/admin/submissions/agent/", {
        "form-TOTAL_FORMS": "1", "form-INITIAL_FORMS": "1", "form-0-id": str(agent.pk), "form-0-trusted": "on",
        "_save": "Save"})
    assert saved.status_code == 302
    agent.refresh_from_db()
    assert agent.trusted is True
    entry = AuditEntry.objects.get(action="agent.trust_changed", object_id=str(agent.pk))
    assert (entry.before, entry.after, entry.actor_label) == ({"trusted": False}, {"trusted": True}, "root")

    client.post("/api/v1/agent/heartbeat", {"worker": {"name": "host-a-gpu0"}}, content_type="application/json",
                headers=agent_headers(host_a[1]))
    client.force_login(organizer.user)
    fleet = text(client.get("/organizer/fleet/", headers=EN))
    assert "host-a" in fleet and ">trusted<" in fleet
    assert client.get("/organizer/fleet.json").json()["workers"][0]["agent_trusted"] is True
