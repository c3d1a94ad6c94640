"""Batched timing on the CPU path: rotating input copies, batch sizing, the overhead share, and
the escaped-work rule that decides when a synchronized timer must replace the plain one."""

import time

import pytest

from profiler_agent.measure import timing
from profiler_agent.measure import batch_timers
from profiler_agent.measure.batch_timers import BatchPlan, CpuBatchTimer, Rotation, rotation_copies, time_batched

MB = 1 << 20


@pytest.mark.parametrize(
    "input_bytes, cache_bytes, copies",
    [
        (4 * MB, 50 * MB, 39),  # small inputs: enough copies to overflow the cache three times
        (1 * MB, 50 * MB, 64),  # capped
        (512 * MB, 50 * MB, 2),  # large inputs: one other copy is enough
        (2048 * MB, 50 * MB, 1),  # beyond the rotation's memory budget: no copies
        (4 * MB, 0, 1),  # no cache to defeat (CPU path)
    ],
)
def test_rotation_copies_outgrow_the_cache_within_the_memory_budget(input_bytes, cache_bytes, copies):
    assert rotation_copies(input_bytes, cache_bytes) == copies


def _work(n: int):
    return lambda: sum(range(n))


def test_batched_times_track_per_call_work_and_rotate_through_every_copy():
    used = []
    rotation = {
        "small": Rotation([lambda i=i: used.append(i) or time.sleep(0.0005) for i in range(3)]),
        "large": Rotation([lambda: time.sleep(0.005)]),
    }
    per_call = {}
    for name, calls in rotation.items():
        walls = [timing.CpuTimer()(calls.units[0])[0] for _ in range(20)]
        per_call[name] = sorted(walls)[10]
    plan = BatchPlan(batch_ms=10.0, min_rounds=5, max_rounds=20, budget_s=2.0)
    result = time_batched(rotation, per_call, CpuBatchTimer(), plan)
    assert 5 <= len(result["small"]) == len(result["large"]) <= 20
    small, large = batch_timers.median(result["small"]), batch_timers.median(result["large"])
    assert 3 < large / small < 30  # ten times the work takes about ten times as long
    assert set(used) == {0, 1, 2}  # each batch cycles through every input copy


def test_a_batch_is_at_least_one_rotation_and_at_most_the_plans_cap():
    rotation = Rotation([lambda: None] * 4)
    plan = BatchPlan(batch_ms=2.0, max_calls=100)
    assert len(batch_timers.batch_of(rotation, 1.0, plan)) == 4  # 2 calls wanted, one rotation given
    assert len(batch_timers.batch_of(rotation, 0.001, plan)) == 100
    assert len(batch_timers.batch_of(rotation, 0.1, plan)) == 20
    # a graph replay runs 10 calls: the cap and the batch length count calls, not replays
    graphs = Rotation([lambda: None], calls_per_unit=10)
    assert len(batch_timers.batch_of(graphs, 0.001, plan)) == 10
    assert len(batch_timers.batch_of(graphs, 0.1, plan)) == 2


def test_a_per_call_figure_of_no_time_sizes_the_batch_by_a_calls_wall_time():
    """A timer patched to stand still reads 0 ms a call: the batch is not the plan's cap of calls."""
    calls = []

    def sleepy():
        calls.append(1)
        time.sleep(0.002)

    plan = BatchPlan(batch_ms=4.0, max_calls=2000, min_rounds=5, max_rounds=5)
    result = time_batched({"frozen": Rotation([sleepy])}, {"frozen": 0.0}, CpuBatchTimer(), plan)
    assert len(result["frozen"]) == 5 and 2.0 <= batch_timers.median(result["frozen"]) < 6.0
    assert len(calls) <= 1 + 1 + 5 * 3  # the probe, the warm-up and five batches of about two calls


def test_per_call_time_divides_by_the_calls_a_unit_runs():
    # sleeps, not arithmetic: their length holds on a loaded machine
    def one_call():
        time.sleep(0.001)

    def ten_calls():
        for _ in range(10):
            time.sleep(0.001)

    plan = BatchPlan(batch_ms=20.0, min_rounds=5, max_rounds=5)
    result = time_batched({"single": Rotation([one_call]), "tenfold": Rotation([ten_calls], calls_per_unit=10)},
                          {"single": 1.0, "tenfold": 1.0}, CpuBatchTimer(), plan)
    single, tenfold = batch_timers.median(result["single"]), batch_timers.median(result["tenfold"])
    assert 1.0 <= single < 3.0 and 1.0 <= tenfold < 3.0  # per call, however the calls are packed
    assert 0.5 < tenfold / single < 2.0


