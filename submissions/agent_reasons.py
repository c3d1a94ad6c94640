"""The reasons pages show in the reader's language: the agent's one-line reasons (a run's
`result.reason`, a time's `timing.confirmation.reason`) and the site's own (the sweeper's, the abuse
detector's).

A result is a wire format: the agent writes English and the API hands it on unchanged. Every form of
reason is listed here once, as its English message; its %(name)s placeholders stand for the values
in it. A reason that reads as one of them is shown as its translation with the values kept as
written; a placeholder of a nested kind (a call, an output, a stage, another reason) is translated in
turn, so composite reasons are translated part by part. Machine text (a compiler's line, an
exception, a file name) is kept as written; a reason of no known form is shown as written.
tests/site/test_agent_reasons.py builds reasons with the agent's own functions: a change of its
wording fails there until the form here follows it.
"""
import re
from functools import lru_cache
from typing import NamedTuple

from django.utils.translation import gettext, gettext_noop

NUMBER = r"[-+]?(?:\d+(?:\.\d*)?(?:e[-+]?\d+)?|inf|nan)"  # as :g, .3e, .4g write them
INTEGER = r"-?\d+"
PERCENT = r"-?\d+%"
SIZE = r"[\d.]+ (?:TiB|GiB|MiB|KiB|B)|unlimited"  # profiler_agent.util.sizes.format_size
TEXT = r".+"

# Placeholders whose value is kept as written, and what it looks like.
KEPT = {
    "seconds": NUMBER, "abs_error": NUMBER, "rel_error": NUMBER, "atol": NUMBER, "rtol": NUMBER,
    "reported": NUMBER, "record": NUMBER, "outside": NUMBER, "slack": NUMBER, "harness": NUMBER, "total": NUMBER,
    "count": INTEGER, "expected_count": INTEGER, "trial": INTEGER, "into": INTEGER, "number": INTEGER,
    "index": INTEGER, "forward": INTEGER, "input": INTEGER, "submission": INTEGER, "percent": INTEGER,
    "code": r"-?\d+|None", "timed_out": r"True|False", "signal": r"SIG\w+",
    "tolerance": PERCENT, "share": PERCENT, "limit": SIZE, "resident": SIZE,
    "type_name": r"[\w.]+", "shape": r"\([\d, ]*\)", "expected_shape": r"\([\d, ]*\)",
    "dtype": r"torch\.\w+", "expected_dtype": r"torch\.\w+", "parameter": r"[^()]+", "issue": r"\S+",
    "value": TEXT, "expected_value": TEXT, "message": TEXT, "contestant": TEXT, "compared": TEXT, "agent": TEXT,
    "details": r".*",
}
# Placeholders whose value is itself a form of a kind, translated in turn.
NESTED = {
    "reason": "reason", "stopped": "reason", "error": "exception", "call": "call",
    "comparison": "comparison", "difference": "difference", "where": "where", "stage": "stage", "step": "step",
    "phase": "phase", "activity": "activity", "ending": "ending",
}
RECURSIVE = {"reason"}  # matched as any text, then read as a reason
OPEN = {"exception"}  # an exception's text of no known form is kept as written

