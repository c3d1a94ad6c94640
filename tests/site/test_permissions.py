"""Who sees what: anonymous, the author, another contestant and an organizer, on pages and the API."""
from datetime import timedelta

import pytest
from django.utils import timezone

from submissions.services import accounts, reviewing, submitting
from tests.site.judging_helpers import passed_result, report_all, submit
from tests.site.bundle_files import valid_files

ROLES = ("anonymous", "author", "other", "organizer")
SECRET = "get_init_inputs"  # a name in torchcode.py (one token, so highlighting keeps it whole)
LOG = "ok"  # the run's stdout


@pytest.fixture
def world(season, alice, bob, organizer, agent_and_token, django_capture_on_commit_callbacks):
    agent, _ = agent_and_token
    submission = submit(django_capture_on_commit_callbacks, alice, submitting.open_issue(season, alice, title="ReLU"),
                        valid_files())
    report_all(submission, agent, passed_result())
    tokens = {name: accounts.create_api_token(c)[1] for name, c in (("author", alice), ("other", bob),
                                                                      ("organizer", organizer))}
    users = {"author": alice.user, "other": bob.user, "organizer": organizer.user}
    return {"submission": submission, "tokens": tokens, "users": users, "season": season}


def as_role(client, world, role):
    client.logout()
    if role != "anonymous":
        client.force_login(world["users"][role])
    return client


def page_access(client, world, role, url):
    response = as_role(client, world, role).get(url)
    if response.status_code == 302:
        return "login" if "/accounts/login/" in response.url else "redirect"
    return response.status_code


# role -> expected outcome, per page
PAGE_MATRIX = {
    "/organizer/": {"anonymous": "login", "author": 403, "other": 403, "organizer": 200},
    "/organizer/submissions/{id}/": {"anonymous": "login", "author": 403, "other": 403, "organizer": 200},
    "/organizer/export/audit.csv": {"anonymous": "login", "author": 403, "other": 403, "organizer": 200},
    "/organizer/seasons/S1/dataset/": {"anonymous": "login", "author": 403, "other": 403, "organizer": 200},
    "/account/": {"anonymous": "login", "author": 200, "other": 200, "organizer": 200},
    "/submit/": {"anonymous": "login", "author": 200, "other": 200, "organizer": 200},
    "/submissions/{id}/": {"anonymous": 200, "author": 200, "other": 200, "organizer": 200},
}


@pytest.mark.parametrize("url", PAGE_MATRIX)
def test_page_access_matrix(client, world, url):
    outcomes = {role: page_access(client, world, role, url.format(id=world["submission"].pk)) for role in ROLES}
    assert outcomes == PAGE_MATRIX[url]


def code_and_logs_seen(client, world, role):
    pk = world["submission"].pk
    client = as_role(client, world, role)
    page = client.get(f"/submissions/{pk}/").content.decode()
    runs = client.get(f"/submissions/{pk}/runs/").content.decode()
    return SECRET in page, "<h4>stdout</h4>" in runs


def api_status(client, world, role):
    headers = {} if role == "anonymous" else {"Authorization": f"Bearer {world['tokens'][role]}"}
    return client.get(f"/api/v1/submissions/{world['submission'].pk}", headers=headers).status_code


def test_code_logs_and_api_before_acceptance(client, world):
    seen = {role: code_and_logs_seen(client, world, role) for role in ROLES}
    assert seen == {"anonymous": (False, False), "author": (True, True), "other": (False, False),
                    "organizer": (True, True)}
    assert {role: api_status(client, world, role) for role in ROLES} == {
        "anonymous": 401, "author": 200, "other": 404, "organizer": 200}


def test_accepted_code_becomes_public(client, world):
    reviewing.review_submission(world["submission"], world["users"]["organizer"], "accepted", reason="ok")
    assert {role: code_and_logs_seen(client, world, role)[0] for role in ROLES} == dict.fromkeys(ROLES, True)
    assert api_status(client, world, "other") == 200


@pytest.mark.parametrize("public_after_end, other_sees", [(True, True), (False, False)])
def test_code_after_the_season_ends_follows_the_season_setting(client, world, public_after_end, other_sees):
    season = world["season"]
    season.ends_at = timezone.now() - timedelta(minutes=1)
    season.code_public_after_end = public_after_end
    season.save()
    assert code_and_logs_seen(client, world, "other")[0] is other_sees
    assert code_and_logs_seen(client, world, "anonymous")[0] is other_sees


def test_only_organizers_can_review_or_rejudge(client, world):
    pk = world["submission"].pk
    posts = {f"/organizer/submissions/{pk}/review/": {"decision": "rejected", "reason": "x"},
             f"/organizer/submissions/{pk}/rejudge/": {"reason": "x"},
             "/organizer/seasons/S1/rejudge/": {"reason": "x"}}
    for url, data in posts.items():
        assert as_role(client, world, "anonymous").post(url, data).status_code == 302
        assert as_role(client, world, "author").post(url, data).status_code == 403
        assert as_role(client, world, "other").post(url, data).status_code == 403
    assert not world["submission"].reviews.exists() and world["submission"].runs.count() == 2
    assert as_role(client, world, "organizer").post(f"/organizer/submissions/{pk}/review/",
                                                    {"decision": "rejected", "reason": "x"}).status_code == 302
    assert world["submission"].reviews.count() == 1


def test_flags_and_audit_on_the_submission_page_are_for_organizers_only(client, world):
    pk = world["submission"].pk
    assert 'id="audit"' in as_role(client, world, "organizer").get(f"/submissions/{pk}/").content.decode()
    for role in ("anonymous", "author", "other"):
        assert 'id="audit"' not in as_role(client, world, role).get(f"/submissions/{pk}/").content.decode()


def test_the_decision_and_its_reason_are_shown_to_whoever_may_see_the_code(client, world):
    pk = world["submission"].pk
    reviewing.review_submission(world["submission"], world["users"]["organizer"], "rejected",
                                reason="the kernel only wraps torch.relu")
    seen = {role: "the kernel only wraps torch.relu" in as_role(client, world, role).get(f"/submissions/{pk}/").content.decode()
            for role in ROLES}
    assert seen == {"anonymous": False, "author": True, "other": False, "organizer": True}
