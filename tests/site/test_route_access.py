"""Every route of the site, answered per role, with real objects owned by contestant A and contestant B.

The routes come from Django's resolver: a route added later without a row in ROUTES fails
test_every_route_is_classified, so whoever adds it has to say who may reach it. Roles: an anonymous
visitor, contestant A, contestant B, an organizer (is_staff), and two agents ("agent" holds A's running
run; "agent2" is another agent granted the same GPU types). Pages are asked with a session, the API
with each role's bearer token (a personal token for people, the agent's token for agents).

Outcomes: a status code, "login" (302 to the sign-in page), "admin-login" (302 to the admin's) or
"redirect" (another 302: a form's or an action's answer). A GET, or a refused request, must leave the
site as it was (state_of_the_site)."""
import json
from dataclasses import dataclass, field

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.test import Client
from django.urls import URLResolver, get_resolver

from clarifications import services as clarification_services
from clarifications.models import Announcement, Clarification
from submissions.models import (AgentWorker, ApiToken, AuditEntry, BenchmarkRun, Contestant, DatasetExport, GpuType,
                                InviteCode, Issue, ProfileFile, Rejudge, RejudgeScope, Review, Run, RunStatus, Season,
                                SeasonAdmission, SeasonBan, Submission)
from submissions.services import accounts, datasets, judging, profiles, rejudging, submitting
from tests.judged_data import accepted_sample
from tests.site.bundle_files import valid_files
from tests.site.judging_helpers import passed_result, report_all, submit

pytestmark = pytest.mark.django_db

# The owners ask last (A owns the objects the routes name, "agent" holds the run): the others' requests
# meet the objects as they were, and must leave them so.
PAGE_ROLES = ("anonymous", "b", "organizer", "a")
API_ROLES = ("anonymous", "b", "organizer", "agent2", "a", "agent")
SECRET_CODE = "get_init_inputs"  # a name in the bundle's torchcode.py
SECRET_LOG = "stdout-of-the-run-of-a"


@pytest.fixture(autouse=True)
def export_dir(settings, tmp_path):
    settings.DATASET_EXPORT_DIR = tmp_path / "datasets"


@pytest.fixture
def world(season, alice, bob, organizer, django_capture_on_commit_callbacks):
    """A's judged, unreviewed submission; B's; A's accepted sample (in dataset export 1); A's second
    submission whose CPU run the agent is judging now (its c500 run still queued, leased to nobody);
    a rejudge, a worker, a benchmark run, and each role's credentials."""
    gpu_types = GpuType.objects.all()
    agent, agent_token = accounts.create_agent("agent-one", gpu_types)
    agent2, agent2_token = accounts.create_agent("agent-two", gpu_types)
    capture = django_capture_on_commit_callbacks
    logged = passed_result()
    logged["logs"]["stdout"] = SECRET_LOG
    issue_a = submitting.open_issue(season, alice, title="A's ReLU")
    sub_a = submit(capture, alice, issue_a, valid_files())
    report_all(sub_a, agent, logged)
    with capture(execute=True):  # A's profile of her CPU run, judged, its .ncu-rep kept
        run_a_cpu = sub_a.runs.get(gpu_type__slug="cpu")
        profiled = profiles.request_profile(run_a_cpu.pk, alice.user).runs.get()
    report_all(profiled.submission, agent, passed_result())
    ProfileFile.objects.create(run=profiled, content=b"NCU-REP", size=7, sha256="0" * 64, attempt=profiled.attempts)
    issue_b = submitting.open_issue(season, bob, title="B's ReLU")
    sub_b = submit(capture, bob, issue_b, valid_files())
    report_all(sub_b, agent, passed_result())
    accepted = accepted_sample(season, alice, organizer, {"cpu": (2.0, 1.0)}, title="A's accepted op")
    export = datasets.export_season(season, actor=organizer.user, reason="route access test")
    sub_a_running = submit(capture, alice, issue_a, valid_files())
    leased = sub_a_running.runs.get(gpu_type__slug="cpu")
    _, job_secret = judging.start_run(leased.pk, agent, leased.attempts)
    unleased = sub_a_running.runs.get(gpu_type__slug="c500")
    with capture(execute=True):
        rejudge = rejudging.rejudge(RejudgeScope.SUBMISSION, sub_b, organizer.user, "route access test")
    token_a, raw_a = accounts.create_api_token(alice, name="a's token")
    benchmark = BenchmarkRun.objects.create(
        contestant=alice, gpu_name="Test GPU", device_kind="cuda", dataset_name="S1 v1", season=season,
        dataset_checksum="0" * 64, harness_version="1", sample_count=0, passed_count=0)
    question = clarification_services.ask(season, alice.user, "May A's kernel use tensor cores?")
    announcement = clarification_services.post_announcement(season, organizer.user, "Judging resumes.", reason="test")
    return {
        "season": season, "alice": alice, "bob": bob, "organizer": organizer, "agent": agent, "agent2": agent2,
        "issue_a": issue_a, "issue_b": issue_b, "sub_a": sub_a, "sub_b": sub_b, "accepted": accepted,
        "export": export, "leased": leased, "unleased": unleased, "job_secret": job_secret, "rejudge": rejudge,
        "profiled": profiled, "run_a_cpu": run_a_cpu,
        "token_a": token_a, "benchmark": benchmark, "question": question, "announcement": announcement,
        "worker": AgentWorker.objects.create(agent=agent, name="agent-one-gpu0"),
        "users": {"a": alice.user, "b": bob.user, "organizer": organizer.user},
        "bearer": {"a": raw_a, "b": accounts.create_api_token(bob)[1],
                   "organizer": accounts.create_api_token(organizer)[1], "agent": agent_token,
                   "agent2": agent2_token},
    }


