"""A problem judged on several input cases (profiler_agent.bundles.input_cases).

The main judgement (judging.judge_bundle) runs the judging's first case: the first timed one, whose
figures the timing confirmation checks. The trusted verifier reads the reference's cases from the
pristine sources and reports them; every other case the run's mode takes is then judged here by a
judged process and a verifier of its own, the whole machinery unchanged (fresh inputs, timed output
checks, the verdict outside the judged process), the case's name in their settings, and each timed
case's times are confirmed from outside on that case (judge.timing_confirmation: its own kernel
record on a GPU, its own demonstration on the CPU), so each case's speedup is bounded by its own
record and a case whose times are not confirmed flags the run. The first case that does not pass
decides the result, its reason naming the case. A passed result carries `timing.cases` (name -> both
medians, the speedup, the kernels' ratio and whether it was confirmed) and, for `timing.speedup`, the
geometric mean of the timed cases' speedups."""

from __future__ import annotations

import math
from pathlib import Path

from profiler_agent.bundles.input_cases import CHECKED_IN_TEST_MODE, DEFAULT_CASE, TIMED_KINDS
from profiler_agent.protocol import result_schema
from profiler_agent.judge import timing_confirmation, warm_pool
from profiler_agent.judge.timing_bounds import NOTE_PREFIX

# flags that belong to the main case alone: the kernel census is taken on it
MAIN_CASE_FLAGS = {"no_custom_kernel"}


def declared_cases(main) -> tuple[str | None, list[dict]]:
    """The main case's name and every declared case, as the verifier reported them; (None, []) when
    no verifier ran (a build that failed, a runtime error): nothing more is judged then."""
    plan = (main.report or {}).get("case_plan") or {}
    cases = plan.get("cases")
    if not isinstance(plan.get("case"), str) or not isinstance(cases, list):
        return None, []
    return plan["case"], [c for c in cases if isinstance(c, dict) and isinstance(c.get("name"), str)]


def more_cases_to_judge(main) -> bool:
    """Whether the problem declares cases besides the one just judged (judged after the confirmation)."""
    main_name, cases = declared_cases(main)
    return main_name is not None and any(c["name"] != main_name for c in cases)


def named(name: str, cases: list[dict]) -> bool:
    """Reasons name the case unless the reference has only today's single get_inputs() case."""
    return not (len(cases) <= 1 and name == DEFAULT_CASE)


def case_figures(target: dict) -> dict:
    timing = target.get("timing") or {}
    confirmation = timing.get("confirmation") or {}
    return {"reference_ms": (timing.get("reference") or {}).get("median_ms"),
            "candidate_ms": (timing.get("candidate") or {}).get("median_ms"),
            "speedup": timing.get("speedup"), "kernel_speedup": confirmation.get("kernel_speedup"),
            "confirmed": confirmation.get("confirmed")}


def geometric_mean(values: list[float]) -> float | None:
    if not values or any(v is None or v <= 0 for v in values):
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def judge_other_cases(result: dict, main, bundle, options, seed: int, cache_dir: Path, sources: dict[str, bytes],
                      scratch: Path, judge_candidate, fill_judged_parts) -> None:
    """Judge the cases after the main one and fold them into `result` (judged on the main case).
    `judge_candidate` and `fill_judged_parts` are judge.judging's, which calls this."""
    main_name, cases = declared_cases(main)
    if main_name is None:
        return
    kinds = CHECKED_IN_TEST_MODE if options.correctness_only else ("test",) + TIMED_KINDS
    if not any(c.get("kind") in kinds for c in cases):  # benchmark cases alone: a test run checks those
        kinds = ("test",) + TIMED_KINDS
    timed = {c["name"] for c in cases if c.get("kind") in TIMED_KINDS and not options.correctness_only}
    figures = {}
    if main_name in timed:
        figures[main_name] = case_figures(result)
    if result["status"] != "passed":
        _name_the_case(result, main_name, cases)
        result["timing"]["cases"] = figures or None
        return
    for case in cases:
        name = case["name"]
        if name == main_name or case.get("kind") not in kinds:
            continue
        options.tell("checking")
        judged, verifier = warm_pool.start_pair(options, cache_dir, scratch / f"case-{len(figures)}-{name}")
        judgement = judge_candidate(bundle, bundle.candidate, options, seed, cache_dir, sources, judged, verifier,
                                    census_in_child=False, case=name)
        part = result_schema.empty_variant()
        fill_judged_parts(part, judgement, result["device"], options.timeout_s, options.suspicious_speedup)
        if name in timed and part["status"] == "passed":
            options.tell("profiling")
            part["device"] = result["device"]  # the bounds recount its throughput on it
            timing_confirmation.add_to_result(part, bundle, options, cache_dir, scratch / f"case-confirm-{len(figures)}",
                                              sources, case=name)
            result["logs"]["stderr"] += "".join(f'{NOTE_PREFIX}case "{name}": {line.removeprefix(NOTE_PREFIX)}\n'
                                                for line in part["logs"]["stderr"].splitlines()
                                                if line.startswith(NOTE_PREFIX))
        result["flags"] = sorted(set(result["flags"]) | (set(part["flags"]) - MAIN_CASE_FLAGS))
        if name in timed:
            figures[name] = case_figures(part)
        if part["status"] != "passed":
            _fail_on(result, part, name, cases)
            result["timing"]["cases"] = figures
            return
    result["timing"]["cases"] = figures or None
    if len(figures) > 1 or (figures and main_name not in figures):
        # each case's speedup is already within its own record (timing_bounds.rank_within_kernel_records)
        result["timing"]["speedup"] = geometric_mean([f["speedup"] for f in figures.values()])


def _name_the_case(result: dict, name: str, cases: list[dict]) -> None:
    if result.get("reason") and named(name, cases):
        result["reason"] = f'case "{name}": {result["reason"]}'


def _fail_on(result: dict, part: dict, name: str, cases: list[dict]) -> None:
    """The result takes the failing case's verdict: its status, reason, correctness and logs; no
    timing is worth showing when one case is wrong."""
    result["status"], result["reason"] = part["status"], part["reason"]
    _name_the_case(result, name, cases)
    result["correctness"] = part["correctness"]
    result["timing"].update(reference=result_schema.empty_timing_stats(), candidate=result_schema.empty_timing_stats(),
                            speedup=None, samples=None)
    for log in ("stdout", "stderr"):
        result["logs"][log] += f"\n[profiler_agent] case \"{name}\":\n" + part["logs"][log]
