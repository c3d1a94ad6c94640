"""An issue's reference fixed by the organizers (`manage.py fix_reference`): submissions to it are judged
on the organizers' torchcode.py, may send cudacode.py alone, cannot replace it with their own, and are
anyone's admitted to the season: a published problem."""
import html

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from submissions.models import AuditEntry
from submissions.services import accounts, fixed_references, submitting
from tests.site.bundle_files import valid_files

FIXED = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_init_inputs():
    return []


def get_cases():
    return {"small": dict(kind="both", inputs=lambda: [torch.randn(8, 8)])}
"""


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


def post_files(client, token, issue, files):
    uploads = [SimpleUploadedFile(name, data) for name, data in files.items()]
    return client.post("/api/v1/submissions", {"issue": issue.code, "files": uploads}, headers=bearer(token))


@pytest.fixture
def fixed_issue(tmp_path, season, alice):
    issue = submitting.open_issue(season, alice, title="ReLU")
    path = tmp_path / "torchcode.py"
    path.write_text(FIXED)
    call_command("fix_reference", issue.code, str(path), "--reason", "the problem is ours")
    issue.refresh_from_db()
    return issue


def test_a_fixed_issue_takes_cudacode_alone_and_judges_it_on_the_organizers_reference(client, fixed_issue, alice):
    _, token = accounts.create_api_token(alice)
    files = valid_files()
    response = post_files(client, token, fixed_issue, {"cudacode.py": files["cudacode.py"]})
    assert response.status_code == 201, response.content
    stored = {f.path: f.content for f in fixed_issue.submissions.get().files.all()}
    assert stored == {"cudacode.py": files["cudacode.py"].decode(), "torchcode.py": FIXED}
    entry = AuditEntry.objects.get(action="issue.reference_fixed", object_id=str(fixed_issue.pk))
    assert entry.reason == "the problem is ours" and entry.after["fixed_reference"] is True


def test_a_contestant_s_own_reference_is_refused_unless_it_is_a_copy_of_the_fixed_one(client, fixed_issue, alice):
    _, token = accounts.create_api_token(alice)
    files = valid_files()
    files["torchcode.py"] = b"def get_inputs():\n    return []  # an easier problem\n"
    response = post_files(client, token, fixed_issue, files)
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert f"the reference of issue {fixed_issue.code} is fixed by the organizers" in detail
    assert "your torchcode.py differs from it" in detail and not fixed_issue.submissions.exists()
    # a copy kept to judge locally (other line endings, a trailing blank line) is taken, the organizers' stored
    files["torchcode.py"] = FIXED.replace("\n", "\r\n").encode() + b"\r\n\r\n"
    assert post_files(client, token, fixed_issue, files).status_code == 201
    stored = {f.path: f.content for f in fixed_issue.submissions.get().files.all()}
    assert stored["torchcode.py"] == FIXED


def test_every_contestant_submits_to_a_published_problem_and_ranks_on_their_own(
        client, fixed_issue, season, alice, bob, agent_and_token, django_capture_on_commit_callbacks):
    """A fixed reference makes the issue a published problem: Bob submits to Alice's issue (API and page),
    and each contestant's accepted sample counts in their own standing."""
    from submissions.models import Standing, Submission
    from submissions.services import reviewing
    from tests.site.judging_helpers import passed_result, report_all

    files = valid_files()
    _, token = accounts.create_api_token(bob)
    response = post_files(client, token, fixed_issue, {"cudacode.py": files["cudacode.py"]})
    assert response.status_code == 201, response.content
    client.force_login(bob.user)
    page = html.unescape(client.get(f"/submit/?issue={fixed_issue.code}").content.decode())
    assert f'value="{fixed_issue.pk}" selected' in page and "(published problem)" in page
    response = client.post("/submit/", {"issue": fixed_issue.pk, "mode": "test",
                                        "files": [SimpleUploadedFile("cudacode.py", files["cudacode.py"])]})
    assert response.status_code == 302, html.unescape(response.content.decode())[-2000:]
    assert set(Submission.objects.filter(issue=fixed_issue).values_list("contestant__display_name", flat=True)) == {"Bob"}
    organizer = accounts.register_contestant("org", "pw-org-12345", is_staff=True)
    agent, _ = agent_and_token
    with django_capture_on_commit_callbacks(execute=True):
        alices = submitting.create_submission(alice, fixed_issue, _bundle(files, fixed_issue))
    for submission, speedup in ((alices, 3.0), (Submission.objects.filter(contestant=bob, mode="ranked").get(), 2.0)):
        report_all(submission, agent, passed_result(speedup=speedup))
        reviewing.review_submission(submission, organizer.user, "accepted", reason="fine",
                                    acceptance_override="test data: both send the example kernel")
    best = dict(Standing.objects.filter(season=season).values_list("contestant__display_name", "best_speedup"))
    assert best == {"Alice": 3.0, "Bob": 2.0}


