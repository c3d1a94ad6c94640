"""cgroup v2 limits for each judged process tree, where the agent can make them.

Each judged process starts in a fresh cgroup `<base>/judged-<agent pid>-<token>`: memory.max (one
value while the candidate builds, a tighter one once it reports "compiled"), memory.swap.max 0,
memory.oom.group 1 (an OOM kill ends the whole run), and pids.max where the pids controller is
available. When the run ends, cgroup.kill (a core file: no controller needed) ends every process in
it (setsid double-forks included), memory.events tells whether the OOM killer fired, memory.peak how
much it used, and the folder is removed.

Possible only with cgroup v2, the memory controller available to the agent's own cgroup, and that
cgroup writable: root in a container with its own cgroup namespace and a writable /sys/fs/cgroup, or
a systemd unit with Delegate=yes. The pids controller is optional (`Hierarchy.missing` names it when
absent; RLIMIT_NPROC, which does not bind root, is then all that bounds the processes). Without the
memory controller `hierarchy()` raises Unavailable with the reason and the sandbox keeps to rlimits.
PROFILER_AGENT_CGROUP=off turns it off.

"No internal processes": a cgroup that enables controllers for its children may hold no process
itself (the root cgroup excepted). So the agent first moves the processes of its own cgroup into a
leaf `<base>/profiler-agent`, then enables the controllers in <base>; an agent already in that leaf
(an RQ work-horse forked after the move) uses its parent as the base.
"""

from __future__ import annotations

import ctypes
import errno
import os
import secrets
import signal
import time
from dataclasses import dataclass
from pathlib import Path

SWITCH_ENV = "PROFILER_AGENT_CGROUP"  # "off" keeps the sandbox to rlimits
REQUIRED_CONTROLLERS = ("memory",)  # without it no cgroup is made (memory is the limit that matters)
OPTIONAL_CONTROLLERS = ("pids",)  # enabled where available (a GPU host may delegate memory alone)
AGENT_LEAF = "profiler-agent"
JUDGED_PREFIX = "judged-"
CLONE_NEWCGROUP = 0x02000000


class Unavailable(Exception):
    """No cgroup can be made here; the message says why."""


