"""What crosses the wire between the site and its agents, named once: the result's statuses and
flags, the judging stages, a bundle's file names, the job the site enqueues and its queues, the
agent API's paths.

The standard library only, and nothing else of the agent: the site holds a copy equal to this file
byte for byte (submissions/agent_protocol.py; tests/site/test_protocol.py keeps them equal and the
site's enums equal to these names), so a site host installs no agent and a GPU host no site.
"""

SCHEMA_VERSION = 1  # the result JSON's `schema`

# A result's `status`, also each variant's. The site's verdicts are these and `cancelled`, an
# organizer's alone (an agent never sends it).
STATUSES = (
    "passed",
    "wrong_answer",
    "compile_error",
    "runtime_error",
    "timeout",
    "memory_limit",
    "internal_error",
)

# A result's `flags`: for an organizer to look at; they never change the status.
FLAGS = (
    "no_custom_kernel",
    "timer_tampered",
    "suspicious_speedup",
    "faster_than_hardware",
    "nondeterministic_output",
    "unsynchronized_work",  # the call left work on another stream; timed with a device-wide sync
    # the reported times are not confirmed from outside the judged process: the site keeps the run
    # out of the standings until an organizer clears it
    "timing_unconfirmed",
    "input_memoized",  # markedly faster on a repeated input than on fresh ones; ranked on the fresh figure
)

# What a run is doing while it is judged, in the agent's progress reports (the site's RunStage).
JUDGING_STAGES = ("compiling", "checking", "timing", "profiling", "self_test")

# `correctness.reference_numpy.outcome`: the bundle's numpy ground truth against its own reference.
REFERENCE_NUMPY_OUTCOMES = ("agrees", "disagrees", "error")

# A bundle's files. The first name found is used: the seeds' bundles and S1 submissions used the
# example_ names.
REFERENCE_NAMES = ("torchcode.py", "example_torchcode.py")
CANDIDATE_NAMES = ("cudacode.py", "cudacode_opt.py", "example_cudacode.py")
LLM_VARIANT_NAME = "cudacode_ori.py"  # judged as a variant, informative only
SELF_TEST_NAME = "run_code.py"  # the contestant's own test, run informatively

# The job the site puts on a queue: RQ's JSONSerializer, kwargs {"run_id": int, "attempt": int} and
# nothing else. The function's name is a wire name: queued jobs and deployed agents carry it, so it
# stays, whatever module judges now (profiler_agent/service/jobs.py keeps it importable).
JOB_FUNCTION = "profiler_agent.service.jobs.judge_run"
JOB_KWARGS = ("run_id", "attempt")
# A GPU type's fresh runs go to `gpu.<type>`, a rejudge's to `gpu.<type>.rejudge`, read after them, and
# a final system test's to `gpu.<type>.final`, read before every other.
QUEUE_PREFIX = "gpu."
REJUDGE_QUEUE_SUFFIX = ".rejudge"
FINAL_QUEUE_SUFFIX = ".final"

# The agent API, joined to the agent's --site. The start answer names the bundle, result and
# progress paths of its run; they are these.
HEARTBEAT_PATH = "/api/v1/agent/heartbeat"
START_PATH = "/api/v1/agent/runs/{run_id}/start"
BUNDLE_PATH = "/api/v1/agent/runs/{run_id}/bundle"
RESULT_PATH = "/api/v1/agent/runs/{run_id}/result"
PROGRESS_PATH = "/api/v1/agent/runs/{run_id}/progress"
# A profile run's .ncu-rep (raw bytes, `?attempt=n`, before its result): the start answer of a profile run
# names it as `profile_file_url`.
PROFILE_FILE_PATH = "/api/v1/agent/runs/{run_id}/profile-file"
# The heartbeat answer's field naming, of the attempts the heartbeat said it judges (`judging`), those
# whose run an organizer cancelled: [{"run_id", "attempt"}]. The worker stops judging them at once and
# reports nothing; an agent that ignores the field judges to the end, and its report is refused.
STOP_JUDGING = "stop_judging"
# Where `bench --upload` and `bench-upload` send a benchmark run (a contestant's personal token).
BENCHMARK_RUNS_PATH = "/api/v1/benchmark-runs"
