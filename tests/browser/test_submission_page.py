"""A submission's page in Chromium, in both languages: the table under its charts says what the batched
figure shows, and the message of a new submission never says "queued" once judging has begun."""
import pytest

from submissions.models import GpuType, Run, Season
from submissions.services import accounts
from tests.browser.test_public_pages import assert_charts_drawn, shoot
from tests.judged_data import accepted_sample

pytestmark = pytest.mark.django_db(transaction=True)

SLOWER = {"en-US": "slower than single calls", "zh-CN": "比单次调用慢"}


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
    assert batched["CPU"] in (f"7.6770 ({SLOWER[language]})", f"7.6770（{SLOWER[language]}）")
    assert batched["NVIDIA H100"] in ("0.0189 (10%)", "0.0189（10%）")  # below the median: its overhead
    explained = page.locator("table.chart-table td.batched-slower").get_attribute("title")
    assert "2.0500" in explained and "7.6770" in explained
    shoot(page, f"submission-batched-slower-{language[:2]}")
    assert page.console_errors == []
