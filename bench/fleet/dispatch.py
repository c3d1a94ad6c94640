"""Dispatch latency and throughput of the whole platform on this machine, with CPU agents.

Starts what scripts/platform.sh starts, for real: the site (gunicorn, deploy/gunicorn.conf.py) on a
fresh database, the RQ queues on Redis (a queue prefix of its own), and N `python -m profiler_agent
work` processes judging on the CPU. Every submission goes through the contestants' HTTP API with
the bundle bench/fixtures/bundles/dispatch-cpu (pure torch, nothing to build). Then it measures:

  (a) submit-to-agent-start latency with an idle fleet: one submission at a time, each judged before
      the next; latency = the run's `started_at` (the site's answer to the agent's start call) minus
      the submission's `created_at`; p50/p95 over --latency submissions (target p95 < 1 s);
  (b) judgings per minute with 1, 2, 4 and 8 agents over a batch of --batch submissions sent at once;
  (c) the cost of each stage of a judging, from timestamps the platform keeps: the site's (submission
      created, run enqueued/started/finished), RQ's job hash (enqueued, started, ended), the agent
      job's wall-clock marks (start answered, bundle downloaded, judged, result posted) and the
      result's `durations_s` (compile, correctness, timing, total in the judging child).

    python bench/fleet/dispatch.py                    # ~10 min on 2 cores: bench/results/dispatch/full.json, .md
    python bench/fleet/dispatch.py --quick            # ~2 min: 5 latencies, 1-2 agents (quick.json)
    python bench/fleet/dispatch.py --agents ""        # (a) and (c) only (latency.json)

The database: --database-url (default a fresh PostgreSQL database `gpucf_bench_dispatch` on
127.0.0.1, dropped and made again). Redis: --redis-url, a database of the bench's own (default 6 on
127.0.0.1; the site's queue goes to the next one): RQ job ids are `run-<run id>-<attempt>`, the same
in every fresh site database, so the bench clears the `rq:*run-*` keys it finds there before it starts.
"""
from __future__ import annotations

import argparse
import json
import os
import platform as host_platform
import statistics
import subprocess
import sys
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import live_platform  # noqa: E402
# bench/fleet/two_gpus.py imports ROOT, Platform, machine and stop from here
from live_platform import PY, Database, make_log  # noqa: E402
from live_platform import stop_process_group as stop  # noqa: E402, F401

BUNDLE = ROOT / "bench" / "fixtures" / "bundles" / "dispatch-cpu"
DEFAULT_DATABASE = "postgres://postgres@127.0.0.1:5432/gpucf_bench_dispatch"
log = make_log("dispatch", to_stderr=True)


def percentile(values, fraction):
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(fraction * len(ordered) + 0.5) - 1))]


