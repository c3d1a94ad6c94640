"""`gpucf ask` and `gpucf clarifications` against a live site (Django's live server on the test database),
each command `python -m gpucf` in a process of its own, with a token of each contestant."""
import json
import os
import subprocess
import sys

import pytest

from clarifications import services
from clarifications.models import Clarification
from submissions.services import accounts, submitting
from tests.conftest import ROOT

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def contest(season, alice, bob, organizer, tmp_path):
    services.post_announcement(season, organizer.user, "Judging on the C500 resumes **today**.", reason="fleet back")
    return {"issue": submitting.open_issue(season, alice, title="Fused GELU"), "organizer": organizer,
            "tokens": {who.user.username: accounts.create_api_token(who)[1] for who in (alice, bob)},
            "home": tmp_path}


def gpucf(live_server, contest, who, *args, stdin=None):
    env = {key: value for key, value in os.environ.items() if not key.startswith("GPUCF_")}
    env.update(XDG_CONFIG_HOME=str(contest["home"] / who), GPUCF_SITE=live_server.url)
    if who in contest["tokens"]:
        env["GPUCF_TOKEN"] = contest["tokens"][who]
    return subprocess.run([sys.executable, "-m", "gpucf", *args], cwd=ROOT, env=env, input=stdin,
                          capture_output=True, text=True, timeout=120)


def test_a_contestant_asks_from_the_terminal_and_reads_the_answers(live_server, contest, season, settings):
    settings.QUESTIONS_PER_HOUR = 3
    code = contest["issue"].code
    asked = gpucf(live_server, contest, "alice", "ask", "S1", "May the GELU kernel use tensor cores?",
                  "--issue", code.lower())
    assert asked.returncode == 0, asked.stderr
    first = Clarification.objects.get()
    assert f"Question #{first.pk} is sent to the organizers of S1" in asked.stdout and first.issue == contest["issue"]
    from_stdin = gpucf(live_server, contest, "alice", "ask", "S1", "-", "--json",
                       stdin="Is fp16 accumulation allowed?\nEven in the reduction?\n")
    second = json.loads(from_stdin.stdout)
    assert (second["question"], second["issue"], second["mine"], second["answer"]) == (
        "Is fp16 accumulation allowed?\nEven in the reduction?", None, True, None)

    unknown_issue = gpucf(live_server, contest, "alice", "ask", "S1", "About this?", "--issue", "NOPEXX")
    assert unknown_issue.returncode == 2 and "season S1 has no issue NOPEXX (400)" in unknown_issue.stderr
    assert gpucf(live_server, contest, "alice", "ask", "S9", "Where?").returncode == 2
    assert gpucf(live_server, contest, "alice", "ask", "S1", "  ").returncode == 2
    assert gpucf(live_server, contest, "nobody", "ask", "S1", "Who am I?").returncode == 3
    assert gpucf(live_server, contest, "alice", "ask", "S1", "A third one?").returncode == 0
    limited = gpucf(live_server, contest, "alice", "ask", "S1", "A fourth one?")
    assert limited.returncode == 5 and "you may ask 3 questions an hour" in limited.stderr and "retry in" in limited.stderr
    assert Clarification.objects.count() == 3

    organizer = contest["organizer"].user
    services.answer(first, organizer, "Yes, through WMMA.", public=True, reason="for everyone")
    services.answer(Clarification.objects.get(pk=second["id"]), organizer, "Only with fp32 accumulation.",
                    public=False, reason="a private matter")

    alices = json.loads(gpucf(live_server, contest, "alice", "clarifications", "S1", "--json").stdout)
    assert [a["text"] for a in alices["announcements"]] == ["Judging on the C500 resumes **today**."]
    by_id = {c["id"]: c for c in alices["clarifications"]}
    assert (by_id[first.pk]["answer"], by_id[first.pk]["public"], by_id[first.pk]["unread"]) == (
        "Yes, through WMMA.", True, True)
    assert (by_id[second["id"]]["answer"], by_id[second["id"]]["public"]) == ("Only with fp32 accumulation.", False)
    assert alices["unread"] == 3  # the announcement and both answers; read now
    assert json.loads(gpucf(live_server, contest, "alice", "clarifications", "S1", "--json").stdout)["unread"] == 0

    bobs = gpucf(live_server, contest, "bob", "clarifications", "S1")
    assert bobs.returncode == 0, bobs.stderr
    assert "Judging on the C500 resumes **today**." in bobs.stdout and "[new]" in bobs.stdout
    assert "Q: May the GELU kernel use tensor cores?" in bobs.stdout and "A: Yes, through WMMA." in bobs.stdout
    assert "fp16" not in bobs.stdout and "(yours)" not in bobs.stdout and "Alice" not in bobs.stdout