def _write(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _pids(cgroup: Path) -> list[int]:
    return [int(line) for line in (cgroup / "cgroup.procs").read_text().split()]


def _keyed(path: Path) -> dict[str, int]:
    """A flat keyed file such as memory.events or cgroup.events, as {key: number}."""
    values = {}
    for line in path.read_text().splitlines():
        key, _, number = line.partition(" ")
        if number.strip().isdigit():
            values[key] = int(number)
    return values


def cgroup2_mount(mountinfo: str = "/proc/self/mountinfo") -> tuple[Path, str] | None:
    """(mount point, root of the hierarchy it shows) of the first cgroup2 mount, or None."""
    with open(mountinfo) as f:
        for line in f:
            fields = line.split()
            separator = fields.index("-")
            if fields[separator + 1] == "cgroup2":
                return Path(fields[4]), fields[3]
    return None


def own_cgroup() -> str | None:
    """This process's cgroup v2 path ("0::/a/b" in /proc/self/cgroup), or None."""
    with open("/proc/self/cgroup") as f:
        for line in f:
            if line.startswith("0::"):
                path = line[3:].strip()
                return path if path.startswith("/") else None
    return None


@dataclass(frozen=True)
class Hierarchy:
    base: Path  # judged cgroups are made here
    controllers: tuple[str, ...]  # enabled for them
    missing: tuple[str, ...] = ()  # optional controllers not available here


_cache: dict[tuple[tuple[str, ...], tuple[str, ...]], Hierarchy | Unavailable] = {}


def hierarchy(
    required: tuple[str, ...] = REQUIRED_CONTROLLERS, optional: tuple[str, ...] = OPTIONAL_CONTROLLERS
) -> Hierarchy:
    """Where judged cgroups go, set up on the first call (cached per process); raises Unavailable
    when a required controller is missing, enables each optional one that is available."""
    key = (tuple(required), tuple(optional))
    if key not in _cache:
        try:
            _cache[key] = _prepare(*key)
        except Unavailable as exc:
            _cache[key] = exc
    found = _cache[key]
    if isinstance(found, Unavailable):
        raise found
    return found


def _prepare(required: tuple[str, ...], optional: tuple[str, ...] = ()) -> Hierarchy:
    if os.environ.get(SWITCH_ENV, "auto").strip().lower() in ("off", "0", "no", "false"):
        raise Unavailable(f"turned off by {SWITCH_ENV}")
    mounted = cgroup2_mount()
    if mounted is None:
        raise Unavailable("no cgroup v2 file system is mounted")
    mount, mount_root = mounted
    own = own_cgroup()
    if own is None:
        raise Unavailable("this process is in no cgroup v2")
    if mount_root != "/":
        if not (own + "/").startswith(mount_root.rstrip("/") + "/"):
            raise Unavailable(f"own cgroup {own} lies outside the mounted part {mount_root}")
        own = own[len(mount_root.rstrip("/")):]
    current = mount / own.lstrip("/")
    if not current.is_dir():
        raise Unavailable(f"own cgroup {own} is not visible under {mount}")
    base = current.parent if current.name == AGENT_LEAF else current
    try:
        available = (base / "cgroup.controllers").read_text().split()
    except OSError as exc:
        raise Unavailable(f"{base} cannot be read: {exc}") from exc
    missing = [c for c in required if c not in available]
    if missing:
        raise Unavailable(
            f"{base}: the {' and '.join(missing)} controller{'s' if len(missing) > 1 else ''} "
            f"not available (cgroup.controllers: {' '.join(available) or 'none'})"
        )
    controllers = (*required, *(c for c in optional if c in available and c not in required))
    try:
        _vacate(base)  # whichever controllers: a domain controller is enabled only in an empty cgroup
        enabled = (base / "cgroup.subtree_control").read_text().split()
        wanted = [c for c in controllers if c not in enabled]
        if wanted:
            _write(base / "cgroup.subtree_control", " ".join("+" + c for c in wanted))
        _remove_stale(base)
    except OSError as exc:
        raise Unavailable(f"{base} cannot be used: {exc}") from exc
    return Hierarchy(base, controllers, tuple(c for c in optional if c not in controllers))


def _is_root(cgroup: Path) -> bool:
    return not (cgroup / "cgroup.type").exists()  # the root cgroup has no type


def _vacate(base: Path) -> None:
    """Move every process of `base` into its leaf AGENT_LEAF (the root cgroup may keep them)."""
    if _is_root(base):
        return
    leaf = base / AGENT_LEAF
    leaf.mkdir(exist_ok=True)
    for _ in range(20):  # processes forked meanwhile show up on the next pass
        pids = _pids(base)
        if not pids:
            return
        for pid in pids:
            try:
                _write(leaf / "cgroup.procs", str(pid))
            except ProcessLookupError:
                pass  # exited meanwhile
    raise OSError(errno.EBUSY, f"processes keep appearing in {base}")


def _remove_stale(base: Path) -> None:
    """Judged cgroups whose agent died without cleaning up (e.g. a work-horse killed by RQ)."""
    for entry in base.iterdir():
        if not entry.name.startswith(JUDGED_PREFIX) or not entry.is_dir():
            continue
        creator = entry.name[len(JUDGED_PREFIX):].split("-")[0]
        if creator.isdigit() and not os.path.exists(f"/proc/{creator}"):
            stale = JudgedCgroup(entry)
            stale.kill()
            stale.remove()


def join(procs_file: str) -> None:
    """Move the calling process into the cgroup of `procs_file` ("0": the writer itself). Runs in
    the child between fork and exec, so the process is inside before any of its code runs. Then a
    cgroup namespace of its own, best effort (it needs root): a process may only move between
    cgroups inside its namespace, so this one cannot leave."""
    fd = os.open(procs_file, os.O_WRONLY)
    try:
        os.write(fd, b"0")
    finally:
        os.close(fd)
    try:
        ctypes.CDLL(None, use_errno=True).unshare(CLONE_NEWCGROUP)
    except (OSError, AttributeError):
        pass


class JudgedCgroup:
    """One judged run's cgroup."""

    def __init__(self, path: Path, controllers: tuple[str, ...] = REQUIRED_CONTROLLERS + OPTIONAL_CONTROLLERS):
        self.path = Path(path)
        self.controllers = controllers

    @classmethod
    def create(cls, where: Hierarchy, memory_bytes: int | None, max_processes: int | None) -> JudgedCgroup:
        path = where.base / f"{JUDGED_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
        path.mkdir()
        made = cls(path, where.controllers)
        try:
            if "memory" in where.controllers:
                made.set_memory_max(memory_bytes)
                made._write_if_present("memory.swap.max", "0")  # absent when swap is not accounted
                made._write_if_present("memory.oom.group", "1")  # one OOM kill ends the whole run
            if "pids" in where.controllers:
                _write(path / "pids.max", str(max_processes) if max_processes else "max")
        except BaseException:
            made.remove()
            raise
        return made

    @property
    def procs_file(self) -> str:
        return str(self.path / "cgroup.procs")

    def _write_if_present(self, name: str, value: str) -> None:
        if (self.path / name).exists():
            _write(self.path / name, value)

    def set_memory_max(self, memory_bytes: int | None) -> None:
        """Lowering it below what the run holds makes the kernel reclaim, then OOM-kill."""
        if "memory" in self.controllers:
            _write(self.path / "memory.max", str(memory_bytes) if memory_bytes else "max")

    def populated(self) -> bool:
        try:
            return _keyed(self.path / "cgroup.events").get("populated", 0) > 0
        except FileNotFoundError:
            return False

    def kill(self, patience_s: float = 5.0) -> None:
        """SIGKILL every process in the cgroup and wait until it is empty."""
        try:
            _write(self.path / "cgroup.kill", "1")
        except FileNotFoundError:  # the folder is gone, or a kernel before 5.14: one by one
            if not self.path.exists():
                return
            for pid in _pids(self.path):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + patience_s
        while self.populated() and time.monotonic() < deadline:
            time.sleep(0.01)

    def oom_kills(self) -> int:
        try:
            return _keyed(self.path / "memory.events").get("oom_kill", 0)
        except FileNotFoundError:
            return 0

    def memory_peak(self) -> int | None:
        """memory.peak (Linux 5.19+), or None."""
        try:
            return int((self.path / "memory.peak").read_text())
        except (FileNotFoundError, ValueError):
            return None

    def remove(self, patience_s: float = 2.0) -> bool:
        """rmdir, retried while the kernel finishes tearing the last processes down."""
        deadline = time.monotonic() + patience_s
        while True:
            try:
                self.path.rmdir()
                return True
            except FileNotFoundError:
                return True
            except OSError:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.02)
