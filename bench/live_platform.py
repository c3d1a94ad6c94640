"""The whole platform, live on this machine, for the benches that drive it (bench/chaos.py,
bench/dispatch.py): a database of the run's own, the site under gunicorn, `manage.py` helpers beside
it, profiler agents judging on the CPU, each a real process in a group of its own; a contest to submit
to, submitting through the contestants' API, and stopping it all.

Named so, not platform.py: `python bench/X.py` puts bench/ first on sys.path, where a platform.py would
shadow the standard library's `platform` (which redis, rq and torch import).
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_log(tag, to_stderr=False, clock=False):
    """A bench's progress lines: `[tag] message` (`[tag HH:MM:SS] message` with `clock`), flushed at once."""

    def log(message):
        stamp = f" {time.strftime('%H:%M:%S')}" if clock else ""
        print(f"[{tag}{stamp}] {message}", file=sys.stderr if to_stderr else sys.stdout, flush=True)

    return log


def stop_process_group(process, grace_s=30):
    """SIGTERM to the process's group (gunicorn's workers, an agent's work-horse), SIGKILL after grace_s."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=grace_s)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()


def is_postgres(url):
    return url.startswith(("postgres://", "postgresql://"))


class ServiceProcess:
    """One of the platform's processes, in a group of its own so that a stop reaches its children; its
    output goes to the end of its log (a process started again adds to the same one)."""

    stop_grace_s = 30

    def __init__(self, name, command, env, log_path):
        self.name, self.command, self.env, self.log_path = name, command, env, Path(log_path)
        self.process = None

    def start(self):
        with open(self.log_path, "ab") as log_file:  # the child keeps its own copy
            self.process = subprocess.Popen(self.command, cwd=ROOT, env=self.env, start_new_session=True,
                                            stdout=log_file, stderr=subprocess.STDOUT)

    def stop(self):
        if self.process is not None:
            stop_process_group(self.process, self.stop_grace_s)


class CuttableProxy:
    """A TCP forwarder on a free local port to `target` ((host, port)), whose link can be cut: while
    cut, every connection open through it is closed and new ones are accepted and reset at once (the
    far side seems unreachable; the port stays this proxy's). A client given `url` from the start can
    so be partitioned from the target, and healed, without touching the client."""

    def __init__(self, target):
        self.target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._cut = threading.Event()
        self._open, self._lock = set(), threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept_loop, name=f"proxy-{self.port}", daemon=True).start()

    @property
    def is_cut(self):
        return self._cut.is_set()

    def cut(self):
        self._cut.set()
        with self._lock:
            for sock in list(self._open):
                self._reset(sock)
            self._open.clear()

    def heal(self):
        self._cut.clear()

    def close(self):
        self._closed = True
        self.cut()
        self._listener.close()

    @staticmethod
    def _reset(sock):
        """Close at once: a shutdown wakes the pump blocked reading it (a bare close would not, and the
        client would wait for its read timeout), and the linger of 0 makes the close a reset."""
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            sock.close()
        except OSError:
            pass

    def _accept_loop(self):
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self._cut.is_set():
                self._reset(client)
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                self._reset(client)
                continue
            with self._lock:
                if self._cut.is_set():
                    self._reset(client)
                    self._reset(upstream)
                    continue
                self._open.update((client, upstream))
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source, sink):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        finally:
            with self._lock:
                for sock in (source, sink):
                    if sock in self._open:
                        self._open.discard(sock)
                        try:
                            sock.shutdown(socket.SHUT_RDWR)
                        except OSError:
                            pass
                        sock.close()


class RedisServer:
    """A redis-server of the run's own on a free port, its data in an append-only file (written through
    at every command) so that it survives a restart unless wiped. With `aclfile`, its users live in
    `users.acl` beside the data (as an operator's `aclfile`); a wipe takes that file too, and the
    server then starts with an empty one (only the default user)."""

    def __init__(self, folder, aclfile=False):
        self.folder, self.port = Path(folder), free_port()
        self.folder.mkdir(parents=True, exist_ok=True)
        self.url = f"redis://127.0.0.1:{self.port}"
        self.aclfile = self.folder / "users.acl" if aclfile else None
        self.process = None

    def start(self):
        server = shutil.which("redis-server")
        if server is None:
            raise SystemExit("redis-server is not on PATH (apt-get install redis-server)")
        acl = []
        if self.aclfile is not None:
            self.aclfile.touch()  # redis-server refuses to start on an aclfile that is not there
            acl = ["--aclfile", str(self.aclfile)]
        self.process = subprocess.Popen(
            [server, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder), "--save", "",
             "--appendonly", "yes", "--appendfsync", "always", *acl],
            stdout=open(self.folder / "redis.log", "ab"), stderr=subprocess.STDOUT, start_new_session=True)
        import redis

        for _ in range(100):
            try:
                redis.Redis.from_url(self.url, socket_connect_timeout=0.2).ping()
                return
            except redis.RedisError:
                time.sleep(0.05)
        raise RuntimeError("the private Redis did not start")

    def stop(self, keep_data):
        import redis

        try:
            redis.Redis.from_url(self.url).shutdown(nosave=not keep_data)
        except redis.RedisError:
            pass  # the connection closes as the server exits
        self.process.wait(timeout=30)
        if not keep_data:
            for path in self.folder.iterdir():
                if path.name != "redis.log":
                    shutil.rmtree(path) if path.is_dir() else path.unlink()


class Database:
    """The platform's database. A PostgreSQL one is made fresh (dropped first if it is there) and, with
    `drop_at_end`, dropped by `close`; a SQLite one is the file its URL names."""

    def __init__(self, url, drop_at_end=False):
        self.url, self.drop_at_end = url, drop_at_end
        self.is_postgres = is_postgres(url)
        self.server, self.name = url.split("?")[0].rsplit("/", 1)

    def _admin(self, sql):
        import psycopg

        # through the server's maintenance database: a database cannot drop itself
        with psycopg.connect(self.server.replace("postgres://", "postgresql://", 1) + "/postgres",
                             autocommit=True) as admin:
            admin.execute(sql)

    def make_fresh(self):
        if self.is_postgres:
            self._admin(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
            self._admin(f'CREATE DATABASE "{self.name}"')

    def close(self):
        if self.is_postgres and self.drop_at_end:
            from django.conf import settings
            from django.db import connections

            if settings.configured:
                connections.close_all()
            self._admin(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


class Platform:
    """The site (gunicorn, deploy/gunicorn.conf.py) on a port and database of its own, its queues on
    Redis (`redis_url`'s database for the agents', the next one for the site's own), `manage.py` helpers
    and profiler agents: real processes, all stopped by `close`. This process's Django runs on the same
    settings, to seed the contest and to observe."""

    process_class = ServiceProcess  # a scenario's own subclass may supervise them

    def __init__(self, workdir, database, redis_url, settings):
        self.workdir, self.database, self.redis_url = Path(workdir), database, redis_url
        self.port = free_port()
        self.site = f"http://127.0.0.1:{self.port}"
        server, number = redis_url.rsplit("/", 1)
        self.env = {**os.environ, "DATABASE_URL": database.url, "REDIS_URL": redis_url,
                    "SITE_REDIS_URL": f"{server}/{int(number) + 1}", "PORT": str(self.port), "SITE_URL": self.site,
                    # one contestant sends every submission
                    "SUBMISSIONS_PER_HOUR": "100000", "SUBMISSIONS_PER_DAY": "100000", "PYTHONUNBUFFERED": "1",
                    **settings}
        self.site_process, self.site_helpers, self.agents = None, [], []
        self.gpu_types, self.issue_code, self.contestant_token = [], None, None

    # ---- the database and the contest --------------------------------------------------------
    def prepare_database(self):
        """A fresh database, migrated, and Django set up in this process on the site's settings."""
        self.database.make_fresh()
        os.environ.update(self.env)
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", interactive=False, verbosity=0)

    def seed_contest(self, season_name, gpu_types, contestant, second_judging="off"):
        """Season S1 judged on `gpu_types` ((slug, name) pairs), and a contestant (user name, password,
        display name) with an API token and an issue to submit to. Second judging is off unless asked
        for: most benches measure one judging (with one agent, a second judging would wait forever)."""
        from submissions.models import GpuType, Season
        from submissions.services import accounts, submitting

        season = Season.objects.create(code="S1", name=season_name, second_judging=second_judging)
        self.gpu_types = [GpuType.objects.create(slug=slug, name=name) for slug, name in gpu_types]
        season.gpu_types.add(*self.gpu_types)
        username, password, display_name = contestant
        user = accounts.register_contestant(username, password, display_name=display_name)
        _, self.contestant_token = accounts.create_api_token(user)
        self.issue_code = submitting.open_issue(season, user, title="ReLU").code

    def register_agent(self, name):
        """An agent granted every GPU type of the season: (its row, its token)."""
        from submissions.services import accounts

        return accounts.create_agent(name, self.gpu_types)

    # ---- processes -------------------------------------------------------------------------------
    def start_site(self, timeout_s=60):
        self.site_process = self.process_class(
            "site", [PY, "-m", "gunicorn", "-c", "deploy/gunicorn.conf.py", "leaderboard.wsgi"], self.env,
            self.workdir / "site.log")
        self.site_process.start()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.site_process.process.poll() is None:
            if self.site_answers():
                return
            time.sleep(0.1)
        raise RuntimeError(f"the site did not answer; see {self.workdir / 'site.log'}")

    def site_answers(self):
        try:
            return requests.get(f"{self.site}/", timeout=2).status_code == 200
        except requests.RequestException:
            return False

    def start_site_helper(self, name, *manage_args):
        """A `manage.py` command running beside the site (the sweeper's loop)."""
        helper = self.process_class(name, [PY, "manage.py", *manage_args], self.env, self.workdir / f"{name}.log")
        helper.start()
        self.site_helpers.append(helper)
        return helper

    def start_agent(self, name, token, *options, redis_url=None, site=None):
        """`profiler_agent work` on the CPU, on every GPU type's queue. `redis_url`: its host's own, with
        its Redis user's password (agent_redis.create_or_rotate's), else the platform's; `site`: the site
        as this host reaches it (a CuttableProxy's URL), else the site's own address. Secrets (the token,
        the Redis URL that `--redis` defaults to) go in its environment, as in production: a command
        line is visible to every user of the host."""
        queues = [arg for gpu_type in self.gpu_types for arg in ("--queue", gpu_type.queue_name)]
        command = [PY, "-m", "profiler_agent", "work", "--site", site or self.site, *queues,
                   "--name", name, "--device", "cpu", *options]
        env = {**self.env, "PROFILER_AGENT_TOKEN": token, "REDIS_URL": redis_url or self.redis_url}
        agent = self.process_class(name, command, env, self.workdir / f"agent-{len(self.agents)}.log")
        agent.start()
        self.agents.append(agent)
        return agent

    def stop_agents(self):
        for agent in self.agents:
            agent.stop()
        self.agents = []

    def close(self):
        self.stop_agents()
        for process in [self.site_process, *self.site_helpers]:
            if process is not None:
                process.stop()
        self.database.close()

    # ---- the contestants' API ----------------------------------------------------------------------
    def post_submission(self, files, attempts=1, timeout_s=60):
        """Sends a bundle's files ((name, bytes) pairs) to the contest's issue: the submission's id. More
        `attempts`, 1 s apart, ride out a site that is being restarted."""
        for attempt in range(attempts):
            if attempt:
                time.sleep(1)
            try:
                response = requests.post(f"{self.site}/api/v1/submissions", data={"issue": self.issue_code},
                                         files=[("files", file) for file in files],
                                         headers={"Authorization": f"Bearer {self.contestant_token}"}, timeout=timeout_s)
            except requests.RequestException as exc:
                failure = f"{type(exc).__name__}: {exc}"
                continue
            if response.status_code == 201:
                return response.json()["id"]
            failure = f"{response.status_code} {response.text[:500]}"
        raise RuntimeError(f"submitting failed: {failure}")
