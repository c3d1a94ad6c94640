"""A stand-in PR host for tests: real bare git repositories with pull refs, and a real HTTP API
server that records the comments it receives."""
import copy
import json
import subprocess
import threading
import time
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
    """A real HTTP server on 127.0.0.1 that keeps every request it got (on arrival) and answers 201, or
    the next status of `failures` while some are left; each answer waits `delay_s` first (a slow host)."""

    def __init__(self, failures=(), delay_s=0.0):
        self.requests = []
        self.failures = list(failures)
        self.delay_s = delay_s
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                api.requests.append({"path": self.path, "headers": dict(self.headers), "json": json.loads(body)})
                time.sleep(api.delay_s)
                status = api.failures.pop(0) if api.failures else 201
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(b'{"id": 1}' if status == 201 else b'{"message": "try later"}')
                except OSError:
                    pass  # the client gave up waiting

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
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


def run_site_worker(capture, with_scheduler=False):
    """A real RQ worker (in this process, so it shares the test's database) drains the site queue;
    returns how many jobs were waiting. With the scheduler, jobs whose delay is over are moved in first."""
    from rq import SimpleWorker

    from submissions import queueing

    queue = queueing.site_queue()
    jobs = queue.count
    with capture(execute=True):
        SimpleWorker([queue], connection=queueing.site_connection(), serializer=queueing.SERIALIZER).work(
            burst=True, with_scheduler=with_scheduler)
    return jobs


def scheduled_delays():
    """Seconds from now until each delayed job of the site queue is due (RQ's scheduled registry)."""
    from rq.registry import ScheduledJobRegistry

    from submissions import queueing

    key = ScheduledJobRegistry(queue=queueing.site_queue()).key
    now = time.time()
    return [score - now for _, score in queueing.site_connection().zrange(key, 0, -1, withscores=True)]


def advance_scheduled_jobs():
    """The back-off has passed: every delayed job of the site queue becomes due now (its score in RQ's
    scheduled registry is its due time), for the worker's scheduler to move it into the queue."""
    from rq.registry import ScheduledJobRegistry

    from submissions import queueing

    key = ScheduledJobRegistry(queue=queueing.site_queue()).key
    connection = queueing.site_connection()
    for job_id in connection.zrange(key, 0, -1):
        connection.zadd(key, {job_id: int(time.time()) - 1})
