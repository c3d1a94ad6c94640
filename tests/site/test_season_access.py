"""Closed seasons and bans: an invite-only season takes issues and submissions from admitted accounts
only (admitted by an organizer or by an invite code); a banned contestant's submissions are refused on
every path (the form, the API, pull requests) and their standing leaves every public board, cached or
not, live or frozen, until the ban is lifted. Every change has a reason and is audited."""
import html
import json
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from leaderboard.services import freeze_scoreboard
from submissions import jobs
from submissions.bundles import build_bundle
from submissions.models import (AuditEntry, GpuStanding, InviteCode, Season, SeasonAdmission, SeasonBan, Standing,
                                Submission)
from submissions.services import accounts, pr_intake, season_access, standings, submitting
from tests.judged_data import accepted_sample
from tests.page_text import shows
from tests.site.bundle_files import CUDACODE, TORCHCODE, valid_files
from tests.site.pr_host import BareRepository, RecordingApi, local_hosts, run_site_worker
from tests.site.board_caches import EN, ZH

pytestmark = pytest.mark.django_db


def text(response):
    assert response.status_code == 200, response.content[:800]
    return html.unescape(response.content.decode())


def upload(issue):
    return {"issue": issue.pk, "files": [SimpleUploadedFile(name, data) for name, data in valid_files().items()]}


def api_upload(issue):
    return {"issue": issue.code, "files": [SimpleUploadedFile(name, data) for name, data in valid_files().items()]}


def bearer(contestant):
    return {"Authorization": f"Bearer {accounts.create_api_token(contestant)[1]}"}


def invite_only(season, organizer):
    season_access.set_admission(season, "invite_only", actor=organizer.user, reason="closed beta")
    season.refresh_from_db()
    return season


# ---- invite-only seasons ---------------------------------------------------------------------


def test_an_invite_only_season_refuses_an_account_it_has_not_admitted_and_says_how_to_get_in(
        season, alice, bob, organizer):
    issue = submitting.open_issue(season, alice, title="ReLU")
    invite_only(season, organizer)
    with pytest.raises(submitting.AccessRefused) as refused:
        submitting.create_submission(alice, issue, build_bundle(valid_files()))
    assert "S1 is invite-only" in str(refused.value) and "/seasons/S1/join/" in str(refused.value)
    assert "alice" in str(refused.value)  # the account to name when asking the organizers
    with pytest.raises(submitting.AccessRefused, match="invite-only"):
        submitting.open_issue(season, bob, title="GELU")
    assert not Submission.objects.exists()

    admitted, already = season_access.admit(season, season_access.contestants_named("alice"), actor=organizer.user,
                                            reason="finalist of the qualifier")
    assert (admitted, already) == ([alice], [])
    assert submitting.create_submission(alice, issue, build_bundle(valid_files())).pk
    with pytest.raises(submitting.AccessRefused):  # bob is still not admitted
        submitting.open_issue(season, bob, title="GELU")
    # organizers may always submit
    assert submitting.open_issue(season, organizer, title="Organizer's check").pk
    entries = list(AuditEntry.objects.filter(action__startswith="access.").order_by("pk")
                   .values_list("action", "reason", "object_type"))
    assert entries == [("access.admission_changed", "closed beta", "season"),
                       ("access.admitted", "finalist of the qualifier", "season")]


