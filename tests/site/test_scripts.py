"""scripts/lib.sh, which platform.sh and test.sh source, run by bash as they run it (set -euo pipefail)."""
import os
import signal
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_stop_started_stops_every_process_even_when_one_is_already_gone(tmp_path):
    """The walk of issue 12: after Ctrl-C, gunicorn had already quit, so `kill` of its pid failed, set -e
    ended the EXIT trap there, and the sweeper (which ignores SIGINT, as every `&` command of a
    non-interactive shell does) kept running with nothing left to stop it."""
    pid_file = tmp_path / "pid"
    script = f"""
set -euo pipefail
source {ROOT}/scripts/lib.sh
STARTED_PIDS=()
trap stop_started EXIT
true & STARTED_PIDS+=($!)                 # gone before the stop, like gunicorn after Ctrl-C
sleep 300 & STARTED_PIDS+=($!)            # ignores SIGINT, like the sweeper
echo $! > {pid_file}
sleep 0.5
exit 130
"""
    started = time.monotonic()
    subprocess.run(["bash", "-c", script], timeout=60, check=False)
    survivor = int(pid_file.read_text())
    try:
        assert not alive(survivor), "a process platform.sh started outlived it"
        assert time.monotonic() - started < 20
    finally:
        if alive(survivor):
            os.kill(survivor, 9)


def run_stop(tmp_path, agent_body, *, patience_s=120, interrupt_again=False):
    """A platform.sh in small: a "site" and an "agent" started as it starts them, then the EXIT trap's
    stop, as after Ctrl-C. `agent_body`: bash run by the agent, with $SITE (the site's pid) and $OUT.
    `interrupt_again`: Ctrl-C once the stop says it waits for the agent. Returns the seconds from the
    start (or from that Ctrl-C) to the end, the site's and the agent's pids, what the agent wrote, and
    what the stop said."""
    out = tmp_path / "agent.out"
    script = f"""
set -euo pipefail
source {ROOT}/scripts/lib.sh
STARTED_PIDS=() AGENT_PIDS=()
trap stop_started EXIT
setsid sleep 300 & STARTED_PIDS+=($!)
export SITE=$! OUT={out}
setsid bash -c '{agent_body}' & STARTED_PIDS+=($!) AGENT_PIDS+=($!)
echo "$SITE $!" > {tmp_path / "pids"}
sleep 0.5
exit 130
"""
    started = time.monotonic()
    # SIGINT as a terminal leaves it: a signal ignored when bash starts cannot be trapped, and a test
    # worker may ignore it (what an earlier test in its process did)
    stop = subprocess.Popen(["bash", "-c", script], env=dict(os.environ, AGENT_PATIENCE_S=str(patience_s)),
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    said = ""
    if interrupt_again:
        # not at a fixed moment: on a loaded host the stop may not have begun, and a Ctrl-C before it
        # is the first one
        while "an agent is finishing" not in said and (line := stop.stderr.readline()):
            said += line
        started = time.monotonic()
        os.killpg(stop.pid, signal.SIGINT)  # to the terminal's process group, as a terminal sends it
    _, stderr = stop.communicate(timeout=60)
    site, agent = (int(pid) for pid in (tmp_path / "pids").read_text().split())
    return time.monotonic() - started, site, agent, out.read_text() if out.exists() else "", said + stderr


def test_an_agent_finishes_its_run_and_reports_it_while_the_site_still_runs(tmp_path):
    """Ctrl-C stopped the site with the agents: the run being judged lost its result's POST."""
    agent = 'trap "sleep 3; kill -0 $SITE && echo reported-to-a-running-site > $OUT; exit 0" TERM; while :; do sleep 0.1; done'
    seconds, site, agent_pid, reported, stderr = run_stop(tmp_path, agent)
    assert reported == "reported-to-a-running-site\n"
    assert "an agent is finishing the run it judges" in stderr
    assert not alive(site) and not alive(agent_pid) and 3 <= seconds < 20


def test_ctrl_c_again_stops_an_agent_at_once(tmp_path):
    """RQ takes a second signal as "stop now": the agent ends, its run is judged again at the next start."""
    agent = 'n=0; trap "n=\\$((n + 1)); echo \\$n > $OUT; [ \\$n -ge 2 ] && exit 0" TERM; while :; do sleep 0.1; done'
    seconds, site, agent_pid, signals, _ = run_stop(tmp_path, agent, patience_s=30, interrupt_again=True)
    assert signals == "2\n"
    assert not alive(site) and not alive(agent_pid) and seconds < 10


def _namespace(env):
    script = f"""
set -euo pipefail
source {ROOT}/scripts/lib.sh
platform_namespace
echo "$GPU_QUEUE_PREFIX $SITE_QUEUE_NAME $AGENT_REDIS_USER_PREFIX"
"""
    clean = {k: v for k, v in os.environ.items()
             if k not in ("DATABASE_URL", "GPU_QUEUE_PREFIX", "SITE_QUEUE_NAME", "AGENT_REDIS_USER_PREFIX")}
    return subprocess.run(["bash", "-c", script], env={**clean, **env}, capture_output=True, text=True,
                          check=True, timeout=30).stdout.split()


def test_each_database_gets_its_own_queues_and_agent_users_and_the_same_one_the_same():
    default = _namespace({})
    other = _namespace({"DATABASE_URL": "sqlite:////tmp/another-platform.sqlite3"})
    assert default == _namespace({})
    assert all(a != b for a, b in zip(default, other))
    queue_prefix, site_queue, user_prefix = other
    namespace = queue_prefix.removesuffix(".gpu.")
    assert site_queue == f"{namespace}.site" and user_prefix == f"gpucf-{namespace}-agent-"
    assert _namespace({"GPU_QUEUE_PREFIX": "mine.gpu.", "SITE_QUEUE_NAME": "mine.site",
                       "AGENT_REDIS_USER_PREFIX": "mine-"}) == ["mine.gpu.", "mine.site", "mine-"]
