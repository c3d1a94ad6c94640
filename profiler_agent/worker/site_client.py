"""HTTP calls from the agent to the site, signed with the agent token (and a job's secret), with
retries for transient failures (connection errors, timeouts, 5xx)."""

from __future__ import annotations

import json
import logging
import time

log = logging.getLogger(__name__)

MAX_BUNDLE_BYTES = 256 * 1024 * 1024


class SiteError(RuntimeError):
    """The site answered with a status we do not accept, or kept failing."""


class SiteUnreachable(SiteError):
    """Every try failed in transit (no connection, a timeout) or with a server error: the site cannot be
    reached from here now, whatever it would have answered."""


class SiteClient:
    def __init__(
        self,
        token: str,
        job_secret: str | None = None,
        *,
        attempts: int = 4,
        backoff_s: float = 1.0,
        timeout_s: float = 60.0,
        max_backoff_s: float = 60.0,
    ):
        import requests  # lazy: `judge` must work with torch alone installed

        self._requests = requests
        self._session = requests.Session()
        self._token = token
        self._job_secret = job_secret
        self._attempts = attempts
        self._backoff_s = backoff_s
        self._timeout_s = timeout_s
        self._max_backoff_s = max_backoff_s

    def _headers(self) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {self._token}"}
        if self._job_secret is not None:
            headers["X-Job-Secret"] = self._job_secret
        return headers

    def _request(self, method: str, url: str, **kwargs):
        transient = (self._requests.ConnectionError, self._requests.Timeout)
        headers = {**self._headers(), **kwargs.pop("headers", {})}
        for attempt in range(1, self._attempts + 1):
            try:
                response = self._session.request(
                    method, url, headers=headers, timeout=self._timeout_s, **kwargs,
                )
            except transient as exc:
                problem = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code < 500:
                    return response
                problem = f"HTTP {response.status_code}"
            if attempt == self._attempts:
                raise SiteUnreachable(f"{method} {url} failed {attempt} times, last: {problem}")
            delay = min(self._backoff_s * 2 ** (attempt - 1), self._max_backoff_s)
            log.warning("%s %s: %s; retrying in %.1f s", method, url, problem, delay)
            time.sleep(delay)

    def post_json(self, url: str, payload: dict, accept: tuple[int, ...] = (200,)) -> int:
        body = json.dumps(payload, allow_nan=False)
        response = self._request("POST", url, data=body, headers={"Content-Type": "application/json"})
        if response.status_code not in accept:
            raise SiteError(f"POST {url}: HTTP {response.status_code}: {response.text[:500]}")
        return response.status_code

    def post_json_answer(self, url: str, payload: dict, accept: tuple[int, ...] = (200,)) -> tuple[int, dict]:
        """POST, and the status code with the JSON object answered (empty when the body is not one)."""
        body = json.dumps(payload, allow_nan=False)
        response = self._request("POST", url, data=body, headers={"Content-Type": "application/json"})
        return _answered(response, url, accept)

    def post_bytes(self, url: str, data: bytes, accept: tuple[int, ...] = (200,)) -> tuple[int, dict]:
        """POST a file's bytes (application/octet-stream); the status code and the JSON object answered."""
        response = self._request("POST", url, data=data, headers={"Content-Type": "application/octet-stream"})
        return _answered(response, url, accept)

    def get_bytes(self, url: str, max_bytes: int = MAX_BUNDLE_BYTES) -> bytes:
        response = self._request("GET", url, stream=True)
        if response.status_code != 200:
            raise SiteError(f"GET {url}: HTTP {response.status_code}")
        chunks, size = [], 0
        for chunk in response.iter_content(1 << 16):
            size += len(chunk)
            if size > max_bytes:
                raise SiteError(f"GET {url}: more than {max_bytes} bytes")
            chunks.append(chunk)
        return b"".join(chunks)


def _answered(response, url: str, accept: tuple[int, ...]) -> tuple[int, dict]:
    """A POST's status code and the JSON object answered (empty when the body is not one)."""
    if response.status_code not in accept:
        raise SiteError(f"POST {url}: HTTP {response.status_code}: {response.text[:500]}")
    try:
        answer = response.json()
    except ValueError:
        answer = None
    return response.status_code, answer if isinstance(answer, dict) else {}