def _bundle(files, issue):
    from submissions.bundles import build_bundle

    return build_bundle({"cudacode.py": files["cudacode.py"]}, issue.fixed_reference, issue.code)


def test_another_contestant_s_issue_without_a_fixed_reference_stays_its_author_s(client, season, alice, bob):
    issue = submitting.open_issue(season, alice, title="Mine")
    _, token = accounts.create_api_token(bob)
    response = post_files(client, token, issue, valid_files())
    assert response.status_code == 400 and "belongs to another contestant" in response.json()["detail"]
    client.force_login(bob.user)
    page = html.unescape(client.get(f"/issues/{issue.code}/").content.decode())
    assert 'id="submit-to-issue"' not in page and "Only the issue's author submits to it." in page


def test_the_issue_page_offers_a_published_problem_to_everyone_admitted(client, fixed_issue, bob, organizer):
    client.force_login(bob.user)
    page = html.unescape(client.get(f"/issues/{fixed_issue.code}/").content.decode())
    assert f'id="submit-to-issue" href="/submit/?issue={fixed_issue.code}"' in page
    from submissions.services import season_access

    season_access.ban(fixed_issue.season, bob, actor=organizer.user, reason="test: banned")
    _, token = accounts.create_api_token(bob)
    response = post_files(client, token, fixed_issue, {"cudacode.py": valid_files()["cudacode.py"]})
    assert response.status_code == 403 and not fixed_issue.submissions.exists()


def test_an_issue_without_a_fixed_reference_still_needs_one(client, season, alice):
    issue = submitting.open_issue(season, alice, title="ReLU")
    _, token = accounts.create_api_token(alice)
    response = post_files(client, token, issue, {"cudacode.py": valid_files()["cudacode.py"]})
    assert response.status_code == 400 and "the bundle has no reference" in response.json()["detail"]


def test_the_issue_page_says_the_reference_is_fixed_and_shows_it(client, fixed_issue):
    page = html.unescape(client.get(f"/issues/{fixed_issue.code}/").content.decode())
    assert 'id="fixed-reference"' in page and "every contestant admitted to the season may submit to it" in page
    assert "def get_cases():" in page


@pytest.mark.parametrize("text, problem", [
    ("", "the reference is empty"),
    ("def broken(:\n", "not valid Python (line 1"),
    ("def get_inputs():\n    return []\n", "defines no class Model; the reference defines no get_init_inputs()"),
    ("class Model: pass\ndef get_init_inputs(): return []\n", "neither get_inputs() nor get_cases()"),
])
def test_a_reference_that_cannot_be_loaded_is_refused_saying_why(season, alice, text, problem):
    issue = submitting.open_issue(season, alice, title="ReLU")
    with pytest.raises(fixed_references.FixedReferenceRefused, match=problem.replace("(", r"\(").replace(")", r"\)")):
        fixed_references.publish(issue, text, actor_label="test")
    issue.refresh_from_db()
    assert issue.fixed_reference == ""


def test_withdrawing_gives_submissions_their_own_reference_again(tmp_path, client, fixed_issue, alice):
    call_command("fix_reference", fixed_issue.code, "--withdraw")
    fixed_issue.refresh_from_db()
    assert fixed_issue.fixed_reference == "" and fixed_issue.fixed_reference_at is None
    assert AuditEntry.objects.filter(action="issue.reference_unfixed", object_id=str(fixed_issue.pk)).exists()
    _, token = accounts.create_api_token(alice)
    files = valid_files()
    assert post_files(client, token, fixed_issue, files).status_code == 201
    stored = {f.path: f.content for f in fixed_issue.submissions.get().files.all()}
    assert stored["torchcode.py"] == files["torchcode.py"].decode()
    with pytest.raises(CommandError, match="give the torchcode.py"):
        call_command("fix_reference", fixed_issue.code)
