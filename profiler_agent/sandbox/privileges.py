"""Who a judged process runs as. An agent running as root hands submission code an unprivileged
uid (PROFILER_AGENT_SANDBOX_UID, default 65534 "nobody"; give each worker on a host its own) and a
network namespace of its own with no interface up; its trusted processes run as another uid
(PROFILER_AGENT_TRUSTED_UID, default 65533; never a worker's sandbox uid). An unprivileged agent cannot switch uid; it
makes itself non-dumpable instead, so a process of the same uid cannot read its /proc environ."""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass
from pathlib import Path

SANDBOX_UID_ENV = "PROFILER_AGENT_SANDBOX_UID"
DEFAULT_SANDBOX_UID = 65534
TRUSTED_UID_ENV = "PROFILER_AGENT_TRUSTED_UID"
DEFAULT_TRUSTED_UID = 65533
PR_SET_DUMPABLE = 4
CLONE_NEWNET = 0x40000000


@dataclass(frozen=True)
class SandboxUser:
    uid: int
    gid: int


def _open_to_others(path: Path) -> bool:
    """Every folder on the way passable and the file itself readable by any uid."""
    path = path.resolve()
    if not os.stat(path).st_mode & 0o004:
        return False
    return all(os.stat(folder).st_mode & 0o001 for folder in path.parents)


def sandbox_user() -> SandboxUser | None:
    """The uid judged processes run as, or None when the agent cannot switch: not root, or the
    interpreter or this package sit where another uid cannot reach them (e.g. under /root)."""
    if os.geteuid() != 0:
        return None
    import sys

    import profiler_agent

    needed = [Path(sys.executable), Path(profiler_agent.__file__)]
    if not all(_open_to_others(p) for p in needed):
        return None
    uid = int(os.environ.get(SANDBOX_UID_ENV, DEFAULT_SANDBOX_UID))
    return SandboxUser(uid, uid)


def trusted_user() -> SandboxUser | None:
    """The uid the harness's trusted processes (the verifier, the timing confirmation's check) run
    as: another than the sandbox user's, so submission code can neither write what they read and
    write (their home and tmp: a JIT cache planted there would be the reference's code), nor signal
    or trace them, nor use up their process limit. None where there is no sandbox user; the sandbox
    user itself where that is root (PROFILER_AGENT_SANDBOX_UID=0: nothing to keep apart)."""
    sandbox = sandbox_user()
    if sandbox is None or sandbox.uid == 0:
        return sandbox
    uid = int(os.environ.get(TRUSTED_UID_ENV, DEFAULT_TRUSTED_UID))
    if uid in (0, sandbox.uid):
        raise ValueError(f"{TRUSTED_UID_ENV}={uid}: the trusted processes' uid must be neither root nor the "
                         f"sandbox user's ({SANDBOX_UID_ENV}={sandbox.uid})")
    return SandboxUser(uid, uid)


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def make_undumpable() -> bool:
    """/proc/<agent>/environ, mem and friends become root's: the agent's secrets stay its own."""
    try:
        return _libc().prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def set_dumpable() -> bool:
    """Back to the default an exec gives (a fork of the undumpable zygote: sandbox.zygote)."""
    try:
        return _libc().prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def drop_to(user: SandboxUser) -> None:
    """In the child before exec: leave the network, then become `user` for good."""
    _libc().unshare(CLONE_NEWNET)  # best effort: without it the uid switch still holds
    os.setgroups([])
    os.setresgid(user.gid, user.gid, user.gid)
    os.setresuid(user.uid, user.uid, user.uid)


def hand_over(path: Path, user: SandboxUser | None) -> None:
    """Give a folder tree to `user` (the sandbox user, or the trusted processes'), so its process can
    write there."""
    if user is None:
        return
    for root, dirs, files in os.walk(path):
        os.chown(root, user.uid, user.gid)
        for name in files:
            os.chown(os.path.join(root, name), user.uid, user.gid, follow_symlinks=False)


def keep_private(user: SandboxUser | None, *folders: Path) -> None:
    """Folders only their owner may enter (0700): a bundle's copy, a home, a tmp. Another worker's
    judged code on this host (another sandbox uid) finds their paths in /proc/<pid>/cmdline, which
    every uid reads, and would read a contestant's sources there."""
    if user is None:
        return
    for folder in folders:
        os.chmod(folder, 0o700)


def take_back(path: Path, user: SandboxUser | None) -> None:
    """A folder tree the sandbox user wrote becomes the agent's again, readable but not writable by
    other uids: what a finished judged process left there stays as it was while other sandboxed
    processes of that user run beside the one that reads it. Links are removed (a link to a file the
    sandbox user can still write would let them change what is read), never followed."""
    if user is None:
        return
    for root, dirs, files in os.walk(path):
        os.chown(root, 0, 0)
        os.chmod(root, 0o755)
        for name in [*files, *dirs]:
            entry = os.path.join(root, name)
            if os.path.islink(entry):
                os.unlink(entry)
            elif name in files:
                os.chown(entry, 0, 0)
                os.chmod(entry, 0o644)


def traversable(path: Path) -> None:
    """Let other uids pass through `path` (not list it): the sandbox user reaches its own folders."""
    os.chmod(path, os.stat(path).st_mode | 0o111)
