"""Issues (赛题): opening one, its six-letter code, the list with search and filters, the version history."""
import html
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from submissions.models import Issue
from submissions.services import submitting
from tests.site.bundle_files import valid_files
from tests.site.judging_helpers import passed_result, report_all, submit


def test_open_an_issue_on_the_site_and_refuse_bad_input(client, season, alice):
    client.force_login(alice.user)
    response = client.post("/issues/new/", {"season": season.pk, "title": "GELU", "operator": "F.gelu",
                                            "framework": "paddle", "level": "2", "description": "tanh form"})
    issue = Issue.objects.get()
    assert response.url == f"/issues/{issue.code}/" and re.fullmatch(r"[A-Z]{6}", issue.code)
    assert (issue.framework, issue.level, issue.author) == ("paddle", 2, alice)
    bad = client.post("/issues/new/", {"season": season.pk, "title": "", "framework": "caffe", "level": "9"})
    text = bad.content.decode()
    assert bad.status_code == 200 and "This field is required" in text and "caffe is not one of" in text
    with_level = {"season": season, "title": "x"}
    for kwargs, message in (({"framework": "caffe"}, "unknown framework"), ({"level": 7}, "level must be 1, 2, 3 or 4")):
        try:
            submitting.open_issue(**with_level, author=alice, **kwargs)
        except submitting.SubmissionRefused as exc:
            assert message in str(exc)
        else:
            raise AssertionError(f"{kwargs} was accepted")
    assert client.get("/issues/new/").status_code == 200


def test_issue_list_search_and_filters(client, season, alice, bob):
    relu = submitting.open_issue(season, alice, title="ReLU kernel", operator="torch.relu", level=1)
    gemm = submitting.open_issue(season, bob, title="Fused GEMM", operator="matmul+bias", framework="jax", level=3)

    def codes(**params):
        page = client.get("/issues/", params).content.decode()
        return {code for code in (relu.code, gemm.code) if code in page}

    assert codes() == {relu.code, gemm.code}
    assert codes(q="gemm") == {gemm.code} and codes(q=relu.code) == {relu.code}
    assert codes(framework="jax") == {gemm.code} and codes(level="1") == {relu.code}
    assert codes(season="S1") == {relu.code, gemm.code}
    client.force_login(bob.user)
    assert codes(mine="on") == {gemm.code}


def test_issue_page_numbers_versions_with_their_speedups(client, season, alice, agent_and_token,
                                                         django_capture_on_commit_callbacks):
    agent, _ = agent_and_token
    issue = submitting.open_issue(season, alice, title="ReLU")
    for n, speedup in enumerate((1.5, 2.75), start=1):
        submission = submit(django_capture_on_commit_callbacks, alice, issue,
                            dict(valid_files(), **{"readme.md": f"v{n}".encode()}))
        report_all(submission, agent, passed_result(speedup=speedup))
    page = client.get(f"/issues/{issue.code}/").content.decode()
    assert page.index("<td>v2</td>") < page.index("<td>v1</td>")  # newest first
    assert "1.50×" in page and "2.75×" in page


def test_an_issue_description_past_its_limit_is_refused_on_the_site_and_by_the_service(client, season, alice):
    """The walk of issue 12 opened issues of 200 KB (the form) and 3 MB (the API), each shown whole."""
    client.force_login(alice.user)
    form = {"season": season.pk, "title": "GELU", "framework": "pytorch"}
    response = client.post("/issues/new/", dict(form, description="d" * 20_001))
    assert response.status_code == 200 and not Issue.objects.exists()
    assert "Ensure this value has at most 20000 characters (it has 20001)." in response.content.decode()
    assert 'maxlength="20000"' in client.get("/issues/new/").content.decode()
    try:
        submitting.open_issue(season, alice, title="GELU", description="d" * 20_001)
    except submitting.SubmissionRefused as exc:
        assert "at most 20000 characters; this one has 20001" in str(exc)
    else:
        raise AssertionError("a description of 20001 characters was accepted")
    client.post("/issues/new/", dict(form, description="d" * 20_000))
    assert len(Issue.objects.get().description) == 20_000


HIDDEN_IN_ISSUES = [  # (field, value, the refusal naming the field and the code point)
    ("title", "ReLU evil\u202e", "an issue's title must not contain invisible or text-direction characters (found U+202E)"),
    ("title", "Re\u200bLU", "an issue's title must not contain invisible or text-direction characters (found U+200B)"),
    ("operator", "torch.relu\u2066", "an issue's operator must not contain invisible or text-direction characters "
                                     "(found U+2066)"),
]


@pytest.mark.parametrize("field, value, refusal", HIDDEN_IN_ISSUES)
def test_a_hidden_character_in_an_issue_title_or_operator_is_refused_by_the_form_and_the_service(
        client, season, alice, field, value, refusal):
    """The walk: U+202E turned "evil" into "live" on the leaderboard, U+200B made two titles that look the same."""
    client.force_login(alice.user)
    fields = dict({"season": season.pk, "title": "ReLU", "operator": "torch.relu", "framework": "pytorch"},
                  **{field: value})
    response = client.post("/issues/new/", fields)
    assert response.status_code == 200 and refusal in html.unescape(response.content.decode())
    with pytest.raises(submitting.SubmissionRefused, match=re.escape(refusal)):
        submitting.open_issue(season, alice, **{"title": "ReLU", field: value})
    chinese = client.post("/issues/new/", fields, headers={"Accept-Language": "zh-CN"})
    assert "不得包含不可见字符或改变文字方向的字符（发现 U+" in html.unescape(chinese.content.decode())
    assert not Issue.objects.exists()


@pytest.mark.parametrize("field, value, refusal", HIDDEN_IN_ISSUES)
def test_a_hidden_character_in_the_new_issue_of_the_submit_form_is_refused_next_to_it(
        client, season, alice, field, value, refusal):
    client.force_login(alice.user)
    fields = dict({"season": season.pk, "new_issue_title": "ReLU", "new_issue_operator": "torch.relu",
                   "new_issue_framework": "pytorch"}, **{f"new_issue_{field}": value})
    files = [SimpleUploadedFile(name, data) for name, data in valid_files().items()]
    response = client.post("/submit/", dict(fields, files=files))
    assert response.status_code == 200 and refusal in html.unescape(response.content.decode())
    assert not Issue.objects.exists() and not alice.submissions.exists()
