"""Every write of the clarifications: asking, answering, announcing, withdrawing, marking read.

Organizers' writes need a reason and are audited (submissions/services/audit.py). An announcement is
on the season's leaderboard page, which visitors are served from the board cache: posting or
withdrawing one gives the season a new board version in the same transaction."""
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import formats, timezone
from django.utils.translation import gettext as _

from clarifications.models import (ANNOUNCEMENT_MAX_CHARS, ANSWER_MAX_CHARS, QUESTION_MAX_CHARS, Announcement,
                                   Clarification, ClarificationsRead)
from submissions import board_versions
from submissions.models import Issue
from submissions.services import audit


class ClarificationRefused(ValueError):
    """Why a question, answer or announcement is refused, in the reader's language."""


class UnknownIssue(ClarificationRefused):
    """The question names an issue the season does not have."""


class TooManyQuestions(ClarificationRefused):
    """Over QUESTIONS_PER_HOUR or QUESTIONS_PER_DAY; `retry_after_s`: when the next one is taken."""

    def __init__(self, message, retry_after_s):
        super().__init__(message)
        self.retry_after_s = retry_after_s


class OrganizersOnly(ClarificationRefused):
    pass


def _too_long(text, limit, what):
    if len(text) > limit:
        raise ClarificationRefused(_("%(what)s has at most %(count)s characters; this one has %(length)s")
                                   % {"what": what, "count": limit, "length": len(text)})


def _needs_reason(reason, action):
    if not reason.strip():
        raise ClarificationRefused(_("%(action)s needs a reason (it is kept in the audit trail)") % {"action": action})


def _refuse_unless_organizer(user):
    if not (user.is_authenticated and user.is_staff):
        raise OrganizersOnly(_("organizers only"))


def _per_hour(limit, when):
    return _("you may ask %(count)s questions an hour; ask again after %(when)s") % {"count": limit, "when": when}


def _per_day(limit, when):
    return _("you may ask %(count)s questions a day; ask again after %(when)s") % {"count": limit, "when": when}


def _check_rate(asker, now):
    """TooManyQuestions when the asker asked the limit of a window within it (the caller holds the
    asker's row lock, so concurrent questions are all counted)."""
    for window, limit, message in ((timedelta(hours=1), settings.QUESTIONS_PER_HOUR, _per_hour),
                                   (timedelta(days=1), settings.QUESTIONS_PER_DAY, _per_day)):
        if not limit:
            continue
        recent = Clarification.objects.filter(asker=asker, asked_at__gte=now - window)
        count = recent.count()
        if count >= limit:
            oldest = recent.order_by("asked_at").values_list("asked_at", flat=True)[count - limit]
            retry = timezone.localtime(oldest + window)
            when = f"{formats.date_format(retry, 'DATETIME_FORMAT')} {retry.tzname()}"
            raise TooManyQuestions(message(limit, when),
                                   retry_after_s=max(1, int((oldest + window - now).total_seconds()) + 1))


def ask(season, asker, question, *, issue_code=""):
    """A new question of `asker` about `season` (and its issue `issue_code`, when given)."""
    question = question.strip()
    if not question:
        raise ClarificationRefused(_("a question needs some text"))
    _too_long(question, QUESTION_MAX_CHARS, _("a question"))
    if season.has_ended:
        raise ClarificationRefused(_("season %(season)s has ended: it takes no more questions") % {"season": season.code})
    issue = None
    if issue_code.strip():
        issue = Issue.objects.filter(season=season, code=issue_code.strip().upper()).first()
        if issue is None:
            raise UnknownIssue(_("season %(season)s has no issue %(issue)s") % {"season": season.code,
                                                                                 "issue": issue_code.strip()})
    with transaction.atomic():
        get_user_model().objects.select_for_update().filter(pk=asker.pk).first()
        now = timezone.now()
        _check_rate(asker, now)
        return Clarification.objects.create(season=season, issue=issue, asker=asker, question=question, asked_at=now)


def answer(clarification, organizer, text, *, public, reason):
    """Answer a question, or change its answer (its text or who sees it). Returns whether anything
    changed; a change is published anew, so its readers see it as unread."""
    _refuse_unless_organizer(organizer)
    text = text.strip()
    if not text:
        raise ClarificationRefused(_("an answer needs some text"))
    _too_long(text, ANSWER_MAX_CHARS, _("an answer"))
    _needs_reason(reason, _("answering a question"))
    with transaction.atomic():
        row = Clarification.objects.select_for_update().get(pk=clarification.pk)
        before = {"answer": row.answer, "public": row.public} if row.is_answered else None
        if before == {"answer": text, "public": public}:
            return False
        row.answer, row.public, row.answered_by, row.answered_at = text, public, organizer, timezone.now()
        row.save(update_fields=["answer", "public", "answered_by", "answered_at"])
        audit.record("clarification.answered" if before is None else "clarification.answer_changed", row,
                     actor=organizer, before=before, reason=reason.strip(),
                     after={"season": row.season.code, "issue": row.issue.code if row.issue else None,
                            "answer": text, "public": public})
    clarification.refresh_from_db()
    return True


def post_announcement(season, organizer, text, *, reason):
    _refuse_unless_organizer(organizer)
    text = text.strip()
    if not text:
        raise ClarificationRefused(_("an announcement needs some text"))
    _too_long(text, ANNOUNCEMENT_MAX_CHARS, _("an announcement"))
    _needs_reason(reason, _("posting an announcement"))
    with transaction.atomic():
        announcement = Announcement.objects.create(season=season, text=text, author=organizer)
        board_versions.bump(season.pk)  # the leaderboard page shows it
        audit.record("announcement.posted", announcement, actor=organizer, reason=reason.strip(),
                     after={"season": season.code, "text": text})
    return announcement


def withdraw_announcement(announcement, organizer, *, reason):
    """Take an announcement off the season's pages. Returns False when it was already withdrawn."""
    _refuse_unless_organizer(organizer)
    _needs_reason(reason, _("withdrawing an announcement"))
    with transaction.atomic():
        row = Announcement.objects.select_for_update().select_related("season").get(pk=announcement.pk)
        if row.withdrawn_at is not None:
            return False
        row.withdrawn_at, row.withdrawn_by = timezone.now(), organizer
        row.save(update_fields=["withdrawn_at", "withdrawn_by"])
        board_versions.bump(row.season_id)
        audit.record("announcement.withdrawn", row, actor=organizer, reason=reason.strip(),
                     before={"season": row.season.code, "text": row.text})
    announcement.refresh_from_db()
    return True


def mark_read(user, season, at):
    """`user` has read the season's clarifications as they were at `at` (never moved back)."""
    if ClarificationsRead.objects.filter(user=user, season=season, read_at__lt=at).update(read_at=at):
        return
    try:
        with transaction.atomic():
            ClarificationsRead.objects.create(user=user, season=season, read_at=at)
    except IntegrityError:  # there already, read at `at` or later (another request of the same reader)
        pass
