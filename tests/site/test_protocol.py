"""What crosses the wire is named once (profiler_agent/protocol/vocabulary.py) and the site holds an
equal copy (submissions/agent_protocol.py: the site never imports the agent). These tests keep the
copy, the site's enums and paths, and both sides' result shapes equal to it."""
import importlib
import typing
from pathlib import Path

from django.urls import reverse

import profiler_agent.protocol.vocabulary as agent_side
from profiler_agent.protocol import result_schema
from submissions import agent_protocol, bundles, queueing
from submissions import result_schema as site_result
from submissions.models import FINAL_QUEUE_SUFFIX, REJUDGE_QUEUE_SUFFIX, RunStage, Verdict

ROOT = Path(__file__).resolve().parents[2]


def test_the_sites_copy_of_the_protocol_is_the_agents():
    assert (ROOT / "submissions" / "agent_protocol.py").read_bytes() == \
        (ROOT / "profiler_agent" / "protocol" / "vocabulary.py").read_bytes()


def test_the_sites_verdicts_are_the_agents_statuses_and_an_organizers_cancel():
    assert list(Verdict.values) == [*agent_protocol.STATUSES, "cancelled"]
    assert typing.get_args(site_result.Status) == agent_protocol.STATUSES
    assert result_schema.STATUSES == agent_side.STATUSES


def test_the_sites_run_stages_and_queue_names_are_the_agents():
    assert list(RunStage.values) == list(agent_protocol.JUDGING_STAGES)
    assert REJUDGE_QUEUE_SUFFIX == agent_protocol.REJUDGE_QUEUE_SUFFIX
    assert FINAL_QUEUE_SUFFIX == agent_protocol.FINAL_QUEUE_SUFFIX


def test_the_job_the_site_enqueues_is_the_one_agents_run():
    from profiler_agent.worker import job_guard, judge_job

    assert queueing.JOB_FUNCTION == agent_protocol.JOB_FUNCTION == job_guard.JUDGE_FUNCTION
    module, name = queueing.JOB_FUNCTION.rsplit(".", 1)
    assert getattr(importlib.import_module(module), name) is judge_job.judge_run  # RQ resolves it so


def test_the_bundles_file_names_are_the_agents():
    from profiler_agent.bundles import bundle

    assert bundles.REFERENCE_NAMES == bundle.REFERENCE_NAMES == agent_protocol.REFERENCE_NAMES
    assert bundles.CANDIDATE_NAMES == bundle.CANDIDATE_NAMES == agent_protocol.CANDIDATE_NAMES
    assert bundles.SELF_TEST_NAME == agent_protocol.SELF_TEST_NAME


def test_the_agent_api_paths_are_the_sites_routes():
    assert reverse("api:agent_heartbeat") == agent_protocol.HEARTBEAT_PATH
    for route, path in (("api:agent_run_start", agent_protocol.START_PATH),
                        ("api:agent_run_bundle", agent_protocol.BUNDLE_PATH),
                        ("api:agent_run_result", agent_protocol.RESULT_PATH),
                        ("api:agent_run_progress", agent_protocol.PROGRESS_PATH),
                        ("api:agent_run_profile_file", agent_protocol.PROFILE_FILE_PATH)):
        assert reverse(route, args=[7]) == path.format(run_id=7)


def declared(model) -> set[str]:
    return {field.alias or name for name, field in model.model_fields.items()}


def test_every_field_the_site_reads_is_one_the_agent_sends():
    """The site's model (pydantic) names a subset of the agent's shape (checked before sending): a field
    renamed on one side only fails here, not in production."""
    pairs = [
        (site_result.RunResult, result_schema.RESULT_SHAPE),
        (site_result.DeviceInfo, result_schema.RESULT_SHAPE["device"]),
        (site_result.Correctness, result_schema.CORRECTNESS_SHAPE),
        (site_result.TimingStats, result_schema.TIMING_STATS_SHAPE),
        (site_result.Timing, result_schema.RESULT_SHAPE["timing"]),
        (site_result.Confirmation, result_schema.CONFIRMATION_SHAPE),
        (site_result.Metrics, result_schema.RESULT_SHAPE["metrics"]),
        (site_result.Logs, result_schema.RESULT_SHAPE["logs"]),
    ]
    for model, shape in pairs:
        assert declared(model) <= set(shape), (model.__name__, declared(model) - set(shape))
