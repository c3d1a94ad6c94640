"""The two scores of a benchmark run: weighted geometric means over the samples that passed.

- `speedup`: of the candidates' speedups (reference time / candidate time, both measured here);
- `relative_time`: of this GPU's candidate times relative to the baseline GPU's candidate times as the
  manifest records them (below 1: faster than the baseline).

A sample that did not pass is left out of both; one without a baseline time is left out of the
second. Each row says why it is left out (`not_scored`), and the summary counts them."""

from __future__ import annotations

import math
from collections import Counter


def weighted_geomean(pairs) -> float | None:
    """exp(sum w ln x / sum w) over (x, w) with x > 0 and w > 0; None when no weight is left."""
    total = sum(w for x, w in pairs if x and x > 0 and w > 0)
    if not total:
        return None
    return math.exp(sum(w * math.log(x) for x, w in pairs if x and x > 0 and w > 0) / total)


def default_baseline(samples: list[dict]) -> str | None:
    """The manifest's most common GPU type (ties: the first by name)."""
    counts = Counter(m["gpu_type"] for s in samples for m in s.get("measurements") or [] if m.get("gpu_type"))
    if not counts:
        return None
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[0][0]


def baseline_measurement(sample: dict, baseline: str | None) -> dict | None:
    """The sample's measurement on the baseline GPU, named by its type (`h100`) or its name."""
    if baseline is None:
        return None
    wanted = baseline.strip().lower()
    for measurement in sample.get("measurements") or []:
        names = (measurement.get("gpu_type"), measurement.get("gpu_name"), measurement.get("device_name"))
        if any(isinstance(n, str) and n.strip().lower() == wanted for n in names):
            return measurement
    return None


def known_baselines(samples: list[dict]) -> set[str]:
    return {str(m[k]).lower() for s in samples for m in s.get("measurements") or []
            for k in ("gpu_type", "gpu_name", "device_name") if m.get(k)}


def summarize(rows: list[dict], baseline: str | None) -> dict:
    """The run's scores and counts from its per-sample rows (run.row_for)."""
    passed = [r for r in rows if r["status"] == "passed" and r["speedup"]]
    timed = [r for r in passed if r["relative_time"]]
    return {
        "samples": len(rows),
        "passed": len(passed),
        "not_passed": len([r for r in rows if r["status"] != "passed"]),
        "speedup": weighted_geomean([(r["speedup"], r["weight"]) for r in passed]),
        "speedup_samples": len(passed),
        "baseline": baseline,
        "relative_time": weighted_geomean([(r["relative_time"], r["weight"]) for r in timed]),
        "relative_time_samples": len(timed),
        "without_baseline": len(passed) - len(timed),
        "weight_scored": sum(r["weight"] for r in passed),
        "weight_total": sum(r["weight"] for r in rows),
    }