def ids(world):
    """What a route's path template may name."""
    return {
        "season": world["season"].code, "issue_a": world["issue_a"].code, "issue_b": world["issue_b"].code,
        "accepted_issue": world["accepted"].issue.code, "sub_a": world["sub_a"].pk, "sub_b": world["sub_b"].pk,
        "accepted": world["accepted"].pk, "a": world["alice"].pk, "b": world["bob"].pk,
        "leased": world["leased"].pk, "unleased": world["unleased"].pk, "run_a": world["sub_a"].runs.first().pk,
        "queued_run_b": world["rejudge"].runs.first().pk, "rejudge": world["rejudge"].pk,
        "worker": world["worker"].pk, "export": world["export"].number, "token_a": world["token_a"].pk,
        "benchmark": world["benchmark"].pk, "attempt": world["leased"].attempts,
        "question": world["question"].pk, "announcement": world["announcement"].pk,
        "profiled": world["profiled"].pk, "run_a_cpu": world["run_a_cpu"].pk,
    }


@dataclass
class Case:
    method: str
    path: str  # a template over ids(world)
    expected: dict  # role -> outcome
    data: object = None  # a dict, or a callable of the world (a fresh body for each request)
    json: bool = False  # the body as JSON (the API); else a form
    headers: dict = field(default_factory=dict)  # templates over ids(world) and "job_secret"
    # the roles whose request may change the site; None: those whose POST or PUT is not refused
    may_change: tuple = None


def everyone(outcome, roles=PAGE_ROLES):
    return dict.fromkeys(roles, outcome)


def people(outcome, **others):
    """A page for signed-in people: visitors are sent to sign in."""
    return {"anonymous": "login", "a": outcome, "b": outcome, "organizer": outcome, **others}


def staff(outcome):
    """An organizer's page: visitors sign in, contestants are refused."""
    return {"anonymous": "login", "a": 403, "b": 403, "organizer": outcome}


def api(anonymous=401, a=401, b=401, organizer=401, agent=401, agent2=401):
    return {"anonymous": anonymous, "a": a, "b": b, "organizer": organizer, "agent": agent, "agent2": agent2}


def api_people(outcome, **others):
    """An operation of the personal tokens (contestants' and organizers'): agents' tokens are not those."""
    return api(**{"a": outcome, "b": outcome, "organizer": outcome, **others})


def api_staff(outcome):
    return api(a=403, b=403, organizer=outcome)


def api_public(outcome=200):
    return dict.fromkeys(API_ROLES, outcome)


def submission_upload(world):
    return {"issue": world["issue_a"].code, "files": [
        SimpleUploadedFile(name, data) for name, data in valid_files().items()]}


SECRET = {"X-Job-Secret": "{job_secret}"}
PR_URL = "https://unknown-host.example/owner/repo/pulls/1"  # refused before anything is fetched

