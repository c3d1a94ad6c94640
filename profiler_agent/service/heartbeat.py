"""Telling the site, every N seconds, that this agent is alive, what it serves and what it runs on."""

from __future__ import annotations

import logging
import threading

from profiler_agent.service import inventory
from profiler_agent.service.config import AgentConfig

log = logging.getLogger(__name__)

HEARTBEAT_PATH = "/api/v1/agent/heartbeat"


def heartbeat_url(site: str) -> str:
    return site.rstrip("/") + HEARTBEAT_PATH


def heartbeat_payload(config: AgentConfig, queues: list[str], judging: list[dict] | None = None,
                      abandoned: list[dict] | None = None) -> dict:
    """`judging`: the attempts being judged now ([{"run_id", "attempt"}]); the site judges a run again
    once its agent's heartbeats stop naming it. `abandoned`: those a killed predecessor of this worker
    was judging, for the site to judge again at once."""
    return {
        "name": config.name,
        "queues": list(queues),
        "inventory": {"devices": inventory.devices_of(config.device)},
        "versions": inventory.versions(),
        "judging": list(judging or []),
        "abandoned": list(abandoned or []),
    }


def send_heartbeat(client, config: AgentConfig, queues: list[str], judging: list[dict] | None = None,
                   abandoned: list[dict] | None = None) -> bool:
    """One heartbeat; failures are logged, never raised: the site being down must not stop judging."""
    try:
        client.post_json(heartbeat_url(config.site), heartbeat_payload(config, queues, judging, abandoned))
        return True
    except Exception as exc:
        log.warning("heartbeat failed: %s", exc)
        return False


class HeartbeatThread(threading.Thread):
    """Sends a heartbeat every `interval_s` until stopped. A daemon thread of the worker process:
    RQ's fork of a work-horse does not copy it, and the horse takes no lock it holds."""

    def __init__(self, client, config: AgentConfig, queues: list[str], interval_s: float, judging=lambda: []):
        super().__init__(name="profiler-agent-heartbeat", daemon=True)
        self._client, self._config, self._queues = client, config, queues
        self._interval_s = interval_s
        self._judging = judging  # () -> the attempts being judged now
        self._stopped = threading.Event()

    def run(self) -> None:
        while not self._stopped.wait(self._interval_s):
            send_heartbeat(self._client, self._config, self._queues, self._judging())

    def stop(self) -> None:
        self._stopped.set()
