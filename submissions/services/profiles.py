"""Profile runs: a contestant asks for a profile of one of their passed runs (or submits in `profile` mode),
and an agent runs the correctness trials, then both models' kernels under the GPU's profiler, and reports a
record per kernel in the run's result (`profile`) with the profiler's own file (`ProfileFile`, a `.ncu-rep`).

A profile is a submission of mode `profile`: its owner's and the organizers' alone, never reviewed, ranked,
exported or in the dataset, like a test or a benchmark, so no ranking, standing or board reads it (they read
ranked submissions alone). Asked for from a run, it takes that run's files and GPU type (`profile_of`), and
counts against the contestant's profile limit in the season (PROFILE_SUBMISSIONS_PER_HOUR / _PER_DAY).
"""
from django.db import transaction
from django.utils.translation import gettext as _

from submissions.bundles import BundleError, build_bundle
from submissions.models import ProfileFile, Run, RunStatus, SubmissionMode, SubmissionSource, Verdict
from submissions.services import judging, submitting


class NotYours(PermissionError):
    """The run is another contestant's: only its owner asks for its profile."""


class ProfileRefused(ValueError):
    """The run cannot be profiled (not passed, not finished, a profile itself)."""


def request_profile(run_id, user, *, source=SubmissionSource.API):
    """A profile submission of the user's passed run: its files, on its GPU type. Raises Run.DoesNotExist,
    NotYours, ProfileRefused, or create_submission's refusals (TooManyRequests past the profile limit,
    AccessRefused, SubmissionRefused: a closed season, no agreement)."""
    run = Run.objects.select_related("submission__issue__season", "submission__contestant", "gpu_type").get(pk=run_id)
    submission = run.submission
    if not user.is_authenticated or submission.contestant.user_id != user.pk:
        raise NotYours(_("run %(id)s is not yours: only its owner asks for its profile") % {"id": run.pk})
    if submission.mode == SubmissionMode.PROFILE:
        raise ProfileRefused(_("run %(id)s is a profile run already: its report is on its page") % {"id": run.pk})
    if run.status != RunStatus.DONE or run.verdict != Verdict.PASSED:
        state = run.get_verdict_display() if run.status == RunStatus.DONE else run.get_status_display()
        raise ProfileRefused(_("only a passed run can be profiled; run %(id)s is %(state)s")
                             % {"id": run.pk, "state": state.lower()})
    try:
        bundle = build_bundle({f.path: f.content.encode() for f in submission.files.all()})
    except BundleError as exc:  # files stored under older limits
        raise ProfileRefused(_("the files of run %(id)s cannot be judged again: %(errors)s")
                             % {"id": run.pk, "errors": "; ".join(exc.errors)})
    return submitting.create_submission(
        submission.contestant, submission.issue, bundle, source=source, mode=SubmissionMode.PROFILE,
        gpu_types=[run.gpu_type], profile_of=run, note=f"profile of run #{run.pk} (submission #{submission.pk})")


def can_see_profile(user, run) -> bool:
    """A profile run's report and file: its owner's and the organizers' alone."""
    return user.is_authenticated and (user.is_staff or run.submission.contestant.user_id == user.pk)


def stored_file(run):
    """The run's kept .ncu-rep without its bytes (size, sha256), or None."""
    return ProfileFile.objects.filter(run_id=run.pk).defer("content").first()


GZIP_MAGIC = b"\x1f\x8b"


class ProfileFileRefused(ValueError):
    """A profile file the site does not keep: `status` is the HTTP answer (413: too large, 422: not gzip)."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def decompressed_report(body: bytes, max_bytes: int) -> bytes:
    """The .ncu-rep an agent sent: gzip-compressed (read up to `max_bytes`, so a small body cannot
    inflate without bound), or as it was written (agents before compression)."""
    import gzip
    import io
    import zlib

    if not body.startswith(GZIP_MAGIC):
        return body
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(body)) as stream:
            data = stream.read(max_bytes + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise ProfileFileRefused(422, f"the profile file is not valid gzip: {exc}") from None
    if len(data) > max_bytes:
        raise ProfileFileRefused(413, f"the profile file is more than {max_bytes} bytes once decompressed")
    return data


@transaction.atomic
def store_profile_file(run_id, agent, secret, attempt, data: bytes):
    """Keep the `.ncu-rep` a profile run's agent sends before its result: only the agent judging the
    run's current attempt, with its secret, while it runs (judging.AgentRefused, judging.LateReport,
    judging.RunConflict otherwise). A later file of the same run replaces the earlier one."""
    import hashlib

    run = judging.lock_run(run_id)
    judging.check_agent_access(run, agent, secret)
    if attempt != run.attempts:
        raise judging.AgentRefused(f"stale attempt: run {run.pk} is at attempt {run.attempts}, not {attempt}")
    if run.status != RunStatus.RUNNING:
        raise judging.RunConflict(f"run {run.pk} is not running; its profile file is not kept")
    if run.submission.mode != SubmissionMode.PROFILE:
        raise judging.RunConflict(f"run {run.pk} is not a profile run; it keeps no profile file")
    ProfileFile.objects.update_or_create(run=run, defaults={
        "content": data, "size": len(data), "sha256": hashlib.sha256(data).hexdigest(), "attempt": attempt})