def test_an_invite_code_admits_up_to_its_limit_until_it_expires_or_is_withdrawn(season, alice, bob, organizer):
    invite_only(season, organizer)
    carol = accounts.register_contestant("carol", "pw-carol-123", display_name="Carol")
    (code,) = season_access.create_invites(season, actor=organizer.user, reason="for the Tsinghua team", max_uses=2)
    admission, new = season_access.join(season, alice, code.code.lower())  # typed in any case
    assert new and admission.invite == code
    assert season_access.join(season, alice, code.code) == (admission, False)  # again: no use spent
    season_access.join(season, bob, f" {code.code[:5]}-{code.code[5:]} ")  # spaces and dashes are fine
    code.refresh_from_db()
    assert code.use_count == 2 and code.is_used_up
    with pytest.raises(season_access.JoinRefused, match="has admitted 2 accounts, its limit"):
        season_access.join(season, carol, code.code)

    (expired,) = season_access.create_invites(season, actor=organizer.user, reason="late registration",
                                              expires_at=timezone.now() + timedelta(minutes=5))
    InviteCode.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    with pytest.raises(season_access.JoinRefused, match="expired"):
        season_access.join(season, carol, expired.code)
    (withdrawn,) = season_access.create_invites(season, actor=organizer.user, reason="spare")
    season_access.revoke_invite(withdrawn, actor=organizer.user, reason="posted in a public chat")
    with pytest.raises(season_access.JoinRefused, match="withdrawn"):
        season_access.join(season, carol, withdrawn.code)
    with pytest.raises(season_access.JoinRefused, match="has no invite code NOSUCHCODE"):
        season_access.join(season, carol, "nosuchcode")
    other = Season.objects.create(code="S2", name="Season two")
    (elsewhere,) = season_access.create_invites(other, actor=organizer.user, reason="S2 only")
    with pytest.raises(season_access.JoinRefused, match="has no invite code"):  # a code of another season
        season_access.join(season, carol, elsewhere.code)
    assert not SeasonAdmission.objects.filter(contestant=carol).exists()
    assert AuditEntry.objects.filter(action="access.joined").count() == 2


def test_every_change_of_access_needs_a_reason_and_bad_input_changes_nothing(season, alice, organizer):
    for change in (lambda: season_access.set_admission(season, "invite_only", actor=organizer.user, reason=" "),
                   lambda: season_access.admit(season, [alice], actor=organizer.user, reason=""),
                   lambda: season_access.create_invites(season, actor=organizer.user, reason=""),
                   lambda: season_access.ban(season, alice, actor=organizer.user, reason="  ")):
        with pytest.raises(season_access.AccessChangeRefused, match="needs a reason"):
            change()
    with pytest.raises(season_access.AccessChangeRefused, match="no account is called nobody, ghost"):
        season_access.contestants_named("alice, nobody\nghost")
    with pytest.raises(season_access.AccessChangeRefused, match="unknown admission"):
        season_access.set_admission(season, "secret", actor=organizer.user, reason="x")
    with pytest.raises(season_access.AccessChangeRefused, match="in the future"):
        season_access.create_invites(season, actor=organizer.user, reason="x",
                                     expires_at=timezone.now() - timedelta(days=1))
    with pytest.raises(season_access.AccessChangeRefused, match="use limit is at least 1"):
        season_access.create_invites(season, actor=organizer.user, reason="x", max_uses=0)
    with pytest.raises(season_access.AccessChangeRefused, match="is not banned"):
        season_access.lift_ban(season, alice, actor=organizer.user, reason="x")
    season.refresh_from_db()
    assert season.admission == "open"
    assert not (SeasonAdmission.objects.exists() or InviteCode.objects.exists() or SeasonBan.objects.exists()
                or AuditEntry.objects.filter(action__startswith="access.").exists())


def test_an_organizer_names_accounts_by_user_name_or_display_name_spaces_included(season, alice, bob, organizer):
    dave = accounts.register_contestant("dave", "pw-dave-12345", display_name="Dave Lee")
    named = season_access.contestants_named("dave lee, ALICE\n bob  alice;")
    assert named == [dave, alice, bob]  # once each, in order
    assert season_access.contestant_named("  Dave   Lee ") == dave
    with pytest.raises(season_access.AccessChangeRefused, match="one account at a time"):
        season_access.contestant_named("alice bob")


# ---- bans ------------------------------------------------------------------------------------