def test_overhead_share_is_what_the_batch_does_not_pay():
    assert batch_timers.overhead_pct(10.0, 7.5) == pytest.approx(25.0)
    assert batch_timers.overhead_pct(10.0, 12.0) == 0.0  # a slower batch is not negative overhead
    assert batch_timers.overhead_pct(None, 1.0) is None
    assert batch_timers.overhead_pct(1.0, None) is None


def test_work_left_behind_needs_a_real_share_of_the_call():
    assert timing.left_work_behind(0.030, 0.015)  # twice the event time went unseen
    assert not timing.left_work_behind(0.003, 0.015)  # synchronize jitter on a small kernel
    assert not timing.left_work_behind(0.040, 1.0)  # 4% of a long kernel
    assert timing.left_work_behind(0.2, 1.0)


def test_work_outside_the_pair_is_what_the_flush_and_the_tail_saw_beyond_an_empty_call():
    """The plain CUDA timer reports how long the flush before each call ran and how long the
    device stayed busy after the end event; here those readings come from real CPU calls, the
    hiding model's flush and tail made longer by real work, as a side stream's would be."""
    hidden_ms = 1.0

    def timer(call):
        timed, wall, *_ = timing.CpuTimer()(call)
        flush = timing.CpuTimer()(_work(2000))[0]  # stands for the flush, alone or shared
        tail = timing.CpuTimer()(lambda: None)[0]
        if call is calls["hiding"]:
            flush += hidden_ms  # the side stream's work ran during the flush
            tail += hidden_ms  # and outlived the end event
        return timing.Reading(timed, wall, flush, tail)

    calls = {"honest": _work(1000), "hiding": _work(1000)}
    timings = timing.time_interleaved(calls, timer, timing.TimingPlan(min_runs=15, max_runs=15),
                                      control=lambda: None)
    outside = timing.work_outside_ms(timings)
    assert outside["hiding"] == pytest.approx(2 * hidden_ms, abs=0.5)
    assert outside["honest"] < 0.3
    assert timing.CONTROL not in timings.times_ms  # the control call is no model


def test_a_cpu_timer_reports_nothing_outside_the_pair():
    timings = timing.time_interleaved({"only": _work(100)}, timing.CpuTimer(), timing.TimingPlan(min_runs=3, max_runs=3))
    assert timing.work_outside_ms(timings) == {"only": 0.0}
    assert timings.flush_ms == {} and timings.tail_ms == {}


def test_prepare_runs_before_every_call_of_its_model_outside_the_timed_region():
    seen = []
    calls = {"a": lambda: seen.append("call a"), "b": lambda: seen.append("call b")}
    timing.time_interleaved(calls, timing.CpuTimer(), timing.TimingPlan(warmup=1, min_runs=2, max_runs=2),
                            prepare=lambda name: seen.append(f"prepare {name}"))
    assert seen == ["prepare a", "call a", "prepare b", "call b"] * 3


def test_samples_keep_at_most_the_limit_in_order():
    values = [float(i) for i in range(1000)]
    kept = timing.sample(values, limit=200)
    assert len(kept) == 200 and kept == sorted(kept) and kept[0] == 0.0 and kept[-1] >= 990
    assert timing.sample([3.0, 1.0]) == [3.0, 1.0]


