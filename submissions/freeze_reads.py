"""What a scoreboard freeze hides on the domain's public pages and API: the submission and issue pages,
the issue search, a submission's JSON. In a season whose results are frozen, a run that finished after
the freeze shows to the public (visitors and other contestants) as "result hidden until the thaw": no
verdict, figure, flag, log or chart of it, and it counts in no figure shown. What it changed of an
earlier run is not shown either (a second judging finished since: that run still awaits it, as it did
then; an organizer's clearance since: its time still reads unconfirmed), nor a review made since. The submission's owner and organizers see everything.

The freeze is the public side's (leaderboard/), which the domain does not import: the leaderboard
registers when a season's results froze for the public (`register`, leaderboard/apps.py). Without a
registered read nothing is frozen."""
from submissions.models import AuditEntry, RunStatus
from submissions.rules import timing_flags

_frozen_at = None  # season -> when its results froze for the public (a datetime), or None


def register(read):
    """`read(season)`: when the season's results froze for the public, or None while they are live."""
    global _frozen_at
    _frozen_at = read


def frozen_at(season):
    return _frozen_at(season) if _frozen_at is not None else None


class Viewer:
    """The freezes one viewer is held to: each season's read once, whatever the number of runs."""

    def __init__(self, user):
        self.user = user
        self._seasons = {}

    def sees_everything(self, owner_user_id):
        """Organizers, and the submission's owner: their own runs are theirs to follow."""
        user = self.user
        return user is not None and user.is_authenticated and (user.is_staff or user.pk == owner_user_id)

    def held_since(self, season, owner_user_id):
        """When the season's results froze for this viewer, of a submission of `owner_user_id`'s; None: live."""
        if self.sees_everything(owner_user_id):
            return None
        if season.pk not in self._seasons:
            self._seasons[season.pk] = frozen_at(season)
        return self._seasons[season.pk]

    def submission_held_since(self, submission):
        """held_since for a submission read with its issue's season and its contestant."""
        return self.held_since(submission.issue.season, submission.contestant.user_id)


def is_hidden(run, since):
    """Whether the run's result came after the freeze of `since` (None: live). A run made after it is
    finished after it too (a run finished with no time kept is dated by its making)."""
    return (since is not None and run.status == RunStatus.DONE
            and (run.finished_at or run.created_at) > since)


CLEARANCES = {"run.timing_cleared": timing_flags.CLEARED, "run.second_judging_cleared": timing_flags.SECOND_CLEARED}


def _flags_before_clearances(runs, since):
    """Of `runs`, those an organizer cleared (services/clearing) after the freeze of `since`: their flags
    before the first such clearance, by run id."""
    if since is None:
        return {}
    cleared = [run for run in runs if set(run.flags or []) & set(CLEARANCES.values())]
    if not cleared:
        return {}
    entries = (AuditEntry.objects.filter(action__in=list(CLEARANCES), object_type="run", created_at__gt=since,
                                         object_id__in=[str(run.pk) for run in cleared])
               .order_by("created_at", "pk").values_list("object_id", "before"))
    before = {}
    for run_id, values in entries:
        flags = (values or {}).get("flags")
        if isinstance(flags, list):
            before.setdefault(int(run_id), flags)
    return before


def as_shown(runs, since):
    """Of one submission's `runs` (a list), the ids of those hidden by the freeze of `since`. The other
    runs show what they showed then (their flags changed in memory, never saved): one an organizer
    cleared since reads as it did before the clearance, and one that a second judging hidden by the
    freeze has since confirmed or contradicted reads as awaiting it."""
    runs = list(runs)
    hidden = {run.pk for run in runs if is_hidden(run, since)}
    shown = {run.pk: run for run in runs if run.pk not in hidden}
    for run_id, flags in _flags_before_clearances(shown.values(), since).items():
        shown[run_id].flags = list(flags)
    judged_again_since = {run.confirms_id for run in runs if run.pk in hidden and run.confirms_id}
    for run in runs:
        if run.pk in judged_again_since and run.pk not in hidden:
            outcomes = (timing_flags.SECOND_CONFIRMED, timing_flags.SECOND_DISAGREES, timing_flags.SECOND_CLEARED)
            kept = [flag for flag in (run.flags or []) if flag not in outcomes]
            run.flags = kept + ([timing_flags.AWAITING_SECOND] if timing_flags.AWAITING_SECOND not in kept else [])
    return hidden


def shown_runs(runs, since):
    """`runs` (one submission's) less those hidden by the freeze of `since`, the rest as the public saw
    them then (as_shown): what its figures and charts are made of."""
    runs = list(runs)
    hidden = as_shown(runs, since)
    return [run for run in runs if run.pk not in hidden]


def reviews_shown(reviews, since):
    """The reviews made by the freeze of `since` (all of them while live)."""
    return [review for review in reviews if since is None or review.created_at <= since]
