"""Judging a dataset's samples one by one with the judge's harness (judge.judging.judge_bundle, the
same options as `profiler_agent judge`), keeping each row in the state file, then the table, the
scores, the JSON and the upload (at once with `bench --upload`, or later from the JSON with
`bench-upload`, on a machine that can reach the site)."""

from __future__ import annotations

import dataclasses
import json
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from profiler_agent import HARNESS_VERSION, __version__
from profiler_agent.benchmark import score
from profiler_agent.benchmark.dataset import Dataset
from profiler_agent.benchmark.progress import Progress
from profiler_agent.benchmark.state import State
from profiler_agent.protocol.vocabulary import BENCHMARK_RUNS_PATH

RESULT_SCHEMA = 1
UPLOAD_PATH = BENCHMARK_RUNS_PATH
RESULT_KEYS = ("schema", "complete", "dataset", "device", "harness_version", "scores", "samples")


class ResultError(ValueError):
    """A result file that is not a benchmark result this agent can upload; the message says why."""


class IncompleteRun(ResultError):
    """A well-formed result of a run that has not judged every sample yet."""


def judge_sample(dataset: Dataset, sample: dict, options) -> dict:
    """One sample judged: the row the state file keeps (measured values and the judge's whole result)."""
    from profiler_agent.bundles.bundle import BundleError, locate_bundle
    from profiler_agent.judge.judging import judge_bundle, unjudged_result

    row = {"id": sample["id"], "judged_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    try:
        if not sample["reference_file"] or not sample["candidate_file"]:
            raise BundleError("the manifest names no reference_file or no candidate_file")
        reference, candidate = dataset.file(sample["reference_file"]), dataset.file(sample["candidate_file"])
        if reference.parent != candidate.parent:
            raise BundleError("reference_file and candidate_file are not in one folder")
        bundle = dataclasses.replace(locate_bundle(reference.parent), reference=reference, candidate=candidate)
        result = judge_bundle(bundle, options)
    except BundleError as exc:  # a sample that cannot be judged as given, as the judge says of a bundle
        result = unjudged_result(options.device, "runtime_error", str(exc))
    timing = result["timing"]
    row.update({
        "status": result["status"],
        "reason": result["reason"],
        "flags": result["flags"],
        "reference_ms": (timing.get("reference") or {}).get("median_ms"),
        "candidate_ms": (timing.get("candidate") or {}).get("median_ms"),
        "speedup": timing.get("speedup"),
        "device_name": result["device"].get("name"),
        "result": result,
    })
    return row


def scored_row(sample: dict, judged: dict, baseline: str | None) -> dict:
    """A judged row with its weight, the baseline GPU's time and whether (and why not) it is scored."""
    measurement = score.baseline_measurement(sample, baseline)
    baseline_ms = (measurement or {}).get("candidate_ms")
    passed = judged["status"] == "passed" and bool(judged["speedup"])
    relative = judged["candidate_ms"] / baseline_ms if passed and baseline_ms and judged["candidate_ms"] else None
    if not passed:
        not_scored = f"not passed: {judged['status']}"
    elif relative is None:
        not_scored = f"no {baseline} time: left out of relative_time" if baseline else "no baseline"
    else:
        not_scored = None
    row = {key: value for key, value in judged.items() if key != "result"}
    row.update({"title": sample.get("title"), "weight": float(sample["weight"]), "baseline_ms": baseline_ms,
                "relative_time": relative, "not_scored": not_scored, "result": judged.get("result")})
    return row


def bench(dataset: Dataset, options, state: State, *, baseline: str | None, limit: int | None = None,
          stream=None) -> dict:
    """Judge what the state file does not hold yet (at most `limit`), and return the whole result."""
    samples = dataset.samples
    todo = [s for s in samples if s["id"] not in state.rows]
    progress = Progress(len(samples), done=len(samples) - len(todo), stream=stream)
    try:
        for sample in todo[:limit] if limit is not None else todo:
            progress.start(sample["id"])
            state.add(judge_sample(dataset, sample, options))
            progress.finish()
    finally:
        progress.close()
    rows = [scored_row(s, state.rows[s["id"]], baseline) for s in samples if s["id"] in state.rows]
    device_names = [r["device_name"] for r in rows if r.get("device_name")]
    return {
        "schema": RESULT_SCHEMA,
        "complete": len(rows) == len(samples),
        "dataset": {"name": dataset.name, "season": (dataset.info.get("season") or {}).get("code"),
                    "as_of": dataset.info.get("as_of"), "checksum": dataset.checksum,
                    "sample_count": len(samples)},
        "device": {"kind": options.device, "name": device_names[0] if device_names else None},
        "harness_version": HARNESS_VERSION,
        "agent_version": __version__,
        "state_file": str(state.path),
        "scores": score.summarize(rows, baseline),
        "samples": rows,
    }


def _number(value, digits=3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def format_table(run: dict) -> str:
    header = ("sample", "weight", "status", "ref ms", "cand ms", "speedup", "base ms", "rel time", "note")
    lines = [[r["id"], _number(r["weight"], 2), r["status"], _number(r["reference_ms"]), _number(r["candidate_ms"]),
              _number(r["speedup"], 2), _number(r["baseline_ms"]), _number(r["relative_time"]),
              ", ".join(filter(None, [r["not_scored"], " ".join(r["flags"])])) or ""] for r in run["samples"]]
    widths = [max(len(str(row[i])) for row in [header, *lines]) for i in range(len(header))]
    out = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in [header, *lines]]
    s = run["scores"]
    out.append("")
    out.append(f"dataset {run['dataset']['name']} ({run['dataset']['checksum'][:12]}), device "
               f"{run['device']['name'] or run['device']['kind']}, harness {run['harness_version']}")
    out.append(f"weighted geomean speedup: {_number(s['speedup'])} over {s['speedup_samples']} passed samples "
               f"({s['not_passed']} not passed, left out)")
    out.append(f"weighted geomean time relative to {s['baseline'] or 'no baseline'}: {_number(s['relative_time'])} "
               f"over {s['relative_time_samples']} samples ({s['without_baseline']} passed without a baseline "
               f"time, left out; below 1: faster)")
    if not run["complete"]:
        out.append(f"incomplete: {len(run['samples'])} of {run['dataset']['sample_count']} samples judged; "
                   f"run again to go on (state: {run['state_file']})")
    return "\n".join(out)


def throughput(result: dict | None) -> dict:
    """A judged sample's achieved TFLOP/s and GB/s and the device's peaks for it (None where not
    measured): the site places each GPU on the roofline from these."""
    metrics, device = (result or {}).get("metrics") or {}, (result or {}).get("device") or {}
    return {"tflops": metrics.get("tflops"), "gbps": metrics.get("bandwidth_gbs"),
            "peak_tflops": device.get("peak_tflops"), "peak_gbps": device.get("peak_gbps")}


def upload_payload(run: dict) -> dict:
    """What the site keeps: the run without each sample's whole judge result (its logs), with the
    throughput read from it."""
    return {**run, "samples": [{**{k: v for k, v in r.items() if k != "result"}, **throughput(r.get("result"))}
                               for r in run["samples"]]}


def read_result(path: Path) -> dict:
    """A result written by `bench --json FILE`, checked before anything is sent: JSON, schema 1, the keys
    the site needs, and complete (every sample of the dataset judged). ResultError says what is wrong."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultError(f"cannot read {path}: {exc}") from None
    try:
        run = json.loads(text)
    except ValueError as exc:
        raise ResultError(f"{path} is not JSON: {exc}") from None
    if not isinstance(run, dict) or "schema" not in run:
        raise ResultError(f"{path} is not a result of `profiler_agent bench --json` (no \"schema\" key)")
    if run["schema"] != RESULT_SCHEMA:
        raise ResultError(f"{path} says schema {run['schema']!r}; this agent uploads schema {RESULT_SCHEMA} only")
    missing = [key for key in RESULT_KEYS if key not in run]
    if missing:
        raise ResultError(f"{path} lacks {', '.join(missing)}: not a whole result of `profiler_agent bench --json`")
    dataset, samples = run["dataset"], run["samples"]
    if not isinstance(dataset, dict) or not isinstance(dataset.get("sample_count"), int):
        raise ResultError(f"{path}: \"dataset\" has no sample_count")
    if not isinstance(samples, list) or not all(isinstance(s, dict) and s.get("id") for s in samples):
        raise ResultError(f"{path}: \"samples\" is not a list of judged samples, each with its id")
    if run["complete"] is not True or len(samples) != dataset["sample_count"]:
        raise IncompleteRun(f"{path} is an incomplete run: {len(samples)} of {dataset['sample_count']} samples "
                            "judged; run the same `bench` command again to judge the rest, then upload")
    return run


def upload(run: dict, site: str, token: str, timeout_s: float = 60.0) -> tuple[int, dict]:
    """POST the run to SITE/api/v1/benchmark-runs with the user's personal token. A site that cannot be
    reached raises OSError (urllib.error.URLError among them)."""
    body = json.dumps(upload_payload(run), allow_nan=False).encode()
    request = urllib.request.Request(site.rstrip("/") + UPLOAD_PATH, data=body, method="POST", headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json", "Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            status, text = response.status, response.read(1 << 20)
    except urllib.error.HTTPError as exc:
        status, text = exc.code, exc.read(1 << 20)
    try:
        answer = json.loads(text or b"{}")
    except ValueError:
        answer = {"detail": text[:500].decode("utf-8", "replace")}
    return status, answer if isinstance(answer, dict) else {"answer": answer}
