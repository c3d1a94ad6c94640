"""The run result as the site accepts it (ARCHITECTURE.md, "The result"): the wire contract with agents.
Its names (statuses) are agent_protocol's; the agent checks the same shape before sending
(profiler_agent.protocol.result_schema; tests/site/test_protocol.py keeps the fields named alike).

Known fields are type-checked; unknown extra fields are kept so newer agents can add measurements.
A NUL character anywhere (a bundle may print one) is replaced by U+FFFD: PostgreSQL's JSON stores none,
and the verdict must land.
"""
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, model_validator

from submissions import agent_protocol
from submissions.api.fields import replace_nul

Status = Literal[agent_protocol.STATUSES]  # an agent never sends `cancelled` (an organizer's verdict)
Number = Optional[float]


class Open(BaseModel):
    # pydantic's own model, not ninja's Schema: that one reads its input through a wrapper that shows
    # only the declared fields, so extra fields (timing.candidate.batched_ms, ...) were dropped.
    model_config = ConfigDict(extra="allow")


class DeviceInfo(Open):
    kind: Optional[str] = None
    name: Optional[str] = None
    uuid: Optional[str] = None
    driver: Optional[str] = None
    torch: Optional[str] = None
    peak_gbps: Number = None
    peak_tflops: Number = None


class Correctness(Open):
    passed: Optional[bool] = None
    trials: Optional[int] = None
    max_abs_err: Number = None
    max_rel_err: Number = None
    atol: Number = None
    rtol: Number = None


class TimingStats(Open):
    median_ms: Number = Field(None, ge=0)
    mean_ms: Number = Field(None, ge=0)
    min_ms: Number = Field(None, ge=0)
    std_ms: Number = Field(None, ge=0)
    runs: Optional[int] = Field(None, ge=0)


class Confirmation(Open):
    """The agent's check of the reported times from outside the judged process (optional: older
    agents send none). `confirmed` null: not checked (CPU: no device profiler)."""
    method: Optional[str] = None
    kernel_ms: Number = Field(None, ge=0)
    reported_ms: Number = Field(None, ge=0)
    ratio: Number = Field(None, ge=0)
    tolerance: Number = Field(None, ge=0)
    calls_profiled: Optional[int] = Field(None, ge=0)
    kernels_capped: Optional[bool] = None
    ranked_at_kernel_ms: Optional[bool] = None  # ranked at its kernel record (kernel_speedup, or kernel_ms)
    reference_reported_ms: Number = Field(None, ge=0)
    reference_outside_ms: Number = Field(None, ge=0)
    reference_tolerance: Number = Field(None, ge=0)
    reference_kernel_ms: Number = Field(None, ge=0)
    kernel_speedup: Number = Field(None, ge=0)  # the kernels' record of both models: no ranked speedup above it
    timed_speedup: Number = Field(None, ge=0)  # the judged process's own figure, where timing.speedup was lowered
    confirmed: Optional[bool] = None
    reason: Optional[str] = None


class CaseFigures(Open):
    """One input case's figures (a reference's get_cases()); null where the case was not timed."""
    reference_ms: Number = Field(None, ge=0)
    candidate_ms: Number = Field(None, ge=0)
    speedup: Number = Field(None, ge=0)
    kernel_speedup: Number = Field(None, ge=0)  # the case's own kernel record's ratio (harness 1.7 and later)
    confirmed: Optional[bool] = None  # the case's own confirmation


class Timing(Open):
    reference: Optional[TimingStats] = None
    candidate: Optional[TimingStats] = None
    speedup: Number = Field(None, ge=0)  # with several timed cases: the geometric mean of theirs
    confirmation: Optional[Confirmation] = None
    cases: Optional[dict[str, CaseFigures]] = None  # case name -> figures, in judging order


class Metrics(Open):
    flops: Number = None
    bytes: Number = None
    tflops: Number = None
    bandwidth_gbs: Number = None
    pct_peak_bandwidth: Number = None
    pct_peak_flops: Number = None


class Logs(Open):
    compile: Optional[str] = None
    stdout: Optional[str] = None
    stderr: Optional[str] = None


class RunResult(Open):
    schema_version: Literal[1] = Field(alias="schema")
    status: Status
    reason: Optional[str] = None  # one line for every status but passed (the stage, the limit, the first failure)
    flags: list[str] = []
    device: Optional[DeviceInfo] = None
    correctness: Optional[Correctness] = None
    timing: Optional[Timing] = None
    metrics: Optional[Metrics] = None
    telemetry: Optional[dict] = None
    ncu: Optional[dict] = None
    variants: Optional[dict] = None
    self_test: Optional[dict] = None
    logs: Optional[Logs] = None
    durations_s: Optional[dict] = None
    profile: Optional[dict] = None  # a profile run's report (submissions/profile_reports.py reads it)

    @model_validator(mode="before")
    @classmethod
    def _replace_nul(cls, data):
        return replace_nul(data)

    def as_stored(self) -> dict:
        return self.model_dump(by_alias=True, mode="json")