# Every named route: the requests that show who may reach it, and what each role gets.
ROUTES = {
    # ---- public pages
    "home": [Case("get", "/", everyone(200))],
    "season_detail": [Case("get", "/seasons/{season}/", everyone(200))],
    "season_leaderboard": [Case("get", "/seasons/{season}/leaderboard/", everyone(200))],
    "hardware_comparison": [Case("get", "/seasons/{season}/hardware/", everyone(200))],
    "season_dataset": [Case("get", "/seasons/{season}/dataset/", everyone(200))],
    # the world's export is not published (its season has not ended): no one downloads it here
    "season_dataset_download": [Case("get", "/seasons/{season}/dataset/v{export}.tar.gz", everyone(404))],
    "gpu_leaderboard": [Case("get", "/seasons/{season}/gpus/cpu/", everyone(200))],
    "contestant_detail": [Case("get", "/contestants/{b}/", everyone(200))],
    # the charts show figures only (times, speedups), public on every board
    "submission_charts": [Case("get", "/submissions/{sub_b}/charts/", everyone(200))],
    "issue_list": [Case("get", "/issues/", everyone(200))],
    "issue_detail": [Case("get", "/issues/{issue_b}/", everyone(200))],
    # the page of anyone's submission: its code and logs only to whoever may see them (tests below)
    "submission_detail": [Case("get", "/submissions/{sub_a}/", everyone(200))],
    "submission_runs": [Case("get", "/submissions/{sub_a}/runs/", everyone(200))],
    # one's own queued run: only A cancels it; B and an organizer are told it is not theirs (tests/site/test_own_cancel.py)
    "cancel_own_run": [Case("get", "/runs/{unleased}/cancel/", people(405)),
                       Case("post", "/runs/{unleased}/cancel/", people("redirect"), may_change=("a",))],
    # a profile run's report and its .ncu-rep: its owner's and the organizers' alone (tests/site/test_profiles.py);
    # asking for one: A's passed run, by A alone (B and the organizer are told it is not theirs)
    "run_profile_page": [Case("get", "/runs/{profiled}/profile/", {"anonymous": 404, "a": 200, "b": 404,
                                                                   "organizer": 200})],
    "run_profile_download": [Case("get", "/runs/{profiled}/profile.ncu-rep", {"anonymous": 404, "a": 200, "b": 404,
                                                                              "organizer": 200})],
    "request_profile": [Case("get", "/runs/{run_a_cpu}/profile/request/", people(405)),
                        Case("post", "/runs/{run_a_cpu}/profile/request/", people("redirect"), may_change=("a",))],
    # the comparison of one's own versions: B and the organizer see none of A's (tests/browser/test_comparison_page.py)
    "issue_versions": [Case("get", "/issues/{issue_a}/versions/", people(200))],
    "set_language": [Case("get", "/i18n/setlang/", everyone("redirect")),
                     Case("post", "/i18n/setlang/", everyone("redirect"), data={"language": "zh-hans"})],
    # ---- accounts
    "login": [Case("get", "/accounts/login/", everyone(200))],
    "logout": [Case("get", "/accounts/logout/", everyone(405)),  # a GET must not sign anyone out
               Case("post", "/accounts/logout/", everyone("redirect"))],
    "register": [Case("get", "/accounts/register/", everyone(200))],
    "password_reset": [Case("get", "/accounts/password_reset/", everyone(200))],
    "password_reset_done": [Case("get", "/accounts/password_reset/done/", everyone(200))],
    "password_reset_confirm": [Case("get", "/accounts/reset/MQ/bad-token/", everyone(200))],  # "invalid link"
    "password_reset_complete": [Case("get", "/accounts/reset/done/", everyone(200))],
    "account": [Case("get", "/account/", people(200))],
    "agreement": [Case("get", "/account/agreement/", people(200))],
    "create_token": [Case("get", "/account/tokens/", people(405)),
                     Case("post", "/account/tokens/", people("redirect"), data={"name": "mine"})],
    # B (and an organizer) posting A's token id: the answer is "no such token of yours", A's token lives on
    # (test_another_contestants_token_cannot_be_revoked)
    "revoke_token": [Case("get", "/account/tokens/{token_a}/revoke/", people(405)),
                     Case("post", "/account/tokens/{token_a}/revoke/", people("redirect"), may_change=("a",))],
    # ---- contestants' forms (posting to another's issue is refused: test_a_contestant_cannot_submit_to_anothers_issue)
    "open_issue": [Case("get", "/issues/new/", people(200))],
    "submit": [Case("get", "/submit/", people(200)),
               Case("get", "/submit/?issue={issue_b}", people(200))],
    "submit_pull_request": [Case("get", "/submit/pull-request/", people(200))],
    # the hosts' webhook: no session, no CSRF; refused unless signed with the host's secret
    "pr_webhook": [Case("get", "/webhooks/github/", everyone(405)),
                   Case("post", "/webhooks/github/", everyone(403), data={"action": "opened"})],
    # ---- the organizer console
    "organizer_queue": [Case("get", "/organizer/", staff(200))],
    "organizer_review": [Case("get", "/organizer/submissions/{sub_b}/", staff(200))],
    "organizer_review_submit": [
        Case("get", "/organizer/submissions/{sub_b}/review/", staff(405)),
        Case("post", "/organizer/submissions/{sub_b}/review/", staff("redirect"),
             data={"decision": "rejected", "reason": "route access test"})],
    "organizer_rejudge_submission": [
        Case("get", "/organizer/submissions/{sub_b}/rejudge/", staff(405)),
        Case("post", "/organizer/submissions/{sub_b}/rejudge/", staff("redirect"), data={"reason": "test"})],
    "organizer_clear_timing": [
        Case("get", "/organizer/runs/{run_a}/clear-timing/", staff(405)),
        Case("post", "/organizer/runs/{run_a}/clear-timing/", staff("redirect"), data={"reason": "test"})],
    "organizer_clear_second_judging": [
        Case("get", "/organizer/runs/{run_a}/clear-second-judging/", staff(405)),
        Case("post", "/organizer/runs/{run_a}/clear-second-judging/", staff("redirect"), data={"reason": "test"})],
    "organizer_cancel_run": [
        Case("get", "/organizer/runs/{queued_run_b}/cancel/", staff(405)),
        Case("post", "/organizer/runs/{queued_run_b}/cancel/", staff("redirect"), data={"reason": "test"})],
    "organizer_rejudge_issue": [
        Case("get", "/organizer/issues/{issue_b}/rejudge/", staff(405)),
        Case("post", "/organizer/issues/{issue_b}/rejudge/", staff("redirect"), data={"reason": "test"})],
    "organizer_rejudge_season": [
        Case("get", "/organizer/seasons/{season}/rejudge/", staff(405)),
        Case("post", "/organizer/seasons/{season}/rejudge/", staff("redirect"), data={"reason": "test"})],
    "organizer_rejudge": [Case("get", "/organizer/rejudges/{rejudge}/", staff(200))],
    "organizer_final_system_test": [Case("get", "/organizer/seasons/{season}/final-system-test/", staff(200))],
    # the season has not ended: the start is refused with a message, back to the page
    "organizer_final_system_test_start": [
        Case("get", "/organizer/seasons/{season}/final-system-test/start/", staff(405)),
        Case("post", "/organizer/seasons/{season}/final-system-test/start/", staff(400), data={"reason": "test"})],
    "organizer_fleet": [Case("get", "/organizer/fleet/", staff(200))],
    "organizer_fleet_json": [Case("get", "/organizer/fleet.json", staff(200))],
    "organizer_drain_worker": [
        Case("get", "/organizer/fleet/workers/{worker}/drain/", staff(405)),
        Case("post", "/organizer/fleet/workers/{worker}/drain/", staff("redirect"), data={"reason": "test"})],
    "organizer_resume_worker": [
        Case("get", "/organizer/fleet/workers/{worker}/resume/", staff(405)),
        Case("post", "/organizer/fleet/workers/{worker}/resume/", staff("redirect"), data={"reason": "test"})],
    "organizer_export": [Case("get", "/organizer/export/{kind}.csv".replace("{kind}", kind), staff(200))
                         for kind in ("submissions", "reviews", "audit")],
    "organizer_dataset": [Case("get", "/organizer/seasons/{season}/dataset/", staff(200))],
    "organizer_dataset_export": [
        Case("get", "/organizer/seasons/{season}/dataset/export/", staff(405)),
        Case("post", "/organizer/seasons/{season}/dataset/export/", staff("redirect"), data={"reason": "test"})],
    "organizer_seasons": [Case("get", "/organizer/seasons/", staff(200))],
    "organizer_season_settings": [
        Case("get", "/organizer/seasons/{season}/settings/", staff(200)),
        Case("post", "/organizer/seasons/{season}/settings/", staff("redirect"),
             data={"section": "ranking", "ranking-rule": "cumulative_score", "ranking-reason": "test"})],
    "organizer_season_freeze": [
        Case("get", "/organizer/seasons/{season}/settings/freeze/", staff(405)),
        Case("post", "/organizer/seasons/{season}/settings/freeze/", staff("redirect"),
             data={"freeze-action": "freeze", "freeze-reason": "test"})],
    "organizer_dataset_download": [Case("get", "/organizer/seasons/{season}/dataset/v{export}.tar.gz", staff(200))],
    "organizer_dataset_publish": [
        Case("get", "/organizer/seasons/{season}/dataset/v{export}/publish/", staff(405)),
        Case("post", "/organizer/seasons/{season}/dataset/v{export}/publish/", staff("redirect"),
             data={"reason": "test"})],
    "organizer_sample_weight": [
        Case("get", "/organizer/issues/{accepted_issue}/weight/", staff(405)),
        Case("post", "/organizer/issues/{accepted_issue}/weight/", staff("redirect"),
             data={"weight": "2", "reason": "test"})],
    # season access: the world has no admission, invite code or ban to withdraw or lift (400 and 404 say so)
    "organizer_season_access": [Case("get", "/organizer/seasons/{season}/access/", staff(200))],
    "organizer_season_admission": [
        Case("get", "/organizer/seasons/{season}/access/admission/", staff(405)),
        Case("post", "/organizer/seasons/{season}/access/admission/", staff("redirect"),
             data={"admission": "invite_only", "reason": "test"})],
    "organizer_season_admit": [
        Case("get", "/organizer/seasons/{season}/access/admit/", staff(405)),
        Case("post", "/organizer/seasons/{season}/access/admit/", staff("redirect"),
             data={"accounts": "bob", "reason": "test"})],
    "organizer_season_revoke_admission": [
        Case("get", "/organizer/seasons/{season}/access/admitted/{b}/revoke/", staff(405)),
        Case("post", "/organizer/seasons/{season}/access/admitted/{b}/revoke/", staff(400), data={"reason": "test"})],
    "organizer_season_invites": [
        Case("get", "/organizer/seasons/{season}/access/invites/", staff(405)),
        Case("post", "/organizer/seasons/{season}/access/invites/", staff("redirect"),
             data={"count": "1", "reason": "test"})],
    "organizer_season_revoke_invite": [
        Case("get", "/organizer/seasons/{season}/access/invites/NOSUCHCODE/revoke/", staff(405)),
        Case("post", "/organizer/seasons/{season}/access/invites/NOSUCHCODE/revoke/", staff(404),
             data={"reason": "test"})],
    "organizer_season_ban": [
        Case("get", "/organizer/seasons/{season}/access/bans/", staff(405)),
        Case("post", "/organizer/seasons/{season}/access/bans/", staff("redirect"),
             data={"account": "bob", "reason": "test"})],
    "organizer_season_lift_ban": [
        Case("get", "/organizer/seasons/{season}/access/bans/{b}/lift/", staff(405)),
        Case("post", "/organizer/seasons/{season}/access/bans/{b}/lift/", staff(400), data={"reason": "test"})],
    # a contestant's join page: a wrong code is refused (400) and admits nobody
    "season_join": [Case("get", "/seasons/{season}/join/", people(200)),
                    Case("post", "/seasons/{season}/join/", people(400), data={"code": "NOSUCHCODE"})],
    # ---- clarifications: a season's page for everyone (a question and a private answer for its asker
    # alone: tests/site/test_clarifications.py); asking signed in; answering and announcing for organizers
    "season_clarifications": [Case("get", "/seasons/{season}/clarifications/", everyone(200))],
    "season_ask": [Case("get", "/seasons/{season}/clarifications/ask/", people(405)),
                   Case("post", "/seasons/{season}/clarifications/ask/", people("redirect"),
                        data={"question": "route access test"})],
    "organizer_clarifications": [Case("get", "/organizer/clarifications/", staff(200))],
    "organizer_answer_clarification": [
        Case("get", "/organizer/clarifications/{question}/answer/", staff(405)),
        Case("post", "/organizer/clarifications/{question}/answer/", staff("redirect"),
             data={"answer": "yes", "visibility": "public", "reason": "test"})],
    "organizer_announce": [
        Case("get", "/organizer/announcements/", staff(405)),
        Case("post", "/organizer/announcements/", staff("redirect"),
             data={"season": "{season}", "text": "route access test", "reason": "test"})],
    "organizer_withdraw_announcement": [
        Case("get", "/organizer/announcements/{announcement}/withdraw/", staff(405)),
        Case("post", "/organizer/announcements/{announcement}/withdraw/", staff("redirect"), data={"reason": "test"})],
    # ---- the API: documentation
    "api:api-root": [Case("get", "/api/v1/", api_public(404))],
    "api:openapi-json": [Case("get", "/api/v1/openapi.json", api_public())],
    "api:openapi-view": [Case("get", "/api/v1/docs", api_public())],
    # ---- the API: agents. "agent" started A's CPU run; "agent2" holds nothing and knows its secret.
    "api:agent_heartbeat": [Case("post", "/api/v1/agent/heartbeat", api(agent=200, agent2=200), data={}, json=True)],
    "api:agent_run_start": [
        # another agent may not take over a run being judged (409); the holder's repeated start re-issues it
        Case("post", "/api/v1/agent/runs/{leased}/start", api(agent=200, agent2=409),
             data={"attempt": "{attempt}"}, json=True)],
    "api:agent_run_progress": [
        Case("post", "/api/v1/agent/runs/{leased}/progress", api(agent=200, agent2=403),
             data={"attempt": "{attempt}", "stage": "timing"}, json=True, headers=SECRET)],
    "api:agent_run_bundle": [
        Case("get", "/api/v1/agent/runs/{leased}/bundle", api(agent=200, agent2=403), headers=SECRET),
        # a queued run nobody started: no agent gets its files before `start` hands it out
        Case("get", "/api/v1/agent/runs/{unleased}/bundle", api(agent=403, agent2=403), headers=SECRET)],
    # a profile run's .ncu-rep: the leased run is no profile run (409 to its agent); another agent: 403
    "api:agent_run_profile_file": [
        Case("post", "/api/v1/agent/runs/{leased}/profile-file?attempt={attempt}", api(agent=409, agent2=403),
             data=b"NCU-REP", headers=SECRET)],
    "api:agent_run_result": [
        Case("post", "/api/v1/agent/runs/{leased}/result", api(agent=200, agent2=403),
             data=lambda world: passed_result(), json=True, headers=SECRET)],
    # ---- the API: contestants
    "api:issue_create": [Case("post", "/api/v1/issues", api_people(201),
                              data={"season": "{season}", "title": "an issue"}, json=True)],
    # to A's issue: only A (B and the organizer are not its author: 400 naming the refusal)
    "api:submission_create": [Case("post", "/api/v1/submissions", api(a=201, b=400, organizer=400),
                                   data=submission_upload)],
    "api:submission_detail": [
        Case("get", "/api/v1/submissions/{sub_a}", api(a=200, b=404, organizer=200)),
        Case("get", "/api/v1/submissions/{accepted}", api_people(200))],
    # one's own: each person lists theirs (test_client_api: B never sees A's)
    "api:own_submissions": [Case("get", "/api/v1/submissions", api_people(200)),
                            Case("get", "/api/v1/submissions?season={season}", api_people(200))],
    "api:own_issues": [Case("get", "/api/v1/issues", api_people(200))],
    "api:token_owner": [Case("get", "/api/v1/me", api_people(200))],
    "api:run_profile_request": [Case("post", "/api/v1/runs/{run_a_cpu}/profile", api(a=201, b=403, organizer=403),
                                     data={}, json=True)],
    "api:run_profile": [Case("get", "/api/v1/runs/{profiled}/profile", api(a=200, b=404, organizer=200))],
    "api:run_profile_file": [Case("get", "/api/v1/runs/{profiled}/profile/report", api(a=200, b=404, organizer=200))],
    "api:run_cancel": [Case("post", "/api/v1/runs/{unleased}/cancel", api(a=200, b=403, organizer=403), data={},
                            json=True)],
    "api:submission_from_pull_request": [
        Case("post", "/api/v1/pull-requests", api(a=400, b=404, organizer=404),
             data={"pr_url": PR_URL, "issue": "{issue_a}"}, json=True)],
    "api:benchmark_run_create": [Case("post", "/api/v1/benchmark-runs", api_people(422), data={}, json=True)],
    "api:benchmark_run": [Case("get", "/api/v1/benchmark-runs/{benchmark}", api_people(200))],
    # ---- the API: organizers (a personal token of a staff account)
    "api:dataset_exports": [Case("get", "/api/v1/seasons/{season}/datasets", api_staff(200))],
    "api:dataset_export_create": [Case("post", "/api/v1/seasons/{season}/datasets", api_staff(201),
                                       data={"reason": "test"}, json=True)],
    "api:dataset_export": [Case("get", "/api/v1/seasons/{season}/datasets/{export}", api_staff(200))],
    "api:dataset_export_archive": [Case("get", "/api/v1/seasons/{season}/datasets/{export}/archive", api_staff(200))],
    "api:dataset_export_manifest": [Case("get", "/api/v1/seasons/{season}/datasets/{export}/manifest", api_staff(200))],
    "api:dataset_export_publish": [Case("post", "/api/v1/seasons/{season}/datasets/{export}/publish",
                                        api_staff(400), data={"reason": "test"}, json=True)],  # not ended yet
    "api:published_datasets": [Case("get", "/api/v1/seasons/{season}/datasets/published", api_public())],
    "api:published_dataset_archive": [Case("get", "/api/v1/seasons/{season}/datasets/published/{export}/archive",
                                           api_public(404))],
    "api:dataset_weights": [Case("get", "/api/v1/seasons/{season}/weights", api_staff(200))],
    "api:dataset_weights_change": [Case("put", "/api/v1/seasons/{season}/weights", api_staff(200),
                                        data={"rule": "uniform", "reason": "test"}, json=True)],
    "api:sample_weight_change": [Case("put", "/api/v1/issues/{accepted_issue}/weight", api_staff(200),
                                      data={"weight": 2, "reason": "test"}, json=True)],
    "api:season_access": [Case("get", "/api/v1/seasons/{season}/access", api_staff(200))],
    "api:season_admission_change": [Case("put", "/api/v1/seasons/{season}/access", api_staff(200),
                                         data={"admission": "invite_only", "reason": "test"}, json=True)],
    "api:season_admit": [Case("post", "/api/v1/seasons/{season}/access/admitted", api_staff(200),
                              data={"accounts": ["bob"], "reason": "test"}, json=True)],
    "api:season_admission_withdraw": [Case("post", "/api/v1/seasons/{season}/access/admitted/bob/withdraw",
                                           api_staff(400), data={"reason": "test"}, json=True)],  # not admitted
    "api:season_invites_create": [Case("post", "/api/v1/seasons/{season}/access/invites", api_staff(201),
                                       data={"reason": "test"}, json=True)],
    "api:season_invite_withdraw": [Case("post", "/api/v1/seasons/{season}/access/invites/NOSUCHCODE/withdraw",
                                        api_staff(404), data={"reason": "test"}, json=True)],
    "api:season_ban": [Case("post", "/api/v1/seasons/{season}/access/bans", api_staff(201),
                            data={"account": "bob", "reason": "test"}, json=True)],
    "api:season_ban_lift": [Case("post", "/api/v1/seasons/{season}/access/bans/bob/lift", api_staff(400),
                                 data={"reason": "test"}, json=True)],  # not banned
    # a contestant joins with a code: a wrong one is refused and admits nobody
    "api:season_join": [Case("post", "/api/v1/seasons/{season}/join", api_people(400), data={"code": "NOSUCHCODE"},
                             json=True)],
    # ---- the API: clarifications (one's own and those answered for everyone; organizers answer and announce)
    "api:season_clarifications": [Case("get", "/api/v1/seasons/{season}/clarifications", api_people(200))],
    "api:clarification_ask": [Case("post", "/api/v1/seasons/{season}/clarifications", api_people(201),
                                   data={"question": "route access test"}, json=True)],
    "api:waiting_clarifications": [Case("get", "/api/v1/clarifications/waiting", api_staff(200))],
    "api:clarification_answer": [Case("post", "/api/v1/clarifications/{question}/answer", api_staff(200),
                                      data={"answer": "yes", "public": True, "reason": "test"}, json=True)],
    "api:announcement_create": [Case("post", "/api/v1/seasons/{season}/announcements", api_staff(201),
                                     data={"text": "route access test", "reason": "test"}, json=True)],
    # ---- the API: public boards (no token needed; one is ignored)
    "api:season_list": [Case("get", "/api/v1/seasons", api_public())],
    "api:season_issues": [Case("get", "/api/v1/seasons/{season}/issues", api_public())],
    "api:season_leaderboard": [Case("get", "/api/v1/seasons/{season}/leaderboard", api_public())],
    "api:contestant_detail": [Case("get", "/api/v1/contestants/{b}", api_public())],
    "api:issue_page": [Case("get", "/api/v1/issues/{issue_b}", api_public())],
    "api:season_hardware": [Case("get", "/api/v1/seasons/{season}/hardware", api_public())],
    "api:season_hardware_comparison": [Case("get", "/api/v1/seasons/{season}/hardware/comparison", api_public())],
    "api:gpu_leaderboard": [Case("get", "/api/v1/seasons/{season}/gpus/cpu/leaderboard", api_public())],
}

