"""Which hardware judges a bundle, said before judging: a bundle that needs CUDA (the README's
examples/001-example) is never judged on the CPU type (where it ended "Runtime error: CUDA_HOME
environment variable is not set"); a season judged on CPU alone refuses it with a message saying so;
on a season with a GPU type its run waits, and the pages say no agent for that GPU type is online.
The submit page lists each open season's GPU types with the workers online for each."""
import html
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from submissions.bundles import build_bundle
from submissions.models import GpuType, Season, Submission
from submissions.services import accounts, rejudging, submitting
from submissions.services.accounts import create_api_token
from tests.conftest import EXAMPLES

ZH = {"Accept-Language": "zh-hans"}


def example_files(name):
    return {p.name: p.read_bytes() for p in sorted((EXAMPLES / name).iterdir()) if p.is_file()}


def text(response):
    return re.sub(r"\s+", " ", html.unescape(response.content.decode()))


@pytest.fixture
def cpu_season(db):
    season = Season.objects.create(second_judging="off", code="S1", name="CPU demo")
    season.gpu_types.add(GpuType.objects.get_or_create(slug="cpu", defaults={"name": "CPU"})[0])
    return season


@pytest.fixture
def mixed_season(db):
    season = Season.objects.create(second_judging="off", code="S2", name="CPU and H100")
    season.gpu_types.add(GpuType.objects.get_or_create(slug="cpu", defaults={"name": "CPU"})[0],
                         GpuType.objects.create(slug="h100", name="H100"))
    return season


