"""On the CPU the candidate's time is bounded from outside the judged process
(profiler_agent.judge.cpu_demonstration): the CPU time of a demonstration the agent starts with a
secret, read from /proc, and the reference's in the trusted check. A forger that rewrites the
harness's timing at import (the candidate's times divided, or the reference's multiplied) is flagged
and ranked at what the records show; an honest candidate is confirmed, on a busy host too (CPU
time is what load does not stretch). Judged for real, calls of a few milliseconds (shorter ones
are not demonstrated)."""

import pytest

from profiler_agent.judge import cpu_demonstration, timing_bounds

FAST = ("--timing-budget", "0.5")

REFERENCE = '''
import torch, torch.nn as nn

class Model(nn.Module):
    def forward(self, a, b):
        return a @ b @ b @ b @ b

def get_inputs():
    # tens of milliseconds of work on 2 MiB of inputs: four products for the values and the output of
    # one, so the harness's share of the stretch stays well under MAX_HARNESS_SHARE (one product: about
    # 25% on a quiet 2-core host, 44% on a loaded one)
    return [torch.randn(768, 768), torch.randn(768, 768)]

def get_init_inputs():
    return []
'''

HONEST = '''
import torch

class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        return a @ b @ b @ b @ b
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

# the harness's timing rewritten at import: one model's times scaled by 5.7 in the candidate's favour
FORGING = '''
import torch
import profiler_agent.measure.timing as _timing

_original = _timing.time_interleaved

def _forged(*args, **kwargs):
    timings = _original(*args, **kwargs)
    for times in (timings.times_ms, timings.walls_ms):
        if "{model}" in times:
            times["{model}"] = [t * {factor} for t in times["{model}"]]
    return timings

_timing.time_interleaved = _forged
'''
FORGER = FORGING.format(model="candidate", factor=1 / 5.7) + HONEST
REFERENCE_INFLATER = FORGING.format(model="reference", factor=5.7) + HONEST


def _judged(make_bundle, judge, candidate, name, reference=REFERENCE):
    result = judge(make_bundle(candidate, name=name, **{"torchcode.py": reference}), *FAST).result
    assert result["status"] == "passed", result["logs"]["stderr"][-3000:]
    return result


def test_an_honest_candidate_on_cpu_is_confirmed_from_outside(make_bundle, judge):
    result = _judged(make_bundle, judge, HONEST, "honest")
    confirmation = result["timing"]["confirmation"]
    assert confirmation["method"] == timing_bounds.CPU_TIME.name, confirmation
    assert confirmation["confirmed"] is True, confirmation["reason"]
    assert "timing_unconfirmed" not in result["flags"]
    assert confirmation["kernel_ms"] > 0 and confirmation["reference_kernel_ms"] > 0
    assert "cost: demonstration" in result["logs"]["stderr"]


@pytest.mark.parametrize("forger, caught_by", [
    # its own time below its record, or (a busy host slows what it reports too) its speedup
    (FORGER, ("the least time its work took as the agent read it from outside", "the reported speedup")),
    (REFERENCE_INFLATER, ("the reported speedup",)),
])
def test_a_forger_rewriting_the_timing_on_cpu_is_flagged_and_ranked_at_what_it_showed(make_bundle, judge, forger,
                                                                                       caught_by):
    forged = _judged(make_bundle, judge, forger, "forger")
    confirmation = forged["timing"]["confirmation"]
    assert confirmation["confirmed"] is False and "timing_unconfirmed" in forged["flags"], confirmation
    assert any(words in confirmation["reason"] for words in caught_by), confirmation["reason"]
    # what every page shows is what the agent read from outside, not the forged figure (5.7 times
    # that): read within the one judging, since two judgings on a loaded host drift by 2-3x
    assert confirmation["timed_speedup"] > 3 * forged["timing"]["speedup"]


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


@pytest.mark.parametrize("reported, record, holds", [(1.0, 3.9, True), (1.0, 4.1, False)])
def test_the_cpu_bound_allows_a_quarter_of_the_demonstrated_time(reported, record, holds):
    confirmation = timing_bounds.decide(reported, 1.0, timing_bounds.KernelRecord(record, 3, False), "", None, "",
                                        timing_bounds.CPU_TIME)
    assert confirmation["confirmed"] is holds


@pytest.mark.parametrize("reference_reported, holds", [(2.9, True), (3.1, False)])
def test_the_cpu_speedup_may_pass_the_records_three_times(reference_reported, holds):
    """Candidate 1 ms reported and shown; the reference's record 1 ms: a speedup of 1 by the records."""
    record = timing_bounds.KernelRecord(1.0, 3, False, reference_kernel_ms=1.0)
    confirmation = timing_bounds.decide(1.0, reference_reported, record, "", None, "", timing_bounds.CPU_TIME)
    assert confirmation["confirmed"] is holds, confirmation["reason"]


def test_cpu_time_bounds_the_wall_time_from_below_whatever_the_threads():
    from profiler_agent.sandbox import run_cpu

    start = run_cpu.CpuSample({(1, 1): 0, (1, 2): 0}, None, 2)
    one_thread = run_cpu.used_between(start, run_cpu.CpuSample({(1, 1): 90, (1, 2): 10}, None, 2))
    assert one_thread.wall_floor_ns() == 90  # no thread runs faster than real time
    many = run_cpu.CpuSample({(1, t): 10 for t in range(1, 21)}, None, 2)  # 20 threads on 2 cores
    assert run_cpu.used_between(start, many).wall_floor_ns() == 100
    # a cgroup keeps the time of processes that ended in between
    ended = run_cpu.used_between(run_cpu.CpuSample({}, 1000, 2), run_cpu.CpuSample({}, 1400, 2))
    assert ended.total_ns == 400 and ended.wall_floor_ns(100) == 150


def test_a_processes_own_cpu_time_is_read_from_outside(tmp_path):
    """A busy child's threads, read from /proc while it runs: its time grows with its work, not with
    the wall clock while it sleeps."""
    import subprocess
    import sys
    import time

    from profiler_agent.sandbox import run_cpu

    child = subprocess.Popen([sys.executable, "-c", "import sys,time\nsys.stdin.readline()\nt=time.process_time()\n"
                              "while time.process_time() - t < 0.2: pass\nprint('done', flush=True)\nsys.stdin.readline()"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        first = run_cpu.sample([child.pid])
        time.sleep(0.3)  # waiting for its line: no CPU time
        idle = run_cpu.used_between(first, run_cpu.sample([child.pid]))
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "done"  # 0.2 s of CPU time, however long a busy host takes
        busy = run_cpu.used_between(first, run_cpu.sample([child.pid]))
    finally:
        child.kill()
        child.wait()
    assert idle.total_ns < 50e6
    assert 0.15e9 < busy.busiest_thread_ns < 0.6e9 and busy.wall_floor_ns() >= busy.busiest_thread_ns


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
