"""The RQ job the site enqueues, by its wire name `profiler_agent.service.jobs.judge_run` (protocol.vocabulary.JOB_FUNCTION), with JSON
arguments `{"run_id", "attempt"}` and nothing else: Redis is readable and writable by every agent
host, so it carries nothing secret and nothing trusted (see job_guard for what the worker refuses).

Protocol: POST `<site>/api/v1/agent/runs/<id>/start` with the agent token and `{"attempt": n}`. The
site checks the run is this agent's to judge and answers with the secret of this attempt, the bundle
and result paths and the judging options (409: already finished or started by another agent; 403:
stale attempt or a GPU type this agent does not serve; 404: no such run; each: do nothing). Then GET
the bundle (a zip), judge it, POST the result (409: already reported; 403: refused; both logged).
Every call after start carries the token and the secret. When the worker's heartbeat is told to stop
this attempt (an organizer cancelled the run: worker.job_stop), the judging ends at once, everything
it started is killed, and nothing is reported: the job ends normally and the worker takes the next.
While judging, the stage (compiling, checking, timing, profiling, self_test) goes to the answer's
`progress_url`, when it names one (worker.stage_reporter). A profile run's `.ncu-rep` goes to the
answer's `profile_file_url` (raw bytes, the secret, `?attempt=n`) before its result. Paths are joined to the agent's own --site;
an absolute URL elsewhere is refused (the token must never travel to another host). A failure of
our own is reported as `internal_error`, then re-raised so RQ records the job as failed.
"""

from __future__ import annotations

import logging
import tempfile
import time
import traceback
from pathlib import Path
from urllib.parse import urlsplit

from profiler_agent.protocol.vocabulary import START_PATH
from profiler_agent.sandbox import judging_stop
from profiler_agent.worker import agent_config, job_stop
from profiler_agent.bundles.bundle import BundleError, open_bundle
from profiler_agent.judge.judging import judge_bundle, unjudged_result
from profiler_agent.judge.options import JudgeOptions

log = logging.getLogger(__name__)


SKIP = (403, 409)
# A judgement is worth waiting for: its result is posted for about 6 minutes (back-off capped at 30 s)
# before it is given up, so a host cut off from the site for minutes still delivers it (as a late
# report, if the site handed the run to another host meanwhile).
RESULT_ATTEMPTS, RESULT_BACKOFF_CAP_S = 16, 30.0




class ForeignUrl(ValueError):
    """The site's answer named a URL outside the agent's own site."""


def site_url(site: str, url: str) -> str:
    """A path joined to the site address (which may have a path prefix); an absolute URL only when it
    lies on that same site, since the agent's token and the run's secret go wherever it points."""
    parts, base = urlsplit(url), urlsplit(site)
    if not (parts.scheme or parts.netloc):
        return site.rstrip("/") + "/" + url.lstrip("/")
    prefix = base.path.rstrip("/") + "/"
    if (parts.scheme, parts.netloc) != (base.scheme, base.netloc) or not (parts.path + "/").startswith(prefix):
        raise ForeignUrl(f"refusing {url!r}: not on this agent's site {site}")
    return url


def _positive_option(options: dict, key: str) -> float:
    value = float(options[key])
    if not value > 0:
        raise ValueError(f"job option {key} must be positive, got {options[key]!r}")
    return value


def judge_options(config: agent_config.AgentConfig, options: dict) -> JudgeOptions:
    """The agent's settings, overridden by the run's options (unknown keys are ignored)."""
    judged = JudgeOptions(
        device=config.device,
        cache_dir=config.cache_dir,
        memory_limit_bytes=config.memory_limit_bytes,
        compile_memory_limit_bytes=config.compile_memory_limit_bytes,
    )
    if config.timeout_s:
        judged.timeout_s = config.timeout_s
    if config.compile_timeout_s:
        judged.compile_timeout_s = config.compile_timeout_s
    judged.ncu = config.ncu
    judged.keep_warm = config.keep_warm
    if config.ncu_timeout_s:
        judged.ncu_timeout_s = config.ncu_timeout_s
    # the site's timeout_s is the run timeout; run_timeout_s is its newer name and wins
    for key in ("timeout_s", "run_timeout_s"):
        if options.get(key) is not None:
            judged.timeout_s = _positive_option(options, key)
    if options.get("compile_timeout_s") is not None:
        judged.compile_timeout_s = _positive_option(options, "compile_timeout_s")
    for key in ("atol", "rtol"):
        if options.get(key) is not None:
            setattr(judged, key, float(options[key]))
    if options.get("seed") is not None:
        judged.seed = int(options["seed"])
    # a test submission's run: correctness only (the site's judging_options)
    judged.correctness_only = options.get("correctness_only") is True or options.get("mode") == "test"
    if options.get("mode") == "profile":  # the trials, then the profile report (judge.profile_report)
        judged.correctness_only = judged.profile = True
        asked = options.get("profile") if isinstance(options.get("profile"), dict) else {}
        if asked.get("kernels_per_model") is not None:
            judged.profile_kernels = max(1, int(asked["kernels_per_model"]))
        if asked.get("timeout_s") is not None:
            judged.profile_timeout_s = _positive_option(asked, "timeout_s")
    return judged


