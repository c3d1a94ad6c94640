"""The contest domain, one module per concept: GPU types and hosts (fleet), seasons, who may submit to
them (season_access), accounts, issues, submissions (with their reviews and flags), runs, standings,
the audit trail, datasets.
Models hold data and small derived properties only; behaviour lives in services/. Every model is
importable from here, under the app label `submissions` its migrations name."""
from submissions.models.accounts import hash_secret, new_token, Contestant, ApiToken, LoginFailure  # noqa: F401
from submissions.models.audit import AuditTrailIsAppendOnly, AuditEntry  # noqa: F401
from submissions.models.datasets import DatasetExport, BenchmarkRun  # noqa: F401
from submissions.models.fleet import FINAL_QUEUE_SUFFIX, REJUDGE_QUEUE_SUFFIX, CPU_GPU_TYPE_SLUG, GpuType, Agent, AgentWorker  # noqa: F401
from submissions.models.issues import ISSUE_CODE_ALPHABET, new_issue_code, Framework, ISSUE_DESCRIPTION_MAX_CHARS, Issue  # noqa: F401
from submissions.models.runs import RejudgeScope, Rejudge, RunStatus, Verdict, RunStage, Run  # noqa: F401
from submissions.models.profiles import ProfileFile  # noqa: F401
from submissions.models.seasons import new_board_version, RankingRule, SecondJudging, Admission, Season  # noqa: F401
from submissions.models.season_access import (INVITE_CODE_ALPHABET, new_invite_code, normalized_invite_code,  # noqa: F401
                                              InviteCode, SeasonAdmission, SeasonBan)
from submissions.models.standings import Standing, GpuStanding  # noqa: F401
from submissions.models.final_system_tests import FinalSystemTest  # noqa: F401
from submissions.models.submissions import SUBMISSION_NOTE_MAX_CHARS, SubmissionSource, SubmissionMode, Submission, SubmissionFile, ReviewDecision, Review, FlagKind, SubmissionFlag  # noqa: F401

__all__ = [
    "REJUDGE_QUEUE_SUFFIX",
    "FINAL_QUEUE_SUFFIX",
    "CPU_GPU_TYPE_SLUG",
    "GpuType",
    "Agent",
    "AgentWorker",
    "new_board_version",
    "RankingRule",
    "SecondJudging",
    "Admission",
    "Season",
    "INVITE_CODE_ALPHABET",
    "new_invite_code",
    "normalized_invite_code",
    "InviteCode",
    "SeasonAdmission",
    "SeasonBan",
    "hash_secret",
    "new_token",
    "Contestant",
    "ApiToken",
    "LoginFailure",
    "ISSUE_CODE_ALPHABET",
    "new_issue_code",
    "Framework",
    "ISSUE_DESCRIPTION_MAX_CHARS",
    "Issue",
    "SUBMISSION_NOTE_MAX_CHARS",
    "SubmissionSource",
    "SubmissionMode",
    "Submission",
    "SubmissionFile",
    "ReviewDecision",
    "Review",
    "FlagKind",
    "SubmissionFlag",
    "RejudgeScope",
    "Rejudge",
    "RunStatus",
    "Verdict",
    "RunStage",
    "Run",
    "ProfileFile",
    "Standing",
    "GpuStanding",
    "FinalSystemTest",
    "AuditTrailIsAppendOnly",
    "AuditEntry",
    "DatasetExport",
    "BenchmarkRun",
]