@pytest.fixture
def ranked(season, alice, bob, organizer):
    """Alice first (two accepted samples), Bob second (one)."""
    accepted_sample(season, alice, organizer, {"cpu": (4.0, 0.5)}, title="Alice's GELU")
    accepted_sample(season, alice, organizer, {"cpu": (3.0, 0.5)}, title="Alice's ReLU")
    accepted_sample(season, bob, organizer, {"cpu": (2.0, 1.0)}, title="Bob's softmax")
    return season


def test_a_ban_refuses_new_work_takes_the_standing_off_and_lifting_it_puts_it_back(ranked, alice, organizer):
    season = ranked
    before = Standing.objects.get(season=season, contestant=alice)
    kept = {field: getattr(before, field) for field in standings.STANDING_FIELDS}
    version = Season.objects.get(pk=season.pk).board_version
    season_access.ban(season, alice, actor=organizer.user, reason="copied bob's kernel")

    assert Season.objects.get(pk=season.pk).board_version != version  # cached boards change
    assert not Standing.objects.filter(contestant=alice).exists()
    assert not GpuStanding.objects.filter(contestant=alice).exists()
    issue = alice.issues.first()
    with pytest.raises(submitting.AccessRefused, match=r"banned from season S1 \(copied bob's kernel\)"):
        submitting.create_submission(alice, issue, build_bundle({**valid_files(), "readme.md": b"v2"}))
    with pytest.raises(submitting.AccessRefused, match="banned"):
        submitting.open_issue(season, alice, title="another")
    with pytest.raises(season_access.JoinRefused, match="banned"):  # no code gets round a ban
        season_access.join(season, alice, "ANYCODE")
    # a review of one of her submissions while banned keeps her off the boards
    standings.refresh_for(season, alice, actor=organizer.user, reason="a late review")
    assert not Standing.objects.filter(contestant=alice).exists()
    with pytest.raises(season_access.AccessChangeRefused, match="banned from season S1 already"):
        season_access.ban(season, alice, actor=organizer.user, reason="twice")

    season_access.lift_ban(season, alice, actor=organizer.user, reason="she wrote it herself: the timeline shows it")
    after = Standing.objects.get(season=season, contestant=alice)
    assert {field: getattr(after, field) for field in standings.STANDING_FIELDS} == kept
    assert GpuStanding.objects.filter(contestant=alice, passed_count=2).exists()
    assert submitting.create_submission(alice, issue, build_bundle({**valid_files(), "readme.md": b"v2"})).pk
    ban = SeasonBan.objects.get()
    assert (ban.reason, ban.lifted_by, ban.lift_reason) == (
        "copied bob's kernel", organizer.user, "she wrote it herself: the timeline shows it")
    actions = list(AuditEntry.objects.filter(action__in=["access.banned", "access.unbanned", "standing.removed"])
                   .order_by("pk").values_list("action", "reason"))
    assert actions == [("standing.removed", "banned: copied bob's kernel"), ("access.banned", "copied bob's kernel"),
                       ("access.unbanned", "she wrote it herself: the timeline shows it")]
    removed = AuditEntry.objects.get(action="standing.removed")
    assert removed.before["accepted_count"] == 2  # what the board showed is kept


def board_surfaces(client, headers):
    """Every public board of S1, as text: the page, the table it polls, the home page, the CPU board and
    both JSON answers."""
    pages = {path: text(client.get(path, headers=headers)) for path in (
        "/seasons/S1/leaderboard/", "/seasons/S1/leaderboard/?fragment=1", "/", "/seasons/S1/gpus/cpu/")}
    pages["json"] = json.loads(client.get("/api/v1/seasons/S1/leaderboard").content)
    pages["cpu json"] = json.loads(client.get("/api/v1/seasons/S1/gpus/cpu/leaderboard").content)
    return pages


