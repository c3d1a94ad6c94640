"""`gpucf profile` against a live site (Django's live server on the test database, the shared Redis under queue
names of the test's own): asking for a profile of a passed run, then its report as a table and as JSON, each
command `python -m gpucf` in a process of its own. The agent's side is played through the site's services."""
import json
import re

import pytest

from submissions.models import GpuType, ProfileFile, Season, Submission, SubmissionMode
from submissions.services import accounts, submitting
from tests.client.test_deadlines_live import gpucf
from tests.site.bundle_files import valid_files
from tests.site.judging_helpers import passed_result, report_all
from tests.site.test_profiles import GELU, NCU_REP, profiled_result

pytestmark = pytest.mark.django_db(transaction=True)


def test_gpucf_asks_for_a_profile_then_prints_its_report(live_server, queue_prefix, tmp_path):
    season = Season.objects.create(code="S1", name="Season one", second_judging="off")
    season.gpu_types.add(GpuType.objects.create(slug="cpu", name="CPU"))
    alice = accounts.register_contestant("alice", "pw-alice-12345", display_name="Alice")
    bob = accounts.register_contestant("bob", "pw-bob-12345", display_name="Bob")
    agent, _ = accounts.create_agent("agent-one", GpuType.objects.all())
    issue = submitting.open_issue(season, alice, title="ReLU")
    from submissions.bundles import build_bundle

    ranked = submitting.create_submission(alice, issue, build_bundle(valid_files()))
    report_all(ranked, agent, passed_result())
    run = ranked.runs.get()
    token, home = accounts.create_api_token(alice)[1], tmp_path / "home"

    asked = gpucf(live_server.url, home, "profile", str(run.pk), "--request", token=token)
    assert asked.returncode == 0, asked.stderr
    profile = Submission.objects.get(mode=SubmissionMode.PROFILE)
    profile_run = profile.runs.get()
    assert f"Profile #{profile.pk} of run #{run.pk} is queued as run #{profile_run.pk}" in asked.stdout
    waiting = gpucf(live_server.url, home, "profile", str(profile_run.pk), token=token)
    assert waiting.returncode == 6 and "Not judged yet (queued)" in waiting.stdout

    report_all(profile, agent, profiled_result())
    ProfileFile.objects.create(run=profile_run, content=NCU_REP, size=len(NCU_REP), sha256="0" * 64, attempt=1)
    shown = gpucf(live_server.url, home, "profile", str(profile_run.pk), token=token)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == (f"Profile of run #{profile_run.pk} (submission #{profile.pk}) on cpu, NVIDIA H200; "
                        f"asked for from run #{run.pk}")
    header = next(line for line in lines if line.startswith("model"))
    names = re.split(r"\s{2,}", header)  # cells are two spaces apart at least; numbers are right-aligned
    rows = [dict(zip(names, re.split(r"\s{2,}", line.strip())))
            for line in lines[lines.index(header) + 1:lines.index(header) + 4]]
    assert [(row["model"], row["kernel"][:19]) for row in rows] == [
        ("candidate", "ampere_sgemm_64x64_"), ("candidate", "lb_bias_gelu_kernel"), ("reference", "ampere_sgemm_64x64_")]
    gelu = rows[1]
    assert (gelu["µs"], gelu["grid"], gelu["block"], gelu["regs"], gelu["occ %"]) == ("5.12", "512x1x1", "256x1x1",
                                                                                     "16", "86.4")
    assert gelu["top stalls"] == "long_scoreboard 69%, wait 14%" and gelu["GFLOP/s"] == "204.8"
    assert "candidate: 2 kernels, 14.12 µs in all" in lines
    assert any(line.startswith(f".ncu-rep ({len(NCU_REP)} bytes): ") and line.endswith(
        f"/api/v1/runs/{profile_run.pk}/profile/report") for line in lines)

    as_json = gpucf(live_server.url, home, "profile", str(profile_run.pk), "--json", token=token)
    answer = json.loads(as_json.stdout)
    assert answer["report"]["kernels"][1]["name"] == GELU and answer["verdict"] == "passed"

    others = gpucf(live_server.url, home, "profile", str(profile_run.pk), token=accounts.create_api_token(bob)[1])
    assert others.returncode == 2 and f"run {profile_run.pk} is no profile run of yours (404)" in others.stderr
    again = gpucf(live_server.url, home, "profile", str(profile_run.pk), "--request", token=token)
    assert again.returncode == 2 and "is a profile run already" in again.stderr