FORMS = {
    "reason": (
        # reasons around another: the first failure seen, a verdict from the build cache, a run the
        # sweeper gave up (tried first: the reason inside may end in any text)
        gettext_noop("%(reason)s (from the build cache)"),
        gettext_noop("%(reason)s; the judged process had stopped at %(stopped)s"),
        gettext_noop("%(reason)s (found in the judged process; not saved for the verifier)"),
        gettext_noop("%(reason)s, %(count)s attempts spent"),
        # profiler_agent.judge.failure_reasons: compile errors, limits, crashes, the harness's failures
        gettext_noop("compile timed out after %(seconds)s s (the compile limit)"),
        gettext_noop("building the extension failed: %(error)s"),
        gettext_noop("timed out after %(seconds)s s (the run limit); the process and its children were killed"),
        gettext_noop("out of memory: the compile memory limit (%(limit)s) was reached; the OOM killer ended "
                     "%(count)s process(es)"),
        gettext_noop("out of memory: the run memory limit (%(limit)s) was reached; the OOM killer ended "
                     "%(count)s process(es)"),
        gettext_noop("out of memory in %(stage)s: %(error)s"),
        gettext_noop("the judged process was %(ending)s without a report (taken for the OOM killer)"),
        gettext_noop("the judged process ended (%(ending)s) while importing the candidate, before it reported: "
                     "submission code ended the process (os._exit, a signal, a crash)"),
        gettext_noop("the judged process ended (%(ending)s) after importing the candidate, before it reported: "
                     "submission code ended the process (os._exit, a signal, a crash)"),
        gettext_noop("the judged process ended (exit code %(code)s) while it waited for its job, before any "
                     "submission code ran: not the submission's doing"),
        gettext_noop("the harness failed: the verifier ended (exit %(code)s, timed out: %(timed_out)s) without a "
                     "verdict:"),
        gettext_noop("the harness failed: the verifier ended without a verdict"),
        gettext_noop("the harness failed in %(stage)s: %(error)s"),
        gettext_noop("%(stage)s: %(error)s"),
        gettext_noop("runtime error"),
        gettext_noop("internal error"),
        # the agent's memory watchdog (profiler_agent.judge.verdicts.memory_limit_message)
        gettext_noop("memory limit %(limit)s exceeded %(phase)s: %(resident)s resident"),
        # wrong answers: the trials, the verifier, the timed calls, the outputs under the profiler
        gettext_noop("%(call)s: %(comparison)s"),
        gettext_noop("the outputs differ from the reference's"),
        gettext_noop("under the profiler: %(reason)s"),
        gettext_noop("in the calls the agent timed from outside: %(reason)s"),
        gettext_noop("the profiled calls gave wrong outputs: %(reason)s"),
        gettext_noop("the demonstrated calls gave wrong outputs: %(reason)s"),
        # profiler_agent.judge.timing_bounds and timing_confirmation: why a time is not confirmed
        gettext_noop("the candidate's reported median (%(reported)s ms) is below the GPU's own record of its kernels "
                     "(%(record)s ms per call) by more than %(tolerance)s"),
        gettext_noop("the candidate's reported median (%(reported)s ms) is below the least time its work took as "
                     "the agent read it from outside (%(record)s ms per call) by more than %(tolerance)s"),
        gettext_noop("the reported speedup (%(reported)s) is above the records' (%(record)s: the reference's over "
                     "the candidate's) by more than %(tolerance)s"),
        gettext_noop("the reference's reported median (%(reported)s ms) is above the agent's own timing of it "
                     "(%(outside)s ms) by more than %(tolerance)s + %(slack)s ms"),
        gettext_noop("no kernel record"),
        gettext_noop("no candidate median was reported"),
        gettext_noop("the reference was not timed outside"),
        gettext_noop("the reference could not be timed outside: %(details)s"),
        gettext_noop("the profiled calls' outputs could not be verified"),
        gettext_noop("the demonstrated calls' outputs could not be verified"),
        gettext_noop("ncu's record: %(details)s"),
        gettext_noop("not found on PATH; nothing profiled"),
        gettext_noop("timed out after %(seconds)s s; ncu and the profiled process were killed"),
        gettext_noop("the GPU's performance counters are refused to the sandbox user (ERR_NVGPUCTRPERM); allow them "
                     "to non-admin users (NVreg_RestrictProfilingToAdminUsers=0) to profile here"),
        gettext_noop("ncu or the profiled process failed (exit code %(code)s):%(details)s"),
        gettext_noop("no device profiler on CPU, and calls under 1 ms are not timed from outside"),
        gettext_noop("the check failed: %(details)s"),
        gettext_noop("the demonstration process timed out: %(details)s"),
        gettext_noop("the demonstration process ended (exit code %(code)s) before it was done: %(details)s"),
        gettext_noop("no CPU time could be read for the demonstration process"),
        gettext_noop("the harness's own work (making the values, a checksum of each output: %(harness)s ms) is "
                     "%(share)s of the %(total)s ms of CPU time the calls took: too much to bound the call"),
        # the site's sweeper (submissions.services.recovery, run_states) and retries (judging)
        gettext_noop("its judgement ran past the deadline"),
        gettext_noop("its agent did not name it in a heartbeat for %(seconds)s s"),
        gettext_noop("its queued job was lost"),
        gettext_noop("its job was queued under an id that names no GPU type (an older site)"),
        gettext_noop("agent %(agent)s's host took its job %(seconds)s s ago or more and never started it"),
        gettext_noop("internal error of the platform; judged again"),
        # the site's abuse flags (submissions.services.abuse)
        gettext_noop("the same operator (torchcode.py) was submitted as #%(submission)s for issue %(issue)s by "
                     "%(contestant)s"),
        gettext_noop("the CUDA code is %(percent)s%% similar to #%(submission)s (%(issue)s) by %(contestant)s"),
        gettext_noop("no better speedup than the accepted #%(submission)s of the same operator (%(compared)s)"),
    ),
    # one call of the trials (profiler_agent.trials.call_plan.Call.label), of the timing, of the demonstration
    "call": (
        gettext_noop("trial %(trial)s"),
        gettext_noop("repeat of trial %(trial)s (its inputs again)"),
        gettext_noop("repeat of trial %(trial)s (its inputs again, written into trial %(into)s's input tensors)"),
        gettext_noop("timed call %(number)s"),
        gettext_noop("demonstrated call %(number)s"),
        gettext_noop("warm-up"),
    ),
    # what went wrong with one call's outputs (profiler_agent.checkers.compare_outputs)
    "difference": (
        gettext_noop("%(where)s: expected a tensor, got %(type_name)s"),
        gettext_noop("%(where)s: shape %(shape)s, expected %(expected_shape)s"),
        gettext_noop("%(where)s: dtype %(dtype)s, expected %(expected_dtype)s"),
        gettext_noop("%(where)s: %(count)s elements differ"),
        gettext_noop("%(where)s: max abs error %(abs_error)s, max rel error %(rel_error)s (atol %(atol)s, rtol "
                     "%(rtol)s)"),
        gettext_noop("%(where)s: NaN/inf where the reference has none (or the other way round)"),
        gettext_noop("%(count)s outputs, expected %(expected_count)s"),
        gettext_noop("%(where)s: %(value)s, expected %(expected_value)s"),
    ),
    # ...or that it was missing, unreadable, still being written, not the one committed
    "comparison": (
        "%(difference)s",
        gettext_noop("no output (the judged process ended or stopped before writing it)"),
        gettext_noop("unreadable output: %(type_name)s"),
        # profiler_agent.trials.side_streams.UNJOINED: always cut short with what follows it (see CUT)
        gettext_noop("its output was still being written after the call returned: work on a stream the caller's "
                     "stream never waits for (join it with torch.cuda.current_stream().wait_stream(side) before "
                     "returning); whatever reads the output next on the caller's stream may read it unfinished"),
        gettext_noop("the output saved after the stretch is not the one committed in it"),
    ),
    # one output (profiler_agent.bundles.forward_backward names a forward-and-backward's)
    "where": (
        gettext_noop("output %(index)s"),
        gettext_noop("output %(index)s (the forward's output %(forward)s)"),
        gettext_noop("output %(index)s (the gradient of input %(input)s)"),
        gettext_noop("output %(index)s (the gradient of parameter %(parameter)s)"),
    ),
    # where submission code failed (profiler_agent.util.submission_failures.submission_code's stages)
    "stage": ("%(step)s", gettext_noop("%(step)s (%(call)s)")),
    "step": (
        gettext_noop("load_reference"), gettext_noop("load_candidate"), gettext_noop("build_models"),
        gettext_noop("get_inputs"), gettext_noop("kernel_census"), gettext_noop("reference"),
        gettext_noop("candidate"), gettext_noop("device"), gettext_noop("harness"), gettext_noop("verify"),
        gettext_noop("confirm_check"),
    ),
    # where the memory ran out (profiler_agent.sandbox.phase_limits.Clock.phase_words)
    "phase": (
        gettext_noop("while %(activity)s (build phase)"),
        gettext_noop("while %(activity)s (run phase)"),
        gettext_noop("while building an extension, %(activity)s (build phase)"),
        gettext_noop("while %(activity)s"),
    ),
    "activity": (
        gettext_noop("importing the reference"), gettext_noop("importing the candidate"),
        gettext_noop("constructing the models, in __init__"),
        gettext_noop("running the correctness trials, in forward"),
        gettext_noop("timing the models, in forward"), gettext_noop("profiling one call of each model, in forward"),
        gettext_noop("running"),
    ),
    # how the judged process ended (failure_reasons._how_it_ended)
    "ending": (
        gettext_noop("killed by %(signal)s"),
        gettext_noop("killed by signal %(number)s"),
        gettext_noop("exit code %(code)s"),
    ),
    # describe_exception's words around an exception's own text
    "exception": (
        gettext_noop("SystemExit: %(message)s (the code called sys.exit)"),
        gettext_noop("SystemExit (the code called sys.exit)"),
    ),
}
CUT, CUT_AT = "…", 300  # the agent cuts a reason to 300 characters (failure_reasons.one_line): its end is lost
LIST_SEPARATOR = "; "  # a time's reasons joined (timing_bounds.decide)
LISTED = gettext_noop("%(first)s; %(rest)s")
MAX_CHARS = 4000  # longer text (an organizer's essay in the audit trail) is shown as written
MAX_LISTED = 12

