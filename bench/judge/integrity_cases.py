"""The bundles of the integrity bench (bench/judge/integrity.py) and the outcome each must get.

An outcome is a status (one of a set), flags that must all be there, flags of which one must be there,
flags an honest bundle must not get, and for some classes a relation between figures of the result
itself (never a hard-coded time). `expected` is the CUDA outcome; `cpu` the CPU one, or None where the
class needs a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[2]

NOT_PASSED = ("wrong_answer", "compile_error", "runtime_error", "timeout", "memory_limit", "internal_error")
# what an honest bundle must not be told
FALSE_ALARMS = ("input_memoized", "timing_unconfirmed", "unsynchronized_work", "nondeterministic_output",
                "timer_tampered")


@dataclass(frozen=True)
class Outcome:
    words: str  # the expected outcome, as the table prints it
    statuses: tuple[str, ...]
    flags: tuple[str, ...] = ()  # all of them, on a passed result (a failed one is not ranked)
    any_flag: tuple[str, ...] = ()  # one of them, on a passed result, when given
    forbidden: tuple[str, ...] = ()
    reason: bool = False  # a non-empty `reason`, on a result that did not pass
    # a relation over the case's judgings: (holds, what was compared); a flag in `or_flags` stands in for it
    check: Callable[[list[dict]], tuple[bool, str]] | None = None
    or_flags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Case:
    bundle: str  # its folder's name, under `under`
    item: str  # the issue item (class) it exercises
    expected: Outcome
    cpu: Outcome | None = None
    honest: bool = False  # judged for its figures: ncu truth, warm wall time
    builds: bool = False  # its import builds an extension that succeeds (built before the judgings)
    judgings: int = 1
    fresh_cache: bool = False  # a build cache of its own, empty at the start
    first_is_build: bool = False  # its first judging is mostly a build: run beside the other builds
    judge_args: tuple[str, ...] = field(default=())
    under: str = "bench/fixtures/bundles"  # from the repository's root

    @property
    def path(self) -> Path:
        return REPO / self.under / self.bundle


def _confirmation(result: dict) -> dict:
    return ((result.get("timing") or {}).get("confirmation")) or {}


def _timed_call_named(judgings: list[dict]) -> tuple[bool, str]:
    """The wrong answer's reason names the timed call whose output was wrong."""
    reason = judgings[-1].get("reason") or ""
    return reason.startswith("timed call "), reason[:160]


def _reported_at_least_record(judgings: list[dict]) -> tuple[bool, str]:
    """The reported candidate median is not below the GPU's own record of its kernels (a failed run
    is not ranked: nothing to compare)."""
    if judgings[-1].get("status") != "passed":
        return True, f"not ranked: {judgings[-1].get('status')}"
    c = _confirmation(judgings[-1])
    ratio = c.get("ratio")
    return (ratio is not None and ratio >= 1.0), f"reported/ncu record = {ratio}"


def _batched_physical(judgings: list[dict]) -> tuple[bool, str]:
    """No batched figure, or one at least half the kernel's own duration (an empty graph replays in
    ~1e-5 ms; overlapping back-to-back calls stay well above half of one call's kernel)."""
    result = judgings[-1]
    candidate = (result.get("timing") or {}).get("candidate") or {}
    batched = candidate.get("batched_ms")
    floor = _confirmation(result).get("kernel_ms") or candidate.get("median_ms")
    if batched is None:
        return True, "no batched figure"
    if floor is None:
        return False, f"batched {batched} ms and nothing to compare it with"
    return batched >= 0.5 * floor, f"batched {batched:.4g} ms vs kernel {floor:.4g} ms"


def _still_being_written(judgings: list[dict]) -> tuple[bool, str]:
    """The wrong answer's reason says the output was still being written when the call returned."""
    reason = judgings[-1].get("reason") or ""
    return "still being written after the call returned" in reason, reason[:160]


def _phase_named(judgings: list[dict]) -> tuple[bool, str]:
    """The memory-limit message names the phase it happened in."""
    result = judgings[-1]
    text = " ".join([str(result.get("reason") or ""), (result.get("logs") or {}).get("stderr") or ""])
    lines = [line for line in text.splitlines() if "memory limit" in line.lower() or "memory_limit" in line]
    named = [line for line in lines if "phase" in line]
    return bool(named), (named or lines or ["no memory-limit message"])[0][-160:]


def _failure_cached(judgings: list[dict]) -> tuple[bool, str]:
    """The second judging's compile took less than the first's (reported from the cache), same status."""
    first, second = [((r.get("durations_s") or {}).get("compile")) for r in judgings[:2]]
    if first is None or second is None:
        return False, f"compile s: {first} then {second}"
    return second < first / 2, f"compile s: {first:.1f} then {second:.1f}"


HONEST = Outcome("passed, no false alarm", ("passed",), forbidden=FALSE_ALARMS)

