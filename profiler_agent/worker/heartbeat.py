"""Telling the site, every N seconds, that this worker is alive, what it serves, what it runs on and
which attempt it judges (the site judges a run again once no heartbeat names it); the answer says
whether to take jobs (a drained or outdated worker does not).

A worker cut off from the site takes no job either: one it took could not be started, and would sit in
the host's claim list until the site handed it back and charged the host with a dropped job (enough
of them quarantine the host). A heartbeat (or a start) that cannot reach the site closes the gate; the
next heartbeat that gets through opens it again."""

from __future__ import annotations

import logging
import threading
from typing import Callable

import profiler_agent
from profiler_agent.protocol.vocabulary import HEARTBEAT_PATH
from profiler_agent.worker import host_inventory
from profiler_agent.worker.agent_config import AgentConfig
from profiler_agent.worker.job_gate import JobGate
from profiler_agent.worker.site_client import SiteUnreachable

log = logging.getLogger(__name__)

SITE_UNREACHABLE = "the site cannot be reached"  # the start of the gate's reason while cut off


def close_while_unreachable(gate: JobGate | None, problem: str) -> None:
    """Take no job until a heartbeat gets through (see the module's docstring)."""
    if gate is None:
        return
    was_accepting = gate.accepting()
    gate.close(f"{SITE_UNREACHABLE} ({problem[:300]})")
    if was_accepting:
        log.warning("%s: taking no jobs until a heartbeat gets through", SITE_UNREACHABLE)


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
        "inventory": {"devices": host_inventory.devices_of(config.device)},
        "versions": host_inventory.versions(),
        "worker": worker_report(config, judging[0]["run_id"] if judging else None),
        "judging": judging,
        "abandoned": list(abandoned or []),
    }


def apply_answer(gate: JobGate | None, answer: dict) -> None:
    """Open or close the gate as the site says; say so in the log when it changes. Keep the claim list
    the site names (worker.job_claims)."""
    from profiler_agent.worker import job_claims

    job_claims.set_claim_list(answer.get("claim_list"))
    accept = answer.get("accept_jobs")
    if gate is not None and not isinstance(accept, bool) and gate.why().startswith(SITE_UNREACHABLE):
        accept = True  # the site got this heartbeat, and asks nothing of the gate: the link is back
    if gate is not None and isinstance(accept, bool):
        why = str(answer.get("why") or "")
        if gate.set_accepting(accept, why):
            log.warning("the site says: %s", "take jobs again" if accept else f"take no jobs ({why})")
    outdated_for = answer.get("outdated_for") or []
    if outdated_for != _said["outdated_for"]:  # said once per change, not every heartbeat
        _said["outdated_for"] = outdated_for
        if outdated_for:
            log.warning("harness %s is older than the minimum of %s: their runs are refused here; upgrade the agent",
                        profiler_agent.HARNESS_VERSION, outdated_for)


_said: dict = {"outdated_for": []}


def send_heartbeat(client, config: AgentConfig, queues: list[str], gate: JobGate | None = None,
                   judging: list[dict] | None = None, abandoned: list[dict] | None = None) -> bool:
    """One heartbeat; failures are logged, never raised: the site being down must not stop judging.
    One that cannot reach the site closes the gate until a heartbeat gets through; other failures
    leave it as it was."""
    try:
        _, answer = client.post_json_answer(heartbeat_url(config.site),
                                            heartbeat_payload(config, queues, judging, abandoned))
    except SiteUnreachable as exc:
        log.warning("heartbeat failed: %s", exc)
        close_while_unreachable(gate, str(exc))
        return False
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
