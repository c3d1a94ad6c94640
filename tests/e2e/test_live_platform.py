"""live_platform's pieces that scripts/platform.sh and the benches use beyond what the other tests start:
the free port and the wait for the site from bash, and a redis-server of a run's own."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from live_platform.ports import free_port
from live_platform.redis_server import RedisServer

ROOT = Path(__file__).resolve().parents[2]


def test_bash_gets_a_free_port_and_waits_for_a_site_that_never_answers():
    printed = subprocess.run([sys.executable, "-m", "live_platform.ports"], cwd=ROOT, capture_output=True, text=True,
                             check=True)
    assert 1024 <= int(printed.stdout) <= 65535 and not printed.stderr  # nothing but the port: no warning
    waited = subprocess.run([sys.executable, "-m", "live_platform.gunicorn_site", "wait",
                             f"http://127.0.0.1:{free_port()}/", "--timeout", "0.5"], cwd=ROOT, capture_output=True,
                            text=True)
    assert waited.returncode == 1 and "did not answer" in waited.stderr


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="no redis-server on PATH")
def test_a_redis_server_of_its_own_keeps_its_data_across_a_restart_only_when_asked(tmp_path):
    server = RedisServer(tmp_path / "redis", aclfile=True).start()
    try:
        redis.Redis.from_url(server.url).set("kept", "1")
        server.stop(keep_data=True)
        server.start()
        assert redis.Redis.from_url(server.url).get("kept") == b"1"
        server.stop(keep_data=False)
        server.start()
        assert redis.Redis.from_url(server.url).get("kept") is None
    finally:
        server.stop()
    assert server.process.poll() is not None