def upload_profile_report(client, url: str, result: dict, folder: Path, max_bytes: int | None) -> None:
    """Send a profile run's .ncu-rep to the site, gzip-compressed (an H200's reports of two kernels took
    9.6 MB, 0.8 MB compressed), before its result, which ends the attempt; say in the result's
    `report_file` whether the site has it. Never raises: the report's figures go anyway."""
    import gzip

    from profiler_agent.judge.profile_report import REPORT_FILE
    from profiler_agent.worker.site_client import SiteError

    facts = (result.get("profile") or {}).get("report_file")
    path = folder / REPORT_FILE
    if not facts or not path.is_file():
        return
    body = gzip.compress(path.read_bytes(), compresslevel=6, mtime=0)
    if max_bytes and len(body) > max_bytes:
        facts.update(stored=False, why=f"{facts['bytes']:,} bytes ({len(body):,} compressed), more than the site "
                                       f"keeps ({max_bytes:,})")
        return
    try:
        code, answer = client.post_bytes(url, body, accept=(200, 403, 409, 413, 422))
    except SiteError as exc:
        facts.update(stored=False, why=f"not sent: {exc}"[:500])
        return
    facts.update(stored=code == 200, why=None if code == 200 else f"refused ({code}): {answer.get('detail', '')}"[:500])


def _judge_download(client, bundle_url: str, options: JudgeOptions, marks: dict, upload=None) -> dict:
    """`upload(result, folder)`: a profile run's report, sent from the folder judge_bundle kept it in."""
    with tempfile.TemporaryDirectory(prefix="profiler-agent-run-", ignore_cleanup_errors=True) as tmp:
        archive = Path(tmp) / "bundle.zip"
        archive.write_bytes(client.get_bytes(bundle_url))
        marks["downloaded"] = time.time()
        try:
            bundle = open_bundle(archive, Path(tmp))
        except BundleError as exc:
            # the submission's fault, not ours: retrying would fail the same way
            return unjudged_result(options.device, "runtime_error", f"[profiler_agent] {exc}\n")
        if options.profile:
            options.profile_dir = Path(tmp) / "profile"
        result = judge_bundle(bundle, options)
        if upload is not None and options.profile_dir is not None:
            upload(result, options.profile_dir)
        return result


def _post_result(client, result_url: str, result: dict, run_id: int) -> None:
    code = client.post_json(result_url, result, accept=(200, *SKIP))
    if code == 409:
        log.info("run %s: the site already has a result; this one was not stored", run_id)
    elif code == 403:
        log.warning("run %s: result refused (an earlier attempt, or the run was given to another agent)", run_id)


def start_payload(config, attempt: int) -> dict:
    """Who starts: the worker (one GPU of this host), its GPU and its harness version."""
    import profiler_agent

    return {"attempt": attempt, "agent": config.name, "worker": config.name,
            "gpu_uuid": config.gpu.uuid if config.gpu is not None else None,
            "harness_version": profiler_agent.HARNESS_VERSION}


def _start(client, config, run_id: int, attempt: int) -> dict | None:
    """The site's answer to start, or None when the run is not ours to judge (logged). A refusal that
    says `accept_jobs: false` (this worker is draining, or too old for the run's season: the site put
    the run back in its queue) closes or pauses the worker's gate, which the worker shares with us."""
    from profiler_agent.worker import job_gate

    from profiler_agent.worker.heartbeat import close_while_unreachable
    from profiler_agent.worker.site_client import SiteUnreachable

    url = site_url(config.site, START_PATH.format(run_id=run_id))
    # 404 too: a job left in Redis from before a site's database was reset names a run that is gone.
    try:
        code, answer = client.post_json_answer(url, start_payload(config, attempt), accept=(200, *SKIP, 404))
    except SiteUnreachable as exc:
        # the next job would be dropped the same way: none until a heartbeat gets through
        close_while_unreachable(job_gate.current(), f"run {run_id} could not be started: {exc}")
        raise
    if code != 200:
        reason = {409: "already finished or taken", 403: "refused", 404: "no such run on the site"}[code]
        if answer.get("accept_jobs") is False:
            log.warning("run %s attempt %s: %s; the site put it back in its queue", run_id, attempt, answer.get("detail"))
            job_gate.apply_site_answer(job_gate.current(), answer)
        else:
            log.info("run %s attempt %s: %s (%s); not judging it", run_id, attempt, reason, answer.get("detail", ""))
        return None
    for key in ("job_secret", "bundle_url", "result_url"):
        if not isinstance(answer.get(key), str) or not answer[key]:
            raise ValueError(f"run {run_id}: the site's start answer has no {key}")
    if not isinstance(answer.get("options") or {}, dict):
        raise ValueError(f"run {run_id}: the site's start answer has options that are not an object")
    return answer