def test_net_times_subtract_the_fastest_empty_pair_and_no_more_than_its_cap():
    """Readings as the CUDA timer gives them: every pair carries its own floor, which the empty call's
    pair shows at its fastest (slower ones carry the host's delay before the end event); net times
    lose exactly that (capped, as a judged process could lengthen it)."""
    floor_ms = 0.0008
    script = iter([0.0122, 0.0067, floor_ms, 0.0124, 0.0069, floor_ms + 0.0001, 0.0120, 0.0066, floor_ms - 0.0001])

    def timer(call):
        return timing.Reading(next(script), 1.0, 0.1, 0.0)

    calls = {"reference": lambda: None, "candidate": lambda: None}
    timings = timing.time_interleaved(calls, timer, timing.TimingPlan(warmup=0, min_runs=3, max_runs=3),
                                      control=lambda: None)
    fastest = floor_ms - 0.0001
    assert timings.floor_ms() == pytest.approx(fastest)
    assert timings.control_median_ms() == pytest.approx(floor_ms)
    net = timings.without_floor()
    assert net.times_ms["reference"] == pytest.approx([0.0122 - fastest, 0.0124 - fastest, 0.0120 - fastest])
    assert net.times_ms["candidate"] == pytest.approx([0.0067 - fastest, 0.0069 - fastest, 0.0066 - fastest])
    assert timings.times_ms["candidate"][0] == 0.0067  # the raw readings are kept for the tamper check

    slowed = iter([0.0122, 0.0067, 0.5] * 3)  # an empty pair made long by work left running
    timings = timing.time_interleaved(calls, lambda call: timing.Reading(next(slowed), 1.0, 0.1, 0.0),
                                      timing.TimingPlan(warmup=0, min_runs=3, max_runs=3), control=lambda: None)
    assert timings.floor_ms() == timing.FLOOR_CAP_MS
    assert min(timings.without_floor().times_ms["candidate"]) == pytest.approx(0.0067 - timing.FLOOR_CAP_MS)


def test_without_an_empty_call_nothing_is_subtracted():
    timings = timing.time_interleaved({"only": _work(100)}, timing.CpuTimer(), timing.TimingPlan(min_runs=3, max_runs=3))
    assert timings.floor_ms() == 0.0
    assert timings.without_floor().times_ms == timings.times_ms


def test_a_pair_that_reads_no_more_than_an_empty_call_held_no_work():
    floor = 0.0012
    assert timing.pair_held_no_work(0.0012, floor)  # a side-stream candidate: nothing between its events
    assert timing.pair_held_no_work(0.0014, floor)
    assert not timing.pair_held_no_work(0.0019, floor)  # the smallest kernel adds a few hundred ns at least
    assert not timing.pair_held_no_work(0.0069, floor)  # lb-add-layernorm's candidate (5.7 us kernel)


def test_the_wall_clock_leaves_out_the_hold_as_the_device_timed_it():
    # forward+backward calls on an H100 (bench/results/backward/timer-probe-attention-backward.log):
    # 16 reads of 0.098 ms held, the host 1.81 ms from the first read queued to the device idle
    held, host, timed = 16 * 0.0984, 1.8096, 0.1148
    wall = timing.wall_without_hold(host, held_ms=held)
    assert abs(wall - (host - held)) < 1e-9
    assert not timing.timer_disagrees([timed] * 5, [wall] * 5)
    # a wall clock started after the reads were queued, with all but one read left out, reads 0.0000 on
    # every call of that log: the honest call would be flagged
    assert timing.timer_disagrees([timed] * 5, [0.0] * 5)
    # 8 reads held and a slower launch (the reference's calls in the same log)
    assert not timing.timer_disagrees([0.1289] * 5, [timing.wall_without_hold(0.9969, 8 * 0.0987)] * 5)
    # a patched timer that reports a tenth of the call still disagrees
    assert timing.timer_disagrees([0.05] * 5, [timing.wall_without_hold(2.5, held_ms=held)] * 5)
    # and so does one that reports more than the wall clock allows
    assert timing.timer_disagrees([0.5] * 5, [timing.wall_without_hold(host, held_ms=held)] * 5)
    assert timing.wall_without_hold(0.3, held_ms=0.0) == 0.3


def test_one_stalled_call_does_not_keep_the_timing_loop_running_to_its_budget():
    """Launch-bound calls read a few microseconds with a rare stall of milliseconds (a context switch):
    the median is settled after a few dozen calls, and the loop stops there, not at the budget."""
    readings = iter([0.005 + 0.00005 * (i % 7) if i % 40 != 39 else 5.0 for i in range(100_000)])
    calls = {"reference": lambda: None, "candidate": lambda: None}
    timings = timing.time_interleaved(calls, lambda call: timing.Reading(next(readings), 1.0, None, None),
                                      timing.TimingPlan(warmup=0, min_runs=10, budget_s=30.0))
    runs = len(timings.times_ms["candidate"])
    assert 10 <= runs < 200
    assert timing.relative_standard_error(timings.times_ms["candidate"]) < 0.005
    stalled = [0.005] * 99 + [5.0]
    spread = [0.005 + 0.001 * (i % 2) for i in range(100)]  # half the calls 20% slower: not settled
    assert timing.relative_standard_error(stalled) < 0.005
    assert timing.relative_standard_error(spread) > 0.005
