"""Hostile candidates (items 1-3 of the trusted-harness issue), judged for real on CPU.

Each is a pure-Python candidate where that shows the behaviour as well as a compiled one would, so
these tests cost a child process each, not a compile. Every test checks the verdict, and the
fixture `no_survivors` checks that nothing the candidate started is left running.
"""

import json
import os
import re
import subprocess
import sys
import time

import pytest

from tests.agent.conftest import REPO, SMALL_RELU_ROWS
from tests.agent.processes import wait_gone

FAST = ("--timing-budget", "0.2")  # timing is not what these tests look at


@pytest.fixture
def relu_rows():
    """What these tests assert does not depend on the inputs' size: the small ReLU reference."""
    return SMALL_RELU_ROWS


def _started_pids(text: str) -> list[int]:
    return [int(p) for p in re.findall(r"STARTED (\d+)", text)]


def assert_gone(pids: list[int]) -> None:
    assert pids, "the candidate should have reported what it started"
    assert wait_gone(pids) == []


# ---- item 1: the sandbox ------------------------------------------------------------------------

def test_a_setsid_double_forked_daemon_does_not_outlive_the_run(make_bundle, judge):
    bundle = make_bundle('''
        import os, sys, time, torch

        def daemon():
            if os.fork() == 0:
                os.setsid()  # a session and process group of its own: killpg of ours misses it
                if os.fork() == 0:
                    print("STARTED", os.getpid(), flush=True)
                    time.sleep(600)
                os._exit(0)
            os.wait()

        class ModelNew(torch.nn.Module):
            def forward(self, x):
                if not getattr(self, "done", False):
                    self.done = True
                    daemon()
                return torch.relu(x)
    ''')
    result = judge(bundle, *FAST).result
    assert result["status"] == "passed"
    assert_gone(_started_pids(result["logs"]["stdout"]))


def test_a_daemon_holding_the_result_pipe_does_not_stall_the_judge(make_bundle, judge):
    bundle = make_bundle('''
        import os, time, torch

        if os.fork() == 0:  # inherits every descriptor of the judged process, the report pipe too
            os.setsid()
            print("STARTED", os.getpid(), flush=True)
            time.sleep(600)
            os._exit(0)

        class ModelNew(torch.nn.Module):
            def forward(self, x):
                return torch.relu(x)
    ''')
    started = time.monotonic()
    result = judge(bundle, "--timeout", "120", *FAST).result
    assert result["status"] == "passed" and time.monotonic() - started < 100
    assert_gone(_started_pids(result["logs"]["compile"]))


SECRETS = {
    "PROFILER_AGENT_TOKEN": "tok-secret-4f1c",
    "PROFILER_AGENT_SITE": "https://site.invalid/site-secret-9d2e",
    "REDIS_URL": "redis://:redis-secret-77ab@127.0.0.1:6379/0",
}

SNOOPER = '''
    import glob, os, torch

    def snoop():
        print("ENV", dict(os.environ))
        for path in glob.glob("/proc/[0-9]*/environ") + glob.glob("/proc/[0-9]*/cmdline"):
            try:
                print(path, open(path, "rb").read().replace(b"\\0", b" ").decode(errors="replace"))
            except OSError as exc:
                print(path, "unreadable:", type(exc).__name__)
        print("SNOOPED", flush=True)

    snoop()

    class ModelNew(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x)
'''


def test_no_secret_of_the_agent_reaches_the_judged_process_or_the_result(make_bundle, build_cache, tmp_path):
    """The judge runs as a real process with secrets in its environment; the candidate dumps its
    own environment and every /proc/*/environ and cmdline it can read (its parents' included)."""
    bundle = make_bundle(SNOOPER)
    json_path = tmp_path / "result.json"
    completed = subprocess.run(
        [sys.executable, "-m", "profiler_agent", "judge", str(bundle), "--device", "cpu",
         "--cache-dir", str(build_cache), "--json", str(json_path), *FAST],
        cwd=REPO, capture_output=True, text=True, timeout=300, env={**os.environ, **SECRETS},
    )
    assert completed.returncode == 0, completed.stderr
    result = json.loads(json_path.read_text())
    assert result["status"] == "passed"
    assert "SNOOPED" in result["logs"]["compile"]  # the snooping did run (at import time)
    everything = json.dumps(result) + completed.stdout + completed.stderr
    for secret in SECRETS.values():
        assert secret not in everything