# Django's admin: staff only, behind its own sign-in page. Its routes are many (one set per model);
# these stand for them all.
ADMIN_CASES = [Case("get", "/admin/", {"anonymous": "admin-login", "a": "admin-login", "b": "admin-login",
                                       "organizer": 200}),
               Case("get", "/admin/submissions/submission/", {"anonymous": "admin-login", "a": "admin-login",
                                                              "b": "admin-login", "organizer": 403})]
CSRF_EXEMPT = {
    "pr_webhook",  # the hosts sign their deliveries instead (services/pr_intake.verify_webhook)
    "set_language",  # a display preference: a forged switch changes nothing the visitor owns
}


def named_routes():
    """(name, route) of every URL pattern the resolver knows, namespaces included."""
    def walk(patterns, prefix="", namespace=""):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                inner = namespace + (f"{pattern.namespace}:" if pattern.namespace else "")
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern), inner)
            else:
                yield (namespace + pattern.name if pattern.name else None), prefix + str(pattern.pattern)
    return list(walk(get_resolver().url_patterns))


def test_every_route_is_classified():
    site_routes = [(name, route) for name, route in named_routes() if not route.startswith("admin/")]
    unnamed = [route for name, route in site_routes if name is None]
    assert not unnamed, f"routes without a name cannot be classified: {unnamed}"
    names = {name for name, _ in site_routes}
    assert names - set(ROUTES) == set(), "classify these routes in ROUTES (who may reach them)"
    assert set(ROUTES) - names == set(), "ROUTES names routes that no longer exist"