def test_a_banned_contestant_is_on_no_public_board_cached_or_not_until_the_ban_is_lifted(
        client, ranked, alice, bob, organizer, board_cache):
    for headers in (EN, ZH):  # fill the cache
        shown = board_surfaces(client, headers)
        assert all(shows(shown[path], "Alice") for path in shown if isinstance(shown[path], str))
    assert [row["contestant"] for row in shown["json"]["rows"]] == ["Alice", "Bob"]

    season_access.ban(ranked, alice, actor=organizer.user, reason="shared an account")
    for headers in (EN, ZH):
        shown = board_surfaces(client, headers)
        for path, page in shown.items():
            if isinstance(page, str):
                assert not shows(page, "Alice") and shows(page, "Bob"), path
    assert [(row["rank"], row["contestant"]) for row in shown["json"]["rows"]] == [(1, "Bob")]
    assert shown["json"]["total"] == 1
    assert [(row["rank"], row["contestant"]) for row in shown["cpu json"]] == [(1, "Bob")]
    assert json.loads(client.get(f"/api/v1/contestants/{alice.pk}").content)["standings"] == []  # nor on her page
    assert "No standings yet." in text(client.get(f"/contestants/{alice.pk}/", headers=EN))

    season_access.lift_ban(ranked, alice, actor=organizer.user, reason="appeal upheld")
    shown = board_surfaces(client, EN)
    assert [(row["rank"], row["contestant"]) for row in shown["json"]["rows"]] == [(1, "Alice"), (2, "Bob")]
    assert shows(shown["/"], "Alice") and shows(shown["/seasons/S1/gpus/cpu/"], "Alice")


def test_a_ban_during_a_freeze_hides_the_frozen_row_and_ranks_the_rest_without_it(
        client, ranked, alice, bob, organizer):
    freeze_scoreboard(ranked, organizer.user, reason="last hour")
    frozen = json.loads(client.get("/api/v1/seasons/S1/leaderboard").content)
    assert [(r["rank"], r["contestant"]) for r in frozen["rows"]] == [(1, "Alice"), (2, "Bob")]
    season_access.ban(ranked, alice, actor=organizer.user, reason="two accounts")
    frozen = json.loads(client.get("/api/v1/seasons/S1/leaderboard").content)
    assert [(r["rank"], r["contestant"]) for r in frozen["rows"]] == [(1, "Bob")] and frozen["total"] == 1
    page = text(client.get("/seasons/S1/leaderboard/"))
    assert not shows(page, "Alice") and shows(page, "Bob")
    bob_page = json.loads(client.get(f"/api/v1/contestants/{bob.pk}").content)
    assert [s["rank"] for s in bob_page["standings"]] == [1]  # his own page ranks him as the board does
    season_access.lift_ban(ranked, alice, actor=organizer.user, reason="cleared")
    frozen = json.loads(client.get("/api/v1/seasons/S1/leaderboard").content)
    assert [(r["rank"], r["contestant"]) for r in frozen["rows"]] == [(1, "Alice"), (2, "Bob")]


def test_a_banned_contestant_still_sees_their_own_submissions_and_runs(client, ranked, alice, organizer):
    submission = Submission.objects.filter(contestant=alice).first()
    season_access.ban(ranked, alice, actor=organizer.user, reason="abuse of the judge")
    client.force_login(alice.user)
    page = text(client.get(f"/submissions/{submission.pk}/"))
    assert "class ModelNew" in page or "ModelNew" in page
    assert client.get(f"/submissions/{submission.pk}/runs/").status_code == 200
    answer = client.get(f"/api/v1/submissions/{submission.pk}", headers=bearer(alice))
    assert answer.status_code == 200 and len(answer.json()["runs"]) == 2
    season_page = text(client.get("/seasons/S1/"))
    assert "You are banned from S1: abuse of the judge" in season_page


# ---- every path that submits refuses ----------------------------------------------------------


