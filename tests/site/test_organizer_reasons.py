"""An organizer's reason is at most 2,000 characters on every page that takes one, as in the API (422):
a longer one is refused saying so, and nothing is changed or audited. The pages' own forms took a
reason of any length (a 100,000-character one was saved on the access and dataset pages, a rejudge and
a cancel), which the audit trail then showed on every page it concerns."""
import pytest

from submissions.models import AuditEntry, Rejudge, Run, RunStatus, Season, Verdict
from submissions.services import reasons
from tests.judged_data import accepted_sample

pytestmark = pytest.mark.django_db

TOO_LONG = "长" * (reasons.REASON_MAX_CHARS + 1)
REFUSAL = f"a reason is at most 2000 characters (this one has {reasons.REASON_MAX_CHARS + 1})"
SHOWN = "A" + REFUSAL[1:]  # a page shows the refusal as a sentence


@pytest.fixture
def sample(season, alice, organizer, settings, tmp_path):
    settings.DATASET_EXPORT_DIR = tmp_path / "datasets"
    return accepted_sample(season, alice, organizer, {"cpu": (2.0, 1.0)}, title="ReLU")


@pytest.fixture
def signed_in(client, organizer):
    client.force_login(organizer.user)
    return client


def forms(sample):
    code, issue = sample.issue.season.code, sample.issue.code
    return {
        "admission": (f"/organizer/seasons/{code}/access/admission/", {"admission": "invite_only"}),
        "admit": (f"/organizer/seasons/{code}/access/admit/", {"accounts": "bob"}),
        "invites": (f"/organizer/seasons/{code}/access/invites/", {"count": "2", "max_uses": "1"}),
        "ban": (f"/organizer/seasons/{code}/access/bans/", {"account": "bob"}),
        "export": (f"/organizer/seasons/{code}/dataset/export/", {}),
        "weight": (f"/organizer/issues/{issue}/weight/", {"weight": "2"}),
        "rejudge a submission": (f"/organizer/submissions/{sample.pk}/rejudge/", {}),
        "rejudge an issue": (f"/organizer/issues/{issue}/rejudge/", {}),
        "rejudge a season": (f"/organizer/seasons/{code}/rejudge/", {}),
    }


@pytest.mark.parametrize("name", ["admission", "admit", "invites", "ban", "export", "weight", "rejudge a submission",
                                  "rejudge an issue", "rejudge a season"])
def test_a_reason_over_2000_characters_is_refused_on_every_organizer_page(signed_in, sample, bob, name):
    path, fields = forms(sample)[name]
    before = AuditEntry.objects.count()
    response = signed_in.post(path, {**fields, "reason": TOO_LONG}, follow=True)
    assert REFUSAL[1:] in response.content.decode()
    assert AuditEntry.objects.count() == before and not Rejudge.objects.exists()
    assert Season.objects.get().admission == "open"


def test_a_reason_of_2000_characters_is_kept_whole(signed_in, sample, bob):
    path, fields = forms(sample)["ban"]
    longest = "长" * reasons.REASON_MAX_CHARS
    signed_in.post(path, {**fields, "reason": longest})
    assert AuditEntry.objects.get(action="access.banned").reason == longest


def test_cancelling_a_run_and_publishing_refuse_a_reason_over_2000_characters(signed_in, sample, season, alice):
    from datetime import timedelta

    from django.utils import timezone

    from submissions.bundles import build_bundle
    from submissions.services import submitting
    from tests.site.bundle_files import valid_files

    issue = submitting.open_issue(season, alice, title="GELU")
    queued = submitting.create_submission(alice, issue, build_bundle(valid_files())).runs.first()
    cancel = signed_in.post(f"/organizer/runs/{queued.pk}/cancel/", {"reason": TOO_LONG}, follow=True)
    assert REFUSAL in cancel.content.decode()
    queued.refresh_from_db()
    assert queued.status != RunStatus.DONE and queued.verdict != Verdict.CANCELLED

    signed_in.post("/organizer/seasons/S1/dataset/export/", {"reason": "release"})
    season.ends_at = timezone.now() - timedelta(minutes=1)
    season.save()
    publish = signed_in.post("/organizer/seasons/S1/dataset/v1/publish/", {"reason": TOO_LONG}, follow=True)
    assert REFUSAL in publish.content.decode()
    assert not AuditEntry.objects.filter(action="dataset.published").exists()


