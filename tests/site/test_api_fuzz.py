"""Schemathesis over the site's own OpenAPI document, against a real server and database (SQLite or
PostgreSQL, as DATABASE_URL picks): no request may get a server error, and every answer must be one
the document lists, in the shape it lists. A few hundred requests, derandomized: the same ones each run.

The generated path parameters (and the body's season and issue) name rows that exist half the time, and the agent's requests carry a real
token and job secret, so requests get past the lookups and the checks to the code (and the database)
behind them."""
from collections import Counter

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings, strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import not_a_server_error
from schemathesis.generation.modes import GenerationMode
from schemathesis.specs.openapi.checks import (content_type_conformance, response_schema_conformance,
                                               status_code_conformance)

from submissions.bundles import build_bundle
from submissions.models import GpuType, Season
from submissions.services import accounts, datasets, judging, submitting
from tests.site.bundle_files import valid_files
from tests.site.pr_host import local_hosts

pytestmark = pytest.mark.django_db(transaction=True)

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
# Per operation and generation mode: 13 operations x 2 modes x 12, about 300 requests.
EXAMPLES_PER_OPERATION = 12


@pytest.fixture
def world(settings, tmp_path, django_capture_on_commit_callbacks):
    """A season judged on a GPU type, a contestant's issue with two submissions (one run each: one left
    queued for `start`, one started so its bundle and result can be fetched and posted), an agent, and
    each side's token. Pull requests are fetched from an empty folder, never from the internet."""
    local_hosts(settings, tmp_path / "git", "http://127.0.0.1:9")
    settings.DATASET_EXPORT_DIR = tmp_path / "datasets"
    season = Season.objects.create(second_judging="off", code="S1", name="Season one")
    cpu = GpuType.objects.create(slug="cpu", name="CPU")
    season.gpu_types.add(cpu)
    alice = accounts.register_contestant("alice", "pw-alice-123", display_name="Alice")
    _, contestant_token = accounts.create_api_token(alice)
    organizer = accounts.register_contestant("org", "pw-org-123", display_name="Org", is_staff=True)
    _, organizer_token = accounts.create_api_token(organizer)
    agent, agent_token = accounts.create_agent("fuzz-agent", [cpu])
    issue = submitting.open_issue(season, alice, title="ReLU")
    with django_capture_on_commit_callbacks(execute=True):
        queued, started = (submitting.create_submission(alice, issue, build_bundle(valid_files())) for _ in range(2))
    started_run = started.runs.get()
    _, job_secret = judging.start_run(started_run.pk, agent, started_run.attempts)
    datasets.export_season(season, actor=organizer.user, reason="a test export")  # dataset export 1, to read back
    return {
        "agent": {"Authorization": f"Bearer {agent_token}", "X-Job-Secret": job_secret},
        "contestant": {"Authorization": f"Bearer {contestant_token}"},
        "organizer": {"Authorization": f"Bearer {organizer_token}"},
        "known": {"code": [season.code, issue.code], "slug": [cpu.slug], "submission_id": [queued.pk, started.pk],
                  "contestant_id": [alice.pk], "season": [season.code], "issue": [issue.code], "number": [1]},
        "run_id": {"start": queued.runs.get().pk, "other": started_run.pk},
    }


def known_rows(world, operation):
    known = dict(world["known"])
    known["run_id"] = [world["run_id"]["start" if operation.path.endswith("/start") else "other"]]
    return known


def test_fuzzing_the_api_finds_no_server_error_and_only_documented_answers(live_server, world):
    schema = schemathesis.openapi.from_url(f"{live_server.url}/api/v1/openapi.json")
    failures, sent = [], []
    for result in schema.get_all_operations():
        operation = result.ok()
        tags = operation.tags or []
        headers = next((world[side] for side in ("agent", "contestant", "organizer") if side in tags), {})
        known = known_rows(world, operation)
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            strategy = operation.as_strategy(generation_mode=mode)

            @settings(max_examples=EXAMPLES_PER_OPERATION, derandomize=True, database=None, deadline=None,
                      phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
            @given(st.data())
            def fuzz(data):
                case = data.draw(strategy)
                for values in (case.path_parameters, case.body):
                    for name in list(values if isinstance(values, dict) else {}):
                        if name in known and data.draw(st.booleans()):
                            values[name] = data.draw(st.sampled_from(known[name]))
                response = case.call(base_url=live_server.url, headers=headers)
                sent.append(response.status_code)
                case.validate_response(response, checks=CHECKS, headers=headers)

            try:
                fuzz()
            except Unsatisfiable:
                assert mode is GenerationMode.NEGATIVE, f"{operation.label}: no valid request could be generated"
                continue  # nothing of this operation's can be made invalid (e.g. only an integer path parameter)
            except BaseExceptionGroup as exc:  # schemathesis's failures: one report for every operation
                failures.append(f"{operation.label} [{mode.value}]:\n{str(exc)[:1500]}")
    print(f"{len(sent)} requests, by status: {dict(sorted(Counter(sent).items()))}")
    assert not failures, "\n\n".join(failures) + f"\n\n{len(failures)} operations answered what the document does not list"
    assert len(sent) >= 200, f"only {len(sent)} requests were sent"
    assert 200 in sent and 201 in sent, "no request got through to a success"  # the fuzzer reached real work
