"""A submission's page in Chromium, in both languages: the table under its charts says what the batched
figure shows, and the message of a new submission never says "queued" once judging has begun."""
import pytest
from django.db import transaction

from submissions.models import GpuType, Run, RunStage, Season
from submissions.services import accounts, judging, run_states
from tests.browser.test_every_page import log_in_browser
from tests.browser.test_public_pages import assert_charts_drawn, shoot
from tests.judged_data import accepted_sample
from tests.site.bundle_files import CUDACODE, TORCHCODE

pytestmark = pytest.mark.django_db(transaction=True)

SLOWER = {"en-US": "slower than single calls", "zh-CN": "比单次调用慢"}
BATCHED = {"en-US": "Candidate batched (overhead)", "zh-CN": "优化实现批量计时（开销占比）"}  # one word for "candidate"


@pytest.fixture
def judged_on_two_gpus(queue_prefix):
    season = Season.objects.create(second_judging="off", code="S1", name="GPUCodeForces S1")
    season.gpu_types.add(GpuType.objects.create(slug="h100", name="NVIDIA H100"),
                         GpuType.objects.create(slug="cpu", name="CPU"))
    organizer = accounts.register_contestant("organizer", "pw-organizer-1", is_staff=True)
    alice = accounts.register_contestant("alice", "pw-alice-12345", display_name="Alice")
    return accepted_sample(season, alice, organizer, {"h100": (3.1, 0.021), "cpu": (1.2, 2.05)}, title="ReLU")


@pytest.mark.parametrize("language", ["en-US", "zh-CN"])
def test_a_batched_figure_above_the_median_is_not_shown_as_no_overhead(live_server, page, judged_on_two_gpus, language):
    """The walk read "7.6770 (0%)" beside a median of 2.05 ms: batches that ran slower than single calls
    (a busy host) measure no overhead at all, and 0% said there was none."""
    cpu_run = Run.objects.get(submission=judged_on_two_gpus, gpu_type__slug="cpu")
    cpu_run.result["timing"]["candidate"].update(batched_ms=7.677, overhead_pct=0.0)
    cpu_run.save(update_fields=["result"])
    page.goto(f"{live_server.url}/submissions/{judged_on_two_gpus.pk}/")
    assert_charts_drawn(page, 1)
    batched = {row.locator("td").first.inner_text(): row.locator("td").nth(3).inner_text()
               for row in page.locator("table.chart-table tbody tr").all()}
    assert page.locator("table.chart-table thead th").nth(3).inner_text() == BATCHED[language]
    assert batched["CPU"] in (f"7.6770 ({SLOWER[language]})", f"7.6770（{SLOWER[language]}）")
    assert batched["NVIDIA H100"] in ("0.0189 (10%)", "0.0189（10%）")  # below the median: its overhead
    explained = page.locator("table.chart-table td.batched-slower").get_attribute("title")
    assert "2.0500" in explained and "7.6770" in explained
    shoot(page, f"submission-batched-slower-{language[:2]}")
    assert page.console_errors == []


JUDGING = {"en-US": ("Submit", "Compiling", "queued"), "zh-CN": ("提交", "编译中", "排队")}


@pytest.mark.parametrize("language", ["en-US", "zh-CN"])
def test_the_new_submissions_message_does_not_say_queued_once_its_run_compiles(live_server, page, queue_prefix,
                                                                               language):
    """The walk: "queued for judging" stood above a run that was compiling. The run is started and its
    stage reported through the services the agents' API calls."""
    submit, compiling, queued = JUDGING[language]
    season = Season.objects.create(second_judging="off", code="S1", name="Season one")
    cpu = GpuType.objects.create(slug="cpu", name="CPU")
    season.gpu_types.add(cpu)
    alice = accounts.register_contestant("alice", "pw-alice-12345", display_name="Alice")
    agent, _ = accounts.create_agent("cpu-host", [cpu])
    log_in_browser(page, live_server, alice.user)
    page.goto(f"{live_server.url}/submit/")
    page.select_option("select[name=season]", label=str(season))
    page.fill("input[name=new_issue_title]", "ReLU")
    page.set_input_files("input[name=files]", [{"name": "torchcode.py", "mimeType": "text/x-python", "buffer": TORCHCODE},
                                               {"name": "cudacode.py", "mimeType": "text/x-python", "buffer": CUDACODE}])
    page.get_by_role("button", name=submit, exact=True).click()
    page.wait_for_url("**/submissions/*/")
    message = page.locator(".message.judging")
    assert f"#{Run.objects.get().submission_id}" in message.inner_text()

    with transaction.atomic():
        run = Run.objects.select_for_update().get()
        run, secret = run_states.start(run, agent)
    judging.record_progress(run.pk, agent, secret, run.attempts, RunStage.COMPILING)
    page.locator("#runs td.state .stage", has_text=compiling).wait_for(timeout=15_000)
    assert message.count() == 1 and queued not in message.inner_text(), message.inner_text()
    shoot(page, f"submission-compiling-message-{language[:2]}")
    assert page.console_errors == []
