"""Telling the site, every N seconds, that this worker is alive, what it serves, what it runs on and
which attempt it judges (the site judges a run again once no heartbeat names it); the answer says
whether to take jobs (a drained or outdated worker does not)."""

from __future__ import annotations

import logging
import threading
from typing import Callable

import profiler_agent
from profiler_agent.service import inventory
from profiler_agent.service.config import AgentConfig
from profiler_agent.service.gate import JobGate

log = logging.getLogger(__name__)

HEARTBEAT_PATH = "/api/v1/agent/heartbeat"


def heartbeat_url(site: str) -> str:
    return site.rstrip("/") + HEARTBEAT_PATH


def worker_report(config: AgentConfig, current_run: int | None = None) -> dict:
    return {
        "name": config.name,
        "gpu": config.gpu.report() if config.gpu is not None else None,
        "harness_version": profiler_agent.HARNESS_VERSION,
        "current_run": current_run,
    }


def heartbeat_payload(config: AgentConfig, queues: list[str], judging: list[dict] | None = None,
                      abandoned: list[dict] | None = None) -> dict:
    """`judging`: the attempts being judged now ([{"run_id", "attempt"}]); the site judges a run again
    once its agent's heartbeats stop naming it. `abandoned`: those a killed predecessor of this worker
    was judging, for the site to judge again at once."""
    judging = list(judging or [])
    return {
        "name": config.name,
        "queues": list(queues),
        "inventory": {"devices": inventory.devices_of(config.device)},
        "versions": inventory.versions(),
        "worker": worker_report(config, judging[0]["run_id"] if judging else None),
        "judging": judging,
        "abandoned": list(abandoned or []),
    }


def apply_answer(gate: JobGate | None, answer: dict) -> None:
    """Open or close the gate as the site says; say so in the log when it changes. Keep the claim list
    the site names (service.claims)."""
    from profiler_agent.service import claims

    claims.set_claim_list(answer.get("claim_list"))
    if gate is not None and isinstance(answer.get("accept_jobs"), bool):
        why = str(answer.get("why") or "")
        if gate.set_accepting(answer["accept_jobs"], why):
            log.warning("the site says: %s", "take jobs again" if answer["accept_jobs"] else f"take no jobs ({why})")
    outdated_for = answer.get("outdated_for") or []
    if outdated_for != _said["outdated_for"]:  # said once per change, not every heartbeat
        _said["outdated_for"] = outdated_for
        if outdated_for:
            log.warning("harness %s is older than the minimum of %s: their runs are refused here; upgrade the agent",
                        profiler_agent.HARNESS_VERSION, outdated_for)


_said: dict = {"outdated_for": []}


def send_heartbeat(client, config: AgentConfig, queues: list[str], gate: JobGate | None = None,
                   judging: list[dict] | None = None, abandoned: list[dict] | None = None) -> bool:
    """One heartbeat; failures are logged, never raised: the site being down must not stop judging
    (the gate stays as it was)."""
    try:
        _, answer = client.post_json_answer(heartbeat_url(config.site),
                                            heartbeat_payload(config, queues, judging, abandoned))
    except Exception as exc:
        log.warning("heartbeat failed: %s", exc)
        return False
    apply_answer(gate, answer)
    return True


class HeartbeatThread(threading.Thread):
    """Sends a heartbeat every `interval_s` until stopped. A daemon thread of the worker process:
    RQ's fork of a work-horse does not copy it, and the horse takes no lock it holds."""

    def __init__(self, client, config: AgentConfig, queues: list[str], interval_s: float,
                 gate: JobGate | None = None, judging: Callable[[], list[dict]] = lambda: []):
        super().__init__(name="profiler-agent-heartbeat", daemon=True)
        self._client, self._config, self._queues = client, config, queues
        self._interval_s = interval_s
        self._gate, self._judging = gate, judging  # () -> the attempts being judged now
        self._stopped = threading.Event()

    def run(self) -> None:
        while not self._stopped.wait(self._interval_s):
            send_heartbeat(self._client, self._config, self._queues, self._gate, self._judging())

    def stop(self) -> None:
        self._stopped.set()
