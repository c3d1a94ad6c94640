"""What the API answers about a submission and its runs (the contestant's read, the cancel and the profile
routes): each run's state, verdict and figures as the reader may see them, the judging hardware and the
time limits."""
from typing import List, Literal, Optional

from django.utils import timezone
from ninja import Schema
from pydantic import Field

from submissions import freeze_reads, hardware_reads, run_limits, selectors
from submissions.models import RunStage, RunStatus, SubmissionMode, Verdict
from submissions.rules import ranked_runs, timing_flags
from submissions.services import cancelling


RunStatusName = Literal[tuple(RunStatus.values)]
RunStageName = Optional[Literal[tuple(RunStage.values)]]
VerdictName = Literal[("", *Verdict.values)]
STAGE = Field(None, description="What a running run is doing, as its agent last reported it (null: not running, "
                                "or no report yet)")
CURRENT = Field(True, description="Whether this run's verdict is the one the submission shows on its GPU type "
                                  "(rejudges add runs; the older ones stay as history)")
PROVISIONAL = Field(False, description="A figure one untrusted host vouches for alone, awaiting a second judging on "
                                       "another host (or one that disagreed): it ranks nowhere; only the owner and "
                                       "organizers get its figure and result")
HIDDEN_UNTIL_THAW = Field(False, description="The run finished after its season's scoreboard froze: to anyone but "
                                            "the submission's owner and organizers its result is hidden until the "
                                            "thaw (verdict empty; figures, flags and result null or empty)")


class RunOut(Schema):
    id: int
    gpu_type: str
    status: RunStatusName = Field(description="waiting (over your cap of queued runs, kept by the site), queued "
                                              "(in its GPU type's queue), running, done")
    stage: RunStageName = STAGE
    queue_position: Optional[int] = Field(None, description="A queued run: its 1-based place among its GPU type's "
                                                            "jobs (null otherwise, or when the queue cannot be read)")
    runs_ahead: Optional[int] = Field(None, description="A waiting run: how many of your runs on its GPU type go "
                                                        "first (null otherwise)")
    elapsed_s: Optional[int] = Field(None, description="Whole seconds waited so far (waiting, queued) or judged "
                                                       "so far (running, since its agent started it, of at most "
                                                       "time_limit_s); null once done")
    time_limit_s: int = Field(description="The longest a judging may take from its agent's start "
                                          "(RUN_DEADLINE_SECONDS): a run still unfinished then is taken back and "
                                          "judged again")
    verdict: VerdictName = Field(description="Empty until the run is done")
    attempts: int
    speedup: Optional[float]
    reference_median_ms: Optional[float]
    candidate_median_ms: Optional[float]
    flags: list
    created_at: str
    finished_at: Optional[str]
    result: Optional[dict]
    current: bool = CURRENT
    provisional: bool = PROVISIONAL
    hidden_until_thaw: bool = HIDDEN_UNTIL_THAW
    cancelled_by_organizers: Optional[str] = Field(None, description="A run the organizers cancelled: their "
                                                                     "reason (empty when they gave none); null "
                                                                     "otherwise")

    @staticmethod
    def from_run(run, *, show_provisional=True, current=True, now=None, hidden=False):
        """`hidden`: a freeze hides its result from the reader (freeze_reads)."""
        provisional = timing_flags.is_provisional(run) and not hidden
        withheld = hidden or (provisional and not show_provisional)
        progress = selectors.run_progress(run, now or timezone.now())
        return RunOut(
            id=run.pk, gpu_type=run.gpu_type.slug, status=run.status, stage=progress["stage"] or None,
            queue_position=progress["queue_position"], runs_ahead=progress["runs_ahead"],
            elapsed_s=progress["elapsed_s"], time_limit_s=run_limits.limits()["judging_s"],
            verdict="" if hidden else run.verdict, attempts=run.attempts,
            speedup=None if withheld else run.speedup,
            reference_median_ms=None if hidden else run.reference_median_ms,
            candidate_median_ms=None if withheld else run.candidate_median_ms, flags=[] if hidden else run.flags,
            created_at=run.created_at.isoformat(), finished_at=run.finished_at.isoformat() if run.finished_at else None,
            result=None if withheld else run.result, current=current, provisional=provisional,
            hidden_until_thaw=hidden,
            cancelled_by_organizers=None if hidden else cancelling.organizer_reason(run),
        )


