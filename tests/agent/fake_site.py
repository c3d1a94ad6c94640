"""A small real HTTP site for the agent's worker tests: it answers start like the real site (the
attempt's secret, bundle and result paths, options), serves bundle zips, records every request."""

import io
import json
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.agent.conftest import EXAMPLES


def zipped(example: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for path in sorted((EXAMPLES / example).iterdir()):
            if path.is_file():
                z.write(path, path.name)
    return buffer.getvalue()


class FakeSite:
    def __init__(self):
        self.bundles: dict[str, bytes] = {}
        self.run_bundles: dict[str, str] = {}  # run id -> the bundle name its start answer names
        self.start_codes: dict[str, int] = {}  # run id -> status code of its start call (default 200)
        self.start_answers: dict[str, dict] = {}  # run id -> fields that replace the default answer's
        self.fail_next: list[int] = []  # status codes to answer before behaving normally
        self.heartbeat_answer: dict = {}  # what heartbeats are answered, e.g. {"accept_jobs": False}
        # the claim list the site names (its workers move the jobs they take there), one per fake site
        self.claim_list = f"rq:claimed:fake-site-{id(self):x}"
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self, code: int, body: bytes = b"{}", kind: str = "application/json"):
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _record(self, body):
                with site._lock:
                    site.requests.append({"method": self.command, "path": self.path,
                                          "headers": dict(self.headers), "json": body})
                    return site.fail_next.pop(0) if site.fail_next else None

            def do_GET(self):
                failure = self._record(None)
                if failure:
                    return self._answer(failure)
                name = self.path.removeprefix("/bundles/")
                if name in site.bundles:
                    return self._answer(200, site.bundles[name], "application/zip")
                self._answer(404, b'{"detail": "no such bundle"}')

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"null")
                failure = self._record(body)
                if failure:
                    return self._answer(failure)
                parts = self.path.strip("/").split("/")
                if self.path == "/api/v1/agent/heartbeat":
                    answer = {"ok": True, "claim_list": site.claim_list, **site.heartbeat_answer}
                    return self._answer(200, json.dumps(answer).encode())
                if parts[:4] == ["api", "v1", "agent", "runs"] and parts[5] == "start":
                    return self._start(parts[4])
                if parts[0] == "runs" and parts[2] in ("result", "progress"):
                    return self._answer(200)
                self._answer(404)

            def _start(self, run_id):
                code = site.start_codes.get(run_id, 200)
                if code != 200:
                    return self._answer(code, b'{"detail": "not yours"}')
                answer = {"job_secret": f"secret-{run_id}", "bundle_url": f"/bundles/{site.run_bundles.get(run_id)}",
                          "result_url": f"/runs/{run_id}/result", "progress_url": f"/runs/{run_id}/progress",
                          "options": {"run_timeout_s": 300, "seed": 11, "some_future_option": True}}
                answer.update(site.start_answers.get(run_id, {}))
                self._answer(200, json.dumps(answer).encode())

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def posts(self, suffix: str) -> dict[str, dict]:
        """The POSTs whose path ends with suffix, keyed by run id."""
        found = {}
        for r in self.requests:
            if r["method"] == "POST" and r["path"].endswith(suffix) and r["path"] != "/api/v1/agent/heartbeat":
                found[r["path"].rstrip("/").split("/")[-2]] = r
        return found

    def close(self):
        self.server.shutdown()
        self.server.server_close()