def outcome(response):
    if response.status_code == 302:
        if response.url.startswith("/admin/login/"):
            return "admin-login"
        return "login" if response.url.startswith("/accounts/login/") else "redirect"
    return response.status_code


def fill(value, world, names):
    if callable(value):
        return value(world)
    if isinstance(value, str):
        return value.format(**names)
    if isinstance(value, dict):
        return {key: fill(item, world, names) for key, item in value.items()}
    return value


def as_number(value):
    return int(value) if isinstance(value, str) and value.isdigit() else value


# One client of each kind for the module, its cookies cleared before each request (a new visitor): a new
# Client sets up the site's middleware again, WhiteNoise's scan of every static file included (25 s here).
CLIENTS = {}


def new_visitor(enforce_csrf_checks=False):
    client = CLIENTS.setdefault(enforce_csrf_checks, Client(enforce_csrf_checks=enforce_csrf_checks))
    client.cookies.clear()
    return client


def ask(world, case, role, client=None):
    names = {**ids(world), "job_secret": world["job_secret"]}
    client = client or new_visitor()
    headers = fill(case.headers, world, names)
    is_api = case.path.startswith("/api/")
    if is_api and role != "anonymous":
        headers["Authorization"] = f"Bearer {world['bearer'][role]}"
    elif not is_api and role != "anonymous":
        client.force_login(world["users"][role])
    path = case.path.format(**names)
    data = fill(case.data, world, names)
    if isinstance(data, bytes):  # a file's raw bytes (an agent's profile file)
        return client.generic(case.method.upper(), path, data, content_type="application/octet-stream", headers=headers)
    if case.json:
        body = json.dumps({key: as_number(value) for key, value in data.items()})
        return getattr(client, case.method)(path, body, content_type="application/json", headers=headers)
    if data is None:
        return getattr(client, case.method)(path, headers=headers)
    return getattr(client, case.method)(path, data, headers=headers)