class LimitsOut(Schema):
    """The time limits its runs are judged under."""
    compile_s: int = Field(description="Each judged process's build: past it, compile_error")
    run_s: int = Field(description="Each judged process's run, after its build: past it, timeout")
    judging_s: int = Field(description="A whole judging, from its agent's start (each run's time_limit_s)")


class JudgingHardwareOut(Schema):
    """One GPU type of the season: whether it judges this bundle (why not, when not), and how many
    workers could take its runs now (0: the run waits until an agent for it connects)."""
    gpu_type: str
    name: str
    judged: bool
    why_not: str
    workers_online: int


SubmissionStateName = Literal[tuple(selectors.SubmissionState.values)]
STATE = Field(description="judging; then, until an organizer reviews it, passed_awaiting_review (every current run "
                          "passed) or awaiting_review; then the review's decision, accepted or rejected; cancelled: "
                          "every run was cancelled, nothing judged and nothing to review. A test or "
                          "benchmark submission is never reviewed: judging, then passed or failed")
RANKED = Field(description="Per GPU type slug, the figure that ranks: {speedup, run, runs_counted}")
SubmissionModeName = Literal[tuple(SubmissionMode.values)]
MODE = Field(description="ranked (judged, reviewed and ranked); test (correctness trials only: no timing, never "
                         "ranked or reviewed); benchmark (judged and timed in full, never ranked, reviewed or "
                         "public); profile (correctness trials, then a report of each kernel of both models under "
                         "the GPU's profiler: GET /api/v1/runs/{id}/profile; never ranked, reviewed or public). Test, "
                         "benchmark and profile submissions are yours and the organizers' alone")


class SubmissionOut(Schema):
    id: int
    issue: str
    season: str
    contestant: str
    source: str
    bundle_sha256: str
    created_at: str
    files: List[str]
    needs_cuda: List[str]
    hardware: List[JudgingHardwareOut]
    runs: List[RunOut]
    limits: LimitsOut
    ranked: dict = RANKED
    state: SubmissionStateName = STATE
    mode: SubmissionModeName = MODE
    url: str

    @staticmethod
    def from_submission(request, submission):
        runs = list(submission.runs.all())
        current = {run.pk for run in selectors.latest_runs(submission)}
        show_provisional = selectors.can_see_provisional(request.auth.user, submission)
        # in a season frozen for the reader: what the public sees (freeze_reads), the state it makes
        since = freeze_reads.Viewer(request.auth.user).submission_held_since(submission)
        hidden = freeze_reads.as_shown(runs, since)
        shown = [run for run in runs if run.pk not in hidden]
        state = (selectors.submission_state(submission) if since is None else selectors.submission_state(
            submission, runs=shown, reviews=freeze_reads.reviews_shown(submission.reviews.all(), since)))
        now = timezone.now()
        hardware = hardware_reads.submission_hardware(submission)
        return SubmissionOut(
            needs_cuda=hardware["cuda_markers"],
            hardware=[JudgingHardwareOut(gpu_type=row["gpu_type"].slug, name=row["gpu_type"].name, judged=row["judged"],
                                  why_not=row["why_not"], workers_online=row["online"]) for row in hardware["rows"]],
            id=submission.pk, issue=submission.issue.code, season=submission.issue.season.code,
            contestant=submission.contestant.display_name, source=submission.source,
            bundle_sha256=submission.bundle_sha256, created_at=submission.created_at.isoformat(),
            files=[f.path for f in submission.files.all()],
            runs=[RunOut.from_run(r, show_provisional=show_provisional, current=r.pk in current, now=now,
                                  hidden=r.pk in hidden)
                  for r in runs], ranked=ranked_runs.summary(shown), limits=LimitsOut(**run_limits.limits()),
            state=state.value, mode=submission.mode,
            url=request.build_absolute_uri(f"/submissions/{submission.pk}/"),
        )
