"""In Chromium, in both languages: an organizer opens the fleet page from the console's navigation,
sees each worker's state and each GPU type's queues, drains a worker with a reason and resumes it;
both are in the audit trail. Screenshots: fleet-en.png, fleet-zh.png (see test_public_pages)."""
import pytest
from django.utils import timezone

from submissions.models import AgentWorker, AuditEntry, GpuType
from submissions.services import accounts
from tests.browser.test_cancel_run import log_in
from tests.browser.test_public_pages import shoot

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("language, fleet, idle, drain, draining, resume, drained_message", [
    ("en-US", "Fleet", "idle", "Drain", "draining: driver upgrade", "Resume", "is draining"),
    ("zh-CN", "集群", "空闲", "排空", "排空中: driver upgrade", "恢复", "正在排空"),
])
def test_an_organizer_drains_and_resumes_a_worker_from_the_fleet_page(
        live_server, page, queue_prefix, language, fleet, idle, drain, draining, resume, drained_message):
    h200 = GpuType.objects.create(slug="h200", name="NVIDIA H200")
    agent, _ = accounts.create_agent("gpu-host-1", [h200])
    worker = AgentWorker.objects.create(agent=agent, name="gpu-host-1-gpu0", gpu_index=0, gpu_model="NVIDIA H200",
                                        gpu_uuid="GPU-0123456789abcdef", memory_bytes=141 * 2**30,
                                        harness_version="1.2", last_heartbeat_at=timezone.now())
    accounts.register_contestant("organizer", "pw-organizer-1", is_staff=True)

    log_in(page, live_server.url, "organizer", "pw-organizer-1")
    page.locator("header nav a", has_text=fleet).click()
    page.wait_for_load_state()
    assert page.locator("h1").inner_text() == fleet
    row = page.locator(f"#worker-{worker.pk}")
    assert "gpu-host-1-gpu0" in row.inner_text() and "GPU-01234567…" in row.inner_text()
    assert row.locator("td.state").inner_text().strip() == idle
    assert page.locator("#queue-h200 td.fresh").inner_text() == "0"

    row.locator("input[name=reason]").fill("driver upgrade")
    row.locator("button", has_text=drain).click()
    page.wait_for_load_state()
    assert drained_message in page.locator(".message.success").inner_text()
    assert page.locator(f"#worker-{worker.pk} td.state").inner_text().strip() == draining
    shoot(page, f"fleet-{language[:2]}")
    worker.refresh_from_db()
    assert worker.draining and worker.drain_reason == "driver upgrade"

    page.locator(f"#worker-{worker.pk} button", has_text=resume).click()
    page.wait_for_load_state()
    assert page.locator(f"#worker-{worker.pk} td.state").inner_text().strip() == idle
    assert page.console_errors == []

    worker.refresh_from_db()
    assert not worker.draining
    drained, resumed = (AuditEntry.objects.get(action=a, object_id=str(worker.pk))
                        for a in ("worker.drained", "worker.resumed"))
    assert drained.actor_label == resumed.actor_label == "organizer" and drained.reason == "driver upgrade"
