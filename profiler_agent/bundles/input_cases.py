"""A reference's named input cases: the shapes a problem is judged on.

A reference declares them with `get_cases()`, returning a dict name -> dict(kind=..., inputs=...):
`kind` is "test" (checked for correctness only), "benchmark" (checked and timed) or "both" (the same
as "benchmark"; the word says the organizer meant both), and `inputs` a callable that returns the
inputs list, as `get_inputs()` does. A reference without `get_cases()` has one case, "default",
drawn by its `get_inputs()`. Every process of a judging (the judged one, the verifier, the
confirmation's) selects the same case by name from settings, so each case is judged by the whole
machinery, unchanged (profiler_agent.judge.case_judging)."""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_CASE = "default"
KINDS = ("test", "benchmark", "both")
TIMED_KINDS = ("benchmark", "both")
CHECKED_IN_TEST_MODE = ("test", "both")
NAME = re.compile(r"^[A-Za-z0-9_.-]{1,40}$")
MAX_CASES = 16


class CaseDeclarationError(ValueError):
    """get_cases() returned something the agent cannot judge: the message says what and where."""


@dataclass(frozen=True)
class InputCase:
    name: str
    kind: str
    inputs: object  # the callable drawing this case's inputs

    @property
    def timed(self) -> bool:
        return self.kind in TIMED_KINDS


def declared_cases(module, filename: str) -> list[InputCase]:
    """The reference module's cases, in declaration order; one "default" case from get_inputs()
    when it declares none. Raises CaseDeclarationError for a malformed declaration."""
    get_cases = getattr(module, "get_cases", None)
    if get_cases is None:
        get_inputs = getattr(module, "get_inputs", None)
        if get_inputs is None:
            raise AttributeError(f"{filename} defines no get_inputs (nor get_cases)")
        return [InputCase(DEFAULT_CASE, "both", get_inputs)]
    if not callable(get_cases):
        raise CaseDeclarationError(f"{filename}: get_cases must be a function returning a dict")
    return parse_cases(get_cases(), filename)


def parse_cases(declared, filename: str) -> list[InputCase]:
    where = f"{filename}: get_cases()"
    if not isinstance(declared, dict):
        raise CaseDeclarationError(f"{where} must return a dict name -> dict(kind=..., inputs=...), "
                                   f"got {type(declared).__name__}")
    if not declared:
        raise CaseDeclarationError(f"{where} returned no case")
    if len(declared) > MAX_CASES:
        raise CaseDeclarationError(f"{where} returned {len(declared)} cases; at most {MAX_CASES}")
    cases = []
    for name, spec in declared.items():
        if not isinstance(name, str) or not NAME.match(name):
            raise CaseDeclarationError(f"{where}: case name {name!r} must be 1 to 40 letters, digits, '_', '.' or '-'")
        if not isinstance(spec, dict):
            raise CaseDeclarationError(f"{where}: case {name!r} must be a dict(kind=..., inputs=...), "
                                       f"got {type(spec).__name__}")
        unknown = sorted(set(spec) - {"kind", "inputs"}, key=str)
        if unknown:
            raise CaseDeclarationError(f"{where}: case {name!r} has unknown keys {unknown}; "
                                       "only 'kind' and 'inputs'")
        kind = spec.get("kind")
        if kind not in KINDS:
            raise CaseDeclarationError(f"{where}: case {name!r} kind {kind!r} is not one of {', '.join(KINDS)}")
        if not callable(spec.get("inputs")):
            raise CaseDeclarationError(f"{where}: case {name!r} inputs must be a callable returning the "
                                       "inputs list (a function, or a lambda)")
        cases.append(InputCase(name, kind, spec["inputs"]))
    return cases


def cases_for_mode(cases: list[InputCase], correctness_only: bool) -> list[InputCase]:
    """The cases a judging runs: a test run checks the test cases (the benchmark ones where there are
    none); a full run checks every case and times the benchmark ones."""
    if correctness_only:
        # a reference with benchmark cases alone: a test run checks those (it never times them)
        return [c for c in cases if c.kind in CHECKED_IN_TEST_MODE] or list(cases)
    return list(cases)


def select(cases: list[InputCase], name: str | None, correctness_only: bool = False) -> InputCase:
    """The case called `name`; None: the judging's first, the first timed case of a full run (the one
    the timing confirmation checks) or the first test case of a test run."""
    if name is not None:
        for case in cases:
            if case.name == name:
                return case
        raise CaseDeclarationError(f"no input case named {name!r} (declared: {', '.join(c.name for c in cases)})")
    return first_case(cases, correctness_only)


def first_case(cases: list[InputCase], correctness_only: bool) -> InputCase:
    runnable = cases_for_mode(cases, correctness_only)
    if not runnable:
        raise CaseDeclarationError("get_cases() declares no case of kind 'test' or 'both': a test run has "
                                   "nothing to check")
    timed = [c for c in runnable if c.timed and not correctness_only]
    return (timed or runnable)[0]


def describe(cases: list[InputCase]) -> list[dict]:
    """The cases as the verifier reports them to the agent: names and kinds, in order."""
    return [{"name": c.name, "kind": c.kind} for c in cases]