def _stage_reporter(config, answer: dict, run_id: int, attempt: int):
    """A StageReporter to the start answer's progress_url; None when the site names none (older sites)
    or names one elsewhere. Its own client tries once, briefly: a stage report is never worth a wait."""
    from profiler_agent.worker.stage_reporter import StageReporter
    from profiler_agent.worker.site_client import SiteClient

    if not isinstance(answer.get("progress_url"), str) or not answer["progress_url"]:
        return None
    try:
        url = site_url(config.site, answer["progress_url"])
    except ForeignUrl:
        log.warning("run %s: the progress URL points off this agent's site; no progress reports", run_id)
        return None
    return StageReporter(SiteClient(config.token, answer["job_secret"], attempts=1, timeout_s=10.0), url, run_id, attempt)


def _report_uploader(config, answer: dict, client, attempt: int):
    """What sends a profile run's .ncu-rep to the start answer's `profile_file_url`; None when it names none."""
    url = answer.get("profile_file_url")
    if not isinstance(url, str) or not url:
        return None
    try:
        url = site_url(config.site, url) + f"?attempt={attempt}"
    except ForeignUrl:
        log.warning("the profile file URL points off this agent's site; the report's file is not sent")
        return None
    asked = (answer.get("options") or {}).get("profile")
    max_bytes = asked.get("max_file_bytes") if isinstance(asked, dict) else None
    return lambda result, folder: upload_profile_report(client, url, result, folder,
                                                        max_bytes if isinstance(max_bytes, int) else None)


def judge_run(run_id: int, attempt: int) -> dict:
    stops = job_stop.current()
    try:
        with judging_stop.stoppable(lambda: stops.ordered(run_id, attempt)):
            return _judge_run(run_id, attempt)
    except judging_stop.JudgingStopped:
        log.warning("run %s attempt %s: cancelled on the site; its judging was stopped and nothing is reported",
                    run_id, attempt)
        return {"run_id": run_id, "attempt": attempt, "status": None, "stopped": True}


def _judge_run(run_id: int, attempt: int) -> dict:
    from profiler_agent.worker.site_client import SiteClient

    # Wall-clock marks of the job's stages (Unix seconds, comparable with the site's timestamps on
    # one machine), kept in the job's result for bench/dispatch.py.
    marks = {"begun": time.time()}
    config = agent_config.current()
    answer = _start(SiteClient(config.token), config, run_id, attempt)
    marks["started"] = time.time()
    if answer is None:
        return {"run_id": run_id, "attempt": attempt, "status": None, "skipped": True, "marks": marks}
    client = SiteClient(config.token, answer["job_secret"])
    result_client = SiteClient(config.token, answer["job_secret"], attempts=RESULT_ATTEMPTS,
                               max_backoff_s=RESULT_BACKOFF_CAP_S)
    try:
        bundle_url, result_url = site_url(config.site, answer["bundle_url"]), site_url(config.site, answer["result_url"])
    except ForeignUrl:
        log.exception("run %s: the site's answer points elsewhere; not judging it", run_id)
        raise
    reporter = _stage_reporter(config, answer, run_id, attempt)
    try:
        options = judge_options(config, answer.get("options") or {})
        options.progress = reporter
        result = _judge_download(client, bundle_url, options, marks, _report_uploader(config, answer, client, attempt))
    except Exception:
        trace = traceback.format_exc()
        log.exception("run %s: the agent failed", run_id)
        judging_stop.raise_if_requested("the run was cancelled")  # then the site wants no report of it
        try:
            _post_result(client, result_url, unjudged_result(config.device, "internal_error", trace), run_id)
        except Exception:
            log.exception("run %s: could not report the internal error either", run_id)
        raise
    finally:
        if reporter is not None:
            reporter.close()  # its last report goes before the result, which ends the run
    marks["judged"] = time.time()
    judging_stop.raise_if_requested("the run was cancelled")  # while its result was being made
    _post_result(result_client, result_url, result, run_id)
    marks["reported"] = time.time()
    log.info("run %s: %s", run_id, result["status"])
    return {"run_id": run_id, "attempt": attempt, "status": result["status"], "marks": marks}
