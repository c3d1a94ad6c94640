"""Every timed call runs on values no earlier call saw, and the timed calls' outputs are checked
(profiler_agent.measure.input_sets, profiler_agent.measure.timed_outputs), judged for real on the CPU.

The candidates below are honest on the correctness trials. The partial one then computes a fifth
of the rows and returns the rest from its previous output; the fingerprinting one answers from
memory whenever a few input values repeat. Before, the timed sets rotated four draws with the same
values, so the fingerprint hit from the fifth call on and the partial one passed unflagged at several
times its honest figure.
"""

import random
import re

import pytest
import torch

from profiler_agent.measure import input_sets, timed_outputs
from profiler_agent.trials import output_exchange
from tests.agent.test_fresh_inputs import SLOW_REFERENCE, SLOW_RELU

FAST = ("--timing-budget", "0.5")

PARTIAL = SLOW_RELU + '''
class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.calls, self.previous = 0, None

    def forward(self, x):
        self.calls += 1
        if self.previous is None or self.calls <= 12:  # the correctness trials and a little more
            self.previous = slow_relu(x)
            return self.previous.clone()
        out = self.previous.clone()
        rows = x.shape[0] // 5
        out[:rows] = slow_relu(x[:rows])  # a fifth of the work; the rest is the previous call's
        self.previous = out
        return out
'''

FINGERPRINT = SLOW_RELU + '''
class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.memo = {}

    def forward(self, x):
        flat = x.reshape(-1)
        key = (float(flat[0]), float(flat[1]), float(flat[-1]))  # a few values: the memo's fingerprint
        if key not in self.memo:
            self.memo[key] = slow_relu(x)
        return self.memo[key].clone()
'''

# ---- the values of each call -------------------------------------------------------------------

def test_no_timed_call_sees_values_an_earlier_call_saw_and_both_models_see_the_same():
    draws = [[torch.randn(64, 8), torch.arange(64)], [torch.randn(64, 8), torch.arange(64)]]
    reference = input_sets.FreshInputs([[t.clone() for t in d] for d in draws * 2], draws, secret=1234)
    candidate = input_sets.FreshInputs([[t.clone() for t in d] for d in draws * 2], draws, secret=1234)
    fingerprints = set()
    for _ in range(200):
        reference.advance()
        candidate.advance()
        x, index = candidate.args
        assert torch.equal(x, reference.args[0]) and x.data_ptr() != reference.args[0].data_ptr()
        assert torch.equal(index, torch.arange(64))  # indices as drawn
        base = draws[candidate.draw][0]
        assert torch.equal(torch.sign(x), torch.sign(base))  # signs and zeros kept
        assert float((x / base - 1).abs().max()) <= input_sets.JITTER + 1e-6
        fingerprints.add(tuple(x.reshape(-1)[:3].tolist()))
    assert len(fingerprints) == 200  # not one repeat of three values in 200 calls


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_the_verifier_makes_each_calls_values_again_bit_for_bit(dtype):
    draws = [[torch.randn(32, 16).to(dtype)], [torch.randn(32, 16).to(dtype)]]
    fresh = input_sets.FreshInputs([[draws[0][0].clone()], [draws[1][0].clone()]], draws, secret=99)
    for _ in range(5):
        fresh.advance()
    made_again = input_sets.call_values(draws[fresh.draw], 99, fresh.calls)
    assert torch.equal(made_again[0], fresh.args[0])
    other_secret = input_sets.call_values(draws[fresh.draw], 98, fresh.calls)
    assert not torch.equal(other_secret[0], fresh.args[0])  # the values depend on the secret seed
    # even 16-bit values get dozens of values per element: three of them rarely repeat together
    seen = {tuple(input_sets.call_values(draws[0], 99, call)[0].reshape(-1)[:3].tolist()) for call in range(300)}
    assert len(seen) > 290


def test_the_bases_fit_beside_the_sets_or_the_sets_are_rescaled_in_place():
    mb = 1 << 20
    assert input_sets.plan_sets(1 * mb, 10_000 * mb, 4) == (4, True)
    assert input_sets.plan_sets(100 * mb, 100 * mb, 4) == (1, True)  # one base beside one set per model
    assert input_sets.plan_sets(100 * mb, 399 * mb, 4) == (1, True)
    assert input_sets.plan_sets(100 * mb, 400 * mb, 4) == (2, True)  # a second set: one per model, and its base
    assert input_sets.plan_sets(100 * mb, 99 * mb, 4) == (1, False)