def state_of_the_site():
    """What a request could change: rows made, and the fields that the site's actions write. Left out:
    the audit of refusals (a refused agent's call is recorded, by design) and a token's last use."""
    return {
        "rows": [model.objects.count() for model in (Issue, Submission, Run, Review, Rejudge, DatasetExport,
                                                     BenchmarkRun, ApiToken, AgentWorker, SeasonAdmission,
                                                     InviteCode, SeasonBan, ProfileFile)],
        "audit": AuditEntry.objects.exclude(action__endswith="_refused").count(),
        "runs": list(Run.objects.order_by("pk").values_list("status", "verdict", "agent", "attempts", "job_secret_hash",
                                                            "alive_at", "stage", "flags")),
        "tokens": list(ApiToken.objects.order_by("pk").values_list("revoked_at", flat=True)),
        "workers": list(AgentWorker.objects.order_by("pk").values_list("draining", flat=True)),
        "seasons": list(Season.objects.order_by("pk").values_list("dataset_weight_rule", "dataset_weight_settings",
                                                                  "admission")),
        "clarifications": list(Clarification.objects.order_by("pk").values_list("answer", "public", "answered_at")),
        "announcements": list(Announcement.objects.order_by("pk").values_list("withdrawn_at", flat=True)),
        "profiles": list(Contestant.objects.order_by("pk").values_list(
            "display_name", "github_handle", "agreement_version")),
    }


