"""`gpucf seasons` and `gpucf cancel` against a live site (Django's live server on the test database,
the shared Redis under queue names of the test's own): every command is `python -m gpucf` in a
process of its own, as a contestant runs it, with a config home of the test's own."""
import json
import os
import re
import subprocess
import sys
from datetime import timedelta

import pytest
from django.utils import timezone

from submissions.bundles import build_bundle
from submissions.models import AuditEntry, GpuType, Run, RunStatus, Season, Verdict
from submissions.services import accounts, submitting
from tests.conftest import ROOT
from tests.site.bundle_files import valid_files

pytestmark = pytest.mark.django_db(transaction=True)


def gpucf(site, home, *args, token=None):
    env = {key: value for key, value in os.environ.items() if not key.startswith("GPUCF_")}
    env.update(XDG_CONFIG_HOME=str(home), GPUCF_SITE=site)
    if token:
        env["GPUCF_TOKEN"] = token
    return subprocess.run([sys.executable, "-m", "gpucf", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)


def columns(header, line):
    """A table's line as {header: cell}: each column starts where its header does (gpucf.render.table)."""
    starts = [match.start() for match in re.finditer(r"\S+(?: \S+)*", header)]
    names = [header[a:b].strip() for a, b in zip(starts, starts[1:] + [None])]
    return {name: line[a:b].strip() for name, a, b in zip(names, starts, starts[1:] + [None])}


def test_seasons_shows_each_seasons_start_end_and_time_left(live_server, tmp_path):
    now = timezone.now()
    Season.objects.create(code="S1", name="Running", starts_at=now - timedelta(days=1),
                          ends_at=now + timedelta(hours=5, seconds=30))
    Season.objects.create(code="S2", name="Next", starts_at=now + timedelta(days=2, seconds=30),
                          ends_at=now + timedelta(days=9))
    Season.objects.create(code="S0", name="Past", starts_at=now - timedelta(days=9), ends_at=now - timedelta(days=2),
                          is_open=False)
    Season.objects.create(code="S3", name="Endless", starts_at=now - timedelta(days=3))

    shown = gpucf(live_server.url, tmp_path, "seasons")
    assert shown.returncode == 0, shown.stderr
    header, *lines = shown.stdout.splitlines()
    assert header.split("  ")[0] == "CODE" and "TIME LEFT" in header
    rows = {line.split()[0]: columns(header, line) for line in lines}
    assert re.fullmatch(r"05:00:[0-3]\d left", rows["S1"]["TIME LEFT"]), rows["S1"]
    assert re.fullmatch(r"starts in 2d 00:00:[0-3]\d", rows["S2"]["TIME LEFT"]), rows["S2"]
    assert (rows["S0"]["TIME LEFT"], rows["S0"]["OPEN"]) == ("ended", "no")
    assert (rows["S3"]["TIME LEFT"], rows["S3"]["ENDS"]) == ("no end date", "-")
    # the end in the reader's time zone, as every time gpucf shows
    assert rows["S1"]["ENDS"] == Season.objects.get(code="S1").ends_at.astimezone().strftime("%Y-%m-%d %H:%M")

    as_json = gpucf(live_server.url, tmp_path, "seasons", "--json")
    by_code = {s["code"]: s for s in json.loads(as_json.stdout)}
    assert (by_code["S1"]["phase"], by_code["S2"]["phase"], by_code["S0"]["phase"]) == ("running", "upcoming", "ended")
    assert 5 * 3600 <= by_code["S1"]["seconds_left"] <= 5 * 3600 + 30
    assert by_code["S1"]["ends_at"] and by_code["S3"]["ends_at"] is None and by_code["S3"]["seconds_left"] is None
    assert 2 * 86400 <= by_code["S2"]["seconds_to_start"] <= 2 * 86400 + 30


def test_cancel_cancels_ones_own_queued_run_and_refuses_anothers(live_server, queue_prefix, tmp_path):
    season = Season.objects.create(code="S1", name="Season one", second_judging="off")
    season.gpu_types.add(GpuType.objects.create(slug="cpu", name="CPU"))
    alice = accounts.register_contestant("alice", "pw-alice-12345", display_name="Alice")
    bob = accounts.register_contestant("bob", "pw-bob-12345", display_name="Bob")
    submission = submitting.create_submission(alice, submitting.open_issue(season, alice, title="ReLU"),
                                              build_bundle(valid_files()))
    run = submission.runs.get()
    alice_token, bob_token = accounts.create_api_token(alice)[1], accounts.create_api_token(bob)[1]

    status = gpucf(live_server.url, tmp_path, "status", str(submission.pk), token=alice_token)
    table_head, row = status.stdout.splitlines()[3:5]
    assert table_head.split()[:3] == ["RUN", "GPU", "STATE"] and row.split()[:3] == [str(run.pk), "cpu", "queued"]

    refused = gpucf(live_server.url, tmp_path, "cancel", str(run.pk), token=bob_token)
    assert refused.returncode == 3 and refused.stdout == ""
    assert refused.stderr.strip() == (f"gpucf: not allowed: run #{run.pk} is not yours: only the contestant who "
                                      "submitted it can cancel it")
    assert Run.objects.get(pk=run.pk).status == RunStatus.QUEUED

    cancelled = gpucf(live_server.url, tmp_path, "cancel", str(run.pk), "--reason", "wrong bundle", token=alice_token)
    assert cancelled.returncode == 0, cancelled.stderr
    assert cancelled.stdout.strip() == f"Run #{run.pk} (cpu) is cancelled: it will not be judged."
    assert Run.objects.get(pk=run.pk).verdict == Verdict.CANCELLED
    assert AuditEntry.objects.get(action="run.cancelled").reason == "wrong bundle"

    again = gpucf(live_server.url, tmp_path, "cancel", str(run.pk), "--json", token=alice_token)
    assert again.returncode == 2
    assert again.stderr.strip() == f"gpucf: run #{run.pk} is already finished (Cancelled) (409)"