class Platform(live_platform.Platform):
    """The platform on a shared Redis: queues named after this run's tag (their keys deleted by `close`),
    agents started and stopped for each measurement. bench/fleet/two_gpus.py subclasses it: it keeps its
    fleet's (process, log file) pairs in `agents` and its helpers in `helpers`, and stops both itself."""

    def __init__(self, workdir: Path, database_url: str, redis_url: str):
        self.tag = f"bench-{uuid.uuid4().hex[:8]}"
        super().__init__(workdir, Database(database_url), redis_url, {
            "GPU_QUEUE_PREFIX": f"{self.tag}.gpu.", "SITE_QUEUE_NAME": f"{self.tag}.site",
            "GUNICORN_ACCESS_LOG": str(workdir / "access.log"), "PROFILER_AGENT_CACHE_DIR": str(workdir / "build-cache")})
        self.agent_tokens = []

    # -- set-up ------------------------------------------------------------------------------
    def prepare(self, agent_count, gpu_slug="cpu", gpu_name="CPU"):
        self.prepare_database()
        self.seed_contest("Bench season", [(gpu_slug, gpu_name)], ("bench", "bench-password-1", "Bench"))
        self.queue = self.gpu_types[0].queue_name
        self.agent_tokens = [self.register_agent(f"{self.tag}-agent-{i}")[1] for i in range(agent_count)]
        from submissions import queueing

        for key in queueing.connection().scan_iter("rq:*run-*"):  # jobs of an earlier bench's runs
            queueing.connection().delete(key)

    def start_agents(self, count):
        from submissions.models import Agent

        since = datetime.now(timezone.utc)
        for i in range(count):
            self.start_agent(f"{self.tag}-{len(self.agents)}", self.agent_tokens[i], "--heartbeat-seconds", "30")
        # Ready when each has sent its first heartbeat (sent before its worker listens) and has had a
        # moment to reach its blocking dequeue.
        deadline = time.monotonic() + 120
        while Agent.objects.filter(last_heartbeat_at__gte=since).count() < count:
            if time.monotonic() > deadline:
                raise RuntimeError("the agents did not call in; see their logs in " + str(self.workdir))
            time.sleep(0.2)
        time.sleep(2)

    def close(self):
        super().close()
        from submissions import queueing

        for connection in (queueing.connection(), queueing.site_connection()):
            for key in connection.scan_iter(f"*{self.tag}*"):
                connection.delete(key)

    # -- work ----------------------------------------------------------------------------------
    def submit(self, index, bundle=BUNDLE):
        files = [(name, (bundle / name).read_bytes() + (f"\n# submission {index}\n".encode()
                                                         if name == "cudacode.py" else b""))
                 for name in ("torchcode.py", "cudacode.py")]
        return self.post_submission(files)

    def wait_done(self, submission_ids, timeout_s=900):
        from submissions.models import Run, RunStatus

        deadline = time.monotonic() + timeout_s
        while Run.objects.filter(submission_id__in=submission_ids).exclude(status=RunStatus.DONE).exists():
            if time.monotonic() > deadline:
                raise RuntimeError(f"runs not done after {timeout_s} s; see the logs in {self.workdir}")
            for agent in self.agents:
                if agent.process.poll() is not None:
                    raise RuntimeError(f"an agent exited with {agent.process.returncode}; see {self.workdir}")
            time.sleep(0.05)
        self.wait_jobs_ended(submission_ids)

    def wait_jobs_ended(self, submission_ids, timeout_s=60):
        """The agents' RQ jobs keep their marks in their results, stored after the result post: wait
        for them before an agent is stopped (its work-horse is in its process group)."""
        from rq.job import Job

        from submissions import queueing
        from submissions.models import Run

        keys = [Job.key_for(job_id) for job_id in
                Run.objects.filter(submission_id__in=submission_ids).values_list("rq_job_id", flat=True)]
        deadline = time.monotonic() + timeout_s
        connection = queueing.connection()
        while any(connection.hget(key, "ended_at") is None for key in keys) and time.monotonic() < deadline:
            time.sleep(0.05)


# ---- what one judging cost, stage by stage -----------------------------------------------------