@pytest.fixture
def cpu_agent_online(client, db):
    """What scripts/platform.sh runs on a machine without a GPU: one agent, one CPU worker, heartbeating."""
    cpu, _ = GpuType.objects.get_or_create(slug="cpu", defaults={"name": "CPU"})
    _, token = accounts.create_agent("local", [cpu])
    answer = client.post("/api/v1/agent/heartbeat", {"name": "local", "queues": ["gpu.cpu"], "worker": {"name": "local-cpu"}},
                         content_type="application/json", headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 200, answer.content


def test_the_readmes_cuda_example_says_it_needs_cuda_and_the_cpu_example_does_not():
    from submissions.bundles import cuda_markers

    assert cuda_markers({k: v.decode() for k, v in example_files("001-example").items()}) == [
        "cudacode_ori.py: cuda_sources", "example_cudacode.py: cuda_sources"]
    assert cuda_markers({k: v.decode() for k, v in example_files("relu-cpu").items()}) == []
    assert cuda_markers({"cudacode.py": "import triton\n"}) == ["cudacode.py: triton / CuPy / PyCUDA"]
    assert cuda_markers({"torchcode.py": "x = torch.randn(4, device='cuda')"}) == ['torchcode.py: device="cuda"']
    # the contestant's self-test decides nothing
    assert cuda_markers({"run_code.py": "torch.cuda.synchronize(); x.cuda()"}) == []


def test_a_cpu_only_season_refuses_a_cuda_bundle_through_the_api_with_the_reason(client, cpu_season, alice,
                                                                                   cpu_agent_online):
    issue = submitting.open_issue(cpu_season, alice, title="ReLU")
    _, token = create_api_token(alice)

    def upload(example, headers=None):
        files = [SimpleUploadedFile(n, d) for n, d in example_files(example).items()]
        return client.post("/api/v1/submissions", {"issue": issue.code, "files": files},
                           headers={"Authorization": f"Bearer {token}", **(headers or {})})

    refused = upload("001-example")
    assert refused.status_code == 400
    assert refused.json()["detail"] == (
        "season S1 is judged on CPU only, and this bundle needs a CUDA GPU (cudacode_ori.py: cuda_sources; "
        "example_cudacode.py: cuda_sources); a CPU agent cannot build or run it. Submit a bundle that runs on the "
        "CPU (a C++ or plain PyTorch candidate, like examples/relu-cpu), or ask the organizers to add a GPU type "
        "with an agent to the season.")
    assert upload("001-example", ZH).json()["detail"].startswith("赛季 S1 仅在 CPU 上评测，而此样本需要 CUDA GPU")
    assert not Submission.objects.exists()
    accepted = upload("relu-cpu")
    assert accepted.status_code == 201
    body = accepted.json()
    assert body["needs_cuda"] == [] and [(r["gpu_type"], r["status"]) for r in body["runs"]] == [("cpu", "queued")]
    assert body["hardware"] == [{"gpu_type": "cpu", "name": "CPU", "judged": True, "why_not": "", "workers_online": 1}]


def test_the_submit_page_refuses_it_too(client, cpu_season, alice):
    client.force_login(alice.user)
    files = [SimpleUploadedFile(n, d) for n, d in example_files("001-example").items()]
    page = client.post("/submit/", {"season": cpu_season.pk, "new_issue_title": "ReLU", "new_issue_framework": "pytorch",
                                    "files": files})
    assert page.status_code == 200
    assert "season S1 is judged on CPU only, and this bundle needs a CUDA GPU" in text(page)
    assert not Submission.objects.exists()


def test_with_a_gpu_type_the_cuda_bundle_skips_the_cpu_and_waits_for_an_agent(client, mixed_season, alice,
                                                                               cpu_agent_online):
    issue = submitting.open_issue(mixed_season, alice, title="ReLU")
    cuda = submitting.create_submission(alice, issue, build_bundle(example_files("001-example")))
    assert [run.gpu_type.slug for run in cuda.runs.all()] == ["h100"]
    cpu = submitting.create_submission(alice, issue, build_bundle(example_files("relu-cpu")))
    assert sorted(run.gpu_type.slug for run in cpu.runs.all()) == ["cpu", "h100"]

    client.force_login(alice.user)
    page = text(client.get(f"/submissions/{cuda.pk}/"))
    assert re.search(r'id="judging-hardware">Judged on: <span class="tag" data-gpu-type="h100">H100</span> </p>', page)
    assert ("Not judged on CPU: this bundle needs a CUDA GPU (cudacode_ori.py: cuda_sources; example_cudacode.py: "
            "cuda_sources); a CPU agent cannot build or run it") in page
    assert "No agent for H100 is online: the run waits until one connects." in page
    zh = text(client.get(f"/submissions/{cuda.pk}/", headers=ZH))
    assert "没有在线的 H100 评测代理：该评测将等待，直到有代理连接。" in zh
    # the CPU bundle's CPU run has a worker: no such line for it
    runs = text(client.get(f"/submissions/{cpu.pk}/runs/"))
    assert runs.count("No agent for") == 1 and "No agent for H100" in runs

    # a rejudge keeps to the same hardware
    rejudging.rejudge("submission", cuda, None, "harness upgrade")
    assert sorted(run.gpu_type.slug for run in cuda.runs.all()) == ["h100", "h100"]


def test_the_submit_page_says_which_hardware_judges_each_open_season(client, cpu_season, mixed_season, alice,
                                                                     cpu_agent_online):
    client.force_login(alice.user)
    page = text(client.get("/submit/"))
    section = page[page.index('id="judging-hardware"'):page.index("</section>")]
    assert "<strong>S1</strong> · CPU demo" in section and "<strong>S2</strong> · CPU and H100" in section
    assert section.count('<li data-gpu-type="cpu">CPU: 1 worker online · CPU bundles only</li>') == 2
    assert '<li data-gpu-type="h100">H100: no agent online: its runs wait until one connects</li>' in section
    # S1 alone is CPU only
    assert section.count("is judged on CPU only") == 1
    assert ("Season S1 is judged on CPU only: a bundle that needs CUDA (CUDA sources or kernels, .cuda(), Triton, "
            "CuPy) is refused.") in section
    zh = text(client.get("/submit/", headers=ZH))
    assert "赛季 S1 仅在 CPU 上评测" in zh and "CPU: 1 个工作进程在线" in zh


def test_a_cuda_bundle_passed_on_every_gpu_type_that_judges_it_is_accepted_without_override(
        mixed_season, alice, organizer, django_capture_on_commit_callbacks):
    """Its missing CPU run is no failure: the CPU type never judges a CUDA bundle."""
    from submissions.services import reviewing
    from tests.site.judging_helpers import passed_result, report_all

    h100 = GpuType.objects.get(slug="h100")
    agent, _ = accounts.create_agent("h100-host", [h100])
    issue = submitting.open_issue(mixed_season, alice, title="ReLU")
    with django_capture_on_commit_callbacks(execute=True):
        cuda = submitting.create_submission(alice, issue, build_bundle(example_files("001-example")))
    assert reviewing.acceptance_blockers(cuda)[0].gpu == h100  # not judged yet on the type that judges it
    report_all(cuda, agent, passed_result())
    assert reviewing.acceptance_blockers(cuda) == []
    review = reviewing.review_submission(cuda, organizer.user, "accepted", reason="fast and correct")
    assert review.acceptance_override == ""
