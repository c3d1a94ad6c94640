"""Telling the site what the run being judged is doing (compiling, checking, timing, profiling, the
self-test), so the contestant's page can say so while it waits.

The judge calls the reporter from its own loop (the one that watches the judged child's deadline),
so the reporter never touches the network there: it keeps the latest stage, and a thread of its own
POSTs it. Progress is informative only: a failed report is logged once and judging goes on."""

from __future__ import annotations

import logging
import threading

from profiler_agent.protocol.vocabulary import JUDGING_STAGES

log = logging.getLogger(__name__)

CLOSE_WAIT_S = 5.0  # at the end of a run, how long the last report may still take


class StageReporter:
    """`reporter(stage)` records the stage; a daemon thread POSTs `{"attempt", "stage"}` to the run's
    progress URL with the client (agent token and the attempt's secret). Stages that follow each
    other faster than a POST are skipped: only the latest one matters."""

    def __init__(self, client, url: str, run_id: int, attempt: int):
        self._client, self._url, self._run_id, self._attempt = client, url, run_id, attempt
        self._latest: str | None = None
        self._sent: str | None = None
        self._closed = False
        self._failed_once = False
        self._wake = threading.Condition()
        self._thread = threading.Thread(target=self._send_loop, name=f"progress-run-{run_id}", daemon=True)
        self._thread.start()

    def __call__(self, stage: str) -> None:
        if stage not in JUDGING_STAGES:
            raise ValueError(f"unknown judging stage {stage!r}")
        with self._wake:
            self._latest = stage
            self._wake.notify()

    def close(self) -> None:
        """Send what is pending (for a moment at most), then stop."""
        with self._wake:
            self._closed = True
            self._wake.notify()
        self._thread.join(CLOSE_WAIT_S)

    def _send_loop(self) -> None:
        while True:
            with self._wake:
                while self._latest == self._sent and not self._closed:
                    self._wake.wait()
                if self._latest == self._sent:
                    return  # closed, nothing pending
                stage = self._latest
            self._send(stage)
            self._sent = stage

    def _send(self, stage: str) -> None:
        try:
            code = self._client.post_json(self._url, {"attempt": self._attempt, "stage": stage},
                                          accept=(200, 403, 404, 409))
        except Exception as exc:  # noqa: BLE001  (the site being away must not stop judging)
            code, problem = None, str(exc)
        else:
            problem = f"HTTP {code}"
        if code != 200 and not self._failed_once:
            self._failed_once = True
            log.warning("run %s: progress report %r not taken (%s); judging goes on", self._run_id, stage, problem)