def test_the_submit_form_and_the_api_refuse_a_banned_contestant_with_the_reason(client, season, alice, organizer):
    issue = submitting.open_issue(season, alice, title="ReLU")
    season_access.ban(season, alice, actor=organizer.user, reason="offensive readme")
    client.force_login(alice.user)
    page = text(client.post("/submit/", upload(issue), headers=EN))
    assert "you are banned from season S1 (offensive readme)" in page
    assert "you are banned from season S1 (offensive readme)" in text(client.get("/submit/", headers=EN))
    response = client.post("/api/v1/submissions", api_upload(issue), headers=bearer(alice))
    assert response.status_code == 403 and "offensive readme" in response.json()["detail"]
    response = client.post("/api/v1/issues", json.dumps({"season": "S1", "title": "again"}),
                           content_type="application/json", headers=bearer(alice))
    assert response.status_code == 403 and "banned" in response.json()["detail"]
    assert not Submission.objects.exists()


def test_the_api_refuses_an_unadmitted_account_and_a_code_lets_it_in(client, season, alice, organizer):
    issue = submitting.open_issue(season, alice, title="ReLU")
    invite_only(season, organizer)
    response = client.post("/api/v1/submissions", api_upload(issue), headers=bearer(alice))
    assert response.status_code == 403 and "/seasons/S1/join/" in response.json()["detail"]
    (code,) = season_access.create_invites(season, actor=organizer.user, reason="workshop")
    wrong = client.post("/api/v1/seasons/S1/join", json.dumps({"code": "WRONG"}), content_type="application/json",
                        headers=bearer(alice))
    assert wrong.status_code == 400 and "no invite code WRONG" in wrong.json()["detail"]
    joined = client.post("/api/v1/seasons/S1/join", json.dumps({"code": code.code}), content_type="application/json",
                         headers=bearer(alice))
    assert joined.json() == {"season": "S1", "admitted": True, "new": True}
    assert client.post("/api/v1/submissions", api_upload(issue), headers=bearer(alice)).status_code == 201


GITEE_PR = "https://gitee.com/ccf-ai-infra/GPUCodeForces/pulls/{n}"


@pytest.fixture
def pr_api():
    server = RecordingApi()
    yield server
    server.close()


@pytest.fixture
def host(settings, tmp_path, pr_api):
    local_hosts(settings, tmp_path / "git", pr_api.url)
    return BareRepository(tmp_path / "git", "ccf-ai-infra", "GPUCodeForces")


def folder_of(issue):
    folder = f"{issue.season.code}/{issue.code}/"
    return {folder + "torchcode.py": TORCHCODE, folder + "cudacode.py": CUDACODE}


def test_pull_request_intake_refuses_the_folders_of_a_season_that_banned_the_contestant(
        client, host, pr_api, season, alice, organizer, django_capture_on_commit_callbacks):
    alice.gitee_handle = "alice-gitee"
    alice.save()
    banned_issue = submitting.open_issue(season, alice, title="ReLU")
    other = Season.objects.create(code="S2", name="Season two", second_judging="off")
    other.gpu_types.set(season.gpu_types.all())
    open_issue = submitting.open_issue(other, alice, title="GELU")
    season_access.ban(season, alice, actor=organizer.user, reason="plagiarism")

    host.open_pull_request(3, folder_of(banned_issue))
    with pytest.raises(submitting.AccessRefused, match="plagiarism"):
        pr_intake.submit_pull_request(alice, GITEE_PR.format(n=3))
    with pytest.raises(submitting.AccessRefused, match="plagiarism"):  # named, it is refused before any fetch
        pr_intake.submit_pull_request(alice, "https://gitee.com/nobody/nothing/pulls/9", issue=banned_issue)
    client.force_login(alice.user)
    page = text(client.post("/submit/pull-request/", {"pr_url": GITEE_PR.format(n=3)}, headers=EN))
    assert "you are banned from season S1 (plagiarism)" in page
    response = client.post("/api/v1/pull-requests", json.dumps({"pr_url": GITEE_PR.format(n=3),
                                                                 "issue": banned_issue.code}),
                           content_type="application/json", headers=bearer(alice))
    assert response.status_code == 403

    # the webhook's intake: refused, audited, and told on the pull request
    assert "plagiarism" in jobs.submit_pull_request(alice.pk, GITEE_PR.format(n=3))["error"]
    assert AuditEntry.objects.filter(action="pr.refused", reason__contains="plagiarism").exists()

    # a PR holding a folder of each season: the open season's is submitted, the banned one's is not
    with django_capture_on_commit_callbacks(execute=True):
        host.open_pull_request(4, {**folder_of(banned_issue), **folder_of(open_issue)})
        created = pr_intake.submit_pull_request(alice, GITEE_PR.format(n=4))
    assert [s.issue for s in created] == [open_issue]
    assert not Submission.objects.filter(issue=banned_issue).exists()
    assert run_site_worker(django_capture_on_commit_callbacks) == 0  # nothing was queued behind the refusal


