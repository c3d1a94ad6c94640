"""The zygote itself (`python -m profiler_agent.sandbox.zygote_server CHANNEL_FD AGENT_PID ROOM`):
imports torch, then forks one process per request from the agent (profiler_agent.sandbox.zygote says
why and what a fork is given), reaps the forks and hands each wait status back."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys

from profiler_agent.sandbox.zygote import MAX_FDS, MAX_REQUEST_BYTES, PRELOAD, SET_UP_TIMEOUT_S, STATUS


def _install_fds(received: list[int], targets: list[int], set_up_fd: int) -> int:
    """Put received[i] at targets[i] and close every other descriptor (the zygote's channel too)
    but the set-up pipe, which is returned at its new number (close-on-exec)."""
    import fcntl

    clear = max(1024, *targets) + 1  # above every target number
    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, clear) for fd in received]
    set_up = fcntl.fcntl(set_up_fd, fcntl.F_DUPFD_CLOEXEC, clear)
    for fd, target in zip(moved, targets):
        os.dup2(fd, target, inheritable=True)
    keep = {*targets, set_up}
    for fd in _open_fds():
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass
    return set_up


def _open_fds() -> list[int]:
    return [int(name) for name in os.listdir("/proc/self/fd") if name.isdigit()]


def _run_fork(request: dict, received: list[int], zygote_pid: int) -> None:
    """In the fork: become the run's process, run the module, exit. Never returns."""
    code = 70
    try:
        from profiler_agent.sandbox import limits, privileges

        os.setsid()
        for number in (signal.SIGCHLD, signal.SIGTERM, signal.SIGPIPE):
            signal.signal(number, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.set_wakeup_fd(-1)
        request["set_up_fd"] = _install_fds(received, request["targets"], request["set_up_fd"])
        os.chdir(request["cwd"])
        limits.apply_limits(request["limits"], zygote_pid)
        privileges.set_dumpable()  # as exec would: the zygote's setting is its own
        _become(request)
        _show_as(request)
        os.write(request["set_up_fd"], b"1")
        os.close(request["set_up_fd"])
        code = _run_module(request["module"], request["args"])
    except BaseException:  # noqa: BLE001  (a fork must never return into the zygote's loop)
        try:
            import traceback

            traceback.print_exc()
        except BaseException:  # noqa: BLE001
            pass
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:  # noqa: BLE001
                pass
        os._exit(code)


def _become(request: dict) -> None:
    """The interpreter state a fresh `python -m` with this environment and cwd would have."""
    import io
    import tempfile

    env = request["env"]
    os.environ.clear()  # unsets every variable the zygote started with, the room's among them
    os.environ.update(env)
    tempfile.tempdir = None
    sys.dont_write_bytecode = bool(env.get("PYTHONDONTWRITEBYTECODE"))
    unbuffered = bool(env.get("PYTHONUNBUFFERED"))
    sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding="utf-8",
                                 errors="replace")
    for number, name in ((1, "stdout"), (2, "stderr")):
        raw = io.FileIO(number, "w", closefd=False)
        stream = io.TextIOWrapper(raw if unbuffered else io.BufferedWriter(raw), encoding="utf-8",
                                  errors="backslashreplace", write_through=unbuffered, line_buffering=not unbuffered)
        setattr(sys, name, stream)
    base = [p for p in sys.path[1:] if p not in _STARTED_PYTHONPATH]
    sys.path[:] = [request["cwd"], *(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p), *base]


def _areas() -> tuple[tuple[int, int], tuple[int, int]]:
    """(arg_start, arg_end), (env_start, env_end) of this process, from /proc/self/stat."""
    with open("/proc/self/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields after the command: state is number 3 of proc(5); arg_start is 48, env_end 51
    arg_start, arg_end, env_start, env_end = (int(fields[i - 3]) for i in (48, 49, 50, 51))
    return (arg_start, arg_end), (env_start, env_end)


def _overwrite(area: tuple[int, int], strings: list[str]) -> None:
    import ctypes

    start, end = area
    data = b"".join(text.encode("utf-8", "surrogateescape") + b"\0" for text in strings)
    data = data[:end - start - 1] if len(data) >= end - start else data
    ctypes.memmove(start, data + b"\0" * (end - start - len(data)), end - start)


def _show_as(request: dict) -> None:
    """Its command line and environment where /proc shows them, in the room the zygote left. The
    C environment no longer points there: os.environ.clear() unset every original variable."""
    args_area, env_area = _areas()
    _overwrite(args_area, [sys.executable, "-m", request["module"], *request["args"]])
    _overwrite(env_area, [f"{key}={value}" for key, value in request["env"].items()])


def _run_module(module: str, args: list[str]) -> int:
    import atexit
    import runpy

    sys.argv = [module, *args]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001  (as the interpreter: the traceback, exit 1)
        import traceback

        traceback.print_exc()
        code = 1
    atexit._run_exitfuncs()
    return code


_STARTED_PYTHONPATH: set[str] = set()


def serve(channel: socket.socket, agent_pid: int) -> None:
    from profiler_agent.sandbox import privileges, process_sweep

    if not process_sweep.die_with_parent(agent_pid):
        return
    # a fork of the agent's uid (an unprivileged agent) must not ptrace it or read its memory: what
    # it changed there would be in every later fork, the trusted verifier's included
    privileges.make_undumpable()
    _STARTED_PYTHONPATH.update([sys.path[0], *os.environ.get("PYTHONPATH", "").split(os.pathsep)])
    for name in PRELOAD:
        __import__(name)
    import warnings

    # Python 3.12 warns at every fork of a process with a thread besides the caller's: torch's import
    # may leave OpenMP's; a fork runs on with its own (checked: OpenMP work in forks, tests/agent/test_zygote.py)
    warnings.filterwarnings("ignore", message=".*multi-threaded.*fork", category=DeprecationWarning)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_write)
    exits: dict[int, int] = {}  # fork pid -> the write end of its exit pipe
    channel.send(b"ready")
    while True:
        ready, _, _ = select.select([channel, wake_read], [], [], 1.0)
        if wake_read in ready:
            os.read(wake_read, 4096)
        _reap(exits)
        if channel not in ready:
            continue
        try:
            message, fds, _flags, _address = socket.recv_fds(channel, MAX_REQUEST_BYTES, MAX_FDS)
        except OSError:
            return
        if not message:  # the agent closed its end
            return
        try:
            request = json.loads(message)
            exit_write, received = fds[0], fds[1:]
            if len(received) != len(request["targets"]):
                raise ValueError("descriptors and targets differ in number")
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            for fd in fds:
                os.close(fd)
            channel.send(json.dumps({"error": f"bad request: {exc}"}).encode())
            continue
        set_up_read, set_up_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            channel.close()
            for fd in (wake_read, wake_write, exit_write, set_up_read):
                os.close(fd)
            request["set_up_fd"] = set_up_write
            _run_fork(request, received, os.getppid())
        for fd in (*received, set_up_write):
            os.close(fd)
        # as Popen returns once its child has exec'd: the fork is the run's process (its session,
        # limits, files, /proc's command line) before the agent hears of it; EOF if it failed first
        select.select([set_up_read], [], [], SET_UP_TIMEOUT_S)
        os.close(set_up_read)
        exits[pid] = exit_write
        channel.send(json.dumps({"pid": pid}).encode())


def _reap(exits: dict[int, int]) -> None:
    while exits:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        fd = exits.pop(pid, None)
        if fd is not None:
            try:
                os.write(fd, STATUS.pack(status))
            except OSError:
                pass
            os.close(fd)


def main() -> None:
    channel = socket.socket(fileno=int(sys.argv[1]))
    serve(channel, int(sys.argv[2]))


if __name__ == "__main__":
    main()
