"""Exit codes: by verdict for status and watch, and one per kind of failure, each with one clear line on
stderr and nothing on stdout (never a traceback). The site's answers come from a real local HTTP server."""
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from gpucf import outcomes
from gpucf.cli import main
from tests.client.canned_site import Answer, CannedSite


def run(verdict="passed", status="done", current=True, gpu="cpu", run_id=1):
    return {"id": run_id, "gpu_type": gpu, "status": status, "verdict": verdict if status == "done" else "",
            "current": current, "stage": None, "queue_position": None, "runs_ahead": None, "elapsed_s": None,
            "attempts": 1, "speedup": 2.0 if verdict == "passed" else None, "reference_median_ms": 1.0,
            "candidate_median_ms": 0.5, "flags": [], "result": {"reason": "trial 1: output 0: max abs error 0.5"},
            "provisional": False}


def submission(*runs, submission_id=7):
    return {"id": submission_id, "issue": "ABCDEF", "season": "S1", "state": "judging", "runs": list(runs),
            "ranked": {}, "hardware": [], "url": f"http://site/submissions/{submission_id}/"}


@pytest.mark.parametrize("runs, code", [
    ([run("passed"), run("passed", gpu="h100", run_id=2)], 0),
    ([run("passed"), run("wrong_answer", gpu="h100", run_id=2)], 1),
    ([run("compile_error")], 1),
    ([run("timeout")], 1),
    ([run("passed"), run(status="running", gpu="h100", run_id=2)], 6),
    ([run("wrong_answer", current=False), run("passed", run_id=2)], 0),  # a rejudge's history does not count
    ([], 1),  # nothing judges it
])
def test_a_verdict_commands_exit_code_follows_the_current_runs(runs, code):
    assert outcomes.for_verdicts(submission(*runs)) == code


def test_the_codes_are_distinct_and_as_documented():
    codes = [outcomes.PASSED, outcomes.RUN_FAILED, outcomes.USAGE, outcomes.AUTH, outcomes.UNREACHABLE,
             outcomes.RATE_LIMITED, outcomes.STILL_JUDGING, outcomes.INTERRUPTED]
    assert codes == [0, 1, 2, 3, 4, 5, 6, 130]


@pytest.fixture
def canned(tmp_path, monkeypatch):
    """A canned site and a config home of the test's own, with a token for that site in the environment."""
    made = []
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv("GPUCF_TOKEN", "t0ken")

    def start(script):
        site = CannedSite(script)
        made.append(site)
        monkeypatch.setenv("GPUCF_SITE", site.url)
        return site

    yield start
    for site in made:
        site.close()


def test_status_prints_the_verdict_table_and_exits_by_verdict(canned, capsys):
    site = canned({"/api/v1/submissions/7": [Answer(200, submission(run("wrong_answer")))]})
    assert main(["status", "7"]) == 1
    out = capsys.readouterr().out
    assert "wrong_answer" in out and "cpu: wrong_answer: trial 1: output 0: max abs error 0.5" in out
    assert site.requests[0][2]["Authorization"] == "Bearer t0ken"


@pytest.mark.parametrize("answer, code, message", [
    (Answer(401, {"detail": "missing or invalid bearer token"}), 3, "refused the token (missing or invalid bearer "
                                                                    "token): `gpucf login`"),
    (Answer(403, {"detail": "organizers only"}), 3, "not allowed: organizers only"),
    (Answer(404, {"detail": "submission 7 does not exist or is not yours"}), 2,
     "submission 7 does not exist or is not yours (404)"),
    (Answer(422, {"detail": "invalid request: limit: too big", "errors": []}), 2, "invalid request: limit: too big"),
    (Answer(429, {"detail": "10 submissions an hour"}, {"Retry-After": "30"}), 5,
     "rate limited: 10 submissions an hour; retry in 30 s"),
    (Answer(500, {"detail": "server error"}), 4, "answered a server error (500): server error"),
    (Answer(502, b"<html>bad gateway</html>", content_type="text/html"), 4, "answered a server error (502)"),
    (Answer(200, b"<html>a blog</html>", content_type="text/html"), 4, "answered 200 but not with the API's JSON"),
    (Answer(404, b"<html>not found</html>", content_type="text/html"), 4, "a GPU CodeForces site"),
])
def test_each_failure_is_one_line_on_stderr_with_its_exit_code(canned, capsys, answer, code, message):
    canned({"/api/v1/submissions/7": [answer]})
    assert main(["status", "7"]) == code
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and captured.err.startswith("gpucf: ")
    assert message in captured.err and "Traceback" not in captured.err


