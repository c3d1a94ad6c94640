"""Exactly once under chaos: real gunicorn, a private real Redis, CPU profiler agents, dozens of
submissions in flight, and faults; afterwards every submission must have exactly one final verdict
per GPU type (none lost, none duplicated, none stuck), and each fault's time to recover is printed.

    python bench/chaos.py [--submissions 40] [--agents 3] [--rounds 1] [--out results/chaos.json]

Faults, in order, each once per round (the next waits until the platform recovered from the last):
- kill-agent-back: SIGKILL a judging agent's process group; it comes back at once under its name
  (as systemd's Restart= would);
- kill-agent-gone: the same, but the host stays away until its run is judged again elsewhere;
- redis-kept: Redis shut down and started again with its data (append-only file);
- redis-lost: Redis shut down and started again empty;
- site-restart: gunicorn stopped (SIGTERM) and started again.
Agents that exit on their own are restarted after 1 s, like systemd would. The sweeper runs as
production runs it (`manage.py sweep_runs --loop`) and on agents' heartbeats.

"Recovered" means: the site and Redis answer, every queued run's job is in Redis, and no run is
still held by a killed agent's attempt. Also timed: "judged again", until a killed run's next
attempt starts (it waits for a free agent), and "resumed", until a run starts or finishes after the
fault (it waits for a judgement to end: tens of seconds on a busy CPU). Database: a fresh PostgreSQL database when DATABASE_URL names PostgreSQL (dropped at the
end), else a SQLite file in the run's temporary folder. tests/e2e/test_chaos.py runs a reduced form.
"""
import argparse
import json
import os
import signal
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.live_platform import Database, Platform, RedisServer, ServiceProcess, is_postgres, make_log  # noqa: E402

EXAMPLES = ROOT / "examples"
BUNDLES = {"relu-cpu": "passed", "relu-cpu-wrong": "wrong_answer"}
FAULTS = ("kill-agent-back", "kill-agent-gone", "redis-kept", "redis-lost", "site-restart")
log = make_log("chaos", clock=True)


class Supervised(ServiceProcess):
    """A process restarted 1 s after it exits, unless held down (a host that is gone)."""

    stop_grace_s = 15

    def __init__(self, name, command, env, log_path):
        super().__init__(name, command, env, log_path)
        self.held, self.restarts = False, 0
        self.lock = threading.Lock()  # the watcher restarts processes while a fault kills them

    def start(self):
        with self.lock:
            super().start()

    def kill_group(self, sig=signal.SIGKILL):
        with self.lock:
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                pass
        self.process.wait()

    def tick(self):
        if not self.held and self.process.poll() is not None:
            time.sleep(1)
            if not self.held and self.process.poll() is not None:
                self.restarts += 1
                self.start()

    def stop(self):
        self.held = True
        super().stop()


def chaos_database(folder):
    """A fresh PostgreSQL database when DATABASE_URL names PostgreSQL (dropped at the end), else a SQLite file."""
    base = os.environ.get("DATABASE_URL", "")
    if is_postgres(base):
        server = base.split("?")[0].rsplit("/", 1)[0]
        return Database(f"{server}/gpucf_chaos_{uuid.uuid4().hex[:8]}", drop_at_end=True)
    return Database(f"sqlite:///{Path(folder) / 'chaos.sqlite3'}")


class ChaosPlatform(Platform):
    """The platform on a private Redis, every process supervised, as systemd would."""

    process_class = Supervised

    def __init__(self, folder, n_agents, n_gpu_types):
        self.redis = RedisServer(Path(folder) / "redis")
        super().__init__(folder, chaos_database(folder), f"{self.redis.url}/0", {
            "ALLOWED_HOSTS": "127.0.0.1,localhost", "GUNICORN_ACCESS_LOG": "/dev/null", "GUNICORN_WORKERS": "2",
            "LOG_LEVEL": "WARNING", "DJANGO_SETTINGS_MODULE": "leaderboard.settings"})
        self.n_agents, self.n_gpu_types = n_agents, n_gpu_types
        self._watching = False

    def setup(self):
        self.redis.start()
        self.prepare_database()
        self.seed_contest("Chaos season", [("cpu" if i == 0 else f"cpu{i}", f"CPU {i}") for i in range(self.n_gpu_types)],
                          ("chaos", "pw-chaos-123", "Chaos"))
        self.start_site()
        self.start_site_helper("sweeper", "sweep_runs", "--loop")
        cache = os.environ.get("PROFILER_AGENT_CACHE_DIR", str(ROOT / "var" / "test-build-cache"))
        for i in range(self.n_agents):
            agent, token = self.register_agent(f"chaos-{i}")
            self.start_agent(f"chaos-{i}", token, "--cache-dir", cache).agent_pk = agent.pk
        self._watching = True
        threading.Thread(target=self._watch, daemon=True).start()

    @property
    def services(self):
        return [self.site_process, *self.site_helpers]

    def _watch(self):
        while self._watching:
            for process in [*self.services, *self.agents]:
                process.tick()
            time.sleep(0.2)

    def submit(self, example):
        # a readme of its own: the site refuses a bundle submitted to the issue before (the code, built once, is the same)
        files = [(p.name, f"chaos submission {uuid.uuid4().hex}".encode() if p.name == "readme.md" else p.read_bytes())
                 for p in sorted((EXAMPLES / example).iterdir()) if p.is_file()]
        return self.post_submission(files, attempts=30, timeout_s=30)  # the site may be restarting

    def close(self):
        self._watching = False
        try:
            super().close()
        finally:
            try:
                self.redis.stop(keep_data=False)
            except Exception:
                pass


