"""A stand-in PR host for tests: real bare git repositories with pull refs, and a real HTTP API
server that records the comments it receives."""
import copy
import json
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/tmp", "PATH": "/usr/bin:/bin"}


def git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True).stdout.decode().strip()


class BareRepository:
    """`<root>/<owner>/<repo>.git`, fed from a working clone; `open_pull_request` sets refs/pull/N/head."""

    def __init__(self, root, owner, repo):
        self.bare = root / owner / f"{repo}.git"
        self.bare.mkdir(parents=True)
        git("init", "-q", "--bare", ".", cwd=self.bare)
        self.work = root / "work" / owner / repo
        self.work.mkdir(parents=True)
        git("init", "-q", "-b", "main", ".", cwd=self.work)
        (self.work / "README.md").write_text("contest repository\n")
        git("add", ".", cwd=self.work)
        git("commit", "-qm", "initial", cwd=self.work)
        git("push", "-q", str(self.bare), "main", cwd=self.work)

    def open_pull_request(self, number, files):
        """Commit `files` (path -> bytes) on a branch and publish it as pull request `number`; returns the sha."""
        git("checkout", "-q", "-B", f"pr-{number}", "main", cwd=self.work)
        for path, data in files.items():
            target = self.work / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        git("add", ".", cwd=self.work)
        git("commit", "-qm", f"pull request {number}", cwd=self.work)
        sha = git("rev-parse", "HEAD", cwd=self.work)
        git("push", "-q", "-f", str(self.bare), f"HEAD:refs/pull/{number}/head", cwd=self.work)
        git("checkout", "-q", "main", cwd=self.work)
        return sha


class RecordingApi:
    """A real HTTP server on 127.0.0.1 that answers 201 and keeps every request it got."""

    def __init__(self):
        self.requests = []
        recorded = self.requests

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                recorded.append({"path": self.path, "headers": dict(self.headers), "json": json.loads(body)})
                self.send_response(201)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b'{"id": 1}')

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def local_hosts(settings, git_root, api_url, secret="hook-secret"):
    """Every PR host fetches from `git_root` and comments on `api_url`, with a bot token and a webhook secret."""
    hosts = copy.deepcopy(settings.PR_HOSTS)
    for config in hosts.values():
        config.update(git=f"file://{git_root}", api=api_url, token="bot-token", webhook_secret=secret)
    settings.PR_HOSTS = hosts
    return hosts


def run_site_worker(capture):
    """A real RQ worker (in this process, so it shares the test's database) drains the site queue;
    returns how many jobs it ran."""
    from rq import SimpleWorker

    from submissions import queueing

    queue = queueing.site_queue()
    jobs = queue.count
    with capture(execute=True):
        SimpleWorker([queue], connection=queueing.site_connection(), serializer=queueing.SERIALIZER).work(burst=True)
    return jobs
