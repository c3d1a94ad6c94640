"""Correctness trials a cache cannot pass, and stateful models judged fairly (judging integrity II,
items 1 and 2), judged for real on CPU.

Each adversarial bundle here got the wrong outcome before these trials: the address-keyed memo
passed (every trial's inputs were freed, so a cache keyed on addresses was never stale by
construction), the honest stateful port was rejected (the candidate got an extra call and its
output, an alias of its hidden state, was compared after that call had overwritten it).
"""

import pytest
import torch

from profiler_agent.trials.call_plan import Call, call_plan, trials_that_fit
from profiler_agent.trials.correctness_trials import refill

FAST = ("--timing-budget", "0.2")

# Remembers each output by its input's address: computes only on an address it has not seen.
ADDRESS_MEMO = '''
    import torch

    class ModelNew(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.memo = {}

        def forward(self, x):
            key = x.data_ptr()
            if key not in self.memo:
                self.memo[key] = torch.relu(x)
            return self.memo[key]
'''

# The CPU analogue of replaying a CUDA graph captured on the first call: it remembers its first
# input's address and reads from there on every call, into a buffer it returns each time.
FIRST_ADDRESS_REPLAY = '''
    import ctypes, torch

    class ModelNew(torch.nn.Module):
        def forward(self, x):
            if not hasattr(self, "address"):
                self.address, self.shape = x.data_ptr(), x.shape
                self.out = torch.empty_like(x)
            raw = (ctypes.c_float * self.out.numel()).from_address(self.address)
            self.out.copy_(torch.frombuffer(raw, dtype=torch.float32).view(self.shape).clamp_min(0))
            return self.out
'''

# An RNN cell whose hidden state is a buffer updated in place; the output is that buffer.
STATEFUL_REFERENCE = '''
    import torch
    import torch.nn as nn

    batch, hidden = 64, 128


    class Model(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.W = nn.Parameter(torch.randn(n, n) / n**0.5)
            self.U = nn.Parameter(torch.randn(n, n) / n**0.5)
            self.register_buffer("h", torch.zeros(batch, n))

        def forward(self, x):
            self.h.copy_(torch.tanh(x @ self.W + self.h @ self.U))
            return self.h


    def get_inputs():
        return [torch.randn(batch, hidden)]


    def get_init_inputs():
        return [hidden]
'''

# A faithful port: the same parameters and state, one fused addmm.
STATEFUL_PORT = '''
    import torch
    import torch.nn as nn

    batch = 64


    class ModelNew(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.W = nn.Parameter(torch.randn(n, n) / n**0.5)
            self.U = nn.Parameter(torch.randn(n, n) / n**0.5)
            self.register_buffer("h", torch.zeros(batch, n))

        def forward(self, x):
            self.h.copy_(torch.tanh(torch.addmm(x @ self.W, self.h, self.U)))
            return self.h
'''

# Forgets the hidden state: right on its first call (the state starts at zero), wrong after.
STATELESS_PORT = '''
    import torch
    import torch.nn as nn


    class ModelNew(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.W = nn.Parameter(torch.randn(n, n) / n**0.5)
            self.U = nn.Parameter(torch.randn(n, n) / n**0.5)

        def forward(self, x):
            return torch.tanh(x @ self.W)
'''


def _stateful(make_bundle, candidate: str, name: str):
    return make_bundle(candidate, name=name, **{"torchcode.py": STATEFUL_REFERENCE})


# ---- a cache keyed on addresses cannot pass -----------------------------------------------------

def test_an_output_remembered_by_input_address_is_a_wrong_answer(make_bundle, judge):
    result = judge(make_bundle(ADDRESS_MEMO), *FAST).result
    assert result["status"] == "wrong_answer"
    # every trial at its own address: the memo computes honestly there; the repeat comes in trial
    # 1's input tensors holding trial 0's values, where the memo hands back trial 1's output
    assert result["correctness"]["trials"] == 3
    assert result["reason"].startswith("repeat of trial 0 (its inputs again, written into trial 1's input tensors)")
    assert "max abs error" in result["reason"] and result["correctness"]["max_abs_err"] > 0.1
    assert result["timing"]["speedup"] is None


def test_reading_from_the_first_inputs_address_is_a_wrong_answer(make_bundle, judge):
    """Trial 0's inputs are still alive at trial 1: the replay reads trial 0's values, not trial 1's."""
    result = judge(make_bundle(FIRST_ADDRESS_REPLAY), *FAST).result
    assert result["status"] == "wrong_answer"
    assert result["reason"].startswith("trial 1: output 0: max abs error")
    assert result["correctness"]["trials"] == 2