# ---- observing ---------------------------------------------------------------------------------

def run_rows():
    from django.db import close_old_connections

    from submissions.models import Run

    close_old_connections()
    return list(Run.objects.values("pk", "status", "attempts", "rq_job_id", "agent_id", "started_at", "finished_at",
                                   "gpu_type__slug"))


def live_jobs(gpu_types):
    import redis

    from submissions import queueing

    try:
        alive = set()
        for gpu_type in gpu_types:
            alive |= queueing.live_job_ids(gpu_type.queue_name)
        return alive
    except redis.RedisError:
        return None


class Fault:
    def __init__(self, kind, at):
        self.kind, self.at = kind, at
        self.casualty = None  # (run pk, attempt) a killed agent held
        self.recovered_s = self.judged_again_s = self.resumed_s = None


def recovered(platform, fault):
    """Whether the platform is whole again after `fault` (see the module's docstring)."""
    rows = run_rows()
    alive = live_jobs(platform.gpu_types)
    if alive is None or not platform.site_answers():
        return False
    for row in rows:
        if row["status"] == "queued" and row["rq_job_id"] not in alive:
            return False
        if fault.casualty and (row["pk"], row["attempts"]) == fault.casualty and row["status"] == "running":
            return False
    return True


def resumed(since_wall):
    """A run started or finished after the fault (judging goes on), or nothing is left to judge."""
    rows = run_rows()
    return all(r["status"] == "done" for r in rows) or any(
        (r["started_at"] and r["started_at"].timestamp() > since_wall)
        or (r["finished_at"] and r["finished_at"].timestamp() > since_wall) for r in rows)


def judged_again(fault):
    pk, attempt = fault.casualty
    row = next(r for r in run_rows() if r["pk"] == pk)
    return row["attempts"] > attempt and row["status"] in ("running", "done") or row["status"] == "done"


def wait_until(condition, timeout, poll=0.25):
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if condition():
            return time.monotonic() - started
        time.sleep(poll)
    return None


def judging_agent(platform, min_running_s=2.0):
    """An agent process judging a run for a while, and that run's (pk, attempt)."""
    from django.utils import timezone

    for row in run_rows():
        if row["status"] == "running" and row["started_at"] and \
                (timezone.now() - row["started_at"]).total_seconds() >= min_running_s:
            for agent in platform.agents:
                if agent.agent_pk == row["agent_id"] and agent.process.poll() is None and not agent.held:
                    return agent, (row["pk"], row["attempts"])
    return None


def inject(platform, kind, recover_timeout):
    if kind.startswith("kill-agent"):
        found = wait_until(lambda: judging_agent(platform) is not None, 120)
        if found is None:
            raise RuntimeError("no agent was judging: nothing to kill")
        agent, casualty = judging_agent(platform)
        fault = Fault(kind, time.time())
        agent.held = kind == "kill-agent-gone"
        agent.kill_group()
        fault.casualty = casualty
        log(f"{kind}: SIGKILLed {agent.name}'s process group while it judged run {casualty[0]} attempt {casualty[1]}")
        if kind == "kill-agent-back":
            agent.start()
    elif kind.startswith("redis"):
        fault = Fault(kind, time.time())
        platform.redis.stop(keep_data=kind == "redis-kept")
        platform.redis.start()
        log(f"{kind}: Redis restarted {'with' if kind == 'redis-kept' else 'without'} its data")
    else:
        fault = Fault(kind, time.time())
        platform.site_process.held = True
        platform.site_process.stop()
        platform.site_process.held = False
        platform.site_process.start()
        log("site-restart: gunicorn stopped and started again")
    started = time.monotonic()

    def since_fault(condition):
        waited = wait_until(condition, max(1.0, recover_timeout - (time.monotonic() - started)))
        return None if waited is None else time.monotonic() - started

    fault.recovered_s = since_fault(lambda: recovered(platform, fault))
    if fault.casualty:
        fault.judged_again_s = since_fault(lambda: judged_again(fault))
        if kind == "kill-agent-gone":
            agent.held = False
            agent.start()
    fault.resumed_s = since_fault(lambda: resumed(fault.at))
    rounded = lambda value: None if value is None else round(value, 1)  # noqa: E731
    log(f"{kind}: recovered in {rounded(fault.recovered_s)} s, judging resumed after {rounded(fault.resumed_s)} s"
        + (f", the killed run judged again after {rounded(fault.judged_again_s)} s" if fault.casualty else ""))
    return fault


