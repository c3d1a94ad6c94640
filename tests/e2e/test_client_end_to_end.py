"""gpucf, as a contestant runs it, against a live site: gunicorn on a SQLite database of its own, the shared
Redis (queues of this module's own) and a real CPU agent judging `examples/relu-cpu` (passes) and
`examples/relu-cpu-wrong` (wrong_answer). One platform for the module, two judgings in all; every
command is `python -m gpucf` in a process of its own, with a config home of each contestant's."""
import json
import os
import signal
import stat
import subprocess
import sys
import uuid
import zipfile
from types import SimpleNamespace

import pytest
import redis

from live_platform.agents import REDIS_URL, AgentProcess
from live_platform.gunicorn_site import GunicornSite
from live_platform.ports import free_port
from live_platform.processes import ROOT
from tests.conftest import EXAMPLES

JUDGING_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    folder = tmp_path_factory.mktemp("client-platform")
    prefix = f"client-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{folder}/db.sqlite3", "GPU_QUEUE_PREFIX": f"{prefix}.gpu.",
           "SITE_QUEUE_NAME": f"{prefix}.site", "GUNICORN_WORKERS": "1", "DJANGO_SETTINGS_MODULE": "config.settings"}
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    seeded = json.loads(subprocess.run([sys.executable, "-m", "live_platform.seed_contest", f"{prefix}-agent"],
                                       cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout)
    site = GunicornSite(folder / "site.log", env=env).start()
    agent = AgentProcess(site.url, seeded["agent_token"], seeded["queue"], folder / "agent.log")
    try:
        yield SimpleNamespace(site=site.url, folder=folder, agent=agent, **seeded)
    finally:
        agent.stop()
        site.stop()
        connection = redis.Redis.from_url(REDIS_URL)
        for key in connection.scan_iter(f"*{prefix}*"):
            connection.delete(key)


def gpucf(platform, home, *args, stdin=None):
    """`python -m gpucf ARGS` as the contestant whose config home is `home` (no token in the environment)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("GPUCF_")}
    env.update(XDG_CONFIG_HOME=str(home), GPUCF_SITE=platform.site)
    return subprocess.run([sys.executable, "-m", "gpucf", *args], cwd=ROOT, env=env, input=stdin, capture_output=True,
                          text=True, timeout=JUDGING_TIMEOUT_S)


def judged_output(platform, done):
    return f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}\nagent:\n{platform.agent.output()}"


@pytest.fixture(scope="module")
def homes(platform):
    """alice logged in with her token on stdin (as from a terminal's prompt or a file), bob with --token."""
    alice, bob = platform.folder / "alice-home", platform.folder / "bob-home"
    logged = gpucf(platform, alice, "login", stdin=platform.tokens["alice"] + "\n")
    assert logged.returncode == 0 and "as Alice" in logged.stdout, logged.stderr
    assert gpucf(platform, bob, "login", "--token", platform.tokens["bob"]).returncode == 0
    return SimpleNamespace(alice=alice, bob=bob)


def test_login_keeps_the_token_for_the_owner_alone_and_a_bad_token_is_refused(platform, homes):
    config = homes.alice / "gpucf" / "config.json"
    assert stat.S_IMODE(config.stat().st_mode) == 0o600 and stat.S_IMODE(config.parent.stat().st_mode) == 0o700
    assert json.loads(config.read_text()) == {"site": platform.site, "tokens": {platform.site: platform.tokens["alice"]}}
    refused = gpucf(platform, homes.alice, "login", "--token", "not-a-token")
    assert refused.returncode == 3 and "refused the token" in refused.stderr and refused.stdout == ""
    assert json.loads(config.read_text())["tokens"][platform.site] == platform.tokens["alice"]  # kept as it was
    me = gpucf(platform, homes.bob, "login", "--json", "--token", platform.tokens["bob"])
    assert json.loads(me.stdout)["display_name"] == "Bob"
    gone = platform.folder / "carol-home"
    assert gpucf(platform, gone, "login", "--token", platform.tokens["bob"]).returncode == 0
    assert gpucf(platform, gone, "logout").returncode == 0
    assert gpucf(platform, gone, "list").returncode == 3


def test_seasons_and_issues_are_listed(platform, homes):
    (season,) = json.loads(gpucf(platform, homes.alice, "seasons", "--json").stdout)
    assert (season["code"], season["open"], [g["slug"] for g in season["gpu_types"]]) == ("S1", True, ["cpu"])
    mine = json.loads(gpucf(platform, homes.alice, "issues", "--json").stdout)
    assert [issue["code"] for issue in mine["rows"]] == [platform.issues["alice"]]
    everyone = gpucf(platform, homes.alice, "issues", "--season", "S1", "--all")
    assert everyone.returncode == 0 and "Alice's ReLU" in everyone.stdout and "Bob's ReLU" in everyone.stdout
    assert gpucf(platform, homes.alice, "issues", "--season", "S9").returncode == 2


def test_a_folder_that_passes_is_watched_to_its_verdict_and_exits_0(platform, homes):
    issue = platform.issues["alice"]
    done = gpucf(platform, homes.alice, "submit", str(EXAMPLES / "relu-cpu"), "--issue", issue.lower(),
                 "--note", "C++ ReLU", "--watch", "--json")
    assert done.returncode == 0, judged_output(platform, done)
    answer = json.loads(done.stdout)  # the JSON alone on stdout; the progress went to stderr
    (run,) = [r for r in answer["runs"] if r["current"]]
    assert (run["gpu_type"], run["status"], run["verdict"]) == ("cpu", "done", "passed") and run["speedup"] > 0
    assert sorted(answer["files"]) == sorted(path.name for path in (EXAMPLES / "relu-cpu").iterdir())
    assert f"Submission #{answer['id']} to {issue} is in" in done.stderr and "cpu: queued" in done.stderr

    status = gpucf(platform, homes.alice, "status", str(answer["id"]))
    assert status.returncode == 0 and "passed" in status.stdout and f"Submission #{answer['id']}" in status.stdout
    listed = json.loads(gpucf(platform, homes.alice, "list", "--season", "S1", "--json").stdout)
    assert answer["id"] in [row["id"] for row in listed["rows"]]
    assert gpucf(platform, homes.alice, "list").stdout.count("\n") >= 2
    again = gpucf(platform, homes.alice, "submit", str(EXAMPLES / "relu-cpu"), "--issue", issue)
    assert again.returncode == 2 and str(answer["id"]) in again.stderr and "(409)" in again.stderr
    # another contestant cannot read it
    assert gpucf(platform, homes.bob, "status", str(answer["id"])).returncode == 2


def test_a_wrong_zip_exits_1_and_ctrl_c_leaves_it_judged(platform, homes, tmp_path):
    archive = tmp_path / "relu-wrong.zip"
    with zipfile.ZipFile(archive, "w") as made:
        for path in (EXAMPLES / "relu-cpu-wrong").iterdir():
            made.write(path, f"relu-cpu-wrong/{path.name}")
    # The agent is paused (SIGSTOP) while the run is watched and left: the run is surely still queued then.
    os.killpg(platform.agent.process.pid, signal.SIGSTOP)
    try:
        submitted = gpucf(platform, homes.bob, "submit", str(archive), "--issue", platform.issues["bob"], "--json")
        assert submitted.returncode == 0, submitted.stderr
        submission_id = str(json.loads(submitted.stdout)["id"])
        env = {key: value for key, value in os.environ.items() if not key.startswith("GPUCF_")}
        env.update(XDG_CONFIG_HOME=str(homes.bob), GPUCF_SITE=platform.site)
        # SIGINT at its default, as a terminal's foreground job has it: under a test run started in the
        # background (`bash .ci/run &`) it is ignored, and Python then never raises KeyboardInterrupt
        watcher = subprocess.Popen([sys.executable, "-m", "gpucf", "watch", submission_id], cwd=ROOT, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        first_line = watcher.stderr.readline()  # not a terminal: a plain line for each change
        assert first_line.startswith(f"#{submission_id}  cpu: queued"), first_line
        watcher.send_signal(signal.SIGINT)
        out, err = watcher.communicate(timeout=30)
        assert watcher.returncode == 130 and out == ""
        assert f"submission #{submission_id} is still judged on the site (nothing was cancelled)" in err
        assert gpucf(platform, homes.bob, "status", submission_id).returncode == 6  # still judging
    finally:
        os.killpg(platform.agent.process.pid, signal.SIGCONT)

    watched = gpucf(platform, homes.bob, "watch", submission_id)
    assert watched.returncode == 1, judged_output(platform, watched)
    assert "wrong_answer" in watched.stdout and "cpu: wrong_answer: " in watched.stdout  # the reason
    assert gpucf(platform, homes.bob, "status", submission_id, "--json").returncode == 1


def test_leaderboards_and_an_unreachable_site(platform, homes):
    board = gpucf(platform, homes.alice, "leaderboard", "S1", "--json")
    assert board.returncode == 0 and json.loads(board.stdout)["season"] == "S1"
    assert gpucf(platform, homes.alice, "leaderboard", "S1").stdout.startswith("Season S1 leaderboard")
    gpu_board = gpucf(platform, homes.alice, "leaderboard", "S1", "--gpu", "cpu", "--json")
    assert gpu_board.returncode == 0 and isinstance(json.loads(gpu_board.stdout)["rows"], list)
    unknown = gpucf(platform, homes.alice, "leaderboard", "S1", "--gpu", "h100")
    assert unknown.returncode == 2 and "not judged on GPU type h100" in unknown.stderr
    away = gpucf(platform, homes.alice, "seasons", "--site", f"http://127.0.0.1:{free_port()}")
    assert away.returncode == 4 and "cannot reach" in away.stderr and away.stdout == ""
