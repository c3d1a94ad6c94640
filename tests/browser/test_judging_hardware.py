"""In Chromium, the newcomer's walk on the CPU-only demo: the submit page says which hardware judges each
season (a real CPU agent online), the README's CUDA example is refused on a season judged on CPU alone
with the reason, and on a season with a GPU type no agent serves, it is not judged on the CPU: its page
says it waits for an agent for that GPU type."""
import time

import pytest

from submissions.models import AgentWorker, GpuType, Season
from submissions.services import accounts
from tests.browser.conftest import ARTIFACTS
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_cuda_example_on_the_cpu_only_demo(live_server, page, queue_prefix, start_agent):
    cpu = GpuType.objects.create(slug="cpu", name="CPU")
    Season.objects.create(second_judging="off", code="S1", name="CPU demo").gpu_types.add(cpu)
    Season.objects.create(second_judging="off", code="S2", name="With an H100").gpu_types.add(cpu, GpuType.objects.create(slug="h100", name="H100"))
    accounts.register_contestant("alice", "pw-alice-123", display_name="Alice")
    _, agent_token = accounts.create_agent("local", [cpu])  # what platform.sh grants on a machine without a GPU
    agent = start_agent(live_server.url, agent_token, f"{queue_prefix}cpu")
    deadline = time.monotonic() + 120
    while not AgentWorker.objects.filter(last_heartbeat_at__isnull=False).exists():
        assert time.monotonic() < deadline, agent.output()
        time.sleep(0.5)

    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "pw-alice-123")
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/submit/")
    hardware = page.locator("#judging-hardware")
    assert hardware.locator("li[data-gpu-type=cpu]").first.inner_text() == "CPU: 1 worker online · CPU bundles only"
    assert hardware.locator("li[data-gpu-type=h100]").inner_text() == "H100: no agent online: its runs wait until one connects"
    assert hardware.locator(".cpu-only").inner_text().startswith("Season S1 is judged on CPU only")
    page.screenshot(path=str(ARTIFACTS / "submit-hardware.png"), full_page=True)

    cuda_example = [str(p) for p in sorted((EXAMPLES / "001-example").iterdir())]
    page.select_option("select[name=season]", label="S1 CPU demo")
    page.fill("input[name=new_issue_title]", "ReLU, the README's example")
    page.set_input_files("input[name=files]", cuda_example)
    page.click("button[type=submit]")
    refusal = page.locator("form .errorlist").first
    assert refusal.inner_text().startswith("season S1 is judged on CPU only, and this bundle needs a CUDA GPU "
                                           "(cudacode_ori.py: cuda_sources; example_cudacode.py: cuda_sources)")
    page.screenshot(path=str(ARTIFACTS / "submit-cuda-refused.png"), full_page=True)

    page.select_option("select[name=season]", label="S2 With an H100")
    page.fill("input[name=new_issue_title]", "ReLU on the H100")
    page.set_input_files("input[name=files]", cuda_example)
    page.click("button[type=submit]")
    page.wait_for_url("**/submissions/*/")
    assert page.locator("#judging-hardware").inner_text() == "Judged on: H100"
    assert page.locator(".not-judged[data-gpu-type=cpu]").inner_text().startswith(
        "Not judged on CPU: this bundle needs a CUDA GPU")
    assert page.locator("#runs tbody tr").count() == 1
    assert page.locator("#runs .no-agent").inner_text() == "No agent for H100 is online: the run waits until one connects."
    page.screenshot(path=str(ARTIFACTS / "submission-waits-for-gpu.png"), full_page=True)
    assert page.console_errors == []
