"""deploy/gunicorn.conf.py keeps gunicorn's control socket (`gunicornc`, gunicorn >= 25.1) per instance:
off by default, never at the per-user default path that every gunicorn of the user would share, and
at GUNICORN_CONTROL_SOCKET when an operator asks for one. Real gunicorn processes."""
import os
import time

import pytest
from gunicorn.ctl.client import ControlClient

from live_platform.gunicorn_site import GunicornSite


def _wait_for(predicate, what, site, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    pytest.fail(f"{what} within {timeout} s:\n{site.output()}")


@pytest.fixture
def sites(tmp_path):
    started = []

    def start(name, **env):
        home, runtime = tmp_path / "home", tmp_path / "xdg-runtime"
        home.mkdir(exist_ok=True)
        runtime.mkdir(exist_ok=True)
        # gunicorn's default would be $XDG_RUNTIME_DIR/gunicorn.ctl, else ~/.gunicorn/gunicorn.ctl
        site_env = {k: v for k, v in os.environ.items() if k != "GUNICORN_CONTROL_SOCKET"}
        site_env.update(HOME=str(home), XDG_RUNTIME_DIR=str(runtime), GUNICORN_CMD_ARGS="--log-level debug",
                        GUNICORN_WORKERS="1", **env)
        site = GunicornSite(tmp_path / f"{name}.log", env=site_env)
        started.append(site)
        return site.start()

    yield start
    for site in started:
        site.stop()


def test_no_control_socket_at_the_shared_per_user_default(sites, tmp_path):
    first, second = sites("first"), sites("second")
    for site in (first, second):
        # the whole log: a site without a database answers 500 with long tracebacks that push startup lines out
        _wait_for(lambda: "Control socket disabled" in site.log_text(), "the control socket was not turned off", site)
    assert not (tmp_path / "xdg-runtime" / "gunicorn.ctl").exists()
    assert not (tmp_path / "home" / ".gunicorn" / "gunicorn.ctl").exists()


def test_each_instance_gets_the_control_socket_it_is_given(sites, tmp_path):
    first = sites("first", GUNICORN_CONTROL_SOCKET=str(tmp_path / "first.ctl"))
    second = sites("second", GUNICORN_CONTROL_SOCKET=str(tmp_path / "second.ctl"))
    for site, name in ((first, "first"), (second, "second")):
        _wait_for((tmp_path / f"{name}.ctl").exists, f"no control socket at {name}.ctl", site)
    # each socket answers for its own master, not the other's
    for site, name in ((first, "first"), (second, "second")):
        with ControlClient(str(tmp_path / f"{name}.ctl"), timeout=10) as client:
            assert client.send_command("show stats")["pid"] == site.process.pid
    assert not (tmp_path / "xdg-runtime" / "gunicorn.ctl").exists()
    assert not (tmp_path / "home" / ".gunicorn" / "gunicorn.ctl").exists()