SEASONS = [{"code": "S1", "name": "第一赛季", "starts_at": "2025-01-01T00:00:00+00:00", "ends_at": None, "open": True,
            "ended": False, "gpu_types": [{"slug": "cpu", "name": "CPU"}]}]


def test_json_output_is_the_apis_answer_alone(canned, capsys):
    seasons = [{"code": "S1", "name": "Season one", "starts_at": "2025-01-01T00:00:00+00:00", "ends_at": None,
                "open": True, "ended": False, "gpu_types": [{"slug": "cpu", "name": "CPU"}]}]
    canned({"/api/v1/seasons": [Answer(200, seasons)]})
    assert main(["seasons", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == seasons
    assert main(["--json", "seasons"]) == 0  # before or after the command
    assert json.loads(capsys.readouterr().out) == seasons


def test_an_unreachable_site_is_4(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    assert main(["seasons", "--site", f"http://127.0.0.1:{port}"]) == 4
    assert "connection refused" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["status"], ["status", "x"], ["status", "-3"], ["submit", "examples/relu-cpu"],
                                  ["leaderboard", "S1", "--page", "0"], ["frobnicate"], []])
def test_a_bad_command_line_is_2(tmp_path, monkeypatch, argv):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    with pytest.raises(SystemExit) as ended:
        main(argv)
    assert ended.value.code == 2


def test_a_command_needing_a_token_without_one_is_3(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("GPUCF_TOKEN", raising=False)
    assert main(["list", "--site", "http://127.0.0.1:9"]) == 3
    assert "not logged in to http://127.0.0.1:9: run `gpucf login`" in capsys.readouterr().err


def gpucf_process(site, *args, **options):
    env = {**os.environ, "GPUCF_SITE": site.url, "XDG_CONFIG_HOME": options.pop("home")}
    env.update(options.pop("env", {}))
    return subprocess.Popen([sys.executable, "-m", "gpucf", *args], cwd=Path(__file__).resolve().parents[2], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **options)


def test_json_keeps_every_character_on_a_terminal_that_cannot_show_them(tmp_path):
    site = CannedSite({"/api/v1/seasons": [Answer(200, SEASONS)]})
    try:
        shown = gpucf_process(site, "seasons", "--json", home=str(tmp_path), env={"PYTHONIOENCODING": "ascii"})
        out, err = shown.communicate(timeout=30)
        table = gpucf_process(site, "seasons", home=str(tmp_path), env={"PYTHONIOENCODING": "ascii"})
        table_out, table_err = table.communicate(timeout=30)
    finally:
        site.close()
    assert shown.returncode == 0 and json.loads(out) == SEASONS and err == b""
    assert table.returncode == 0 and b"S1" in table_out and b"Traceback" not in table_err  # "?" for what it cannot show


def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path):
    site = CannedSite({"/api/v1/seasons": [Answer(200, SEASONS * 2000)]})
    try:
        reading = gpucf_process(site, "seasons", home=str(tmp_path))
        reading.stdout.close()  # as `gpucf seasons | head -0` would
        _, err = reading.communicate(timeout=30)
    finally:
        site.close()
    assert reading.returncode == 0 and err == b""