PLACEHOLDER = re.compile(r"%\((\w+)\)s")
PART_BREAK = re.compile(r"(?= \()|(?=[;,] )")


class Cut(NamedTuple):
    """A reason cut short: its longest leading part of a known form, and the rest as written."""
    head: object
    rest: str


def _regex(message, named=True):
    """The message as a regular expression: its text literally, each placeholder its value's pattern."""
    parts, end = [], 0
    for found in PLACEHOLDER.finditer(message):
        name = found.group(1)
        parts.append(re.escape(message[end:found.start()].replace("%%", "%")))
        parts.append(f"(?P<{name}>{_value_pattern(name)})" if named else f"(?:{_value_pattern(name)})")
        end = found.end()
    parts.append(re.escape(message[end:].replace("%%", "%")))
    return "".join(parts)


@lru_cache(maxsize=None)
def _value_pattern(name):
    kind = NESTED.get(name)
    if kind is None:
        return KEPT[name]
    if kind in RECURSIVE or kind in OPEN:
        return TEXT
    return "|".join(f"(?:{_regex(message, named=False)})" for message in FORMS[kind])


@lru_cache(maxsize=None)
def _compiled(kind):
    return [(message, re.compile(_regex(message), re.DOTALL)) for message in FORMS[kind]]


@lru_cache(maxsize=4096)
def _parse(text, kind):
    """(message, {placeholder: its value or its parse}) for the first form of `kind` the whole text
    reads as, or None."""
    for message, pattern in _compiled(kind):
        matched = pattern.fullmatch(text)
        if matched is None:
            continue
        values = {}
        for name, value in matched.groupdict().items():
            nested = NESTED.get(name)
            parsed = None if nested is None else _read(value, nested)
            if parsed is None and nested is not None and nested not in OPEN:
                break  # a nested part of no known form: not this form
            values[name] = value if parsed is None else parsed
        else:
            return message, values
    return None


