"""Under gunicorn as deployed (deploy/gunicorn.conf.py), an upload sent with `Transfer-Encoding: chunked`
(no Content-Length: what a client streaming a file sends) reaches the site whole: the walk's was answered
422 "issue: Field required", the site having read no body at all. A chunked body over the limit is
refused (413) after the limit's bytes, never read to its end."""
import http.client
import json
import os

import pytest

from live_platform.gunicorn_site import GunicornSite
from submissions.models import GpuType, Season, Submission
from submissions.services import accounts, submitting
from tests.e2e.test_board_cache_workers import database_url
from tests.site.bundle_files import CUDACODE, TORCHCODE

pytestmark = pytest.mark.django_db(transaction=True)

BOUNDARY = "XyZ0123"
LIMIT = 64 * 1024  # REQUEST_MAX_BODY_BYTES of this site: a refused body fits the socket's buffers


def multipart(issue_code: str, files: dict[str, bytes]) -> bytes:
    parts = [f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="issue"\r\n\r\n{issue_code}\r\n'.encode()]
    parts += [f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="files"; filename="{name}"\r\n'
              f"Content-Type: text/x-python\r\n\r\n".encode() + data + b"\r\n" for name, data in files.items()]
    return b"".join(parts) + f"--{BOUNDARY}--\r\n".encode()


def post_chunked(site, body: bytes, token: str, chunk_bytes: int = 1000):
    """POST /api/v1/submissions with the body in chunks and no Content-Length; (status, JSON answer)."""
    connection = http.client.HTTPConnection("127.0.0.1", site.port, timeout=30)
    try:
        chunks = (body[i:i + chunk_bytes] for i in range(0, len(body), chunk_bytes))
        connection.request("POST", "/api/v1/submissions", body=chunks, encode_chunked=True, headers={
            "Authorization": f"Bearer {token}", "Content-Type": f"multipart/form-data; boundary={BOUNDARY}",
            "Transfer-Encoding": "chunked"})
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


@pytest.fixture
def site(tmp_path, queue_prefix):
    season = Season.objects.create(second_judging="off", code="S1", name="Season one")
    season.gpu_types.add(GpuType.objects.create(slug="cpu", name="CPU"))
    alice = accounts.register_contestant("alice", "pw-alice-12345", display_name="Alice")
    issue = submitting.open_issue(season, alice, title="ReLU")
    _, token = accounts.create_api_token(alice)
    site = GunicornSite(tmp_path / "site.log", env={
        **os.environ, "DATABASE_URL": database_url(), "ALLOWED_HOSTS": "127.0.0.1", "GUNICORN_WORKERS": "1",
        "GPU_QUEUE_PREFIX": queue_prefix, "REQUEST_MAX_BODY_BYTES": str(LIMIT)})
    site.start()
    yield site, issue, token
    site.stop()


def test_a_chunked_upload_reaches_the_site_whole(site):
    site, issue, token = site
    body = multipart(issue.code, {"torchcode.py": TORCHCODE, "cudacode.py": CUDACODE})
    status, answer = post_chunked(site, body, token)
    assert status == 201, (answer, site.output())
    stored = Submission.objects.get(pk=answer["id"])
    assert sorted(stored.files.values_list("path", flat=True)) == ["cudacode.py", "torchcode.py"]


def test_a_chunked_body_over_the_limit_is_refused_as_a_long_content_length_is(site):
    site, issue, token = site
    body = multipart(issue.code, {"torchcode.py": TORCHCODE, "cudacode.py": CUDACODE,
                                  "notes.txt": b"# padding\n" * (LIMIT // 10)})
    assert LIMIT < len(body) < 2 * LIMIT
    status, answer = post_chunked(site, body, token)
    assert status == 413, answer
    assert answer["detail"] == "request refused: its body is more than 64 KiB, the limit"
    assert not Submission.objects.exists()