@pytest.mark.parametrize("path", ["/organizer/seasons/S1/access/", "/organizer/seasons/S1/dataset/",
                                  "/organizer/", "review"])
def test_the_pages_reason_inputs_stop_at_2000_characters_in_the_browser(signed_in, sample, path):
    page = signed_in.get(f"/organizer/submissions/{sample.pk}/" if path == "review" else path).content.decode()
    inputs = [tag for tag in page.split("<input")[1:] if 'name="reason"' in tag.split(">")[0]]
    assert inputs and all('maxlength="2000"' in tag.split(">")[0] for tag in inputs)


@pytest.fixture
def worker(agent_and_token):
    from submissions.models import AgentWorker

    return AgentWorker.objects.create(agent=agent_and_token[0], name="host-gpu0", gpu_index=0,
                                      gpu_model="NVIDIA H200", harness_version="1.2")


def _flagged_run(sample, flag):
    run = sample.runs.first()
    Run.objects.filter(pk=run.pk).update(flags=[flag])
    return run


@pytest.mark.parametrize("flag, action, anchor", [("timing_unconfirmed", "clear-timing", "clear-timing-error"),
                                                   ("awaiting_second_judging", "clear-second-judging",
                                                    "clear-second-error")])
def test_clearing_a_run_refuses_a_long_reason_next_to_its_form_keeping_it(signed_in, sample, flag, action, anchor):
    run = _flagged_run(sample, flag)
    response = signed_in.post(f"/organizer/runs/{run.pk}/{action}/", {"reason": TOO_LONG})
    page = response.content.decode()
    assert response.status_code == 400
    assert f'id="{anchor}-{run.pk}">{SHOWN}' in page and f'value="{TOO_LONG}"' in page
    run.refresh_from_db()
    assert run.flags == [flag] and not AuditEntry.objects.filter(action__startswith="run.").exists()


def test_draining_a_worker_refuses_a_long_reason_next_to_its_form_keeping_it(signed_in, worker):
    response = signed_in.post(f"/organizer/fleet/workers/{worker.pk}/drain/", {"reason": TOO_LONG})
    page = response.content.decode()
    assert response.status_code == 400
    assert f'id="drain-error-{worker.pk}">{SHOWN}' in page and f'value="{TOO_LONG}"' in page
    worker.refresh_from_db()
    assert not worker.draining and not AuditEntry.objects.filter(action="worker.drained").exists()


def test_the_drain_command_refuses_a_long_reason(worker):
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match=REFUSAL.replace("(", r"\(").replace(")", r"\)")):
        call_command("drain_worker", "host-gpu0", reason=TOO_LONG)
    worker.refresh_from_db()
    assert not worker.draining


def test_the_final_system_test_refuses_a_long_reason_next_to_its_form_keeping_it(signed_in, sample, season):
    from datetime import timedelta

    from django.core.management import CommandError, call_command
    from django.utils import timezone

    from submissions.models import FinalSystemTest

    season.ends_at = timezone.now() - timedelta(minutes=1)
    season.save()
    response = signed_in.post(f"/organizer/seasons/{season.code}/final-system-test/start/", {"reason": TOO_LONG})
    page = response.content.decode()
    assert response.status_code == 400
    assert f'id="start-final-test-error">{SHOWN}' in page and f'value="{TOO_LONG}"' in page
    assert 'name="reason" required maxlength="2000"' in page
    with pytest.raises(CommandError):
        call_command("final_system_test", season.code, reason=TOO_LONG)
    assert not FinalSystemTest.objects.exists() and not Rejudge.objects.exists()


@pytest.mark.parametrize("field", ["reason", "override_reason", "acceptance_override"])
def test_a_review_refuses_a_long_reason_keeping_what_was_typed(signed_in, sample, field):
    from submissions.models import Review

    before = Review.objects.count()
    response = signed_in.post(f"/organizer/submissions/{sample.pk}/review/",
                              {"decision": "rejected", "reason": "short", field: TOO_LONG})
    page = response.content.decode()
    assert response.status_code == 400 and SHOWN in page and f">{TOO_LONG}</textarea>" in page
    assert Review.objects.count() == before
    assert page.count('maxlength="2000"') >= 2