REFUSED = {400, 401, 403, 404, 405, 409, 422, "login", "admin-login"}


def may_change(case, role, answered):
    if case.may_change is not None:
        return role in case.may_change
    return case.method != "get" and answered not in REFUSED


class RolledBack(Exception):
    """Ends a route's savepoint: the next route meets the world as it was made."""


def route_mismatches(world, name):
    """What the route answered against what its row expects, and who changed the site who should not have."""
    mismatches = []
    for case in ADMIN_CASES if name == "admin" else ROUTES[name]:
        roles = API_ROLES if case.path.startswith("/api/") else PAGE_ROLES
        answered, changed = {}, []
        for role in roles:
            before = state_of_the_site()
            answered[role] = outcome(ask(world, case, role))
            if not may_change(case, role, answered[role]) and state_of_the_site() != before:
                changed.append(role)
        expected = {role: case.expected[role] for role in roles}
        if answered != expected:
            mismatches.append(f"{name}: {case.method.upper()} {case.path} answered {answered}, expected {expected}")
        if changed:
            mismatches.append(f"{name}: {case.method.upper()} {case.path} changed the site for {changed}")
    return mismatches


def test_each_role_gets_what_each_route_allows_it(world):
    """...and a GET, or a request refused, changes nothing. One world serves every route, each route's
    requests rolled back after it (a world made for each route took a minute)."""
    mismatches = []
    for name in sorted(ROUTES) + ["admin"]:
        try:
            with transaction.atomic():
                mismatches += route_mismatches(world, name)
                raise RolledBack
        except RolledBack:
            pass
    assert not mismatches, "\n".join(mismatches)