def audit(platform, expected):
    """Exactly one final verdict per submission and GPU type, from the runs and the audit trail."""
    from django.db.models import Count

    from submissions.models import AuditEntry, Run, Submission

    problems = []
    verdicts = dict(AuditEntry.objects.filter(action="run.verdict", object_type="run")
                    .values_list("object_id").annotate(n=Count("id")))
    counts = {"runs": 0, "lost": 0, "duplicated": 0, "stuck": 0, "wrong_verdict": 0, "internal_error": 0}
    for submission in Submission.objects.prefetch_related("runs__gpu_type"):
        runs = list(submission.runs.all())
        by_type = {}
        for run in runs:
            by_type.setdefault(run.gpu_type.slug, []).append(run)
        for gpu_type in platform.gpu_types:
            got = by_type.get(gpu_type.slug, [])
            if len(got) != 1:
                counts["lost" if not got else "duplicated"] += 1
                problems.append(f"submission {submission.pk} has {len(got)} runs on {gpu_type.slug}")
        for run in runs:
            counts["runs"] += 1
            n = verdicts.get(str(run.pk), 0)
            if run.status != "done":
                counts["stuck"] += 1
                problems.append(f"run {run.pk} is still {run.status} (attempt {run.attempts})")
            elif n != 1:
                counts["duplicated" if n > 1 else "lost"] += 1
                problems.append(f"run {run.pk} has {n} verdicts in the audit trail")
            if run.verdict == "internal_error":
                counts["internal_error"] += 1
            elif run.status == "done" and run.verdict != expected[submission.pk]:
                counts["wrong_verdict"] += 1
                problems.append(f"run {run.pk}: {run.verdict}, expected {expected[submission.pk]}")
    counts["attempts_max"] = max((r["attempts"] for r in run_rows()), default=0)
    counts["requeued"] = AuditEntry.objects.filter(action="run.requeued").count()
    counts["stale_reports_refused"] = AuditEntry.objects.filter(action="run.forged_report_refused").count()
    counts["starts_refused"] = AuditEntry.objects.filter(action="run.start_refused").count()
    return counts, problems


def run_chaos(submissions=40, agents=3, gpu_types=1, rounds=1, faults=FAULTS, recover_timeout=120,
              finish_timeout=900, folder=None):
    folder = Path(folder or tempfile.mkdtemp(prefix="gpucf-chaos-"))
    folder.mkdir(parents=True, exist_ok=True)
    platform = ChaosPlatform(folder, agents, gpu_types)
    started = time.monotonic()
    try:
        platform.setup()
        log(f"platform up: {platform.site}, Redis {platform.redis.url}, {agents} agents, logs in {folder}")
        expected = {}
        examples = sorted(BUNDLES)
        for i in range(submissions):
            example = examples[i % len(examples)]
            expected[platform.submit(example)] = BUNDLES[example]
        log(f"{submissions} submissions in flight ({submissions * gpu_types} runs)")
        results = [inject(platform, kind, recover_timeout) for _ in range(rounds) for kind in faults]
        done = wait_until(lambda: all(r["status"] == "done" for r in run_rows()), finish_timeout, poll=1)
        counts, problems = audit(platform, expected)
        report = {
            "submissions": submissions, "agents": agents, "gpu_types": gpu_types,
            "database": "postgresql" if platform.database.is_postgres else "sqlite",
            "all_done": done is not None, "wall_s": round(time.monotonic() - started, 1), **counts,
            "faults": [{"fault": f.kind, **{key: None if getattr(f, key) is None else round(getattr(f, key), 1)
                                            for key in ("recovered_s", "judged_again_s", "resumed_s")},
                        "run": f.casualty and list(f.casualty)} for f in results],
            "restarts": {p.name: p.restarts for p in [*platform.agents, *platform.services]},
            "problems": problems[:50],
        }
        return report
    finally:
        platform.close()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--submissions", type=int, default=40)
    parser.add_argument("--agents", type=int, default=3)
    parser.add_argument("--gpu-types", type=int, default=1, help="GPU types of the season (all served by CPU agents)")
    parser.add_argument("--rounds", type=int, default=1, help="times each fault is injected")
    parser.add_argument("--recover-timeout", type=float, default=120)
    parser.add_argument("--out", type=Path, help="write the report as JSON here")
    parser.add_argument("--folder", type=Path, help="for Redis's files and the logs (default: a new temporary one)")
    args = parser.parse_args(argv)
    report = run_chaos(args.submissions, args.agents, args.gpu_types, args.rounds, recover_timeout=args.recover_timeout,
                       folder=args.folder)
    print(json.dumps(report, indent=2))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    ok = report["all_done"] and not report["problems"] and all(f["recovered_s"] is not None for f in report["faults"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
