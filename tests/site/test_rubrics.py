"""Season rubrics: config validation, prefill from runs, totals, and reviews with overrides."""
import pytest
from django.core.exceptions import ValidationError

from submissions.models import AuditEntry, Standing
from submissions.rules import rubrics
from submissions.services import reviewing, submitting
from tests.site.bundle_files import CUDACODE, TORCHCODE, valid_files
from tests.site.judging_helpers import passed_result, report_all, submit

GT_TORCHCODE = TORCHCODE + b"""

def reference_numpy(x):
    import numpy as np
    return np.maximum(x, 0)
"""


def test_registry_knows_both_rubrics_and_refuses_bad_configs():
    assert rubrics.rubric_names() == ["kernel_contest", "s1_dataset"]
    assert [i.points for i in rubrics.get_rubric("s1_dataset").items] == [2, 5, 4, 3, 5]
    assert rubrics.get_rubric("s1_dataset", {"points": {"llm_prompt": 8}}).item("llm_prompt").points == 8
    for name, config, message in [
        ("nope", {}, "unknown rubric 'nope'"),
        ("s1_dataset", {"level_points": {}}, "unknown rubric config keys"),
        ("s1_dataset", {"points": {"speed": 1}}, "'points.speed' is not an item"),
        ("s1_dataset", {"points": {"bandwidth": -1}}, "must not be negative"),
        ("kernel_contest", {"level_points": {"7": 5}}, "levels are 1-4"),
        ("kernel_contest", {"clear_speedup_at_least": "fast"}, "must be a number"),
        # a level worth more than the level item's maximum: its own prefill would be refused
        ("kernel_contest", {"level_points": {"4": 80}}, r"'level_points.4' \(80\) is above the level item's 50"),
    ]:
        with pytest.raises(rubrics.RubricConfigError, match=message):
            rubrics.get_rubric(name, config)


def test_season_validation_reports_the_rubric_config_error(season):
    season.rubric_config = {"points": {"ground_truth": "two"}}
    with pytest.raises(ValidationError, match="must be a number"):
        season.full_clean()


def test_s1_prefill_follows_what_the_runs_measured(season, alice, agent_and_token, django_capture_on_commit_callbacks):
    agent, _ = agent_and_token
    issue = submitting.open_issue(season, alice, title="ReLU")
    files = dict(valid_files(), **{"torchcode.py": GT_TORCHCODE, "prompt.txt": b"write a relu kernel"})
    full = submit(django_capture_on_commit_callbacks, alice, issue, files)
    report_all(full, agent, passed_result(llm_variant="passed"))
    assert reviewing.prefill(full) == {"ground_truth": 2, "execution_time": 5, "throughput": 4, "bandwidth": 3,
                                       "llm_prompt": 5}
    bare = submit(django_capture_on_commit_callbacks, alice, issue,
                  {"torchcode.py": TORCHCODE, "cudacode.py": CUDACODE + b"\n# v2\n"})
    report_all(bare, agent, passed_result(tflops=None, llm_variant="wrong_answer"))
    assert reviewing.prefill(bare) == {"ground_truth": 0, "execution_time": 5, "throughput": 0, "bandwidth": 3,
                                       "llm_prompt": 0}


def test_ground_truth_needs_the_agents_check_to_agree_when_it_ran(
        season, alice, agent_and_token, django_capture_on_commit_callbacks):
    agent, _ = agent_and_token
    issue = submitting.open_issue(season, alice, title="ReLU")
    files = dict(valid_files(), **{"torchcode.py": GT_TORCHCODE})
    for number, (outcome, points) in enumerate([("agrees", 2), ("disagrees", 0), ("error", 0)]):
        result = passed_result()
        result["correctness"]["reference_numpy"] = {"outcome": outcome, "max_abs_err": None, "detail": None}
        submission = submit(django_capture_on_commit_callbacks, alice, issue,
                            dict(files, **{"cudacode.py": CUDACODE + f"\n# v{number}\n".encode()}))
        report_all(submission, agent, result)
        assert reviewing.prefill(submission)["ground_truth"] == points, outcome


