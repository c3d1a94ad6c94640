"""The site's HTTP API (/api/v1/, documented at /api/v1/docs), through urllib. Every error answer of the
API is JSON with a `detail`; each becomes a CommandFailed carrying the exit code it stands for."""
import http.client
import json
import socket
import urllib.error
import urllib.parse
import urllib.request

from gpucf import __version__, multipart
from gpucf.outcomes import AuthError, CommandFailed, RateLimited, Unreachable, UsageError

TIMEOUT_S = 30
UPLOAD_TIMEOUT_S = 120
# While a season's scoreboard is frozen, a GPU board's answer (a list) says since when in this header.
FROZEN_AT_HEADER = "X-Scoreboard-Frozen-At"


def _detail(body):
    try:
        answer = json.loads(body)
    except ValueError:
        return None
    return answer.get("detail") if isinstance(answer, dict) and isinstance(answer.get("detail"), str) else None


def _retry_after_s(value):
    try:
        return max(0, int(value))
    except (TypeError, ValueError):  # an HTTP date: the site sends seconds, another server may not
        return None


def _one_line(text, limit=500):
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[:limit - 1] + "…"


class Api:
    """The API of one site; `token` (a personal one) for the calls that need it."""

    def __init__(self, site, token=None):
        self.site, self.token = site, token

    # ---- the calls -----------------------------------------------------------------------------
    def me(self):
        return self.get("/me", auth=True)

    def seasons(self):
        return self.get("/seasons")

    def own_issues(self, season="", offset=0, limit=50):
        return self.get("/issues", {"season": season, "offset": offset, "limit": limit}, auth=True)

    def season_issues(self, season, offset=0, limit=50):
        return self.get(f"/seasons/{_segment(season)}/issues", {"offset": offset, "limit": limit})

    def submit(self, issue, note, filename, data, mode="ranked"):
        body, content_type = multipart.encode([("issue", issue), ("note", note), ("mode", mode)],
                                              [("files", filename, data, "application/zip")])
        return self.call("POST", "/submissions", body=body, content_type=content_type, auth=True,
                         timeout_s=UPLOAD_TIMEOUT_S)

    def submission(self, submission_id):
        return self.get(f"/submissions/{int(submission_id)}", auth=True)

    def cancel_run(self, run_id, reason=""):
        return self.call("POST", f"/runs/{int(run_id)}/cancel", body=json.dumps({"reason": reason}).encode(),
                         content_type="application/json", auth=True)

    def request_profile(self, run_id):
        return self.call("POST", f"/runs/{int(run_id)}/profile", auth=True)

    def profile(self, run_id):
        return self.get(f"/runs/{int(run_id)}/profile", auth=True)

    def own_submissions(self, season="", offset=0, limit=50):
        return self.get("/submissions", {"season": season, "offset": offset, "limit": limit}, auth=True)

    def leaderboard(self, season, offset=0, limit=50):
        return self.get(f"/seasons/{_segment(season)}/leaderboard", {"offset": offset, "limit": limit})

    def gpu_leaderboard(self, season, gpu_type, offset=0, limit=50):
        """{"season", "gpu_type", "frozen_at", "rows"}: the API answers the board's rows (a list) and, while
        the season's scoreboard is frozen, says since when in a header (FROZEN_AT_HEADER; None: live)."""
        rows, headers = self.get(f"/seasons/{_segment(season)}/gpus/{_segment(gpu_type)}/leaderboard",
                                 {"offset": offset, "limit": limit}, with_headers=True)
        return {"season": season, "gpu_type": gpu_type, "frozen_at": headers.get(FROZEN_AT_HEADER), "rows": rows}

    def clarifications(self, season):
        return self.get(f"/seasons/{_segment(season)}/clarifications", auth=True)

    def ask(self, season, question, issue=""):
        body = json.dumps({"question": question, "issue": issue}).encode()
        return self.call("POST", f"/seasons/{_segment(season)}/clarifications", body=body,
                         content_type="application/json", auth=True)

    # ---- HTTP ------------------------------------------------------------------------------------
    def get(self, path, params=None, *, auth=False, with_headers=False):
        query = {key: value for key, value in (params or {}).items() if value not in ("", None)}
        return self.call("GET", path + (f"?{urllib.parse.urlencode(query)}" if query else ""), auth=auth,
                         with_headers=with_headers)

    def call(self, method, path, *, body=None, content_type=None, auth=False, timeout_s=TIMEOUT_S,
             with_headers=False):
        """The answer's JSON (with `with_headers`: and its headers)."""
        url = f"{self.site}/api/v1{path}"
        headers = {"Accept": "application/json", "User-Agent": f"gpucf/{__version__}"}
        if content_type:
            headers["Content-Type"] = content_type
        if auth:
            if not self.token:
                raise AuthError(f"not logged in to {self.site}: run `gpucf login` (or set GPUCF_TOKEN)")
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(url, data=body, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                status, text, answer_headers = response.status, response.read(), response.headers
        except urllib.error.HTTPError as exc:
            raise self._refusal(exc.code, exc.read(), exc.headers, url) from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            raise Unreachable(self._unreachable(exc, timeout_s)) from None
        try:
            answer = json.loads(text)
        except ValueError:
            raise Unreachable(f"{url} answered {status} but not with the API's JSON: is {self.site} "
                              f"a GPU CodeForces site?") from None
        return (answer, answer_headers) if with_headers else answer

    def _unreachable(self, exc, timeout_s):
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        if isinstance(reason, (socket.timeout, TimeoutError)):
            why = f"no answer within {timeout_s} s"
        elif isinstance(reason, ConnectionRefusedError):
            why = "connection refused"
        elif isinstance(reason, socket.gaierror):
            why = "no such host"
        else:
            why = _one_line(reason.strerror if isinstance(reason, OSError) and reason.strerror else reason)
        return f"cannot reach {self.site}: {why} (is the site up? --site or GPUCF_SITE names another)"

    def _refusal(self, status, body, headers, url):
        detail = _detail(body)
        if detail is None and status == 413:  # a proxy in front of the site refused it before the site saw it
            return UsageError(f"{self.site} refused the request as too large (413)")
        if detail is None and status < 500:
            return Unreachable(f"{url} answered {status} but not with the API's JSON: is {self.site} "
                               f"a GPU CodeForces site?")
        detail = _one_line(detail or "")
        if status == 401:
            return AuthError(f"{self.site} refused the token ({detail}): `gpucf login` with a token from "
                             f"{self.site}/account/")
        if status == 403:
            return AuthError(f"not allowed: {detail}")
        if status == 429:
            retry_after_s = _retry_after_s(headers.get("Retry-After"))
            when = f"; retry in {retry_after_s} s" if retry_after_s is not None else ""
            return RateLimited(f"rate limited: {detail}{when}", retry_after_s)
        if status >= 500:
            return Unreachable(f"{self.site} answered a server error ({status}){': ' + detail if detail else ''}")
        if status in (400, 404, 405, 409, 413, 422):
            return UsageError(f"{detail} ({status})")
        return CommandFailed(f"{url} answered {status}: {detail}", exit_code=Unreachable.exit_code)


def _segment(value):
    """One path segment: whatever it holds stays inside it."""
    return urllib.parse.quote(str(value), safe="")
