"""The RQ job the site enqueues, by the name `profiler_agent.service.jobs.judge_run`.

Protocol: POST start_url (409: the run is already finished; 403: this job belongs to an earlier
attempt of the run, whose secret is no longer valid; either way do nothing), GET bundle_url (a zip),
judge it, POST the result to result_url (409: already reported; 403: stale attempt; both logged).
Every call carries the agent token and the job's secret. The site may send paths instead of URLs;
they are joined to the agent's --site address. A failure of our own is reported as
`internal_error`, then re-raised so RQ records the job as failed.
"""

from __future__ import annotations

import logging
import tempfile
import traceback
from pathlib import Path
from urllib.parse import urlsplit

from profiler_agent.service import config as agent_config
from profiler_agent.bundles.bundle import BundleError, open_bundle
from profiler_agent.harness.judge import JudgeOptions, judge_bundle, unjudged_result

log = logging.getLogger(__name__)


SKIP = (403, 409)


def site_url(site: str, url: str) -> str:
    """Absolute URLs as they are; paths joined to the site address (which may have a path prefix)."""
    if urlsplit(url).scheme:
        return url
    return site.rstrip("/") + "/" + url.lstrip("/")


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
    return judged


def _judge_download(client, bundle_url: str, options: JudgeOptions) -> dict:
    with tempfile.TemporaryDirectory(prefix="profiler-agent-run-", ignore_cleanup_errors=True) as tmp:
        archive = Path(tmp) / "bundle.zip"
        archive.write_bytes(client.get_bytes(bundle_url))
        try:
            bundle = open_bundle(archive, Path(tmp))
        except BundleError as exc:
            # the submission's fault, not ours: retrying would fail the same way
            return unjudged_result(options.device, "runtime_error", f"[profiler_agent] {exc}\n")
        return judge_bundle(bundle, options)


def _post_result(client, result_url: str, result: dict, run_id: int) -> None:
    code = client.post_json(result_url, result, accept=(200, *SKIP))
    if code == 409:
        log.info("run %s: the site already has a result; this one was not stored", run_id)
    elif code == 403:
        log.warning("run %s: result refused, this job belongs to an earlier attempt of the run", run_id)


def judge_run(
    run_id: int,
    bundle_url: str,
    result_url: str,
    start_url: str,
    job_secret: str,
    options: dict | None = None,
) -> dict:
    from profiler_agent.service.site_client import SiteClient

    config = agent_config.current()
    client = SiteClient(config.token, job_secret)
    start_url, bundle_url, result_url = (site_url(config.site, u) for u in (start_url, bundle_url, result_url))
    # 404 too: a job left in Redis from before a site's database was reset names a run that is gone.
    code = client.post_json(start_url, {"agent": config.name}, accept=(200, *SKIP, 404))
    if code in (*SKIP, 404):
        reason = {409: "already finished", 403: "stale attempt", 404: "no such run on the site"}[code]
        log.info("run %s: %s; not judging it", run_id, reason)
        return {"run_id": run_id, "status": None, "skipped": reason}
    try:
        result = _judge_download(client, bundle_url, judge_options(config, options or {}))
    except Exception:
        trace = traceback.format_exc()
        log.exception("run %s: the agent failed", run_id)
        try:
            _post_result(client, result_url, unjudged_result(config.device, "internal_error", trace), run_id)
        except Exception:
            log.exception("run %s: could not report the internal error either", run_id)
        raise
    _post_result(client, result_url, result, run_id)
    log.info("run %s: %s", run_id, result["status"])
    return {"run_id": run_id, "status": result["status"]}
