"""The names the profiled process (profiler_agent.graders.profiled_target) marks its calls with, and
the line it prints its timeline on: what the agent's Nsight Compute reading
(profiler_agent.judge.ncu_output, ncu_profiling) looks for."""

# The range ncu profiles (--nvtx-include): each candidate call runs in one, inside its call's range;
# the reference's calls (Profile.reference_calls) in one inside REFERENCE_RANGE.
CANDIDATE_RANGE = "candidate"
CALL_RANGE_PREFIX = "profiler_agent call "
REFERENCE_RANGE = "profiler_agent reference"
# One kernel in this range (holding CANDIDATE_RANGE) before any submission code loads: ncu's setup at
# the first kernel it profiles is paid then, while the process waits for its job; the reading drops it.
WARM_UP_RANGE = "profiler_agent warm-up"
TIMELINE_PREFIX = "[profiler_agent] ncu_target: "
