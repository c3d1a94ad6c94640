"""The per-case figures of a run judged on several input cases (the result's timing.cases), as the
submission page's small table shows them."""


def case_rows(result) -> list[dict]:
    """[{name, reference_ms, candidate_ms, speedup, unconfirmed}, ...] in judging order (unconfirmed: the
    case's own confirmation did not hold); none for a result with no cases, or with only the single
    unnamed case of a reference that declares one get_inputs()."""
    timing = (result or {}).get("timing") if isinstance(result, dict) else None
    cases = (timing or {}).get("cases") if isinstance(timing, dict) else None
    if not isinstance(cases, dict) or not cases or list(cases) == ["default"]:
        return []
    rows = []
    for name, figures in cases.items():
        figures = figures if isinstance(figures, dict) else {}
        rows.append({"name": name, "reference_ms": _number(figures.get("reference_ms")),
                     "candidate_ms": _number(figures.get("candidate_ms")), "speedup": _number(figures.get("speedup")),
                     "unconfirmed": figures.get("confirmed") is False})
    return rows


def _number(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
