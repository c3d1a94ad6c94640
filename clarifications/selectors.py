"""Reads of the clarifications: what a season shows its reader, what the reader has not read yet, and
what waits for the organizers.

Unread: an announcement posted, or an answer (to one's own question, or for everyone) published, after
the reader last opened the season's clarifications (before that: after the account was made), by
someone else. Changing an answer publishes it anew."""
from dataclasses import dataclass
from datetime import datetime, timezone as dt_timezone

from django.db.models import Count, DateTimeField, F, OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce

from clarifications.models import Announcement, Clarification, ClarificationsRead
from submissions.models import Season

# What a page lists at most of each kind (the newest); a season has a few dozen of them at most.
SHOWN = 200
LEADERBOARD_ANNOUNCEMENTS = 3
EPOCH = datetime(1970, 1, 1, tzinfo=dt_timezone.utc)


def _joined(user):
    return getattr(user, "date_joined", None) or EPOCH


def read_at(user, season):
    """When `user` last opened the season's clarifications (their account's making, if never)."""
    if not user.is_authenticated:
        return None
    marker = ClarificationsRead.objects.filter(user=user, season=season).values_list("read_at", flat=True).first()
    return marker or _joined(user)


def announcements(season):
    """The season's announcements in force, newest first."""
    return (Announcement.objects.filter(season=season, withdrawn_at__isnull=True)
            .order_by("-posted_at", "-pk"))


def latest_announcements(season, count=LEADERBOARD_ANNOUNCEMENTS):
    return list(announcements(season)[:count])


def public_clarifications(season):
    """Questions answered for everyone, the latest answer first (never who asked)."""
    return (Clarification.objects.filter(season=season, public=True, answered_at__isnull=False)
            .select_related("issue").order_by("-answered_at", "-pk"))


def own_clarifications(season, user):
    """`user`'s questions about the season, answered or not, the newest first."""
    return Clarification.objects.filter(season=season, asker=user).select_related("issue").order_by("-asked_at", "-pk")


def is_unread_announcement(announcement, user, since):
    return since is not None and announcement.posted_at > since and announcement.author_id != user.pk


def is_unread_answer(clarification, user, since):
    return (since is not None and clarification.answered_at is not None and clarification.answered_at > since
            and clarification.answered_by_id != user.pk)


@dataclass
class SeasonClarifications:
    """What a season's clarifications page (and its API) shows one reader; each item carries `unread`."""
    announcements: list
    public: list
    own: list
    read_before: datetime = None  # the reader's mark before this visit (None: not signed in)

    @property
    def unread(self):
        # one's own question answered for everyone is in both lists: counted once
        return len({(type(item), item.pk) for item in (*self.announcements, *self.public, *self.own) if item.unread})


def season_clarifications(season, user):
    since = read_at(user, season)
    shown = SeasonClarifications(list(announcements(season)[:SHOWN]), list(public_clarifications(season)[:SHOWN]),
                                 list(own_clarifications(season, user)[:SHOWN]) if user.is_authenticated else [],
                                 since)
    for item in shown.announcements:
        item.unread = is_unread_announcement(item, user, since)
    for item in (*shown.public, *shown.own):
        item.unread = is_unread_answer(item, user, since)
    return shown


def _read_at_of_row_season(user):
    marker = ClarificationsRead.objects.filter(user=user, season=OuterRef("season")).values("read_at")[:1]
    return Coalesce(Subquery(marker), Value(_joined(user)), output_field=DateTimeField())


def unread_by_season(user):
    """{season code: unread announcements and answers} for `user`, seasons without any left out."""
    announced = (Announcement.objects.filter(withdrawn_at__isnull=True).exclude(author=user)
                 .alias(read_at=_read_at_of_row_season(user)).filter(posted_at__gt=F("read_at"))
                 .values("season__code").annotate(n=Count("pk")))
    answered = (Clarification.objects.filter(answered_at__isnull=False).filter(Q(public=True) | Q(asker=user))
                .exclude(answered_by=user).alias(read_at=_read_at_of_row_season(user))
                .filter(answered_at__gt=F("read_at")).values("season__code").annotate(n=Count("pk")))
    counts = {}
    for row in (*announced, *answered):
        counts[row["season__code"]] = counts.get(row["season__code"], 0) + row["n"]
    return counts


@dataclass
class Notices:
    """The header's clarifications link: where it goes, how many unread items it counts, and for
    organizers how many questions wait for an answer."""
    season_code: str = None
    unread: int = 0
    unanswered: int = 0


def notices(user):
    if not user.is_authenticated:
        return Notices()
    unread = unread_by_season(user)
    seasons = Season.objects.order_by("-starts_at", "-pk")
    if unread:  # the newest season with something unread
        seasons = seasons.filter(code__in=unread)
    return Notices(season_code=seasons.values_list("code", flat=True).first(), unread=sum(unread.values()),
                   unanswered=waiting().count() if user.is_staff else 0)


def waiting(season=None):
    """Questions no organizer has answered yet, the oldest first."""
    questions = Clarification.objects.filter(answered_at__isnull=True)
    if season is not None:
        questions = questions.filter(season=season)
    return questions.select_related("season", "issue", "asker__contestant").order_by("asked_at", "pk")


def answered(season=None):
    """Answered questions, the latest answer first."""
    questions = Clarification.objects.filter(answered_at__isnull=False)
    if season is not None:
        questions = questions.filter(season=season)
    return (questions.select_related("season", "issue", "asker__contestant", "answered_by")
            .order_by("-answered_at", "-pk"))


def every_announcement(season=None):
    """Announcements, withdrawn ones too, newest first (the organizers' page)."""
    posted = Announcement.objects.all()
    if season is not None:
        posted = posted.filter(season=season)
    return posted.select_related("season", "author", "withdrawn_by").order_by("-posted_at", "-pk")
