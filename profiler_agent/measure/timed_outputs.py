"""The outputs of timed calls, checked: a candidate honest on the correctness trials and wrong on the
calls it is timed on (doing part of the work, answering from memory) is a wrong answer.

Both models are timed on the same values call after call (profiler_agent.measure.input_sets), so
after each round the candidate's output can be compared with the reference's. Which rounds are
compared is decided after they ran, from the secret seed: the first CHECKED_FIRST, then each later
one with probability CHECKED_FIRST / its number, so a candidate wrong on 1 call in 10 is caught with
probability above 1 - 0.9**66 > 0.999 however long it is timed, and no call can tell beforehand
whether it will be looked at. The comparison here runs beside submission code: it stops the timing
at the first wrong output, and the verdict is the trusted verifier's, which computes the reference's
output again for the checked calls' outputs saved in the exchange folder (a seeded sample of them,
SAVED_CALLS and SAVED_BYTES at most, and always a wrong one).
"""

from __future__ import annotations

import random

from profiler_agent.checkers.compare_outputs import compare_outputs
from profiler_agent.trials import output_exchange
from profiler_agent.util import tensors

CHECKED_FIRST = 66  # 1 - 0.9**66 > 0.999
SAVED_CALLS = 66
SAVED_BYTES = 64 << 20


class WrongTimedOutput(Exception):
    def __init__(self, call: int, reason: str):
        super().__init__(f"timed call {call}: {reason}")
        self.call = call
        self.reason = reason


class TimedOutputs:
    """Keeps each model's latest output (`keep`, inside the timed call), drops it before the model's
    next call (`release`) and, after a round, compares the pair when the round is drawn (`after_round`).
    `call()`: the round's call number and the draw its values came from (None: made in place, not
    saved for the verifier)."""

    def __init__(self, secret: int, settings: dict, reference, outputs_dir, call):
        self._rng = random.Random(f"timed outputs:{secret}")
        self._tolerances = (settings.get("atol"), settings.get("rtol"),
                            getattr(reference, "output_names", None), getattr(reference, "scaled_outputs", frozenset()))
        self._outputs_dir = outputs_dir
        self._call = call
        self.last: dict[str, object] = {}
        self.rounds = 0
        self.checked = 0
        self.saved: list[int] = []
        self._saved_bytes = 0

    def keep(self, name: str, output):
        self.last[name] = output
        return output

    def release(self, name: str) -> None:
        self.last.pop(name, None)

    def release_all(self) -> None:
        self.last.clear()

    def _drawn(self) -> bool:
        self.rounds += 1
        return self.rounds <= CHECKED_FIRST or self._rng.random() < CHECKED_FIRST / self.rounds

    def after_round(self) -> None:
        if not self._drawn() or "reference" not in self.last or "candidate" not in self.last:
            return
        self.checked += 1
        call, draw = self._call()
        atol, rtol, names, scaled = self._tolerances
        outcome = compare_outputs(self.last["reference"], self.last["candidate"], atol, rtol, names, scaled)
        if not outcome.passed:
            if draw is not None:
                output_exchange.save_timed_output(self._outputs_dir, call, draw, self.last["candidate"])
            raise WrongTimedOutput(call, outcome.reason)
        if draw is not None:
            self._save(call, draw)

    def _save(self, call: int, draw: int) -> None:
        """Reservoir sampling over the checked calls: each is among the saved ones with equal chance."""
        size = tensors.tensor_bytes([self.last["candidate"]])
        if len(self.saved) < SAVED_CALLS and (not self.saved or self._saved_bytes + size <= SAVED_BYTES):
            self.saved.append(call)
            self._saved_bytes += size
            output_exchange.save_timed_output(self._outputs_dir, call, draw, self.last["candidate"])
            return
        slot = self._rng.randrange(self.checked)
        if slot < len(self.saved):
            output_exchange.remove_timed_output(self._outputs_dir, self.saved[slot])
            self.saved[slot] = call
            output_exchange.save_timed_output(self._outputs_dir, call, draw, self.last["candidate"])