def test_kernel_contest_prefill_uses_the_issue_level_and_clear_speedup(season, alice, agent_and_token,
                                                                        django_capture_on_commit_callbacks):
    season.rubric, season.rubric_config = "kernel_contest", {"clear_speedup_at_least": 1.5}
    season.save()
    agent, _ = agent_and_token
    issue = submitting.open_issue(season, alice, title="Fused GEMM", level=3)
    submission = submit(django_capture_on_commit_callbacks, alice, issue, valid_files())
    report_all(submission, agent, passed_result(speedup=1.6))
    assert reviewing.prefill(submission) == {"level": 50, "merged": 0, "clean_code": 0, "clear_speedup": 10,
                                             "documented": 0, "llm_prompt": 0}


def test_accepting_with_prefilled_points_and_an_override_that_needs_a_reason(
        season, alice, organizer, agent_and_token, django_capture_on_commit_callbacks):
    agent, _ = agent_and_token
    issue = submitting.open_issue(season, alice, title="ReLU")
    submission = submit(django_capture_on_commit_callbacks, alice, issue, valid_files())
    report_all(submission, agent, passed_result())
    review = reviewing.review_submission(submission, organizer.user, "accepted", reason="good sample")
    assert (review.base_score, review.bonus) == (12, 0) and review.override_reason == ""
    assert Standing.objects.get(contestant=alice).base_score == 12

    raised = dict(review.rubric, ground_truth=2, llm_prompt=3)
    with pytest.raises(reviewing.ReviewRefused, match="Ground-truth.*give a reason"):
        reviewing.review_submission(submission, organizer.user, "accepted", rubric=raised)
    with pytest.raises(reviewing.ReviewRefused, match="not a number"):
        reviewing.review_submission(submission, organizer.user, "accepted", rubric={"bandwidth": "lots"},
                                    override_reason="x")
    with pytest.raises(reviewing.ReviewRefused, match="unknown rubric items: level"):
        reviewing.review_submission(submission, organizer.user, "accepted", rubric={"level": 5}, override_reason="x")
    second = reviewing.review_submission(submission, organizer.user, "accepted", rubric=raised,
                                         override_reason="numpy GT sent by mail")
    assert (second.base_score, second.bonus) == (14, 3)
    override = AuditEntry.objects.get(action="score.overridden")
    assert override.before == {"ground_truth": 0, "llm_prompt": 0} and override.after == {"ground_truth": 2, "llm_prompt": 3}
    assert override.reason == "numpy GT sent by mail" and override.actor_label == "organizer"
    changes = AuditEntry.objects.filter(action="standing.changed", actor_label="organizer").order_by("pk")
    assert [(c.before.get("base_score"), c.after.get("base_score")) for c in changes] == [(0, 12), (12, 14)]

    with pytest.raises(reviewing.ReviewRefused, match="rejection needs a reason"):
        reviewing.review_submission(submission, organizer.user, "rejected")
    reviewing.review_submission(submission, organizer.user, "rejected", reason="copied")
    standing = Standing.objects.get(contestant=alice)
    assert (standing.accepted_count, standing.base_score) == (0, 0)
    # Three reviews kept, none edited; the audit trail holds each decision with before and after.
    assert submission.reviews.count() == 3
    decisions = list(AuditEntry.objects.filter(object_type="submission", action__startswith="review.")
                     .order_by("pk").values_list("action", "after__decision"))
    assert decisions == [("review.accepted", "accepted"), ("review.accepted", "accepted"), ("review.rejected", "rejected")]


def test_audit_entries_can_be_neither_changed_nor_deleted(season, alice):
    from submissions.models import AuditTrailIsAppendOnly

    entry = AuditEntry.objects.get(action="agreement.accepted")
    entry.reason = "rewritten history"
    with pytest.raises(AuditTrailIsAppendOnly):
        entry.save()
    with pytest.raises(AuditTrailIsAppendOnly):
        entry.delete()
    assert AuditEntry.objects.get(pk=entry.pk).reason == ""