def _rq_time(value):
    if not value:
        return None
    text = value.decode() if isinstance(value, bytes) else value
    return datetime.strptime(text.rstrip("Z"), "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=timezone.utc).timestamp()


def judging_record(run):
    """The timeline of one run (Unix seconds) and its stages (seconds)."""
    from rq.job import Job

    from submissions import queueing

    connection = queueing.connection()
    job_hash = connection.hgetall(Job.key_for(run.rq_job_id))
    job = Job.fetch(run.rq_job_id, connection=connection, serializer=queueing.SERIALIZER)
    marks = (job.return_value() or {}).get("marks") or {}
    durations = (run.result or {}).get("durations_s") or {}
    t = {
        "created": run.submission.created_at.timestamp(),
        "run_row": run.enqueued_at.timestamp(),
        "rq_enqueued": _rq_time(job_hash.get(b"enqueued_at")),
        "rq_started": _rq_time(job_hash.get(b"started_at")),
        "job_begun": marks.get("begun"),
        "site_started": run.started_at.timestamp(),
        "agent_started": marks.get("started"),
        "downloaded": marks.get("downloaded"),
        "judged": marks.get("judged"),
        "site_finished": run.finished_at.timestamp(),
        "reported": marks.get("reported"),
        "rq_ended": _rq_time(job_hash.get(b"ended_at")),
    }

    def span(a, b):
        return None if t.get(a) is None or t.get(b) is None else t[b] - t[a]

    judging = durations.get("total")
    inside = sum(durations.get(k) or 0.0 for k in ("compile", "correctness", "timing"))
    stages = {
        "request to enqueue (on_commit)": span("created", "rq_enqueued"),
        "dequeue wait (queued in Redis)": span("rq_enqueued", "rq_started"),
        "work-horse fork to job code": span("rq_started", "job_begun"),
        "start request (site answers)": span("job_begun", "agent_started"),
        "bundle download": span("agent_started", "downloaded"),
        "judging: build": durations.get("compile"),
        "judging: correctness": durations.get("correctness"),
        "judging: timing": durations.get("timing"),
        "judging: child start, checks, teardown": None if judging is None else judging - inside,
        "bundle unpack, clean-up": None if judging is None or span("downloaded", "judged") is None
        else span("downloaded", "judged") - judging,
        "result post": span("judged", "reported"),
        "job end (RQ bookkeeping)": span("reported", "rq_ended"),
    }
    return {"run": run.pk, "verdict": run.verdict, "latency_s": span("created", "site_started"),
            "times": t, "stages_s": stages}


def records(submission_ids):
    from submissions.models import Run

    runs = Run.objects.filter(submission_id__in=submission_ids).select_related("submission").order_by("pk")
    return [judging_record(run) for run in runs]


# ---- the three measurements -------------------------------------------------------------------

def measure_latency(platform, count, agents):
    log(f"(a) latency: {count} submissions one at a time, {agents} idle agent(s)")
    platform.start_agents(agents)
    ids = []
    for i in range(count):
        ids.append(platform.submit(i))
        platform.wait_done([ids[-1]])
        time.sleep(0.5)  # the fleet is idle again (the agent back in its blocking dequeue)
    platform.stop_agents()
    rows = records(ids)
    latencies = [r["latency_s"] for r in rows]
    return {"agents": agents, "submissions": count, "p50_s": percentile(latencies, 0.5),
            "p95_s": percentile(latencies, 0.95), "max_s": max(latencies), "records": rows}


def measure_throughput(platform, agents, batch):
    log(f"(b) throughput: {batch} submissions at once, {agents} agent(s)")
    platform.start_agents(agents)
    began = time.time()
    # labels of their own: the site refuses a bundle sent to the issue before (a latency one, or one of an
    # earlier phase with as many agents, `--agents 1,1`)
    phase = uuid.uuid4().hex[:8]
    ids = [platform.submit(f"{agents}-agents-{phase}-{i}") for i in range(batch)]
    submitted = time.time()
    platform.wait_done(ids, timeout_s=60 + 60 * batch)
    platform.stop_agents()
    rows = records(ids)
    first = min(r["times"]["created"] for r in rows)
    last = max(r["times"]["site_finished"] for r in rows)
    verdicts = {}
    for r in rows:
        verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
    judging = [r["stages_s"]["judging: timing"] for r in rows]
    return {"agents": agents, "submissions": batch, "submit_s": submitted - began, "elapsed_s": last - first,
            "per_minute": 60 * batch / (last - first), "verdicts": verdicts,
            "median_run_s": statistics.median(r["times"]["site_finished"] - r["times"]["site_started"] for r in rows),
            "median_timing_phase_s": statistics.median(j for j in judging if j is not None), "records": rows}


def stage_table(rows):
    names = list(rows[0]["stages_s"])
    table = {}
    for name in names:
        values = [r["stages_s"][name] for r in rows if r["stages_s"][name] is not None]
        if values:
            table[name] = {"median_s": statistics.median(values), "p95_s": percentile(values, 0.95)}
    return table


def python_with_torch_start_s(repeats=3):
    """A fresh interpreter importing torch: what each process a judging spawns pays first (the
    judged child and the verifier each are one)."""
    times = []
    for _ in range(repeats):
        began = time.monotonic()
        subprocess.run([PY, "-c", "import torch"], check=True)
        times.append(time.monotonic() - began)
    return statistics.median(times)


def machine():
    cpu = ""
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "python": host_platform.python_version(),
            "load_before": os.getloadavg()}


