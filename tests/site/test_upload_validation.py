"""Each bad bundle is refused with a message that names the problem, on the upload page and the API."""
import html
import io
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from submissions.bundles import build_bundle
from submissions.models import Run, Submission
from submissions.services import submitting
from tests.site.bundle_files import CUDACODE, TORCHCODE, valid_files, zip_of


def uploads(files):
    return [SimpleUploadedFile(name, data) for name, data in files.items()]


def symlink_zip():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("torchcode.py", TORCHCODE)
        archive.writestr("cudacode.py", CUDACODE)
        link = zipfile.ZipInfo("evil.py")
        link.external_attr = 0o120777 << 16
        archive.writestr(link, "/etc/passwd")
    return buffer.getvalue()


BAD_BUNDLES = {
    "no reference": ({"cudacode.py": CUDACODE}, "no reference: add torchcode.py"),
    "no candidate": ({"torchcode.py": TORCHCODE}, "no candidate: add cudacode.py"),
    "not utf-8": ({**valid_files(), "prompt.txt": "提示".encode("gbk")}, "'prompt.txt' is not UTF-8"),
    "empty file": ({**valid_files(), "readme.md": b""}, "'readme.md' is empty"),
    "file too large": ({**valid_files(), "data.txt": b"x" * 3000}, "'data.txt' is 2.9 KiB; the limit is 2 KiB a file"),
    "bundle too large": ({**valid_files(), **{f"d{i}.txt": b"y" * 1900 for i in range(4)}}, "the limit is 6 KiB"),
    "zip escaping": ({"bundle.zip": zip_of({**valid_files(), "../../etc/cron.d/x": b"boom"})}, "leaves the bundle folder"),
    "zip absolute": ({"bundle.zip": zip_of({**valid_files(), "/tmp/x.py": b"boom"})}, "absolute paths are not allowed"),
    "zip symlink": ({"bundle.zip": symlink_zip()}, "symbolic links are not allowed"),
    "not a zip": ({"bundle.zip": b"PK\x03\x04 this is not really a zip"}, "not a valid zip file"),
    "upload far too large": ({"bundle.zip": b"z" * 13_000}, "'bundle.zip' is 12.7 KiB; the limit is 6 KiB a bundle"),
}


@pytest.fixture
def small_limits(settings):
    settings.BUNDLE_MAX_FILE_BYTES = 2048
    settings.BUNDLE_MAX_TOTAL_BYTES = 6 * 1024


@pytest.mark.parametrize("case", sorted(BAD_BUNDLES))
def test_upload_page_refuses_bad_bundle(case, client, season, alice, small_limits):
    files, message = BAD_BUNDLES[case]
    issue = submitting.open_issue(season, alice, title="ReLU")
    client.force_login(alice.user)
    response = client.post("/submit/", {"issue": issue.pk, "files": uploads(files)})
    assert response.status_code == 200
    assert message in html.unescape(response.content.decode())
    assert not Submission.objects.exists()


@pytest.mark.parametrize("case", ["no candidate", "zip escaping", "not utf-8"])
def test_api_refuses_bad_bundle_with_json_reason(case, client, season, alice, small_limits):
    from submissions.services.accounts import create_api_token

    files, message = BAD_BUNDLES[case]
    issue = submitting.open_issue(season, alice, title="ReLU")
    _, token = create_api_token(alice)
    response = client.post("/api/v1/submissions", {"issue": issue.code, "files": uploads(files)},
                           headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 400
    assert message in response.json()["detail"]
    assert not Submission.objects.exists()


def test_zip_of_a_folder_is_unpacked_and_fans_out_one_run_per_gpu_type(client, season, alice,
                                                                       django_capture_on_commit_callbacks):
    issue = submitting.open_issue(season, alice, title="ReLU")
    client.force_login(alice.user)
    archive = zip_of(valid_files(), folder=f"S1/{issue.code}/")
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client.post("/submit/", {"issue": issue.pk, "files": [SimpleUploadedFile("b.zip", archive)]})
    submission = Submission.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/submissions/{submission.pk}/"
    assert sorted(submission.files.values_list("path", flat=True)) == ["cudacode.py", "readme.md", "torchcode.py"]
    assert sorted(Run.objects.values_list("gpu_type__slug", flat=True)) == ["c500", "cpu"]
    assert len(callbacks) == 2  # one enqueue per run, only after the commit


def test_new_issue_can_be_opened_while_uploading(client, season, alice):
    client.force_login(alice.user)
    response = client.post("/submit/", {"season": season.pk, "new_issue_title": "Fused GELU", "new_issue_framework": "pytorch",
                                        "files": uploads(valid_files())})
    assert response.status_code == 302
    submission = Submission.objects.get()
    assert submission.issue.title == "Fused GELU" and len(submission.issue.code) == 6 and submission.issue.code.isalpha()


def test_a_note_past_its_limit_is_refused_on_the_page_by_the_api_and_by_the_service(client, season, alice):
    """Notes were unbounded: each path is refused with the limit and the length, and nothing is stored."""
    issue = submitting.open_issue(season, alice, title="ReLU")
    client.force_login(alice.user)
    page = client.post("/submit/", {"issue": issue.pk, "note": "n" * 2_001, "files": uploads(valid_files())})
    assert page.status_code == 200
    assert "Ensure this value has at most 2000 characters (it has 2001)." in page.content.decode()
    assert 'maxlength="2000"' in client.get("/submit/").content.decode()
    from submissions.services.accounts import create_api_token

    _, token = create_api_token(alice)
    api = client.post("/api/v1/submissions", {"issue": issue.code, "note": "n" * 2_001, "files": uploads(valid_files())},
                      headers={"Authorization": f"Bearer {token}"})
    assert api.status_code == 422, api.content  # the schema's maxLength, with the service's message
    assert api.json()["detail"] == "invalid request: form.note: a submission's note has at most 2000 characters; " \
                                   "this one has 2001"
    with pytest.raises(submitting.SubmissionRefused, match="at most 2000 characters; this one has 2001"):
        submitting.create_submission(alice, issue, build_bundle(valid_files()), note="n" * 2_001)
    assert not Submission.objects.exists()
    client.post("/submit/", {"issue": issue.pk, "note": "n" * 2_000, "files": uploads(valid_files())})
    assert len(Submission.objects.get().note) == 2_000


def test_upload_requires_login(client, season):
    response = client.get("/submit/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_cannot_submit_to_someone_elses_issue(client, season, alice, bob):
    issue = submitting.open_issue(season, bob, title="Bob's op")
    from submissions.services.accounts import create_api_token

    _, token = create_api_token(alice)
    response = client.post("/api/v1/submissions", {"issue": issue.code, "files": uploads(valid_files())},
                           headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 400
    assert "belongs to another contestant" in response.json()["detail"]
