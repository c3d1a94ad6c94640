"""A freeze hides, on the domain's public pages and API too, what finished after it: a run of a frozen
season judged since the freeze shows to visitors and other contestants as "result hidden until the
thaw" (no verdict, figure, flag or chart) on the submission page and its live fragment, the issue page,
the issue search, the public issue API and a submission's JSON; the ranked figures and states shown are
those of what came before. The owner and organizers see everything; the thaw shows it to all. Real
services, database and Redis (the runs are judged through judging.start_run/record_result)."""
import html

import pytest
from django.test import Client
from django.utils import timezone

from leaderboard.services import freeze_scoreboard, unfreeze_scoreboard
from submissions.models import AgentWorker, GpuType, RejudgeScope, Run
from submissions.rules import timing_flags
from submissions.services import accounts, clearing, judging, rejudging, submitting
from tests.site.bundle_files import valid_files
from tests.site.judging_helpers import accept, passed_result, report_all, submit
from tests.site.test_timing_confirmation import unconfirmed_result
from tests.page_text import shows

EN = {"Accept-Language": "en"}
HIDDEN = "Result hidden until the thaw"


def text(response):
    assert response.status_code == 200, response.content[:300]
    return html.unescape(response.content.decode())


def client_of(user=None):
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def token_of(contestant):
    return accounts.create_api_token(contestant, "test")[1]


@pytest.fixture
def frozen(season, alice, bob, organizer, agent_and_token, django_capture_on_commit_callbacks):
    """Alice's v1 judged at 2.0x and accepted before the freeze; then, after it, her v2 judged at 9.0x
    and accepted. {"issue", "v1", "v2", "agent"}."""
    agent, _ = agent_and_token
    capture = django_capture_on_commit_callbacks
    issue = submitting.open_issue(season, alice, title="ReLU")
    v1 = submit(capture, alice, issue, valid_files())
    report_all(v1, agent, passed_result(speedup=2.0))
    accept(v1, organizer.user)
    freeze_scoreboard(season, organizer.user, reason="the last hour")
    v2 = submit(capture, alice, issue, dict(valid_files(), **{"readme.md": b"v2"}))
    report_all(v2, agent, passed_result(speedup=9.0))
    accept(v2, organizer.user)
    return {"issue": issue, "v1": v1, "v2": v2, "agent": agent}


def viewers(alice, bob, organizer):
    """(name, client, whether they see everything)."""
    return [("visitor", client_of(), False), ("bob", client_of(bob.user), False),
            ("alice", client_of(alice.user), True), ("organizer", client_of(organizer.user), True)]


def test_a_run_finished_after_the_freeze_shows_no_result_on_its_submission_page_but_to_its_owner_and_organizers(
        frozen, alice, bob, organizer):
    v2 = frozen["v2"]
    for name, client, sees_all in viewers(alice, bob, organizer):
        for path in (f"/submissions/{v2.pk}/", f"/submissions/{v2.pk}/runs/"):
            page = text(client.get(path, headers=EN))
            if sees_all:
                assert "9.00×" in page and HIDDEN not in page and "Passed" in page, (name, path)
            else:
                assert HIDDEN in page and page.count(HIDDEN) == 2, (name, path)  # both runs (cpu, c500)
                assert "9.00×" not in page and "Passed" not in page and "Test CPU" not in page, (name, path)
                assert "Accepted" not in page, (name, path)  # accepted since the freeze: not told either


def test_the_charts_of_a_run_finished_after_the_freeze_are_drawn_for_its_owner_alone(frozen, alice, bob):
    v2 = frozen["v2"]
    for client, drawn in ((client_of(), False), (client_of(bob.user), False), (client_of(alice.user), True)):
        page = client.get(f"/submissions/{v2.pk}/", headers=EN)
        assert bool(text(page).count('data-figure')) == drawn
        fragment = text(client.get(f"/submissions/{v2.pk}/charts/", headers=EN))
        assert ("data-figure" in fragment) == drawn


def test_the_issue_page_and_search_show_the_public_what_ranked_at_the_freeze(frozen, alice, bob, organizer):
    issue = frozen["issue"]
    for name, client, sees_all in viewers(alice, bob, organizer):
        page = text(client.get(f"/issues/{issue.code}/", headers=EN))
        listing = text(client.get("/issues/", {"q": issue.code}, headers=EN))
        assert "2.00×" in page, name  # v1, judged before the freeze
        if sees_all:
            assert "9.00×" in page and HIDDEN not in page and "9.00×" in listing, name
        else:
            assert "9.00×" not in page and page.count(HIDDEN) == 2, name
            assert "9.00×" not in listing and "2.00×" in listing, name


def test_the_public_issue_api_hides_the_runs_finished_after_the_freeze(frozen, alice, bob, organizer):
    issue, v2 = frozen["issue"], frozen["v2"]
    for name, client, sees_all in viewers(alice, bob, organizer):
        answer = client.get(f"/api/v1/issues/{issue.code}").json()
        version = next(s for s in answer["submissions"] if s["id"] == v2.pk)
        if sees_all:
            assert {r["speedup"] for r in version["runs"]} == {9.0} and version["ranked"], name
            assert not any(r["hidden_until_thaw"] for r in version["runs"]), name
        else:
            assert version["ranked"] == {}, name
            assert all(r["hidden_until_thaw"] and r["verdict"] == "" and r["speedup"] is None and r["flags"] == []
                       for r in version["runs"]), name
        v1 = next(s for s in answer["submissions"] if s["id"] == frozen["v1"].pk)
        assert {figure["speedup"] for figure in v1["ranked"].values()} == {2.0}, name


