"""What bench/fleet/two_gpus.py reports from its runs and NVML samples: each phase's throughput, every
run's GPU against its worker's, the --same bundle's medians alone and beside other judgings, and the
Markdown summary."""
from __future__ import annotations

import re
import statistics


def phase_summary(rows, began, ended):
    done = [r for r in rows if r["status"] == "done" and r["verdict"] != "cancelled"]
    verdicts = {}
    for r in rows:
        key = r["verdict"] or f"({r['status']})"
        verdicts[key] = verdicts.get(key, 0) + 1
    elapsed = (max(r["finished"] for r in done) - min(r["created"] for r in rows)) if done else ended - began
    busy = {}  # seconds each worker spent judging (started -> finished)
    for r in done:
        if r["started"]:
            busy[r["worker"]] = busy.get(r["worker"], 0.0) + r["finished"] - r["started"]
    return {"submissions": len(rows), "judged": len(done), "elapsed_s": elapsed,
            "per_minute": 60 * len(done) / elapsed if elapsed > 0 else None, "verdicts": verdicts,
            "median_run_s": statistics.median(r["finished"] - r["started"] for r in done if r["started"]) if done else None,
            "worker_judging_fraction": {w: s / elapsed for w, s in sorted(busy.items())} if elapsed > 0 else {}}


def worker_index(name):
    match = re.search(r"-gpu(\d+)$", name or "")
    return int(match.group(1)) if match else None


def uuid_check(rows, sampler):
    """Every judged run: its recorded GPU UUID, its worker's reported UUID and NVML's UUID of the index
    in the worker's name must agree (on CPU workers all are empty)."""
    mismatches, checked = [], 0
    for r in rows:
        if r["status"] != "done" or r["verdict"] == "cancelled":
            continue
        checked += 1
        index = worker_index(r["worker"])
        nvml_uuid = sampler.uuid_of(index) if index is not None else None
        expected = {r["worker_gpu_uuid"] or ""}
        if sampler.gpus:
            expected.add(nvml_uuid or "")
        if r["gpu_uuid"] not in expected or len(expected) != 1 or r["worker"] is None:
            mismatches.append({"run": r["run"], "worker": r["worker"], "gpu_uuid": r["gpu_uuid"],
                               "worker_gpu_uuid": r["worker_gpu_uuid"], "nvml_uuid": nvml_uuid})
    return {"checked": checked, "mismatches": len(mismatches), "details": mismatches}


def overlap_fraction(run, others):
    """The share of `run`'s judging during which another worker was judging too."""
    if not run["started"] or not run["finished"]:
        return None
    span = run["finished"] - run["started"]
    covered = []
    for o in others:
        if o["worker"] != run["worker"] and o["started"] and o["finished"]:
            lo, hi = max(run["started"], o["started"]), min(run["finished"], o["finished"])
            if hi > lo:
                covered.append((lo, hi))
    covered.sort()
    total, end = 0.0, run["started"]
    for lo, hi in covered:
        lo = max(lo, end)
        if hi > lo:
            total, end = total + hi - lo, hi
    return total / span if span > 0 else None


def medians_of(rows):
    passed = [r for r in rows if r["verdict"] == "passed" and r["candidate_median_ms"] is not None]
    if not passed:
        return None
    return {"runs": len(passed),
            **{key: statistics.median(r[key] for r in passed) for key in ("reference_median_ms", "candidate_median_ms", "speedup")},
            "reference_spread_ms": [min(r["reference_median_ms"] for r in passed), max(r["reference_median_ms"] for r in passed)]}


def interference(alone_rows, both_rows, same):
    """The --same bundle's medians on GPU 0 alone, and on each worker in phase both."""
    alone = medians_of([r for r in alone_rows if r["bundle"] == same])
    result = {"bundle": same, "alone_gpu0": alone, "both": {}}
    for worker in sorted({r["worker"] for r in both_rows if r["worker"]}):
        mine = [r for r in both_rows if r["bundle"] == same and r["worker"] == worker]
        both = medians_of(mine)
        if both is None:
            continue
        overlaps = [overlap_fraction(r, both_rows) for r in mine if r["verdict"] == "passed"]
        both["other_gpu_busy_fraction"] = statistics.fmean(o for o in overlaps if o is not None) if overlaps else None
        if alone:
            both["ratio_to_alone"] = {key: both[key] / alone[key] for key in
                                      ("reference_median_ms", "candidate_median_ms", "speedup") if alone[key]}
        result["both"][worker] = both
    return result


