"""A real HTTP server on a free local port that answers each path with what a test scripted: the client's
errors, exit codes and polling are tried over real sockets without a whole site."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Answer:
    def __init__(self, status, body, headers=None, content_type="application/json"):
        self.status, self.headers, self.content_type = status, headers or {}, content_type
        self.body = body if isinstance(body, bytes) else json.dumps(body).encode()


class CannedSite:
    """`script` maps a path (with its query) to a list of Answers, given in turn (the last one again once
    the list is spent). `requests` records (method, path, headers, body) of each request."""

    def __init__(self, script):
        self.script = {path: list(answers) for path, answers in script.items()}
        self.requests = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                site.requests.append((self.command, self.path, dict(self.headers), self.rfile.read(length)))
                answers = site.script.get(self.path) or [Answer(404, {"detail": f"nothing at {self.path}"})]
                answer = answers.pop(0) if len(answers) > 1 else answers[0]
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.content_type)
                self.send_header("Content-Length", str(len(answer.body)))
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(answer.body)

            do_GET = do_POST = _answer

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        # a short poll: shutdown() waits for one
        threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
