"""Organizers' decisions on submissions, scored with the season's rubric."""
from collections import Counter
from dataclasses import dataclass

from django.db import transaction
from django.utils.translation import gettext as _, ngettext

from submissions import selectors
from submissions.models import FlagKind, Review, ReviewDecision, Submission, SubmissionMode, Verdict
from submissions.rules import rubrics
from submissions.services import audit, hardware, reasons, standings


class ReviewRefused(ValueError):
    """The review cannot be recorded as given; the message says what to fix."""


def _review_state(review):
    if review is None:
        return None
    state = {"decision": review.decision, "base_score": review.base_score, "bonus": review.bonus,
             "rubric": review.rubric, "reason": review.reason, "override_reason": review.override_reason}
    if review.acceptance_override:
        state["acceptance_override"] = review.acceptance_override
    return state


@dataclass(frozen=True)
class Blocker:
    """Why accepting a submission needs an override: a GPU type of its season without a passed latest
    run (`gpu`, with the run's state or verdict, None when never judged there), or open abuse flags of
    one kind (`flag_kind`, how many). All flags are open: there is no way to dismiss one."""

    gpu: object = None
    run: object = None
    flag_kind: str = ""
    count: int = 0

    @property
    def message(self):
        if self.flag_kind:
            return ngettext("%(count)s open abuse flag: %(kind)s", "%(count)s open abuse flags: %(kind)s",
                            self.count) % {"count": self.count, "kind": FlagKind(self.flag_kind).label}
        if self.run is None:
            return _("%(gpu)s: not judged") % {"gpu": self.gpu.name}
        if self.run.verdict:
            return _("%(gpu)s: %(verdict)s, no passed run") % {"gpu": self.gpu.name,
                                                                "verdict": self.run.get_verdict_display()}
        return _("%(gpu)s: still %(state)s") % {"gpu": self.gpu.name, "state": str(self.run.get_status_display()).lower()}

    @property
    def stored(self):
        """The blocker for the audit trail (codes, not translated words)."""
        if self.flag_kind:
            return ("flags", self.flag_kind, self.count)
        return ("runs", self.gpu.slug, (self.run.verdict or self.run.status) if self.run else "not judged")


def acceptance_blockers(submission):
    """What makes accepting the submission need an override, in display order: each GPU type that judges
    it (hardware.plan_for: a CUDA bundle is not judged on the CPU type) whose latest run (the verdict
    shown) did not pass, then each kind of abuse flag on it."""
    latest = {run.gpu_type_id: run for run in selectors.latest_runs(submission)}
    judged = hardware.plan_for(submission.issue.season, hardware.stored_files(submission)).judged
    blockers = [Blocker(gpu=gpu, run=latest.get(gpu.pk)) for gpu in judged
                if latest.get(gpu.pk) is None or latest[gpu.pk].verdict != Verdict.PASSED]
    counts = Counter(submission.abuse_flags.values_list("kind", flat=True))
    blockers += [Blocker(flag_kind=kind, count=counts[kind]) for kind in sorted(counts)]
    return blockers


def _stored_blockers(blockers):
    stored = {"runs": {}, "flags": {}}
    for group, key, value in (b.stored for b in blockers):
        stored[group][key] = value
    return {k: v for k, v in stored.items() if v}


def prefill(submission):
    """The season rubric's points suggested by the submission's files and latest runs."""
    rubric = rubrics.rubric_of(submission.issue.season)
    files = {f.path: f.content for f in submission.files.all()}
    return rubric.prefill(submission, files, selectors.latest_runs(submission))


@transaction.atomic
def review_submission(submission, reviewer, decision, *, reason="", rubric=None, override_reason="",
                      acceptance_override=""):
    """Accept (with rubric points) or reject (with a reason). Points that differ from what the runs
    suggest are an override and need their own reason; so does accepting a submission without a passed
    run on every GPU type of its season, or with abuse flags (`acceptance_override`: audited as
    `review.acceptance_overridden`). Every review is a new row; none is edited. The same review sent again
    (a double click, a retry after a timeout) returns the one recorded."""
    # One decision on a submission at a time: the next is taken on this one, committed (its audit
    # `before`), and a repeat finds its twin. Lock order: submission, then the season (standings).
    # no_key: a run or flag inserted for it (FOR KEY SHARE, after the season's lock) does not wait.
    Submission.objects.select_for_update(no_key=True).filter(pk=submission.pk).first()
    if submission.mode != SubmissionMode.RANKED:
        raise ReviewRefused(_("a %(mode)s submission is never reviewed: only ranked submissions are")
                            % {"mode": submission.get_mode_display().lower()})
    if decision not in ReviewDecision.values:
        raise ReviewRefused(_("the decision must be one of %(known)s") % {"known": ", ".join(ReviewDecision.values)})
    for text in (reason, override_reason, acceptance_override):
        if reasons.too_long(text):
            raise ReviewRefused(reasons.too_long(text))
    if decision == ReviewDecision.REJECTED and not reason.strip():
        raise ReviewRefused(_("a rejection needs a reason"))
    acceptance_override = acceptance_override.strip()
    blockers = acceptance_blockers(submission) if decision == ReviewDecision.ACCEPTED else []
    if blockers and not acceptance_override:
        raise ReviewRefused(_("accepting this submission needs an override (%(why)s); say why you accept it anyway")
                            % {"why": "; ".join(b.message for b in blockers)})
    season_rubric = rubrics.rubric_of(submission.issue.season)
    suggested = prefill(submission)
    try:
        points = season_rubric.clean_points(suggested if rubric is None else rubric)
    except rubrics.RubricPointsError as exc:
        raise ReviewRefused(str(exc))
    overridden = sorted(k for k in points if points[k] != suggested.get(k, 0.0))
    if decision == ReviewDecision.ACCEPTED and overridden and not override_reason.strip():
        labels = ", ".join(str(season_rubric.item(k).label) for k in overridden)
        raise ReviewRefused(_("points differ from what the runs suggest (%(items)s); give a reason for the override")
                            % {"items": labels})
    accepted = decision == ReviewDecision.ACCEPTED
    base, bonus = season_rubric.totals(points) if accepted else (0.0, 0.0)
    previous = submission.reviews.order_by("-created_at", "-pk").first()
    values = dict(reviewer=reviewer, decision=decision, reason=reason.strip(), rubric=points if accepted else {},
                  rubric_prefill=suggested, override_reason=override_reason.strip() if accepted and overridden else "",
                  acceptance_override=acceptance_override if blockers else "", base_score=base, bonus=bonus)
    if previous is not None and all(getattr(previous, k) == v for k, v in values.items()):
        return previous  # sent twice: recorded once
    review = Review.objects.create(submission=submission, **values)
    audit.record("review." + decision, submission, actor=reviewer, before=_review_state(previous),
                 after=_review_state(review), reason=reason.strip())
    if blockers:
        audit.record("review.acceptance_overridden", submission, actor=reviewer, before=_stored_blockers(blockers),
                     after={"decision": review.decision}, reason=acceptance_override)
    if accepted and overridden:
        audit.record("score.overridden", submission, actor=reviewer,
                     before={k: suggested.get(k, 0.0) for k in overridden}, after={k: points[k] for k in overridden},
                     reason=override_reason.strip())
    standings.refresh_for(submission.issue.season, submission.contestant, actor=reviewer,
                          reason=f"review of #{submission.pk}: {decision}")
    return review
