"""Opening issues is rate-limited per contestant (355 were opened in 80 s by one script): beyond
ISSUES_PER_HOUR / ISSUES_PER_DAY the API answers 429 with Retry-After and a message saying when, the
page says the same; concurrent requests are all counted. Submissions over their limit get 429 too."""
import re
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from submissions.bundles import build_bundle
from submissions.models import Issue
from submissions.services import submitting
from submissions.services.accounts import create_api_token
from tests.site.bundle_files import valid_files

ZH = {"Accept-Language": "zh-hans"}


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


def open_by_api(client, token, title, headers=None):
    return client.post("/api/v1/issues", {"season": "S1", "title": title}, content_type="application/json",
                       headers={**bearer(token), **(headers or {})})


def test_the_api_answers_429_with_retry_after_beyond_the_hourly_limit(client, season, alice, bob, settings):
    settings.ISSUES_PER_HOUR = 3
    _, token = create_api_token(alice)
    assert [open_by_api(client, token, f"op {n}").status_code for n in range(3)] == [201, 201, 201]
    refused = open_by_api(client, token, "one too many")
    assert refused.status_code == 429
    assert re.fullmatch(r"you opened 3 issues in the last hour, the limit; try again after .+ UTC",
                        refused.json()["detail"]), refused.json()
    assert 3500 <= int(refused["Retry-After"]) <= 3601
    assert Issue.objects.filter(author=alice).count() == 3
    # the same in Chinese; another contestant is not held back
    zh = open_by_api(client, token, "again", headers=ZH)
    assert zh.status_code == 429 and zh.json()["detail"].startswith("你在过去一小时内已创建 3 个赛题，达到上限")
    _, bob_token = create_api_token(bob)
    assert open_by_api(client, bob_token, "bob's").status_code == 201


def test_the_daily_limit_counts_too(client, season, alice, settings):
    settings.ISSUES_PER_HOUR, settings.ISSUES_PER_DAY = 0, 2
    _, token = create_api_token(alice)
    assert [open_by_api(client, token, f"op {n}").status_code for n in range(3)] == [201, 201, 429]
    assert "2 issues in the last day" in open_by_api(client, token, "x").json()["detail"]


def test_the_issue_page_says_why_it_refused(client, season, alice, settings):
    settings.ISSUES_PER_HOUR = 1
    submitting.open_issue(season, alice, title="the first")
    client.force_login(alice.user)
    page = client.post("/issues/new/", {"season": season.pk, "title": "the second", "framework": "pytorch"})
    assert page.status_code == 429
    assert "you opened 1 issue in the last hour, the limit; try again after" in page.content.decode()
    assert Issue.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_requests_are_all_counted(live_server, season, alice, settings):
    """A script firing in parallel gets exactly the limit, whatever the interleaving (a real server)."""
    settings.ISSUES_PER_HOUR = 5
    _, token = create_api_token(alice)

    def open_one(n):
        return requests.post(f"{live_server.url}/api/v1/issues", json={"season": "S1", "title": f"op {n}"},
                             headers=bearer(token), timeout=60).status_code

    with ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(open_one, range(16)))
    assert sorted(statuses) == [201] * 5 + [429] * 11
    assert Issue.objects.filter(author=alice).count() == 5


def test_a_submission_over_its_limit_is_429_too(client, season, alice, settings):
    settings.SUBMISSIONS_PER_HOUR = 1
    issue = submitting.open_issue(season, alice, title="ReLU")
    submitting.create_submission(alice, issue, build_bundle(valid_files()))
    _, token = create_api_token(alice)
    from django.core.files.uploadedfile import SimpleUploadedFile

    files = [SimpleUploadedFile(name, data) for name, data in valid_files().items()]
    refused = client.post("/api/v1/submissions", {"issue": issue.code, "files": files}, headers=bearer(token))
    assert refused.status_code == 429 and "in the last hour, the limit" in refused.json()["detail"]
    assert int(refused["Retry-After"]) > 0