def test_a_rejudge_finished_after_the_freeze_changes_nothing_the_public_reads_until_the_thaw(
        frozen, season, alice, bob, organizer, django_capture_on_commit_callbacks):
    """Bob reads Alice's accepted v1 through the API (its code is public): the rejudge that found it
    wrong after the freeze is hidden from him, its figure still the one ranked then; Alice sees it."""
    v1, agent = frozen["v1"], frozen["agent"]
    with django_capture_on_commit_callbacks(execute=True):
        rejudging.rejudge(RejudgeScope.SUBMISSION, v1, organizer.user, reason="new harness")
    wrong = dict(passed_result(), status="wrong_answer", reason="max abs error 3.0")
    report_all(v1, agent, wrong)
    rejudged = set(Run.objects.filter(submission=v1, rejudge__isnull=False).values_list("pk", flat=True))

    def read(contestant):
        response = client_of().get(f"/api/v1/submissions/{v1.pk}",
                                   headers={"Authorization": f"Bearer {token_of(contestant)}"})
        assert response.status_code == 200, response.content
        return response.json()

    public = read(bob)
    assert {figure["speedup"] for figure in public["ranked"].values()} == {2.0} and public["state"] == "accepted"
    hidden = [run for run in public["runs"] if run["id"] in rejudged]
    assert len(hidden) == 2 and all(run["hidden_until_thaw"] and run["verdict"] == "" and run["result"] is None
                                    for run in hidden)
    own = read(alice)
    assert own["ranked"] == {} and {run["verdict"] for run in own["runs"] if run["id"] in rejudged} == {"wrong_answer"}

    unfreeze_scoreboard(season, organizer.user, reason="results day")
    assert read(bob)["ranked"] == {}
    assert HIDDEN not in text(client_of().get(f"/submissions/{frozen['v2'].pk}/", headers=EN))


def test_a_second_judging_finished_after_the_freeze_leaves_the_public_its_run_awaiting_it(
        season, alice, bob, organizer, django_capture_on_commit_callbacks):
    """Alice's result awaited a second judging at the freeze; another host confirmed it since: the
    public still reads it as awaiting (no figure), Alice reads it confirmed."""
    capture = django_capture_on_commit_callbacks
    season.second_judging = "every_passed"
    season.save(update_fields=["second_judging"])
    first, _ = accounts.create_agent("first-host", GpuType.objects.all())
    second, _ = accounts.create_agent("second-host", GpuType.objects.all())
    for agent in (first, second):  # a confirming run is queued while another host is online
        AgentWorker.objects.create(agent=agent, name=f"{agent.name}-cpu0", last_heartbeat_at=timezone.now())
    submission = submit(capture, alice, submitting.open_issue(season, alice, title="ReLU"), valid_files())
    with capture(execute=True):
        report_all(submission, first, passed_result(speedup=3.0))
    provisional = list(Run.objects.filter(submission=submission, confirms__isnull=True))
    assert all(timing_flags.AWAITING_SECOND in run.flags for run in provisional)
    freeze_scoreboard(season, organizer.user, reason="the last hour")
    with capture(execute=True):
        report_all(submission, second, passed_result(speedup=3.1))
    assert all(timing_flags.SECOND_CONFIRMED in run.flags for run in Run.objects.filter(pk__in=[r.pk for r in provisional]))

    public = text(client_of(bob.user).get(f"/submissions/{submission.pk}/", headers=EN))
    assert "3.00×" not in public and "awaiting a second judging" in public
    own = text(client_of(alice.user).get(f"/submissions/{submission.pk}/", headers=EN))
    assert "3.00×" in own and "Confirmed by a second judging" in own


def test_a_time_cleared_after_the_freeze_reads_unconfirmed_to_the_public_until_the_thaw(
        season, alice, bob, organizer, agent_and_token, django_capture_on_commit_callbacks):
    """Alice's accepted runs came back `timing_unconfirmed` before the freeze (no ranked figure); an
    organizer cleared one since: Bob still reads it unconfirmed, with no figure ranked, until the thaw."""
    agent, _ = agent_and_token
    submission = submit(django_capture_on_commit_callbacks, alice, submitting.open_issue(season, alice, title="ReLU"),
                        valid_files())
    report_all(submission, agent, unconfirmed_result(speedup=2.5))
    accept(submission, organizer.user)  # its code and runs are public
    freeze_scoreboard(season, organizer.user, reason="the last hour")
    run = Run.objects.get(submission=submission, gpu_type__slug="c500")
    clearing.clear_timing(run.pk, organizer.user, reason="two streams overlap")

    def read(contestant):
        response = client_of().get(f"/api/v1/submissions/{submission.pk}",
                                   headers={"Authorization": f"Bearer {token_of(contestant)}"})
        assert response.status_code == 200, response.content
        answer = response.json()
        return next(r for r in answer["runs"] if r["id"] == run.pk)["flags"], answer["ranked"]

    assert read(bob) == (["timing_unconfirmed"], {})
    flags, ranked = read(alice)
    assert flags == ["timing_cleared"] and ranked["c500"]["speedup"] == 2.5
    cleared_note = "an organizer cleared it, so it counts"
    public = text(client_of(bob.user).get(f"/submissions/{submission.pk}/", headers=EN))
    assert 'data-flag="timing_unconfirmed"' in public and 'data-flag="timing_cleared"' not in public
    assert cleared_note not in public
    own = text(client_of(alice.user).get(f"/submissions/{submission.pk}/", headers=EN))
    assert 'data-flag="timing_cleared"' in own and cleared_note in own

    unfreeze_scoreboard(season, organizer.user, reason="results day")
    assert read(bob) == (["timing_cleared"], read(alice)[1])