def _read(text, kind):
    if kind == "reason":
        parts = tuple(text.split(LIST_SEPARATOR))
        if 1 < len(parts) <= MAX_LISTED:
            listed = _listed(parts)
            if listed is not None:
                return listed
    return _parse(text, kind)


@lru_cache(maxsize=1024)
def _listed(parts):
    """Reasons joined by "; ", each of a known form (a time's reasons), as a list; None otherwise."""
    for cut in range(1, len(parts)):
        first = _parse(LIST_SEPARATOR.join(parts[:cut]), "reason")
        if first is None:
            continue
        rest = _parse(LIST_SEPARATOR.join(parts[cut:]), "reason")
        if rest is None and len(parts) - cut > 1:
            rest = _listed(parts[cut:])
        if rest is not None:
            return [first, *(rest if isinstance(rest, list) else [rest])]
    return None


def _render(parsed):
    if isinstance(parsed, str):
        return parsed
    if isinstance(parsed, Cut):
        return _render(parsed.head) + parsed.rest
    if isinstance(parsed, list):
        text = _render(parsed[-1])
        for item in reversed(parsed[:-1]):
            text = _format(LISTED, {"first": _render(item), "rest": text})
        return text
    message, values = parsed
    return _format(message, {name: _render(value) for name, value in values.items()})


def _format(message, values):
    try:
        return gettext(message) % values
    except (KeyError, ValueError, TypeError):  # a translation that lost a placeholder: the English
        return message % values


def parse(text):
    """How a reason reads: (message, {placeholder: value or its reading}), a list of such (reasons
    joined by "; "), a Cut, or None for a reason of no known form."""
    parsed = _read(text, "reason")
    if parsed is None and text.endswith(CUT) and len(text) <= CUT_AT:
        # where a part of a reason ends and another begins: " (", "; ", ", "
        for end in sorted((found.start() for found in PART_BREAK.finditer(text)), reverse=True):
            head = _read(text[:end], "reason")
            if head is not None:
                return Cut(head, text[end:])
    return parsed


def translate(text):
    """`text` in the active language where it reads as a known reason; otherwise as written."""
    if not isinstance(text, str) or not text or len(text) > MAX_CHARS:
        return text
    parsed = parse(text)
    return text if parsed is None else _render(parsed)
