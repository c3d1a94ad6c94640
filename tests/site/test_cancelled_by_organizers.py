"""A run an organizer cancelled tells its contestant so on the submission page, with the organizer's
reason (the organizer's name is not shown, as an answer to a question names no organizer); a run the
contestant cancelled says nothing more than "Cancelled". Django's test client, real database and Redis."""
import html
import re

import pytest

from gpucf import render
from submissions.services import accounts, submitting
from tests.site.bundle_files import valid_files
from tests.site.judging_helpers import submit

EN = {"Accept-Language": "en"}


@pytest.fixture
def alices(season, alice, django_capture_on_commit_callbacks):
    return submit(django_capture_on_commit_callbacks, alice, submitting.open_issue(season, alice, title="ReLU"),
                  valid_files())


def test_the_contestant_sees_that_an_organizer_cancelled_their_run_and_why(client, alice, alices, organizer,
                                                                            django_capture_on_commit_callbacks):
    cpu, c500 = alices.runs.get(gpu_type__slug="cpu"), alices.runs.get(gpu_type__slug="c500")
    client.force_login(organizer.user)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/organizer/runs/{cpu.pk}/cancel/", {"reason": "the queue is <stuck>; resubmit tomorrow"})
    client.force_login(alice.user)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/runs/{c500.pk}/cancel/", {"reason": "my own mistake"})
    page = client.get(f"/submissions/{alices.pk}/", headers=EN).content.decode()
    row = page.split(f'id="run-{cpu.pk}"')[1].split("</tr>")[0]
    assert "Cancelled by the organizers" in row and "the queue is &lt;stuck&gt;; resubmit tomorrow" in row
    words = re.sub(r"<[^>]+>", " ", html.unescape(row)).replace("Cancelled by the organizers", "")
    assert organizer.user.get_username() not in words and organizer.display_name not in words
    own = page.split(f'id="run-{c500.pk}"')[1].split("</tr>")[0]
    assert "Cancelled" in own and "Cancelled by the organizers" not in own and "my own mistake" not in own
    runs = client.get(f"/submissions/{alices.pk}/runs/", headers=EN)  # the table's live refresh
    assert runs.status_code == 200 and "resubmit tomorrow" in runs.content.decode()


def test_the_api_and_the_client_say_so_too(client, alice, alices, organizer, django_capture_on_commit_callbacks):
    cpu, c500 = alices.runs.get(gpu_type__slug="cpu"), alices.runs.get(gpu_type__slug="c500")
    client.force_login(organizer.user)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/organizer/runs/{cpu.pk}/cancel/", {"reason": "the queue is stuck; resubmit tomorrow"})
    client.force_login(alice.user)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/runs/{c500.pk}/cancel/", {"reason": "my own mistake"})
    client.logout()
    _, token = accounts.create_api_token(alice)
    answer = client.get(f"/api/v1/submissions/{alices.pk}", headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 200, answer.content
    runs = {run["gpu_type"]: run for run in answer.json()["runs"]}
    assert runs["cpu"]["verdict"] == runs["c500"]["verdict"] == "cancelled"
    assert runs["cpu"]["cancelled_by_organizers"] == "the queue is stuck; resubmit tomorrow"
    assert runs["c500"]["cancelled_by_organizers"] is None  # the contestant's own: their reason stays theirs
    text = render.submission(answer.json())  # what `gpucf status` and `gpucf watch` print
    assert "cpu: cancelled by the organizers: the queue is stuck; resubmit tomorrow" in text
    assert "my own mistake" not in text
