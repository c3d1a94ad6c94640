"""Uploads that lie or speak another code page: zip headers that understate a size, zips made on a
Chinese Windows (GBK names), file names that are not UTF-8. Each is answered clearly, nothing vanishes."""
import html
import tracemalloc

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from submissions.models import Submission
from submissions.services import submitting
from submissions.services.accounts import create_api_token
from tests.crafted_zips import legacy_named_zip, lying_zip, misflagged_zip
from tests.site.bundle_files import CUDACODE, TORCHCODE

BOMB_BYTES = 64 * 1024 * 1024  # inflates from a ~64 KiB zip


@pytest.fixture
def issue(season, alice):
    return submitting.open_issue(season, alice, title="ReLU")


@pytest.fixture
def bearer(alice):
    return {"Authorization": f"Bearer {create_api_token(alice)[1]}"}


def post_zip(client, through, issue, bearer, data):
    """The zip through the API (JSON answer) or the upload page (HTML answer); (status, text)."""
    upload = SimpleUploadedFile("bundle.zip", data)
    if through == "api":
        response = client.post("/api/v1/submissions", {"issue": issue.code, "files": [upload]}, headers=bearer)
        return response.status_code, response.json().get("detail", "")
    client.force_login(issue.author.user)
    response = client.post("/submit/", {"issue": issue.pk, "files": [upload]})
    return response.status_code, html.unescape(response.content.decode())


@pytest.mark.parametrize("through", ["api", "page"])
def test_zip_member_larger_than_its_header_says_is_refused_without_inflating_it(client, issue, bearer, through):
    bomb = lying_zip({"torchcode.py": TORCHCODE, "cudacode.py": b"\0" * BOMB_BYTES}, claimed={"cudacode.py": 1000})
    assert len(bomb) < BOMB_BYTES // 500
    tracemalloc.start()
    try:
        status, text = post_zip(client, through, issue, bearer, bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert status == (400 if through == "api" else 200)
    assert "'cudacode.py' inflates to more than the 1000 bytes its zip header says" in text
    assert peak < 16 * 1024 * 1024  # the member alone would be 64 MiB
    assert not Submission.objects.exists()


def test_zip_made_on_a_chinese_windows_is_read_with_its_gbk_names(client, issue, bearer):
    windows_zip = legacy_named_zip({"我的算子/torchcode.py": TORCHCODE, "我的算子/cudacode.py": CUDACODE})
    status, _ = post_zip(client, "api", issue, bearer, windows_zip)
    assert status == 201
    assert sorted(Submission.objects.get().files.values_list("path", flat=True)) == ["cudacode.py", "torchcode.py"]


@pytest.mark.parametrize("through", ["api", "page"])
def test_gbk_file_name_in_a_zip_is_named_legibly_when_refused(client, issue, bearer, through):
    windows_zip = legacy_named_zip({"torchcode.py": TORCHCODE, "cudacode.py": CUDACODE, "提示词.txt": b"relu"})
    status, text = post_zip(client, through, issue, bearer, windows_zip)
    assert "'提示词.txt': file names may use letters, digits" in text
    assert not Submission.objects.exists()


@pytest.mark.parametrize("through", ["api", "page"])
def test_zip_member_flagged_utf8_whose_name_is_not_utf8_is_refused_naming_it(client, issue, bearer, through):
    """The walk: a name in GBK with the zip's UTF-8 flag set was a server error (zipfile cannot list it)."""
    misflagged = misflagged_zip({b"torchcode.py": TORCHCODE, b"cudacode.py": CUDACODE,
                                 "提示词.txt".encode("gbk"): b"relu"})
    status, text = post_zip(client, through, issue, bearer, misflagged)
    assert status == (400 if through == "api" else 200)
    assert "'提示词.txt': the zip marks this file name as UTF-8, but it is not" in text
    assert not Submission.objects.exists()


def multipart(boundary: bytes, fields: dict[str, str], files: dict[bytes, bytes]) -> bytes:
    """A multipart body written by hand: file names go out as the raw bytes given."""
    parts = [b'--%s\r\nContent-Disposition: form-data; name="%s"\r\n\r\n%s\r\n' % (boundary, name.encode(), value.encode())
             for name, value in fields.items()]
    parts += [b'--%s\r\nContent-Disposition: form-data; name="files"; filename="%s"\r\n'
              b"Content-Type: text/x-python\r\n\r\n%s\r\n" % (boundary, name, data) for name, data in files.items()]
    return b"".join(parts) + b"--%s--\r\n" % boundary


@pytest.mark.parametrize("through", ["api", "page"])
def test_upload_whose_file_name_is_not_utf8_is_refused_naming_the_file(client, issue, bearer, through):
    files = {b"torchcode.py": TORCHCODE, b"cudacode.py": CUDACODE, "提示.py".encode("gbk"): b"# a helper\n"}
    body = multipart(b"XyZ0123", {"issue": issue.code if through == "api" else str(issue.pk)}, files)
    if through == "page":
        client.force_login(issue.author.user)
    response = client.generic("POST", "/api/v1/submissions" if through == "api" else "/submit/", body,
                              content_type="multipart/form-data; boundary=XyZ0123", headers=bearer)
    assert response.status_code == 400
    detail = response.json()["detail"] if through == "api" else html.unescape(response.content.decode())
    assert "the file name '提示.py' is not UTF-8" in detail
    assert not Submission.objects.exists()
    if through == "api":  # the same name in UTF-8 reaches the bundle's own checks
        files["提示.py".encode()] = files.pop("提示.py".encode("gbk"))
        response = client.generic("POST", "/api/v1/submissions", multipart(b"XyZ0123", {"issue": issue.code}, files),
                                  content_type="multipart/form-data; boundary=XyZ0123", headers=bearer)
        assert response.status_code == 400 and "'提示.py': file names may use letters" in response.json()["detail"]

