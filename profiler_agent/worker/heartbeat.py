"""Telling the site, every N seconds, that this worker is alive, what it serves, what it runs on and
which attempt it judges (the site judges a run again once no heartbeat names it); the answer says
whether to take jobs (a drained or outdated worker does not), and which attempt being judged to stop
(`stop_judging`: an organizer cancelled its run; worker.job_stop). While a run is judged, heartbeats
come every JUDGING_HEARTBEAT_S at most, so a cancelled run's worker is free within seconds.

A worker cut off from the site takes no job either: one it took could not be started, and would sit in
the host's claim list until the site handed it back and charged the host with a dropped job (enough
of them quarantine the host). A heartbeat (or a start) that cannot reach the site closes the gate; the
next heartbeat that gets through opens it again."""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

import profiler_agent
from profiler_agent.protocol.vocabulary import HEARTBEAT_PATH
from profiler_agent.worker import host_inventory
from profiler_agent.worker.agent_config import AgentConfig
from profiler_agent.worker.job_gate import JobGate
from profiler_agent.worker.job_stop import StopOrders, orders_in
from profiler_agent.worker.site_client import SiteUnreachable

log = logging.getLogger(__name__)

SITE_UNREACHABLE = "the site cannot be reached"  # the start of the gate's reason while cut off
JUDGING_HEARTBEAT_S = 3.0  # between heartbeats while judging (when the idle interval is longer)


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


def apply_answer(gate: JobGate | None, answer: dict, stops: StopOrders | None = None,
                 judging: list[dict] | None = None) -> None:
    """Open or close the gate as the site says; say so in the log when it changes. Keep the claim list
    the site names (worker.job_claims). Order the judging of each attempt in `stop_judging` that this
    heartbeat named (`judging`) stopped."""
    from profiler_agent.worker import job_claims

    job_claims.set_claim_list(answer.get("claim_list"))
    named = {(item.get("run_id"), item.get("attempt")) for item in judging or []}
    for run_id, attempt in orders_in(answer):
        if stops is not None and (run_id, attempt) in named and not stops.ordered(run_id, attempt):
            stops.order(run_id, attempt)
            log.warning("the site says: run %s attempt %s was cancelled; stopping its judging", run_id, attempt)
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
                   judging: list[dict] | None = None, abandoned: list[dict] | None = None,
                   stops: StopOrders | None = None) -> bool:
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
    apply_answer(gate, answer, stops, judging)
    return True


class HeartbeatThread(threading.Thread):
    """Sends a heartbeat every `interval_s` until stopped, every `judging_interval_s` while a run is
    judged (a judging that begins is noticed within that time). A daemon thread of the worker process:
    RQ's fork of a work-horse does not copy it, and the horse takes no lock it holds."""

    def __init__(self, client, config: AgentConfig, queues: list[str], interval_s: float,
                 gate: JobGate | None = None, judging: Callable[[], list[dict]] = lambda: [],
                 stops: StopOrders | None = None, judging_interval_s: float = JUDGING_HEARTBEAT_S):
        super().__init__(name="profiler-agent-heartbeat", daemon=True)
        self._client, self._config, self._queues = client, config, queues
        self._interval_s = interval_s
        self._judging_interval_s = min(interval_s, judging_interval_s)
        self._gate, self._judging = gate, judging  # () -> the attempts being judged now
        self._stops = stops
        self._stopped = threading.Event()

    def _interval(self, judging: list[dict]) -> float:
        return self._judging_interval_s if judging else self._interval_s

    def run(self) -> None:
        sent_at = time.monotonic()
        while True:
            now = time.monotonic()
            # wake at the next beat, or sooner to see whether a judging began
            wake_at = min(sent_at + self._interval(self._judging()), now + self._judging_interval_s)
            if self._stopped.wait(max(0.0, wake_at - now)):
                return
            judging = self._judging()
            if time.monotonic() - sent_at >= self._interval(judging) - 0.01:
                send_heartbeat(self._client, self._config, self._queues, self._gate, judging, stops=self._stops)
                sent_at = time.monotonic()

    def stop(self) -> None:
        self._stopped.set()