def mix(both, same, same_count, others):
    """`both` bundle names: `same` spread evenly (same_count times), the rest cycling through `others`."""
    names, step = [], both / max(1, same_count)
    same_slots = {int(i * step + step / 2) for i in range(same_count)}
    cycle = 0
    for i in range(both):
        if i in same_slots or not others:
            names.append(same)
        else:
            names.append(others[cycle % len(others)])
            cycle += 1
    return names


def render(report):
    f = lambda v, fmt=".2f": "-" if v is None else format(v, fmt)  # noqa: E731
    lines = ["", "| phase | workers | submissions | judged | elapsed s | judgings/min | median run s | verdicts |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for name, p in report["phases"].items():
        lines.append(f"| {name} | {', '.join(p['workers'])} | {p['submissions']} | {p['judged']} | {f(p['elapsed_s'], '.1f')} | "
                     f"{f(p['per_minute'])} | {f(p['median_run_s'])} | {p['verdicts']} |")
    alone, both = report["phases"].get("alone"), report["phases"].get("both")
    if alone and both and alone.get("per_minute") and both.get("per_minute"):
        lines.append(f"\nThroughput both / alone: {both['per_minute'] / alone['per_minute']:.2f}x")
    if both:
        lines.append("\nPhase both, per worker: share of the phase spent judging (site's start->finish): "
                     + ", ".join(f"{w} {v:.0%}" for w, v in both["worker_judging_fraction"].items()))
    util = report.get("nvml", {}).get("both") or {}
    if util:
        lines += ["\n| GPU (phase both) | uuid | samples | busy fraction (util > 0) | mean util % | median util % | max % |",
                  "| ---: | --- | ---: | ---: | ---: | ---: | ---: |"]
        for index, u in util.items():
            lines.append(f"| {index} | {u['uuid']} | {u['samples']} | {u['busy_fraction']:.0%} | {u['mean_util']:.1f} | "
                         f"{u['p50_util']:.0f} | {u['max_util']} |")
    else:
        lines.append(f"\nNVML: no samples ({report.get('nvml', {}).get('error')})")
    if "error" in report:
        lines.append(f"\nFAILED:\n{report['error']}")
    check = report.get("uuid_check")
    if not check:
        return "\n".join(lines)
    lines.append(f"\nGPU UUID check: {check['checked']} judged runs, {check['mismatches']} mismatch(es) "
                 f"(run's gpu_uuid vs its worker's reported UUID vs NVML's UUID of the worker's index)")
    same = report["interference"]
    lines += [f"\nSame bundle ({same['bundle']}): | where | runs | reference ms | candidate ms | speedup | "
              "ratio ref/cand/speedup to alone | other GPU busy |", "| --- | ---: | ---: | ---: | ---: | --- | ---: |"]
    if same["alone_gpu0"]:
        a = same["alone_gpu0"]
        lines.append(f"| alone, {', '.join(report['phases']['alone']['workers'])} | {a['runs']} | {a['reference_median_ms']:.4f} | {a['candidate_median_ms']:.4f} | "
                     f"{a['speedup']:.3f} | 1 | 0% |")
    for worker, b in same["both"].items():
        ratio = b.get("ratio_to_alone") or {}
        lines.append(f"| both, {worker} | {b['runs']} | {b['reference_median_ms']:.4f} | {b['candidate_median_ms']:.4f} | "
                     f"{b['speedup']:.3f} | {' / '.join(f'{v:.3f}' for v in ratio.values()) or '-'} | "
                     f"{f(b['other_gpu_busy_fraction'], '.0%')} |")
    lines.append(f"\nWall time {report['wall_s']:.0f} s (deadline {report['args']['deadline']} s); "
                 f"unjudged: {sum(p['unjudged'] for p in report['phases'].values())}")
    return "\n".join(lines)