def test_the_rounds_compared_are_the_first_66_then_fewer_and_a_1_in_10_liar_is_caught():
    checker = timed_outputs.TimedOutputs(5, {}, None, None, lambda: (0, None))
    drawn = [checker._drawn() for _ in range(5000)]
    assert all(drawn[:timed_outputs.CHECKED_FIRST])
    assert 200 < sum(drawn) < 500  # about 66 (1 + ln(5000 / 66))
    # whichever 1 in 10 calls lie, among the drawn ones
    caught = sum(any(drawn[i] for i in random.Random(k).sample(range(5000), 500)) for k in range(200))
    assert caught == 200


def test_a_saved_timed_output_that_is_not_the_harnesss_is_missing(tmp_path):
    output_exchange.save_timed_output(tmp_path, 7, 1, torch.ones(3))
    assert output_exchange.timed_calls(tmp_path) == [7]
    assert output_exchange.load_timed_output(tmp_path, 7, 4)[0] == 1
    with pytest.raises(output_exchange.MissingOutput):
        output_exchange.load_timed_output(tmp_path, 7, 1)  # a draw the harness never makes
    torch.save({"call": 8, "draw": 0, "output": torch.ones(3)}, tmp_path / "timed-9.pt")
    with pytest.raises(output_exchange.MissingOutput):
        output_exchange.load_timed_output(tmp_path, 9, 4)  # another call's


# ---- judged for real ---------------------------------------------------------------------------

def test_a_candidate_doing_part_of_the_work_on_timed_calls_is_a_wrong_answer_naming_the_call(make_bundle, judge):
    result = judge(make_bundle(PARTIAL, name="partial"), *FAST).result
    assert result["status"] == "wrong_answer", result["logs"]["stderr"][-2000:]
    reason = result["reason"]
    assert reason.startswith("timed call ") and "found in the judged process" not in reason, reason
    assert result["timing"]["speedup"] is None


def test_a_memo_keyed_on_a_few_values_never_answers_a_timed_call(make_bundle, judge):
    """Its memo misses on every timed call: either it is timed on its real work, or (had three values
    ever repeated) its remembered output is wrong for the call's values. Read within the one judging,
    against what its memo makes of a repeated input (a copy instead of seventeen passes): judged
    apart on a loaded host, two speedups drift by more than twice."""
    memo = judge(make_bundle(FINGERPRINT, name="fingerprint", **{"torchcode.py": SLOW_REFERENCE}), *FAST).result
    assert memo["status"] == "passed", memo["logs"]["stderr"][-2000:]
    stderr = memo["logs"]["stderr"]
    repeated_ms = float(re.search(r"repeated input set \(fastest ms\): .*candidate ([0-9.]+) against", stderr).group(1))
    # on main the fingerprint hit from the fifth timed call on: its median was a memo hit's
    assert memo["timing"]["candidate"]["median_ms"] > 3 * repeated_ms, stderr[-3000:]
    assert "input_memoized" in memo["flags"]  # the memo is there: it answers a repeated input
    assert "rounds compared with the reference's" in stderr and "kept as drawn" in stderr


REWRITER = PARTIAL.replace("class ModelNew", '''
# the harness's own comparison of timed outputs runs in this process: it can be switched off
import profiler_agent.measure.timed_outputs as checked
from profiler_agent.checkers.compare_outputs import Comparison
checked.compare_outputs = lambda *args, **kwargs: Comparison(True)


class ModelNew''', 1)


def test_a_candidate_that_switches_off_the_judged_processs_check_is_caught_by_the_verifier(make_bundle, judge):
    """The judged process's comparison only stops the timing early: the verifier makes the saved calls'
    values again from the seed and runs its own reference on them."""
    result = judge(make_bundle(REWRITER, name="rewriter"), *FAST).result
    assert result["status"] == "wrong_answer", result["logs"]["stderr"][-2000:]
    assert result["reason"].startswith("timed call "), result["reason"]
    assert "wrong answer: timed call" not in result["logs"]["stderr"].split("[profiler_agent] verifier")[0]


def test_a_wrong_timed_call_the_verifier_could_not_check_again_stands_and_nothing_else_does():
    from profiler_agent.judge import failure_reasons

    verdict = {"passed": True, "reason": None}
    failure_reasons.timed_call_failure_stands(verdict, {"passed": False, "reason": "timed call 5: output 0: off"})
    assert verdict["passed"] is False and verdict["reason"].startswith("timed call 5: output 0: off")
    # a trial the judged process called wrong is the verifier's to decide (it checked it again)
    trial = {"passed": True, "reason": None}
    failure_reasons.timed_call_failure_stands(trial, {"passed": False, "reason": "trial 1: output 0: off"})
    assert trial == {"passed": True, "reason": None}
