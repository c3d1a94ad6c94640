"""Exactly once under chaos: real gunicorn, a private real Redis, CPU profiler agents, dozens of
submissions in flight, and faults; afterwards every submission must have exactly one final verdict
per GPU type (none lost, none duplicated, none stuck), and each fault's time to recover is printed.

    python bench/fleet/recovery.py [--submissions 40] [--agents 3] [--rounds 1] [--partition-seconds 120]
                                   [--out bench/results/recovery/recovery.json]

Each agent host runs under its own Redis ACL user, made by the site's code (agent_redis.create_or_rotate)
and kept, as an operator would configure it, in the server's ACL file (`--aclfile`); each reaches the
site through a proxy of its own (live_platform.CuttableProxy), so that its link can be cut.

Faults, in order, each once per round (the next waits until the platform recovered from the last):
- kill-agent-back: SIGKILL a judging agent's process group; it comes back at once under its name
  (as systemd's Restart= would);
- kill-agent-gone: the same, but the host stays away until its run is judged again elsewhere;
- redis-kept: Redis shut down and started again with its data (append-only file) and its ACL file;
- redis-lost: Redis shut down and started again empty, its ACL file too: every host's user is gone
  until the site's sweep makes them again (agent_redis.restore_missing);
- site-restart: gunicorn stopped (SIGTERM) and started again;
- partition: a judging agent's host cannot reach the site for --partition-seconds (its proxy refuses
  connections and closes the open ones) while its Redis connection stays up. The site hands its run
  back after RUN_SILENT_AFTER_SECONDS and another agent judges it; the host's report, if it still
  comes after the link is back, must be audited `run.late_report` (never as a forged report or a
  refused progress report), and the host must not be quarantined.
Agents that exit on their own are restarted after 1 s, like systemd would. The sweeper runs as
production runs it (`manage.py sweep_runs --loop`) and on agents' heartbeats.

Second judging (services/confirming) gives a passed run that would change the board a confirming run
on another host: the audit counts those apart ("second_judgings"), each with exactly one verdict.

"Recovered" means: the site and Redis answer, every queued run's job is in Redis, and no run is
still held by a killed (or cut off) agent's attempt. Also timed: "judged again", until a killed run's next
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

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.fleet.recovery_audit import (LATE_REPORT_WAIT_S, Fault, audit, handed_back, judged_again,  # noqa: E402
                                       judging_agent, late_report_of, recovered, resumed, run_rows, timezone_now,
                                       wait_until)
from live_platform import kernels  # noqa: E402
from live_platform import (CuttableProxy, Database, Platform, RedisServer, ServiceProcess,  # noqa: E402
                           is_postgres, make_log)

EXAMPLES = ROOT / "examples"
BUNDLES = {"relu-cpu": "passed", "relu-cpu-wrong": "wrong_answer"}
FAULTS = ("kill-agent-back", "kill-agent-gone", "redis-kept", "redis-lost", "site-restart", "partition")
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
    """The platform on a private Redis, every process supervised, as systemd would; each agent host on
    its own Redis ACL user and behind its own cuttable link to the site."""

    process_class = Supervised

    def __init__(self, folder, n_agents, n_gpu_types):
        self.redis = RedisServer(Path(folder) / "redis", aclfile=True)
        self.proxies = {}  # agent name: its link to the site
        super().__init__(folder, chaos_database(folder), f"{self.redis.url}/0", {
            "ALLOWED_HOSTS": "127.0.0.1,localhost", "GUNICORN_ACCESS_LOG": "/dev/null", "GUNICORN_WORKERS": "2",
            "LOG_LEVEL": "WARNING", "DJANGO_SETTINGS_MODULE": "config.settings"})
        self.n_agents, self.n_gpu_types = n_agents, n_gpu_types
        self._watching = False

    def setup(self):
        self.redis.start()
        self.prepare_database()
        self.seed_contest("Chaos season", [("cpu" if i == 0 else f"cpu{i}", f"CPU {i}") for i in range(self.n_gpu_types)],
                          ("chaos", "pw-chaos-123", "Chaos"),
                          second_judging="board_changes")  # a season as contests run it: second judgings too
        self.start_site()
        self.start_site_helper("sweeper", "sweep_runs", "--loop")
        cache = os.environ.get("PROFILER_AGENT_CACHE_DIR", str(ROOT / "var" / "test-build-cache"))
        from submissions.services import agent_redis

        for i in range(self.n_agents):
            name = f"chaos-{i}"
            agent, token = self.register_agent(name)
            redis_url = agent_redis.create_or_rotate(agent.name)  # as manage.py create_agent does
            self.proxies[name] = CuttableProxy(("127.0.0.1", self.port))
            process = self.start_agent(name, token, "--cache-dir", cache, redis_url=redis_url,
                                       site=self.proxies[name].url)
            process.agent_pk = agent.pk
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
        # a kernel of its own (the site refuses one submitted before), built once for all
        files = kernels.distinct([(p.name, p.read_bytes()) for p in sorted((EXAMPLES / example).iterdir()) if p.is_file()])
        return self.post_submission(files, attempts=30, timeout_s=30)  # the site may be restarting

    def close(self):
        self._watching = False
        for proxy in self.proxies.values():
            proxy.close()
        try:
            super().close()
        finally:
            try:
                self.redis.stop(keep_data=False)
            except Exception:
                pass


def inject(platform, kind, recover_timeout, partition_s=120.0):
    if kind == "partition":
        # a judgement just begun: it is still going when the heartbeats stop (a CPU one takes 40-80 s)
        picked = []
        wait_until(lambda: picked.append(judging_agent(platform, max_running_s=15)) or picked[-1] is not None, 120)
        agent, casualty = picked[-1] or (next(a for a in platform.agents if a.process.poll() is None), None)
        fault = Fault(kind, time.time())
        proxy = platform.proxies[agent.name]
        proxy.cut()
        fault.casualty, fault.agent_name = casualty, agent.name
        fault.cut_at = timezone_now()
        if casualty:
            fault.gpu_slug = next(r["gpu_type__slug"] for r in run_rows() if r["pk"] == casualty[0])
        cut_started = time.monotonic()

        def heal():
            proxy.heal()
            fault.healed_s = time.monotonic() - cut_started
            log(f"partition: {agent.name}'s link to the site is back after {round(fault.healed_s, 1)} s")

        healer = threading.Timer(partition_s, heal)
        healer.start()
        log(f"partition: {agent.name} cut off from the site for {partition_s:.0f} s"
            + (f" while it judged run {casualty[0]} attempt {casualty[1]}" if casualty else " (no run was being judged)"))
    elif kind.startswith("kill-agent"):
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
    if fault.casualty and kind == "partition":
        fault.handed_back_s = since_fault(lambda: handed_back(fault))
    if fault.casualty:
        fault.judged_again_s = since_fault(lambda: judged_again(fault))
        if kind == "kill-agent-gone":
            agent.held = False
            agent.start()
    fault.resumed_s = since_fault(lambda: resumed(fault.at))
    rounded = lambda value: None if value is None else round(value, 1)  # noqa: E731
    if kind == "partition":
        healer.join()
        if fault.casualty:
            # the host's report, if its client still tries once the link is back
            wait_until(lambda: late_report_of(fault) is not None, LATE_REPORT_WAIT_S, poll=1)
            fault.late_report = late_report_of(fault) or f"none within {LATE_REPORT_WAIT_S} s of the heal"
        log(f"partition: run handed back after {rounded(fault.handed_back_s)} s, judged again after "
            f"{rounded(fault.judged_again_s)} s; the cut-off host's report: {fault.late_report}")
    log(f"{kind}: recovered in {rounded(fault.recovered_s)} s, judging resumed after {rounded(fault.resumed_s)} s"
        + (f", the affected run judged again after {rounded(fault.judged_again_s)} s" if fault.casualty else ""))
    return fault


def run_chaos(submissions=40, agents=3, gpu_types=1, rounds=1, faults=FAULTS, recover_timeout=120,
              finish_timeout=900, folder=None, partition_s=120.0):
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
        results = [inject(platform, kind, recover_timeout, partition_s) for _ in range(rounds) for kind in faults]
        done = wait_until(lambda: all(r["status"] == "done" for r in run_rows()), finish_timeout, poll=1)
        counts, problems = audit(platform, expected)
        report = {
            "submissions": submissions, "agents": agents, "gpu_types": gpu_types,
            "database": "postgresql" if platform.database.is_postgres else "sqlite",
            "all_done": done is not None, "wall_s": round(time.monotonic() - started, 1), **counts,
            "faults": [{"fault": f.kind, **{key: None if getattr(f, key) is None else round(getattr(f, key), 1)
                                            for key in ("recovered_s", "judged_again_s", "resumed_s")},
                        "run": f.casualty and list(f.casualty),
                        **({"handed_back_s": f.handed_back_s and round(f.handed_back_s, 1),
                            "healed_s": f.healed_s and round(f.healed_s, 1), "late_report": f.late_report,
                            "agent": f.agent_name} if f.kind == "partition" else {})} for f in results],
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
    parser.add_argument("--partition-seconds", type=float, default=120, help="how long the partition fault lasts")
    parser.add_argument("--faults", default=",".join(FAULTS), help=f"which faults, in order (of {', '.join(FAULTS)})")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "recovery" / "recovery.json",
                        help="the report as JSON (default %(default)s)")
    parser.add_argument("--folder", type=Path, help="for Redis's files and the logs (default: a new temporary one)")
    args = parser.parse_args(argv)
    faults = [kind.strip() for kind in args.faults.split(",") if kind.strip()]
    unknown = sorted(set(faults) - set(FAULTS))
    if unknown:
        parser.error(f"unknown faults {', '.join(unknown)}: choose among {', '.join(FAULTS)}")
    report = run_chaos(args.submissions, args.agents, args.gpu_types, args.rounds, faults=faults,
                       recover_timeout=args.recover_timeout, folder=args.folder, partition_s=args.partition_seconds)
    print(json.dumps(report, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    ok = report["all_done"] and not report["problems"] and all(f["recovered_s"] is not None for f in report["faults"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