# ---- stateful models ----------------------------------------------------------------------------

def test_a_faithful_port_of_a_stateful_reference_passes(make_bundle, judge):
    result = judge(_stateful(make_bundle, STATEFUL_PORT, "port"), *FAST).result
    assert result["status"] == "passed", result["reason"]
    assert result["reason"] is None
    assert result["correctness"]["trials"] == 3 and result["correctness"]["max_abs_err"] < 1e-5
    # the repeat differs from the first output for both models (the state moved on): no flag
    assert "nondeterministic_output" not in result["flags"]


def test_a_stateful_candidate_wrong_from_its_second_call_fails_at_trial_1(make_bundle, judge):
    result = judge(_stateful(make_bundle, STATELESS_PORT, "forgetful"), *FAST).result
    assert result["status"] == "wrong_answer"
    assert result["reason"].startswith("trial 1: output 0: max abs error")
    assert result["correctness"]["trials"] == 2


def test_a_nondeterministic_candidate_is_flagged_where_the_reference_repeats_itself(make_bundle, judge):
    """The stateless ReLU repeats bit for bit: noise within tolerance is flagged (and passes)."""
    result = judge(make_bundle('''
        import torch

        class ModelNew(torch.nn.Module):
            def forward(self, x):
                return torch.relu(x) + torch.rand_like(x) * 1e-6
    '''), *FAST).result
    assert result["status"] == "passed" and "nondeterministic_output" in result["flags"]


# ---- the plan shared by the judged process and the verifier ----------------------------------------

def test_the_plan_calls_every_trial_then_repeats_trial_0_into_trial_1s_tensors():
    assert call_plan(3) == [Call(0), Call(1), Call(2), Call(0, repeat=True, into=1)]
    # no trial 1 (memory allowed one trial): written into trial 0's own tensors, nothing more kept
    assert call_plan(1) == [Call(0), Call(0, repeat=True, into=0)]
    assert call_plan(1)[-1].label == "repeat of trial 0 (its inputs again, written into trial 0's input tensors)"


@pytest.mark.parametrize(
    "requested, input_bytes, capacity, expected",
    [
        (3, 1 << 20, 16 << 30, 3),  # small inputs: all trials
        (3, 1 << 30, 16 << 30, 3),  # 8 copies of 1 GiB in half of 16 GiB
        (3, 1 << 30, 10 << 30, 2),  # 5 GiB holds 2 trials' copies; the repeat reuses trial 1's tensors
        (3, 4 << 30, 10 << 30, 1),  # not even one: one trial all the same (as before)
        (5, 1 << 30, 14 << 30, 3),  # 7 GiB: 3 trials
        (3, 1 << 20, None, 3),  # capacity unknown: as asked
    ],
)
def test_trials_that_fit_keep_every_calls_two_copies_in_half_the_capacity(requested, input_bytes, capacity, expected):
    assert trials_that_fit(requested, input_bytes, capacity) == expected


def test_refill_writes_into_the_same_tensors_or_refuses_other_layouts():
    buffer, other = torch.zeros(4, 3), torch.ones(4, 3)
    address = buffer.data_ptr()
    refilled = refill([buffer, 7], [other, 7])
    assert refilled[0] is buffer and buffer.data_ptr() == address and torch.equal(buffer, other)
    assert refill([torch.zeros(3, 4)], [other]) is None  # another shape
    assert refill([torch.zeros(4, 3, dtype=torch.float64)], [other]) is None
    assert refill([torch.zeros(3, 4).t()], [other]) is None  # not contiguous
    assert refill([buffer], [other, other]) is None


def test_fewer_trials_when_the_memory_limit_cannot_hold_every_trials_inputs(make_bundle, judge):
    """64 MiB of input per call, two copies each: half of a 600 MiB limit holds two trials' (the
    repeat is written into trial 1's tensors). The judged process and the verifier both work that
    out: the verdict stands."""
    big_input_sum = """
        import torch

        class Model(torch.nn.Module):
            def forward(self, x):
                return x.sum(dim=1)

        def get_inputs():
            return [torch.randn(16384, 1024)]

        def get_init_inputs():
            return []
    """
    bundle = make_bundle('''
        import torch

        class ModelNew(torch.nn.Module):
            def forward(self, x):
                return x.sum(dim=1)
    ''', **{"torchcode.py": big_input_sum})
    result = judge(bundle, "--memory-limit", "600M", *FAST).result
    assert result["status"] == "passed", result["reason"]
    assert result["correctness"]["trials"] == 2
    assert "verifier: only 2 of 3 trials fit in memory" in result["logs"]["stderr"]