def render(report):
    lines = [f"Machine: {report['machine']['cpu']}, {report['machine']['cores']} cores "
             f"(load average before: {', '.join(f'{x:.2f}' for x in report['machine']['load_before'])}).", ""]
    latency = report.get("latency")
    if latency:
        lines += [f"(a) submit-to-agent-start, {latency['submissions']} submissions one at a time, "
                  f"{latency['agents']} idle agent(s): p50 {latency['p50_s'] * 1000:.0f} ms, "
                  f"p95 {latency['p95_s'] * 1000:.0f} ms, max {latency['max_s'] * 1000:.0f} ms", ""]
    if report.get("throughput"):
        lines += ["(b) | agents | submissions | elapsed s | judgings/min | median run s | verdicts |",
                  "| ---: | ---: | ---: | ---: | ---: | --- |"]
        for row in report["throughput"]:
            lines.append(f"| {row['agents']} | {row['submissions']} | {row['elapsed_s']:.1f} | {row['per_minute']:.1f} | "
                         f"{row['median_run_s']:.2f} | {row['verdicts']} |")
        lines.append("")
    if report.get("stages"):
        lines += ["(c) stage (idle fleet, one judging at a time) | median ms | p95 ms |", "| --- | ---: | ---: |"]
        for name, value in report["stages"].items():
            lines.append(f"| {name} | {value['median_s'] * 1000:.1f} | {value['p95_s'] * 1000:.1f} |")
        lines.append(f"| (probe, apart) a fresh Python importing torch | {report['torch_start_s'] * 1000:.0f} | |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5 latencies, 1 and 2 agents, batches of 4")
    parser.add_argument("--latency", type=int, default=30, help="submissions for (a)")
    parser.add_argument("--latency-agents", type=int, default=1, help="idle agents during (a)")
    parser.add_argument("--agents", default="1,2,4,8", help="agent counts for (b)")
    parser.add_argument("--batch", type=int, default=16, help="submissions per agent count in (b)")
    parser.add_argument("--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE))
    parser.add_argument("--redis-url", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/6"),
                        help="a Redis database for the bench alone (the site's queue uses the next one)")
    parser.add_argument("--out", type=Path, help="folder for dispatch.json, dispatch.md and the processes' logs (default: "
                        "logs in a temporary folder, the record in bench/results/dispatch/{full,quick,latency}.json and .md)")
    args = parser.parse_args(argv)
    if args.quick:
        args.latency, args.agents, args.batch = min(args.latency, 5), "1,2", min(args.batch, 4)
    counts = [int(n) for n in args.agents.split(",") if n]
    out = args.out or Path(os.environ.get("TMPDIR", "/tmp")) / f"dispatch-{uuid.uuid4().hex[:6]}"
    out.mkdir(parents=True, exist_ok=True)
    report = {"machine": machine(), "args": {k: str(v) for k, v in vars(args).items()}}
    platform = Platform(out, args.database_url, args.redis_url)
    try:
        platform.prepare(max(counts + [args.latency_agents]))
        platform.start_site()
        if args.latency:
            report["latency"] = measure_latency(platform, args.latency, args.latency_agents)
            report["stages"] = stage_table(report["latency"]["records"])
            report["torch_start_s"] = python_with_torch_start_s()
        report["throughput"] = [measure_throughput(platform, n, args.batch) for n in counts]
    finally:
        platform.close()
    record = out / "dispatch" if args.out else ROOT / "bench" / "results" / "dispatch" / (
        "quick" if args.quick else "full" if counts else "latency")
    record.parent.mkdir(parents=True, exist_ok=True)
    record.with_suffix(".json").write_text(json.dumps(report, indent=1, default=str))
    text = render(report)
    record.with_suffix(".md").write_text(text + "\n")
    print(text)
    log(f"record: {record.with_suffix('.json')}; logs in {out}")
    return report


if __name__ == "__main__":
    main()
