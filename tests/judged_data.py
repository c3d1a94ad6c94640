"""Runs with the results an agent would have posted, for tests of pages that show measurements."""
from submissions.bundles import build_bundle
from submissions.models import Run, RunStatus, Verdict
from submissions.services import reviewing, submitting
from tests.site.bundle_files import valid_files


def passed_result(speedup, candidate_ms, peak_gbps=3352.0, peak_tflops=67.0):
    reference_ms = candidate_ms * speedup
    return {
        "schema": 1, "status": "passed", "flags": [],
        "device": {"kind": "cuda", "name": "NVIDIA H100", "peak_gbps": peak_gbps, "peak_tflops": peak_tflops},
        "timing": {"reference": {"median_ms": reference_ms, "mean_ms": reference_ms, "min_ms": reference_ms * 0.98,
                                 "std_ms": reference_ms * 0.02, "runs": 100},
                   "candidate": {"median_ms": candidate_ms, "mean_ms": candidate_ms, "min_ms": candidate_ms * 0.98,
                                 "std_ms": candidate_ms * 0.02, "runs": 100,
                                 "batched_ms": candidate_ms * 0.9, "overhead_pct": 10.0},
                   "speedup": speedup,
                   # per-call times as the agent sends them, for the latency box plots
                   "samples": {"reference": [reference_ms * (1 + 0.01 * ((i * 7) % 5 - 2)) for i in range(40)],
                               "candidate": [candidate_ms * (1 + 0.01 * ((i * 3) % 5 - 2)) for i in range(40)]}},
        "metrics": {"flops": 2.0e9, "bytes": 4.0e8, "tflops": 2.0e9 / (candidate_ms * 1e9),
                    "bandwidth_gbs": 4.0e8 / (candidate_ms * 1e6)},
        "telemetry": {"power_w": {"mean": 390.0, "max": 455.0},
                      "trace": [{"t_s": t / 10, "power_w": 380 + t, "sm_clock_mhz": 1980 - t} for t in range(10)]},
    }


def mark_passed(submission, gpu_slug, speedup, candidate_ms):
    result = passed_result(speedup, candidate_ms)
    Run.objects.filter(submission=submission, gpu_type__slug=gpu_slug).update(
        status=RunStatus.DONE, verdict=Verdict.PASSED, speedup=speedup, candidate_median_ms=candidate_ms,
        reference_median_ms=candidate_ms * speedup, tflops=result["metrics"]["tflops"],
        bandwidth_gbs=result["metrics"]["bandwidth_gbs"], device_name="NVIDIA H100", result=result)


def accepted_sample(season, contestant, organizer, speedups, title=None):
    """A submission judged on the given GPU types ({slug: (speedup, candidate ms)}) and accepted."""
    issue = submitting.open_issue(season, contestant, title=title or f"{contestant.display_name}'s op")
    submission = submitting.create_submission(contestant, issue, build_bundle(valid_files()))
    for slug, (speedup, ms) in speedups.items():
        mark_passed(submission, slug, speedup, ms)
    reviewing.review_submission(submission, organizer.user, "accepted", rubric={"execution_time": 5},
                                override_reason="test data: fixed points",
                                acceptance_override="test data: judged on the given GPU types only")
    return submission
