"""A profile run's judging (`judge --mode profile`, the site's `mode: profile`): the correctness trials, then
the report. On this machine (no GPU): the CPU run's report says no profiler exists there and the run ends as
its trials decided; the runner around Nsight Compute is driven by a stand-in `ncu` (real processes, the real
sandbox and build cache) that checks the options the agent passes and writes a table in ncu's layout
(tests/agent/test_profile_output.py); the .ncu-rep goes to a real HTTP server. The real tool's runs are the
GPU bench's (bench/judge/profile_report.sh)."""

import gzip
import hashlib
import json
import os
import random
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import pytest

from profiler_agent.__main__ import main
from profiler_agent.bundles.bundle import locate_bundle
from profiler_agent.judge import profile_output, profile_report
from profiler_agent.judge.judging import PROFILE_NOTE
from profiler_agent.judge.options import JudgeOptions
from profiler_agent.protocol.result_schema import validate_result
from profiler_agent.worker.agent_config import AgentConfig
from profiler_agent.worker.judge_job import judge_options, upload_profile_report
from profiler_agent.worker.site_client import SiteClient
from tests.agent.conftest import EXAMPLES
from tests.agent.test_profile_output import bundle_table


@pytest.fixture(scope="module")
def relu_cpu_profiled(tmp_path_factory, shared_build_cache):
    """examples/relu-cpu judged in profile mode on CPU (builds its extension in the shared cache, once)."""
    folder = tmp_path_factory.mktemp("profile-cpu")
    json_path = folder / "result.json"
    code = main(["judge", str(EXAMPLES / "relu-cpu"), "--device", "cpu", "--cache-dir", shared_build_cache,
                 "--json", str(json_path), "--mode", "profile", "--profile-dir", str(folder / "kept")])
    assert code == 0
    return json.loads(json_path.read_text()), folder


def test_a_cpu_profile_run_says_no_profiler_exists_there_and_ends_as_its_trials_decided(relu_cpu_profiled):
    result, folder = relu_cpu_profiled
    validate_result(result)
    assert result["status"] == "passed" and result["correctness"]["passed"] is True
    assert result["timing"]["candidate"]["median_ms"] is None  # not timed: a profile run is not a benchmark
    profile = result["profile"]
    assert profile["available"] is False and profile["vendor"] == "cpu" and profile["kernels"] == []
    assert profile["reason"] == profile_report.NO_PROFILER_ON_CPU
    assert "no profiler exists on a CPU host" in profile["reason"]
    assert result["logs"]["stderr"].endswith(PROFILE_NOTE)
    assert not (folder / "kept" / profile_report.REPORT_FILE).exists()


def test_the_judge_table_ends_with_the_profile(relu_cpu_profiled, capsys):
    from profiler_agent.judge.result_table import format_table

    result, _ = relu_cpu_profiled
    text = format_table(result)
    assert text.splitlines()[-2:] == ["profile: no profiler", f"  {profile_report.NO_PROFILER_ON_CPU}"]


def test_the_sites_options_make_a_profile_run_with_its_caps():
    config = AgentConfig(site="http://site", token="t", name="w", device="cuda")
    options = judge_options(config, {"mode": "profile", "correctness_only": True,
                                     "profile": {"kernels_per_model": 7, "timeout_s": 90, "max_file_bytes": 1024}})
    assert options.profile and options.correctness_only
    assert (options.profile_kernels, options.profile_timeout_s) == (7, 90.0)
    plain = judge_options(config, {"mode": "profile"})  # a site that names no caps: the agent's defaults
    assert plain.profile and (plain.profile_kernels, plain.profile_timeout_s) == (
        profile_output.DEFAULT_KERNELS_PER_MODEL, profile_output.DEFAULT_TIMEOUT_S)
    assert not judge_options(config, {"mode": "benchmark"}).profile
    with pytest.raises(ValueError, match="timeout_s must be positive"):
        judge_options(config, {"mode": "profile", "profile": {"timeout_s": 0}})


