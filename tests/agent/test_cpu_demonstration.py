"""On the CPU the candidate's time is bounded from outside the judged process
(profiler_agent.judge.cpu_demonstration): a forger that rewrites the harness's timing at import is
flagged and ranked at the time the agent saw it take; an honest candidate is confirmed. Judged for
real, calls of a few milliseconds (shorter ones are not demonstrated)."""

import pytest

from profiler_agent.judge import cpu_demonstration, timing_bounds

FAST = ("--timing-budget", "0.5")

REFERENCE = '''
import torch, torch.nn as nn

class Model(nn.Module):
    def forward(self, a, b):
        return a @ b

def get_inputs():
    return [torch.randn(768, 768), torch.randn(768, 768)]  # milliseconds of work on 2 MiB of inputs

def get_init_inputs():
    return []
'''

HONEST = '''
import torch

class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        return a @ b
'''

MEMORY_BOUND = '''
import torch, torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

def get_inputs():
    return [torch.randn(4096, 1024)]  # 16 MiB: making the values costs about what the call costs

def get_init_inputs():
    return []
'''

# the harness's timing rewritten at import: the candidate's times divided by 5.7
FORGER = '''
import torch
import profiler_agent.measure.timing as _timing

_original = _timing.time_interleaved

def _forged(*args, **kwargs):
    timings = _original(*args, **kwargs)
    for times in (timings.times_ms, timings.walls_ms):
        if "candidate" in times:
            times["candidate"] = [t / 5.7 for t in times["candidate"]]
    return timings

_timing.time_interleaved = _forged
''' + HONEST


def _judged(make_bundle, judge, candidate, name, reference=REFERENCE):
    result = judge(make_bundle(candidate, name=name, **{"torchcode.py": reference}), *FAST).result
    assert result["status"] == "passed", result["logs"]["stderr"][-3000:]
    return result


def test_an_honest_candidate_on_cpu_is_confirmed_from_outside(make_bundle, judge):
    result = _judged(make_bundle, judge, HONEST, "honest")
    confirmation = result["timing"]["confirmation"]
    assert confirmation["method"] == timing_bounds.WALL_CLOCK.name, confirmation
    assert confirmation["confirmed"] is True, confirmation["reason"]
    assert "timing_unconfirmed" not in result["flags"]
    assert confirmation["kernel_ms"] > 0 and confirmation["reference_outside_ms"] > 0
    assert "cost: demonstration" in result["logs"]["stderr"]


def test_a_forger_rewriting_the_timing_on_cpu_is_flagged_and_ranked_at_what_it_showed(make_bundle, judge):
    honest = _judged(make_bundle, judge, HONEST, "honest")
    forged = _judged(make_bundle, judge, FORGER, "forger")
    confirmation = forged["timing"]["confirmation"]
    assert confirmation["confirmed"] is False and "timing_unconfirmed" in forged["flags"], confirmation
    assert "the time the agent saw it take from outside" in confirmation["reason"]
    # what every page shows: about the honest figure, not the forged one (5.7 times it)
    assert confirmation["timed_speedup"] > 3 * honest["timing"]["speedup"]
    assert forged["timing"]["speedup"] < 2 * honest["timing"]["speedup"]


def test_a_memory_bound_call_is_not_bounded_on_cpu_and_not_flagged(make_bundle, judge):
    result = _judged(make_bundle, judge, "import torch\nclass ModelNew(torch.nn.Module):\n"
                     "    def forward(self, x):\n        return torch.relu(x)\n", "relu", MEMORY_BOUND)
    confirmation = result["timing"]["confirmation"]
    if confirmation["method"] is None:  # a call under a millisecond on this host: not demonstrated at all
        assert confirmation["reason"] == "no device profiler on CPU, and calls under 1 ms are not timed from outside"
    else:
        assert confirmation["confirmed"] is not False, confirmation["reason"]
    assert "timing_unconfirmed" not in result["flags"]


def test_the_number_of_demonstrated_calls_fills_the_stretch_within_its_bounds():
    assert cpu_demonstration.calls_for(1.0) == cpu_demonstration.MAX_CALLS
    assert cpu_demonstration.calls_for(75.0) == 4
    assert cpu_demonstration.calls_for(1000.0) == cpu_demonstration.MIN_CALLS


@pytest.mark.parametrize("reported, record, holds", [(1.0, 1.9, True), (1.0, 2.1, False)])
def test_the_cpu_bound_allows_half_the_demonstrated_time(reported, record, holds):
    confirmation = timing_bounds.decide(reported, 1.0, timing_bounds.KernelRecord(record, 3, False), "", 1.0, "",
                                        timing_bounds.WALL_CLOCK)
    assert confirmation["confirmed"] is holds


def test_a_checksum_follows_every_value_and_survives_the_exchange(tmp_path):
    import torch

    from profiler_agent.trials import output_exchange

    output = (torch.randn(64, 8), torch.arange(5))
    output_exchange.save_output(tmp_path, 0, output)
    assert output_exchange.output_checksum(output_exchange.load_output(tmp_path, 0)) == output_exchange.output_checksum(output)
    changed = (output[0].clone(), output[1])
    changed[0][3, 2] += 1e-3
    assert output_exchange.output_checksum(changed) != output_exchange.output_checksum(output)
    assert output_exchange.output_checksum(output[0].double()) != output_exchange.output_checksum(output[0])


def test_shifted_values_need_the_secret_and_keep_integers():
    import torch

    from profiler_agent.measure import input_sets

    bases = [[torch.randn(1000), torch.arange(10)]]
    shifted = input_sets.ShiftedValues(bases, seed=3)
    first = [t.clone() for t in shifted.values(secret=11, call=0)]
    assert torch.equal(first[1], torch.arange(10))
    assert not torch.equal(first[0], bases[0][0])
    assert float((first[0] / bases[0][0] - 1).abs().max()) <= input_sets.JITTER + 1e-6
    assert not torch.equal(shifted.values(secret=12, call=0)[0], first[0])  # another secret, other values
    assert torch.equal(input_sets.ShiftedValues(bases, seed=3).values(secret=11, call=0)[0], first[0])  # made again alike
    transposed = [[torch.randn(16, 8).t()]]  # not contiguous: new values all the same
    made = input_sets.ShiftedValues(transposed, seed=3).values(secret=11, call=0)[0]
    assert made.shape == (8, 16) and not torch.equal(made, transposed[0][0])
    assert torch.equal(input_sets.ShiftedValues(transposed, seed=3).values(secret=11, call=0)[0], made)