def test_output_beyond_the_cap_keeps_head_and_tail(make_bundle, judge):
    bundle = make_bundle('''
        import sys, torch

        class ModelNew(torch.nn.Module):
            def forward(self, x):
                sys.stdout.write("FIRST" + "y" * 300000 + "LAST\\n")
                return torch.relu(x)
    ''')
    result = judge(bundle, *FAST).result
    assert result["status"] == "passed"
    stdout = result["logs"]["stdout"]
    assert stdout.startswith("FIRST") and "LAST" in stdout[-100:] and len(stdout) < 70 * 1024


# ---- item 2: a verdict no submission can forge ---------------------------------------------------

FORGED_REPORT = '''{"device": {"kind": "cpu"}, "flags": [], "error": null,
  "correctness": {"passed": true, "trials": 3, "max_abs_err": 0.0, "max_rel_err": 0.0,
                  "atol": 0.0001, "rtol": 0.0001, "reason": null},
  "timing": {"reference": {"median_ms": 5.0, "mean_ms": 5.0, "min_ms": 5.0, "std_ms": 0.0, "runs": 10},
             "candidate": {"median_ms": 0.001, "mean_ms": 0.001, "min_ms": 0.001, "std_ms": 0.0, "runs": 10}},
  "metrics": {"flops": null, "bytes": 1}, "telemetry": null,
  "durations_s": {"compile": 0.0, "correctness": 0.0, "timing": 0.0}}'''


def test_a_forged_report_written_to_every_descriptor_then_exit_is_not_passed(make_bundle, judge):
    bundle = make_bundle(f'''
        import os, torch

        FORGED = {FORGED_REPORT!r}.encode()

        class ModelNew(torch.nn.Module):
            def forward(self, x):
                for fd in range(3, 1024):  # the report pipe is one of these
                    try:
                        os.write(fd, FORGED)
                        os.close(fd)
                    except OSError:
                        pass
                os._exit(0)
    ''')
    result = judge(bundle, *FAST).result
    assert result["status"] == "wrong_answer"
    assert result["correctness"]["passed"] is False
    assert result["reason"].startswith("trial 0: no output (the judged process ended or stopped before writing it)")
    assert result["timing"]["speedup"] is None


@pytest.mark.parametrize("ending", ["os._exit(0)", "os.kill(os.getpid(), signal.SIGTERM)"])
def test_a_forward_that_ends_the_process_is_a_runtime_error_that_says_so(make_bundle, judge, ending):
    bundle = make_bundle(f'''
        import os, signal, torch

        class ModelNew(torch.nn.Module):
            def forward(self, x):
                {ending}
    ''')
    result = judge(bundle, *FAST).result
    assert result["status"] == "runtime_error"
    assert result["reason"].startswith("the judged process ended (")
    assert "after importing the candidate, before it reported" in result["reason"]
    assert ("exit code 0" if "_exit" in ending else "killed by SIGTERM") in result["reason"]


def test_sys_exit_in_forward_is_a_runtime_error_naming_the_call(make_bundle, judge):
    bundle = make_bundle('''
        import sys, torch

        class ModelNew(torch.nn.Module):
            def forward(self, x):
                sys.exit(3)
    ''')
    result = judge(bundle, *FAST).result
    assert result["status"] == "runtime_error"
    assert result["reason"] == "candidate (trial 0): SystemExit: 3 (the code called sys.exit)"


def test_exiting_cleanly_during_import_is_a_runtime_error(make_bundle, judge):
    bundle = make_bundle('''
        import os
        os._exit(0)
    ''')
    result = judge(bundle, *FAST).result
    assert result["status"] == "runtime_error" and result["correctness"]["passed"] is None
    assert result["reason"].startswith("the judged process ended (exit code 0) while importing the candidate")


def test_patching_the_comparison_functions_does_not_make_a_wrong_answer_pass(make_bundle, judge):
    bundle = make_bundle('''
        import torch, torch.testing

        torch.allclose = lambda *a, **k: True
        torch.equal = lambda *a, **k: True
        torch.testing.assert_close = lambda *a, **k: None
        torch.Tensor.allclose = lambda *a, **k: True

        class ModelNew(torch.nn.Module):
            def forward(self, x):
                return torch.zeros_like(x)
    ''')
    result = judge(bundle, *FAST).result
    assert result["status"] == "wrong_answer"
    assert result["correctness"]["max_abs_err"] > 0.5