def test_a_host_without_ncu_says_so_and_one_of_metax_is_not_supported(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no ncu anywhere
    result = {"status": "passed"}
    options = JudgeOptions(device="cuda", profile=True)
    monkeypatch.setattr(profile_report, "host_vendor", lambda device: "nvidia")
    profile_report.add_to_result(result, None, options, tmp_path, tmp_path / "scratch")
    assert result["profile"]["reason"] == profile_report.NCU_MISSING and result["profile"]["tool"] == "ncu"
    monkeypatch.setattr(profile_report, "host_vendor", lambda device: "metax")
    profile_report.add_to_result(result, None, options, tmp_path, tmp_path / "scratch")
    assert result["profile"]["reason"] == profile_report.METAX_UNSUPPORTED
    assert result["profile"]["available"] is False and result["profile"]["vendor"] == "metax"


def test_a_candidate_that_did_not_run_to_the_end_is_not_profiled(monkeypatch, tmp_path):
    monkeypatch.setattr(profile_report, "host_vendor", lambda device: "nvidia")
    result = {"status": "compile_error"}
    profile_report.add_to_result(result, None, JudgeOptions(device="cuda", profile=True), tmp_path, tmp_path)
    assert result["profile"]["reason"] == "not profiled: the candidate did not run its trials to the end (compile_error)"


# --- a stand-in ncu: real processes, real sandbox, no GPU ---------------------------------------------

FAKE_NCU = '''#!{python}
"""A stand-in for Nsight Compute's CLI, for tests only: it takes the options profiler_agent.judge.profile_report
passes, runs the target command as ncu does, writes a report file where --export names it and TABLE to
--log-file (or, MODE export-only, nothing there and TABLE on `--import`). MODE: print, export-only,
refuse-metrics (an ncu that knows none of the listed metrics)."""
import os, subprocess, sys

MODE = {mode!r}
TABLE = {table!r}
CALLS = {calls!r}
args = sys.argv[1:]
open(CALLS, "a").write(repr(args) + "\\n")
if args == ["--version"]:
    print("Version 2025.3.0.0 (stand-in for tests)")
    sys.exit(0)
if args[:1] == ["--import"]:
    print(TABLE if MODE == "export-only" else "")
    sys.exit(0)
VALUED = {{"--clock-control", "--target-processes", "--log-file", "--metrics", "--nvtx-include", "--launch-count",
          "--section", "--export", "--page", "--print-units"}}
options, sections, i = {{}}, [], 0
while i < len(args) and args[i].startswith("--"):
    if args[i] in ("--csv", "--nvtx", "--force-overwrite"):
        options[args[i]], i = True, i + 1
    elif args[i] == "--section":
        sections.append(args[i + 1]); i += 2
    elif args[i] in VALUED:
        options[args[i]], i = args[i + 1], i + 2
    else:
        print("==ERROR== unrecognised option '%s'" % args[i], file=sys.stderr)
        sys.exit(2)
expected = {{"--clock-control": "none", "--csv": True, "--nvtx": True, "--nvtx-include": "candidate/",
            "--page": "details", "--print-units": "base", "--launch-count": "6", "--force-overwrite": True}}
for key, value in expected.items():
    if options.get(key) != value:
        print("==ERROR== stand-in ncu: %s is %r, expected %r" % (key, options.get(key), value), file=sys.stderr)
        sys.exit(2)
log = open(options["--log-file"], "w")
if MODE == "refuse-metrics" and "--metrics" in options:
    log.write("==ERROR== Failed to find metric smsp__average_warps_issue_stalled_imc_miss_per_issue_active.ratio\\n")
    sys.exit(1)
code = subprocess.run(args[i:]).returncode
open(options["--export"], "wb").write(b"NCU-REP stand-in " + " ".join(sections).encode())
if code == 0 and MODE != "export-only":
    log.write(TABLE)
else:
    log.write("==PROF== Report: %s\\n" % options["--export"])
sys.exit(code)
'''


@pytest.fixture
def fake_ncu(tmp_path, monkeypatch):
    """A stand-in `ncu` first on PATH; returns the file its calls are written to, one line each."""
    bin_dir, calls = tmp_path / "bin", tmp_path / "ncu-calls.txt"
    bin_dir.mkdir()

    def install(mode: str) -> Path:
        script = bin_dir / "ncu"
        script.write_text(FAKE_NCU.format(python=sys.executable, mode=mode, table=bundle_table(), calls=str(calls)))
        script.chmod(0o755)
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
        return calls

    return install


def _profile(tmp_path, shared_build_cache):
    # device "cpu": the profiled process runs both models without NVTX ranges (no CUDA here)
    options = JudgeOptions(device="cpu", profile=True, profile_kernels=3, profile_timeout_s=120.0,
                           profile_dir=tmp_path / "kept")
    options.profile_dir.mkdir()
    return profile_report.profile_with_ncu(locate_bundle(EXAMPLES / "relu-cpu"), options, Path(shared_build_cache),
                                           tmp_path / "scratch", profile_report.shutil.which("ncu"))


def test_the_profiled_process_runs_under_ncu_and_its_report_and_table_are_kept(
        relu_cpu_profiled, fake_ncu, tmp_path, shared_build_cache):
    calls = fake_ncu("print")
    profile, table = _profile(tmp_path, shared_build_cache)
    assert profile["available"] is True and profile["reason"] is None
    assert profile["version"] == "Version 2025.3.0.0 (stand-in for tests)"
    assert [(k["model"], k["launch"]) for k in profile["kernels"]] == [("candidate", 0), ("candidate", 1),
                                                                      ("reference", 2)]
    assert profile["table_source"] == "profile run" and profile["metrics"] == "listed"
    assert profile["sections"] == list(profile_output.SECTIONS)
    kept = tmp_path / "kept" / profile_report.REPORT_FILE
    assert kept.read_bytes() == b"NCU-REP stand-in " + " ".join(profile_output.SECTIONS).encode()
    assert profile["report_file"] == {"name": "profile.ncu-rep", "bytes": kept.stat().st_size,
                                      "sha256": hashlib.sha256(kept.read_bytes()).hexdigest(), "stored": None,
                                      "why": None}
    assert (tmp_path / "kept" / profile_report.TABLE_FILE).read_text() == table == bundle_table()
    profiled = next(line for line in calls.read_text().splitlines() if "--export" in line)
    assert "profiler_agent.graders.profiled_target" in profiled and "'--reference-calls', '1'" in profiled
    assert "'--calls', '1'" in profiled
    logs = tmp_path / "scratch" / "ncu" / "logs"
    assert "ncu_target: 1 calls after a warm-up" in (logs / "stderr.log").read_text()  # it ran, sandboxed


def test_an_ncu_that_prints_nothing_while_it_exports_is_read_back_from_its_report(
        relu_cpu_profiled, fake_ncu, tmp_path, shared_build_cache):
    calls = fake_ncu("export-only")
    profile, _ = _profile(tmp_path, shared_build_cache)
    assert profile["table_source"] == "import" and len(profile["kernels"]) == 3
    imported = [line for line in calls.read_text().splitlines() if "'--import'" in line]
    assert imported and "'--print-units', 'base'" in imported[0] and "'--page', 'details'" in imported[0]


def test_an_ncu_that_refuses_the_metric_list_profiles_again_with_the_sections_alone(
        relu_cpu_profiled, fake_ncu, tmp_path, shared_build_cache):
    calls = fake_ncu("refuse-metrics")
    profile, _ = _profile(tmp_path, shared_build_cache)
    assert profile["available"] is True and profile["metrics"] == "sections only"
    assert profile["sections"] == list(profile_output.PLAIN_SECTIONS)
    assert profile["reason"].startswith("ncu refused the list of metrics") and "imc_miss" in profile["reason"]
    runs = [line for line in calls.read_text().splitlines() if "--export" in line]
    assert len(runs) == 2 and "--metrics" in runs[0] and "--metrics" not in runs[1]


# --- the report's file, sent to a site ---------------------------------------------------------------

@pytest.fixture
def upload_site():
    """A real HTTP server that keeps what is posted to it and answers `site.code`."""
    site = SimpleNamespace(code=200, bodies=[])

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            site.bodies.append((self.path, self.headers["Content-Type"], self.headers.get("X-Job-Secret"), body))
            answer = json.dumps({"ok": True} if site.code == 200 else {"detail": "too large"}).encode()
            self.send_response(site.code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    site.url = f"http://127.0.0.1:{server.server_address[1]}/api/v1/agent/runs/7/profile-file?attempt=1"
    yield site
    server.shutdown()
    server.server_close()


def _reported(tmp_path, data=b"NCU-REP bytes"):
    (tmp_path / profile_report.REPORT_FILE).write_bytes(data)
    return {"profile": {"report_file": {"name": profile_report.REPORT_FILE, "bytes": len(data),
                                        "sha256": hashlib.sha256(data).hexdigest(), "stored": None, "why": None}}}


def test_the_report_file_goes_to_the_site_with_the_attempts_secret(upload_site, tmp_path):
    result = _reported(tmp_path)
    upload_profile_report(SiteClient("token", "secret", attempts=1), upload_site.url, result, tmp_path, 1024)
    [(path, content_type, secret, body)] = upload_site.bodies
    assert (path, content_type, secret) == ("/api/v1/agent/runs/7/profile-file?attempt=1", "application/octet-stream",
                                            "secret")
    assert gzip.decompress(body) == b"NCU-REP bytes"  # sent compressed
    assert result["profile"]["report_file"]["stored"] is True and result["profile"]["report_file"]["why"] is None


def test_a_report_file_compressed_within_the_sites_limit_is_sent(upload_site, tmp_path):
    result = _reported(tmp_path, b"x" * 20000)  # a real .ncu-rep compresses five to ten times
    upload_profile_report(SiteClient("token", "secret", attempts=1), upload_site.url, result, tmp_path, 1024)
    assert len(upload_site.bodies) == 1 and gzip.decompress(upload_site.bodies[0][3]) == b"x" * 20000
    assert result["profile"]["report_file"]["stored"] is True


def test_a_report_file_over_the_sites_limit_is_not_sent_and_a_refusal_is_told(upload_site, tmp_path):
    data = random.Random(7).randbytes(2000)  # incompressible
    result = _reported(tmp_path, data)
    upload_profile_report(SiteClient("token", "secret", attempts=1), upload_site.url, result, tmp_path, 1024)
    assert upload_site.bodies == []
    assert result["profile"]["report_file"]["stored"] is False
    compressed = len(gzip.compress(data, compresslevel=6, mtime=0))
    assert result["profile"]["report_file"]["why"] == (
        f"2,000 bytes ({compressed:,} compressed), more than the site keeps (1,024)")
    upload_site.code = 413
    upload_profile_report(SiteClient("token", "secret", attempts=1), upload_site.url, result, tmp_path, None)
    assert result["profile"]["report_file"] == {**result["profile"]["report_file"], "stored": False,
                                                "why": "refused (413): too large"}
