"""What a run's flags are called and what they mean, in the reader's language.

A flag travels as its wire name (the agent's, agent_protocol.FLAGS, and the site's own,
rules.timing_flags); pages show its label, and its explanation where nothing else on the page
explains it. A flag of no known name is shown as it came, unexplained."""
from django.utils.translation import gettext_lazy as _

from submissions.rules import timing_flags

WORDS = {
    "no_custom_kernel": (_("no custom kernel"), _(
        "None of the candidate's kernels came from its own build: it only calls library kernels (ATen, cuBLAS, "
        "cuDNN…). It still counts; the reviewer decides.")),
    "timer_tampered": (_("timer tampered"), _(
        "The timer disagreed with the wall clock around a timed call. It still counts; the reviewer looks at it.")),
    "suspicious_speedup": (_("suspicious speedup"), _(
        "The speedup is above what the agent takes as plausible (20× unless its host set another bound). It still "
        "counts; the reviewer looks at it.")),
    "faster_than_hardware": (_("faster than the hardware"), _(
        "Faster than moving the inputs and outputs at the device's peak bandwidth allows. It still counts; the "
        "reviewer looks at it.")),
    "nondeterministic_output": (_("nondeterministic output"), _(
        "The candidate's repeat of a call differed bit for bit from its first output where the reference's did "
        "not. It still counts.")),
    "unsynchronized_work": (_("unsynchronized work"), _(
        "The call left work on another stream: both models were timed with a device-wide synchronize. It still "
        "counts.")),
    "input_memoized": (_("input memoized"), _(
        "Much faster on a repeated input than on fresh ones: the figure on fresh inputs is the one used.")),
    timing_flags.UNCONFIRMED: (_("time not confirmed"), _(
        "The time could not be confirmed from outside the judged process: the run stays out of the standings "
        "until an organizer clears it.")),
    timing_flags.CLEARED: (_("time cleared"), _(
        "The time was not confirmed from outside the judged process; an organizer cleared it, so it counts.")),
    timing_flags.NOISY: (_("noisy timing"), _(
        "The per-call times spread widely around their median; another judging may differ a lot.")),
    timing_flags.AWAITING_SECOND: (_("awaiting a second judging"), _(
        "Provisional: another host judges the run again before its figure counts.")),
    timing_flags.SECOND_CONFIRMED: (_("confirmed by a second judging"), _(
        "Another host judged the run again and agreed.")),
    timing_flags.SECOND_DISAGREES: (_("second judging disagrees"), _(
        "Another host got another figure or verdict: the run stays out of the standings until an organizer "
        "clears it.")),
    timing_flags.SECOND_CLEARED: (_("figure cleared by an organizer"), _(
        "A second judging did not agree with this run; an organizer let its figure count.")),
}
# Flags the runs table explains in a note of their own (the time, the second judging, the noise).
NOTED_APART = frozenset({timing_flags.UNCONFIRMED, timing_flags.CLEARED, timing_flags.NOISY,
                         timing_flags.AWAITING_SECOND, timing_flags.SECOND_CONFIRMED, timing_flags.SECOND_DISAGREES})


def label(flag):
    words = WORDS.get(flag)
    return str(words[0]) if words else flag


def explanation(flag):
    words = WORDS.get(flag)
    return str(words[1]) if words else ""


def notes(flags):
    """[{flag, label, explanation}] for each known flag of `flags` that no note of its own explains."""
    return [{"flag": flag, "label": label(flag), "explanation": explanation(flag)}
            for flag in flags or () if flag in WORDS and flag not in NOTED_APART]