# ---- pages -------------------------------------------------------------------------------------


def test_the_access_page_is_for_organizers_and_lists_admissions_codes_and_bans(client, season, alice, bob, organizer):
    client.force_login(alice.user)
    assert client.get("/organizer/seasons/S1/access/").status_code == 403
    assert client.post("/organizer/seasons/S1/access/bans/", {"account": "bob", "reason": "x"}).status_code == 403
    assert not SeasonBan.objects.exists()

    client.force_login(organizer.user)
    response = client.post("/organizer/seasons/S1/access/admission/",
                           {"admission": "invite_only", "reason": "closed beta"})
    assert response.status_code == 302
    response = client.post("/organizer/seasons/S1/access/admit/", {"accounts": "alice, nobody", "reason": "finalists"},
                           headers=EN)
    assert response.status_code == 400
    page = html.unescape(response.content.decode())
    assert "No account is called nobody: nothing was changed." in page
    assert 'value="finalists"' in page and "alice, nobody</textarea>" in page  # what was typed is kept
    assert not SeasonAdmission.objects.exists()
    client.post("/organizer/seasons/S1/access/admit/", {"accounts": "alice", "reason": "finalists"})
    client.post("/organizer/seasons/S1/access/invites/", {"count": "2", "max_uses": "5", "reason": "workshop",
                                                         "expires_at": ""})
    response = client.post("/organizer/seasons/S1/access/bans/", {"account": "Bob", "reason": ""}, headers=EN)
    assert response.status_code == 400 and "Banning a contestant needs a reason" in response.content.decode()
    client.post("/organizer/seasons/S1/access/bans/", {"account": "Bob", "reason": "two accounts"})

    page = text(client.get("/organizer/seasons/S1/access/", headers=EN))
    assert "Invite only" in page
    assert 'id="admitted-alice"' in page and 'id="ban-bob"' in page and "two accounts" in page
    codes = list(InviteCode.objects.values_list("code", flat=True))
    assert len(codes) == 2 and all(f'id="invite-{code}"' in page and f"/seasons/S1/join/?code={code}" in page
                                   for code in codes)
    assert "0 / 5" in page
    for action in ("access.admission_changed", "access.admitted", "access.invites_created", "access.banned"):
        assert action in page  # the audit trail of the season's access

    client.post(f"/organizer/seasons/S1/access/bans/{bob.pk}/lift/", {"reason": "appeal upheld"})
    client.post(f"/organizer/seasons/S1/access/admitted/{alice.pk}/revoke/", {"reason": "left the team"})
    client.post(f"/organizer/seasons/S1/access/invites/{codes[0]}/revoke/", {"reason": "leaked"})
    assert not SeasonBan.objects.filter(lifted_at__isnull=True).exists()
    assert not SeasonAdmission.objects.filter(revoked_at__isnull=True).exists()
    assert InviteCode.objects.get(code=codes[0]).revoke_reason == "leaked"
    page = text(client.get("/organizer/seasons/S1/access/", headers=EN))
    assert "appeal upheld" in page and "leaked" in page and "No account is admitted yet." in page


