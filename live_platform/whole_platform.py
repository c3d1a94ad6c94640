"""The whole platform, live on this machine: the site under gunicorn on a database and port of its own, its
queues on Redis, `manage.py` helpers beside it and profiler agents judging on the CPU, each a real process
in a group of its own; a contest to submit to, submitting through the contestants' API, and stopping it all."""
import os
import time
from pathlib import Path

import requests

from live_platform.ports import free_port
from live_platform.gunicorn_site import GUNICORN
from live_platform.processes import PY, ServiceProcess


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
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
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
            "site", GUNICORN, self.env,
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
