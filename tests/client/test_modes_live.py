"""`gpucf submit --mode` and `gpucf test` against a live site (Django's live server on the test database, the
shared Redis under queue names of the test's own), each command `python -m gpucf` in a process of its own."""
import json

import pytest

from submissions.models import GpuType, Season, Submission, SubmissionMode
from submissions.services import accounts, submitting
from tests.client.test_deadlines_live import columns, gpucf
from tests.site.bundle_files import valid_files

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def bundle_dir(tmp_path):
    folder = tmp_path / "bundle"
    folder.mkdir()
    for name, data in valid_files().items():
        (folder / name).write_bytes(data)
    return folder


def test_submit_with_a_mode_then_the_same_kernel_ranked(live_server, queue_prefix, tmp_path, bundle_dir):
    season = Season.objects.create(code="S1", name="Season one", second_judging="off")
    season.gpu_types.add(GpuType.objects.create(slug="cpu", name="CPU"))
    alice = accounts.register_contestant("alice", "pw-alice-12345", display_name="Alice")
    issue = submitting.open_issue(season, alice, title="ReLU")
    token = accounts.create_api_token(alice)[1]
    home = tmp_path / "home"

    tested = gpucf(live_server.url, home, "submit", str(bundle_dir), "--issue", issue.code, "--mode", "test",
                   "--json", token=token)
    assert tested.returncode == 0, tested.stderr
    answer = json.loads(tested.stdout)
    assert answer["mode"] == "test"
    assert Submission.objects.get(pk=answer["id"]).mode == SubmissionMode.TEST

    shortcut = gpucf(live_server.url, home, "test", str(bundle_dir), "--issue", issue.code, token=token)
    assert shortcut.returncode == 0, shortcut.stderr
    assert "mode test" in shortcut.stdout.splitlines()[0]  # the header names a mode other than ranked

    # a test of a kernel does not stand in the way of ranking it, once
    ranked = gpucf(live_server.url, home, "submit", str(bundle_dir), "--issue", issue.code, token=token)
    assert ranked.returncode == 0, ranked.stderr
    assert "mode" not in ranked.stdout.splitlines()[0]
    again = gpucf(live_server.url, home, "submit", str(bundle_dir), "--issue", issue.code, token=token)
    assert again.returncode != 0 and "you submitted this kernel" in again.stderr

    wrong = gpucf(live_server.url, home, "submit", str(bundle_dir), "--issue", issue.code, "--mode", "fastest",
                  token=token)
    assert wrong.returncode == 2 and "invalid choice: 'fastest'" in wrong.stderr

    listed = gpucf(live_server.url, home, "list", token=token)
    header, *lines = listed.stdout.splitlines()
    modes = [columns(header, line)["MODE"] for line in lines if line.strip() and line.split()[0].isdigit()]
    assert modes == ["ranked", "test", "test"]
    assert sorted(Submission.objects.values_list("mode", flat=True)) == ["ranked", "test", "test"]
