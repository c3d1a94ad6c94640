"""The clarifications in the HTTP API (mounted under /api/v1/ by config/api.py), with a personal token:
a season's announcements, answers for everyone and one's own questions, and asking one; for
organizers, the questions waiting for an answer, answering, announcing."""
from typing import List, Optional

from django.http import HttpResponse
from django.utils import timezone
from django.utils.translation import gettext as _
from ninja import Query, Router, Schema, Status
from ninja.errors import HttpError
from pydantic import Field

from clarifications import selectors, services
from clarifications.models import ANNOUNCEMENT_MAX_CHARS, ANSWER_MAX_CHARS, QUESTION_MAX_CHARS, Clarification
from submissions import selectors as selectors_of_submissions
from submissions.api.answers import answers
from submissions.api.auth import ContestantTokenAuth
from submissions.api.fields import JsonObjectIn, NonBlankText, Text
from submissions.models import Season

clarifications_router = Router(tags=["contestant"], auth=ContestantTokenAuth())
clarifications_organizer_router = Router(tags=["organizer"], auth=ContestantTokenAuth())

UNREAD = Field(description="Published after you last read the season's clarifications (on its page, or here), "
                           "by someone else")


def _season(code):
    season = Season.objects.filter(code=code).first()
    if season is None:
        raise HttpError(404, _("season %(season)s does not exist") % {"season": code})
    return season


def _iso(value):
    return value.isoformat() if value else None


class AnnouncementOut(Schema):
    id: int
    season: str
    text: str = Field(description="Markdown")
    posted_at: str
    unread: bool = UNREAD

    @staticmethod
    def of(announcement, season_code, unread=False):
        return AnnouncementOut(id=announcement.pk, season=season_code, text=announcement.text,
                               posted_at=announcement.posted_at.isoformat(), unread=unread)


class ClarificationOut(Schema):
    id: int
    season: str
    issue: Optional[str] = Field(description="The code of the issue it is about (null: the rules in general)")
    question: str
    asked_at: str
    answer: Optional[str] = Field(description="Markdown; null until an organizer answers")
    answered_at: Optional[str]
    public: bool = Field(description="Answered for everyone (shown without the asker's name)")
    mine: bool = Field(description="You asked it")
    unread: bool = UNREAD

    @staticmethod
    def of(clarification, season_code, user, unread=False):
        answered = clarification.is_answered
        return ClarificationOut(
            id=clarification.pk, season=season_code, issue=clarification.issue.code if clarification.issue else None,
            question=clarification.question, asked_at=clarification.asked_at.isoformat(),
            answer=clarification.answer if answered else None, answered_at=_iso(clarification.answered_at),
            public=clarification.public and answered, mine=clarification.asker_id == user.pk, unread=unread)


class SeasonClarificationsOut(Schema):
    season: str
    announcements: List[AnnouncementOut] = Field(description="In force, newest first")
    clarifications: List[ClarificationOut] = Field(
        description="Questions answered for everyone and your own (answered or not), the latest first")
    unread: int = Field(description="How many of them were unread; reading them here marks them read")


@clarifications_router.get("/seasons/{code}/clarifications", response=answers({200: SeasonClarificationsOut}, 401, 404),
                           url_name="season_clarifications")
def season_clarifications(request, code: str):
    """The season's announcements, its questions answered for everyone (without who asked), and yours.
    Marks them read, as opening the season's clarifications page does."""
    season = _season(code)
    user = request.auth.user
    opened_at = timezone.now()
    shown = selectors.season_clarifications(season, user)
    if shown.unread:
        services.mark_read(user, season, opened_at)
    questions = {c.pk: c for c in (*shown.public, *shown.own)}
    latest_first = sorted(questions.values(), key=lambda c: (c.answered_at or c.asked_at, c.pk), reverse=True)
    return SeasonClarificationsOut(
        season=season.code, unread=shown.unread,
        announcements=[AnnouncementOut.of(a, season.code, a.unread) for a in shown.announcements],
        clarifications=[ClarificationOut.of(c, season.code, user, c.unread) for c in latest_first])


class AskIn(JsonObjectIn):
    question: NonBlankText = Field(max_length=QUESTION_MAX_CHARS)
    issue: Text = Field("", max_length=6, description="The code of the season's issue it is about (empty: the rules)")