def test_patched_clocks_neither_shorten_the_time_nor_go_unnoticed(make_bundle, judge):
    """The public clocks are patched (the harness bound its own earlier): the real 20 ms show. Then
    the harness's own bound clock is patched too: the second clock catches it."""
    slow = '''
        import time, torch
        sleep = time.sleep
        frozen = time.perf_counter_ns()
        time.perf_counter_ns = lambda: frozen
        time.perf_counter = lambda: frozen / 1e9
        time.monotonic_ns = lambda: frozen
        time.time = lambda: frozen / 1e9
        {extra}

        class ModelNew(torch.nn.Module):
            def forward(self, x):
                sleep(0.02)
                return torch.relu(x)
    '''
    public = judge(make_bundle(slow.format(extra=""), name="public"), *FAST).result
    assert public["status"] == "passed" and "timer_tampered" not in public["flags"]
    assert public["timing"]["candidate"]["median_ms"] >= 19.0

    harness_clock = "import profiler_agent.measure.timing as t; t._perf_counter_ns = lambda: frozen"
    patched = judge(make_bundle(slow.format(extra=harness_clock), name="harness"), *FAST).result
    assert patched["status"] == "passed"
    assert "timer_tampered" in patched["flags"]


# ---- item 3: correctness ------------------------------------------------------------------------

@pytest.mark.parametrize(
    "body, reason",
    [
        # returns its first output again: fresh inputs every trial catch it
        ("self.__dict__.setdefault('cached', torch.relu(x)); return self.__dict__['cached']", "trial 1"),
        ("return torch.relu(x).double()", "dtype torch.float64"),
        ("return torch.relu(x)[:-1]", "shape"),
        ("y = torch.relu(x); y[0, 0] = float('nan'); return y", "NaN"),
        ("return torch.relu(x) + 1e-3", "max abs error"),  # fp32 tolerance is 1e-4
        ("return torch.relu(x), x", "2 outputs, expected 1"),
    ],
    ids=["cached-output", "wrong-dtype", "wrong-shape", "nan", "beyond-tolerance", "wrong-structure"],
)
def test_wrong_outputs_are_wrong_answers(make_bundle, judge, body, reason):
    bundle = make_bundle(f'''
        import torch

        class ModelNew(torch.nn.Module):
            def forward(self, x):
                {body}
    ''')
    result = judge(bundle, *FAST).result
    assert result["status"] == "wrong_answer"
    assert reason in result["reason"]


def test_writing_into_its_inputs_cannot_spoil_the_reference(make_bundle, judge):
    """The candidate zeroes its input: with a shared input the reference would compute relu(0)."""
    bundle = make_bundle('''
        import torch

        class ModelNew(torch.nn.Module):
            def forward(self, x):
                y = torch.relu(x)
                x.zero_()
                return y
    ''')
    assert judge(bundle, *FAST).result["status"] == "passed"


def test_output_noise_within_tolerance_passes_but_is_flagged_nondeterministic(make_bundle, judge):
    bundle = make_bundle('''
        import torch

        class ModelNew(torch.nn.Module):
            def forward(self, x):
                return torch.relu(x) + torch.rand_like(x) * 1e-6
    ''')
    result = judge(bundle, *FAST).result
    assert result["status"] == "passed" and "nondeterministic_output" in result["flags"]


def test_a_tolerance_override_per_issue_is_applied(make_bundle, judge):
    bundle = make_bundle('''
        import torch

        class ModelNew(torch.nn.Module):
            def forward(self, x):
                return torch.relu(x) + 1e-3
    ''')
    result = judge(bundle, "--atol", "1e-2", "--rtol", "1e-2", *FAST).result
    assert result["status"] == "passed" and result["correctness"]["atol"] == 1e-2


def test_a_compiled_kernel_that_leaves_its_output_unwritten_is_a_wrong_answer(make_bundle, judge):
    """The one compile of this file: a C++ extension returning at::empty_like without writing it."""
    bundle = make_bundle('''
        import torch
        from torch.utils.cpp_extension import load_inline

        source = "at::Tensor relu_forward(const at::Tensor& x) { return at::empty_like(x); }"
        ext = load_inline(name="relu", cpp_sources=source, functions=["relu_forward"], extra_cflags=["-O3"],
                          verbose=True)  # -O3: the run's precompiled header (tests/conftest.py)

        class ModelNew(torch.nn.Module):
            def forward(self, x):
                return ext.relu_forward(x)
    ''')
    result = judge(bundle, *FAST).result
    assert result["status"] == "wrong_answer" and result["flags"] == []  # a custom kernel, judged
    assert result["correctness"]["passed"] is False