def test_every_page_refuses_a_post_without_the_csrf_token(world):
    """Whatever a page does with a POST, a forged one from another site (no token) is refused first."""
    checked = set()
    for name, cases in ROUTES.items():
        if name.startswith("api:") or name in CSRF_EXEMPT:
            continue
        for role in ("anonymous", "a", "organizer"):
            client = new_visitor(enforce_csrf_checks=True)
            case = Case("post", cases[0].path, {}, data=cases[-1].data)
            assert ask(world, case, role, client).status_code == 403, f"POST {case.path} as {role}"
        checked.add(name)
    assert len(checked) == len(ROUTES) - len(CSRF_EXEMPT) - sum(name.startswith("api:") for name in ROUTES)


# ---- what the answers hold, beyond their status ----------------------------------------------


def page_as(world, role, path):
    client = new_visitor()
    if role != "anonymous":
        client.force_login(world["users"][role])
    return client.get(path).content.decode()


def test_only_the_author_and_organizers_see_unaccepted_code_and_logs(world):
    sub_a = world["sub_a"].pk
    seen = {role: (SECRET_CODE in page_as(world, role, f"/submissions/{sub_a}/"),
                   SECRET_LOG in page_as(world, role, f"/submissions/{sub_a}/runs/"))
            for role in PAGE_ROLES}
    assert seen == {"anonymous": (False, False), "a": (True, True), "b": (False, False), "organizer": (True, True)}
    accepted = world["accepted"].pk
    assert all(SECRET_CODE in page_as(world, role, f"/submissions/{accepted}/") for role in PAGE_ROLES)


def test_another_contestants_token_cannot_be_revoked(world):
    token = world["token_a"]
    for role in ("b", "organizer"):
        client = Client()
        client.force_login(world["users"][role])
        client.post(f"/account/tokens/{token.pk}/revoke/")
    token.refresh_from_db()
    assert token.revoked_at is None
    assert accounts.contestant_by_token(world["bearer"]["a"]) == world["alice"]


def test_a_contestant_cannot_submit_to_anothers_issue(world):
    client = Client()
    client.force_login(world["users"]["b"])
    before = world["issue_a"].submissions.count()
    response = client.post("/submit/", {"issue": world["issue_a"].pk, "files": [
        SimpleUploadedFile(name, data) for name, data in valid_files().items()]})
    assert response.status_code == 200  # the form again, with its error
    assert world["issue_a"].submissions.count() == before


def test_another_agent_changes_nothing_on_a_run_it_does_not_hold(world):
    """agent2 naming A's run in its heartbeat (alive, or abandoned) neither keeps it alive nor hands it back."""
    leased = world["leased"]
    Run.objects.filter(pk=leased.pk).update(alive_at=None)
    client = Client()
    body = {"judging": [{"run_id": leased.pk, "attempt": leased.attempts}],
            "abandoned": [{"run_id": leased.pk, "attempt": leased.attempts}]}
    answer = client.post("/api/v1/agent/heartbeat", json.dumps(body), content_type="application/json",
                         headers={"Authorization": f"Bearer {world['bearer']['agent2']}"})
    assert answer.status_code == 200
    leased.refresh_from_db()
    assert (leased.status, leased.agent_id, leased.alive_at) == (RunStatus.RUNNING, world["agent"].pk, None)


def test_why_a_bundle_skips_the_cpu_names_its_files_only_to_whoever_may_see_the_code(world, django_capture_on_commit_callbacks):
    """"Not judged on CPU" is public; the markers behind it (a file's name, what in it needs CUDA) describe
    the code, private until it is accepted."""
    files = {**valid_files(), "cudacode.py": b"import triton\n" + valid_files()["cudacode.py"]}
    cuda = submit(django_capture_on_commit_callbacks, world["bob"], world["issue_b"], files)
    shown = {}
    for role in PAGE_ROLES:
        page = page_as(world, role, f"/submissions/{cuda.pk}/")
        assert "Not judged on CPU" in page
        shown[role] = "cudacode.py: triton" in page
    assert shown == {"anonymous": False, "a": False, "b": True, "organizer": True}