@clarifications_router.post("/seasons/{code}/clarifications", response=answers({201: ClarificationOut}, 401, 404, 422, 429),
                            url_name="clarification_ask")
def ask(request, code: str, payload: AskIn, response: HttpResponse):
    """Ask the organizers a question about the season. Only you and they see it; an answer for everyone
    shows it without your name. At most QUESTIONS_PER_HOUR / QUESTIONS_PER_DAY: beyond, 429 with
    Retry-After. A season that has ended, or an issue it does not have: 400."""
    season = _season(code)
    try:
        question = services.ask(season, request.auth.user, payload.question, issue_code=payload.issue)
    except services.TooManyQuestions as exc:
        response["Retry-After"] = str(exc.retry_after_s)
        return Status(429, {"detail": str(exc)})
    except services.ClarificationRefused as exc:
        return Status(400, {"detail": str(exc)})
    return Status(201, ClarificationOut.of(question, season.code, request.auth.user))


def _organizer(request):
    if not selectors_of_submissions.is_organizer(request.auth.user):
        raise HttpError(403, _("organizers only"))
    return request.auth.user


class WaitingOut(ClarificationOut):
    asker: Optional[str] = Field(description="Who asked (the display name; organizers only)")


@clarifications_organizer_router.get("/clarifications/waiting", response=answers({200: List[WaitingOut]}, 401, 403, 404),
                                     url_name="waiting_clarifications")
def waiting(request, season: str = Query("", description="A season's code (left out: every season)")):
    """Questions no organizer has answered yet, the oldest first (organizers only)."""
    user = _organizer(request)
    rows = selectors.waiting(_season(season) if season else None)[:selectors.SHOWN]
    return [WaitingOut(**ClarificationOut.of(c, c.season.code, user).dict(),
                       asker=_asker_name(c)) for c in rows]


def _asker_name(clarification):
    asker = clarification.asker
    if asker is None:
        return None
    contestant = getattr(asker, "contestant", None)
    return contestant.display_name if contestant else asker.get_username()


class AnswerIn(JsonObjectIn):
    answer: NonBlankText = Field(max_length=ANSWER_MAX_CHARS, description="Markdown")
    public: bool = Field(False, description="For everyone (without the asker's name); else the asker alone")
    reason: NonBlankText = Field(max_length=500, description="Kept in the audit trail")


@clarifications_organizer_router.post("/clarifications/{clarification_id}/answer",
                                      response=answers({200: WaitingOut}, 401, 403, 404, 422),
                                      url_name="clarification_answer")
def answer(request, clarification_id: int, payload: AnswerIn):
    """Answer a question, or change its answer (organizers only; audited)."""
    user = _organizer(request)
    clarification = (Clarification.objects.select_related("season", "issue", "asker__contestant")
                     .filter(pk=clarification_id).first())
    if clarification is None:
        return Status(404, {"detail": _("question %(id)s does not exist") % {"id": clarification_id}})
    try:
        services.answer(clarification, user, payload.answer, public=payload.public, reason=payload.reason)
    except services.ClarificationRefused as exc:
        return Status(400, {"detail": str(exc)})
    return WaitingOut(**ClarificationOut.of(clarification, clarification.season.code, user).dict(),
                      asker=_asker_name(clarification))


class AnnouncementIn(JsonObjectIn):
    text: NonBlankText = Field(max_length=ANNOUNCEMENT_MAX_CHARS, description="Markdown")
    reason: NonBlankText = Field(max_length=500, description="Kept in the audit trail")


@clarifications_organizer_router.post("/seasons/{code}/announcements",
                                      response=answers({201: AnnouncementOut}, 401, 403, 404, 422),
                                      url_name="announcement_create")
def announce(request, code: str, payload: AnnouncementIn):
    """Post an announcement on the season's pages (organizers only; audited)."""
    user = _organizer(request)
    season = _season(code)
    try:
        announcement = services.post_announcement(season, user, payload.text, reason=payload.reason)
    except services.ClarificationRefused as exc:
        return Status(400, {"detail": str(exc)})
    return Status(201, AnnouncementOut.of(announcement, season.code))