CASES = [
    Case("lb-matmul-relu", "6 (honest, launch-bound)", HONEST, honest=True, builds=True),
    Case("lb-mlp-gelu", "6 (honest, launch-bound)", HONEST, honest=True, builds=True),
    Case("lb-add-layernorm", "6 (honest, launch-bound)", HONEST, honest=True, builds=True),
    Case("graph-static-copies", "6 (honest, CUDA graph on static copies)", HONEST, honest=True, builds=True),
    Case("attention-backward", "6 (honest, forward and backward)", HONEST, honest=True, builds=True, under="examples"),
    Case("ce-fused-backward", "6 (honest, forward and backward)", HONEST, honest=True, builds=True, under="examples"),
    Case("adv-ptr-memo", "1: output by data_ptr()", Outcome("wrong_answer", ("wrong_answer",), reason=True),
         cpu=Outcome("wrong_answer", ("wrong_answer",), reason=True)),
    Case("adv-graph-replay", "1: CUDA graph on the first input", Outcome("wrong_answer", ("wrong_answer",),
                                                                          reason=True)),
    # no false alarm, but not one of the honest figures: its calls are bound by torch's dispatch, which
    # kernel sums (the truth) leave out
    Case("adv-stateful-port", "2: stateful, faithful port", HONEST, cpu=HONEST),
    Case("adv-stateful-forgetful", "2: stateful, wrong from call 2",
         Outcome("wrong_answer", ("wrong_answer",), reason=True),
         cpu=Outcome("wrong_answer", ("wrong_answer",), reason=True)),
    # a memo keyed on (address, version) also returns stale outputs for a new tensor at a reused
    # address: on CUDA the profiled calls of the confirmation (fresh tensors per call) show it
    Case("adv-version-memo", "3: memo by (data_ptr, _version)",
         Outcome("passed + input_memoized, or wrong_answer", ("passed", "wrong_answer"), flags=("input_memoized",)),
         cpu=Outcome("passed + input_memoized", ("passed",), flags=("input_memoized",))),
    Case("adv-partial-timed", "12: a fifth of the work on timed calls",
         Outcome("wrong_answer naming a timed call", ("wrong_answer",), reason=True, check=_timed_call_named),
         cpu=Outcome("wrong_answer naming a timed call", ("wrong_answer",), reason=True, check=_timed_call_named)),
    Case("adv-fingerprint-memo", "13: memo by three input values",
         Outcome("reported >= ncu record (or failed)", ("passed", "wrong_answer"), check=_reported_at_least_record),
         cpu=Outcome("passed or wrong_answer", ("passed", "wrong_answer"))),
    Case("adv-timer-wrap", "4: timing function wrapped",
         Outcome("passed + timing_unconfirmed", ("passed",), flags=("timing_unconfirmed",)),
         cpu=Outcome("passed (no profiler on CPU: no bound)", ("passed",))),
    # its output is still being written when the call returns: read unfinished on every judging
    # (profiler_agent/trials/side_streams.py)
    Case("adv-side-stream", "5: side stream never joins",
         Outcome("wrong_answer: output still being written", ("wrong_answer",), check=_still_being_written)),
    # a wrong answer ends this one too: the side stream's reads and the caller's race
    Case("adv-side-stream-nowait", "5: side stream starts early, joins",
         Outcome("flagged, or reported >= ncu record (or failed)", ("passed", "wrong_answer"),
                 check=_reported_at_least_record, or_flags=("unsynchronized_work", "timing_unconfirmed"))),
    Case("adv-graph-copies", "7: torch work in its own CUDA graph",
         Outcome("passed + no_custom_kernel", ("passed",), flags=("no_custom_kernel",))),
    Case("adv-legacy-stream", "8: kernel on the legacy stream",
         Outcome("passed, batched not the empty graph's", ("passed",), check=_batched_physical), builds=True),
    Case("adv-import-memory", "9: 6 GiB at import, 4G limit",
         Outcome("memory_limit naming the phase", ("memory_limit",), check=_phase_named),
         cpu=Outcome("memory_limit naming the phase", ("memory_limit",), check=_phase_named),
         judge_args=("--memory-limit", "4G")),
    Case("adv-compile-error", "10: failing build, judged twice",
         Outcome("compile_error twice, 2nd from the cache", ("compile_error",), reason=True, check=_failure_cached),
         cpu=Outcome("compile_error twice, 2nd from the cache", ("compile_error",), reason=True,
                     check=_failure_cached),
         judgings=2, fresh_cache=True, first_is_build=True),
    Case("adv-os-exit", "11: os._exit(0) in forward", Outcome("not passed, with a reason", NOT_PASSED, reason=True),
         cpu=Outcome("not passed, with a reason", NOT_PASSED, reason=True)),
]


def judge_outcome(outcome: Outcome, judgings: list[dict]) -> tuple[bool, list[str]]:
    """Whether the judgings got the outcome, and what did not match."""
    misses = []
    for index, result in enumerate(judgings):
        flags = set(result.get("flags") or [])
        tag = f"#{index + 1} " if len(judgings) > 1 else ""
        passed = result.get("status") == "passed"
        if result.get("status") not in outcome.statuses:
            misses.append(f"{tag}status {result.get('status')}")
        if passed and (missing := [f for f in outcome.flags if f not in flags]):
            misses.append(f"{tag}missing {','.join(missing)}")
        if passed and outcome.any_flag and not flags & set(outcome.any_flag):
            misses.append(f"{tag}none of {','.join(outcome.any_flag)}")
        if unwanted := sorted(flags & set(outcome.forbidden)):
            misses.append(f"{tag}false alarm {','.join(unwanted)}")
        if outcome.reason and not passed and not str(result.get("reason") or "").strip():
            misses.append(f"{tag}no reason")
    if outcome.check is not None:
        holds, compared = outcome.check(judgings)
        if not holds and not set(judgings[-1].get("flags") or []) & set(outcome.or_flags):
            misses.append(compared)
    return not misses, misses


def select(names: list[str] | None, device: str) -> tuple[list[Case], list[str]]:
    """The cases to judge on `device` (all, or the named ones), and the skipped ones with why."""
    known = {case.bundle: case for case in CASES}
    unknown = [name for name in names or [] if name not in known]
    if unknown:
        raise SystemExit(f"unknown bundle(s): {', '.join(unknown)}; known: {', '.join(known)}")
    chosen = [case for case in CASES if not names or case.bundle in names]
    if device == "cuda":
        return chosen, []
    return ([case for case in chosen if case.cpu is not None],
            [f"{case.bundle} (needs CUDA)" for case in chosen if case.cpu is None])
