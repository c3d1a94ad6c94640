"""Adversarial bundles that hoard memory in each phase, judged end to end under a 1 GiB limit (build
and run alike). This host has no cgroup memory controller, so the agent's watchdog over the process
tree's resident memory holds the limit (profiler_agent.sandbox.memory_watchdog); each is `memory_limit`
with a message that names the phase."""

import pytest

LIMITS = ("--memory-limit", "1G", "--compile-memory-limit", "1G", "--timing-budget", "0.2")

HOARD_AT_IMPORT = '''
    import torch

    HOARD = torch.ones(2 * 1024**3 // 4)  # ~2 GiB, every page written, while the module is imported

    class ModelNew(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x)
'''

# Helper processes each hold 1.25 GiB: each has its own address space, so a limit per process
# (RLIMIT_AS) misses them; the tree's resident memory does not.
HOARD_IN_HELPERS = '''
    import subprocess, sys, torch

    HELPER = "import time; hoard = b'x' * (5 << 28); time.sleep(3)"

    def hoard():
        helpers = [subprocess.Popen([sys.executable, "-c", HELPER]) for _ in range(2)]
        for helper in helpers:
            helper.wait()

    class ModelNew(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.hoarded = {in_init}
            if self.hoarded:
                hoard()

        def forward(self, x):
            if not self.hoarded:
                self.hoarded = True
                hoard()
            return torch.relu(x)
'''

HOARD_IN_PROCESS = '''
    import torch

    class ModelNew(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.hoard = torch.ones(2 * 1024**3 // 4) if {in_init} else None

        def forward(self, x):
            if self.hoard is None:
                self.hoard = torch.ones(2 * 1024**3 // 4)
            return torch.relu(x)
'''


def test_memory_hoarded_while_importing_is_a_memory_limit_of_the_build_phase(make_bundle, judge):
    result = judge(make_bundle(HOARD_AT_IMPORT), *LIMITS).result
    assert result["status"] == "memory_limit", result["logs"]["stderr"][-2000:]
    assert "memory limit 1 GiB exceeded while importing the candidate (build phase)" in result["logs"]["stderr"]
    assert "GiB resident" in result["logs"]["stderr"]


@pytest.mark.parametrize("in_init, phase", [
    (True, "while constructing the models, in __init__ (run phase)"),
    (False, "while running the correctness trials, in forward (run phase)"),
])
def test_memory_hoarded_by_helper_processes_is_caught_in_the_tree(make_bundle, judge, in_init, phase):
    result = judge(make_bundle(HOARD_IN_HELPERS.format(in_init=in_init)), *LIMITS).result
    assert result["status"] == "memory_limit", result["logs"]["stderr"][-2000:]
    assert f"memory limit 1 GiB exceeded {phase}" in result["logs"]["stderr"]
    assert "the agent's memory watchdog killed the process tree" in result["logs"]["stderr"]


@pytest.mark.parametrize("in_init, phase", [
    (True, "while constructing the models, in __init__ (run phase)"),
    (False, "while calling the candidate, in forward (run phase)"),
])
def test_memory_hoarded_in_the_judged_process_names_the_phase(make_bundle, judge, in_init, phase):
    # caught by whichever comes first: RLIMIT_AS (an allocation error) or the watchdog
    result = judge(make_bundle(HOARD_IN_PROCESS.format(in_init=in_init)), *LIMITS).result
    assert result["status"] == "memory_limit", result["logs"]["stderr"][-2000:]
    stderr = result["logs"]["stderr"]
    assert "memory limit 1 GiB exceeded while" in stderr and ("in __init__" in stderr) == in_init
    assert "in forward" in stderr or in_init
