"""The agent's settings for the `work` path: site URL, token, name, device, limits.

`python -m profiler_agent work` installs them here before the RQ worker starts; the work-horse that
RQ forks for each job inherits them. A plain `rq worker` finds them in the environment instead.
They are never passed to a judged process (see child_env).
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from profiler_agent.judge.options import seconds_from_env

if TYPE_CHECKING:
    from profiler_agent.worker.host_gpus import HostGpu

SITE_ENV = "PROFILER_AGENT_SITE"
TOKEN_ENV = "PROFILER_AGENT_TOKEN"
NAME_ENV = "PROFILER_AGENT_NAME"
DEVICE_ENV = "PROFILER_AGENT_DEVICE"
RUN_TIMEOUT_ENV = "PROFILER_AGENT_RUN_TIMEOUT"
TIMEOUT_ENV = "PROFILER_AGENT_TIMEOUT"  # the run timeout's older name, read when the other is unset
COMPILE_TIMEOUT_ENV = "PROFILER_AGENT_COMPILE_TIMEOUT"
MEMORY_LIMIT_ENV = "PROFILER_AGENT_MEMORY_LIMIT"
COMPILE_MEMORY_LIMIT_ENV = "PROFILER_AGENT_COMPILE_MEMORY_LIMIT"
NCU_ENV = "PROFILER_AGENT_NCU"  # 1: profile passed candidates with Nsight Compute (as --ncu)
NCU_TIMEOUT_ENV = "PROFILER_AGENT_NCU_TIMEOUT"
KEEP_WARM_ENV = "PROFILER_AGENT_KEEP_WARM"  # 1: as --keep-warm


@dataclass(frozen=True)
class AgentConfig:
    site: str
    token: str
    name: str
    device: str
    cache_dir: Path | None = None
    timeout_s: float | None = None  # the run timeout
    compile_timeout_s: float | None = None
    memory_limit_bytes: int | None = None
    compile_memory_limit_bytes: int | None = None
    ncu: bool = False
    ncu_timeout_s: float | None = None
    # start the next judging's processes when one ends (judge.warm_pool); jobs then run in the worker
    # process itself, where those processes wait, not in a work-horse forked per job
    keep_warm: bool = False
    gpu: HostGpu | None = None  # the GPU this worker is pinned to; None on CPU


_installed: AgentConfig | None = None


def install(config: AgentConfig) -> None:
    global _installed
    _installed = config


def default_name() -> str:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    return f"{socket.gethostname()}-gpu{visible}" if visible else socket.gethostname()


def ncu_from_env() -> bool:
    return os.environ.get(NCU_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def keep_warm_from_env() -> bool:
    return os.environ.get(KEEP_WARM_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def ncu_timeout_from_env() -> float | None:
    value = os.environ.get(NCU_TIMEOUT_ENV)
    return float(value) if value else None


def _size_from_env(name: str) -> int | None:
    from profiler_agent.util.sizes import parse_size

    text = os.environ.get(name, "").strip()
    try:
        return parse_size(text) if text else None
    except ValueError as exc:
        raise RuntimeError(f"{name}: {exc}") from exc


def from_env() -> AgentConfig:
    site, token = os.environ.get(SITE_ENV), os.environ.get(TOKEN_ENV)
    if not site or not token:
        raise RuntimeError(
            f"the profiler agent is not configured: set {SITE_ENV} and {TOKEN_ENV}, "
            "or start it with `python -m profiler_agent work --site URL --token TOKEN ...`"
        )
    from profiler_agent.executors.build_cache import default_cache_dir
    from profiler_agent.devices.device_info import default_device_kind

    return AgentConfig(
        site=site,
        token=token,
        name=os.environ.get(NAME_ENV) or default_name(),
        device=os.environ.get(DEVICE_ENV) or default_device_kind(),
        cache_dir=default_cache_dir(),
        timeout_s=seconds_from_env(RUN_TIMEOUT_ENV) or seconds_from_env(TIMEOUT_ENV),
        compile_timeout_s=seconds_from_env(COMPILE_TIMEOUT_ENV),
        memory_limit_bytes=_size_from_env(MEMORY_LIMIT_ENV),
        compile_memory_limit_bytes=_size_from_env(COMPILE_MEMORY_LIMIT_ENV),
        ncu=ncu_from_env(),
        ncu_timeout_s=ncu_timeout_from_env(),
        keep_warm=keep_warm_from_env(),
    )


def current() -> AgentConfig:
    return _installed if _installed is not None else from_env()