def test_a_contestant_joins_on_the_join_page_from_the_link_an_organizer_hands_out(client, season, alice, organizer):
    invite_only(season, organizer)
    (code,) = season_access.create_invites(season, actor=organizer.user, reason="workshop", max_uses=1)
    assert client.get(f"/seasons/S1/join/?code={code.code}").status_code == 302  # sign in first
    client.force_login(alice.user)
    page = text(client.get(f"/seasons/S1/join/?code={code.code}", headers=EN))
    assert f'value="{code.code}"' in page and "S1 is invite-only" in page
    assert not SeasonAdmission.objects.exists()  # a GET admits nobody
    wrong = client.post("/seasons/S1/join/", {"code": "NOPE"}, headers=EN)
    assert wrong.status_code == 400 and "has no invite code NOPE" in wrong.content.decode()
    response = client.post("/seasons/S1/join/", {"code": code.code})
    assert response.status_code == 302 and response.url == "/seasons/S1/"
    assert "you are admitted" in text(client.get("/seasons/S1/", headers=EN))
    assert "S1 is invite-only" not in text(client.get("/submit/", headers=EN))


def test_the_organizer_api_changes_access_with_reasons_and_refuses_contestants(client, season, alice, bob, organizer):
    staff, contestant = bearer(organizer), bearer(alice)
    assert client.get("/api/v1/seasons/S1/access", headers=contestant).status_code == 403
    assert client.post("/api/v1/seasons/S1/access/bans", json.dumps({"account": "bob", "reason": "x"}),
                       content_type="application/json", headers=contestant).status_code == 403

    def call(method, path, body):
        return getattr(client, method)(path, json.dumps(body), content_type="application/json", headers=staff)

    assert call("put", "/api/v1/seasons/S1/access", {"admission": "invite_only", "reason": ""}).status_code == 422
    assert call("put", "/api/v1/seasons/S1/access", {"admission": "invite_only", "reason": "beta"}).status_code == 200
    admitted = call("post", "/api/v1/seasons/S1/access/admitted", {"accounts": ["alice", "Bob"], "reason": "team"})
    assert admitted.json() == {"admitted": ["alice", "bob"], "already": []}
    made = call("post", "/api/v1/seasons/S1/access/invites", {"count": 3, "max_uses": 1, "reason": "spares",
                                                              "expires_at": "2999-01-01T00:00:00Z"})
    assert made.status_code == 201 and len(made.json()) == 3 and made.json()[0]["state"] == "usable"
    banned = call("post", "/api/v1/seasons/S1/access/bans", {"account": "bob", "reason": "cheating"})
    assert banned.status_code == 201 and banned.json()["reason"] == "cheating"
    assert call("post", "/api/v1/seasons/S1/access/bans", {"account": "bob", "reason": "again"}).status_code == 400
    access = client.get("/api/v1/seasons/S1/access", headers=staff).json()
    assert access["admission"] == "invite_only"
    assert sorted(a["account"] for a in access["admitted"]) == ["alice", "bob"]
    assert len(access["invites"]) == 3 and [b["account"] for b in access["bans"]] == ["bob"]
    lifted = call("post", "/api/v1/seasons/S1/access/bans/bob/lift", {"reason": "appeal"})
    assert lifted.status_code == 200 and lifted.json()["lift_reason"] == "appeal"
    code = access["invites"][0]["code"]
    withdrawn = call("post", f"/api/v1/seasons/S1/access/invites/{code}/withdraw", {"reason": "leaked"})
    assert withdrawn.json()["state"] == "withdrawn"
    gone = call("post", "/api/v1/seasons/S1/access/admitted/alice/withdraw", {"reason": "left"})
    assert [a["account"] for a in gone.json()["admitted"]] == ["bob"]
    audited = AuditEntry.objects.filter(action__startswith="access.").order_by("pk")
    assert list(audited.values_list("action", "reason")) == [
        ("access.admission_changed", "beta"), ("access.admitted", "team"), ("access.admitted", "team"),
        ("access.invites_created", "spares"), ("access.banned", "cheating"), ("access.unbanned", "appeal"),
        ("access.invite_revoked", "leaked"), ("access.admission_revoked", "left")]
