"""Why honest forward+backward bundles got `timer_tampered` on the H100: per call, the event pair's
time against the wall clock the tamper check compares it with, the flush reads held before it and
how long the host took to launch the call. Usage: python bench/judge/backward_timer_probe.py BUNDLE [calls]"""
import statistics
import sys
import time
from pathlib import Path

import torch

from profiler_agent.bundles import module_loading as loading
from profiler_agent.trials.input_draws import make_inputs
from profiler_agent.measure import timing


def main() -> None:
    bundle = Path(sys.argv[1])
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    device = torch.device("cuda")
    api = loading.reference_api(bundle / "torchcode.py")
    candidate_module = loading.import_file(bundle / "cudacode.py", "candidate")
    models = {"reference": loading.build_model(api.Model, api.get_init_inputs, 7, device, api.backward),
              "candidate": loading.build_model(candidate_module.ModelNew, api.get_init_inputs, 7, device, api.backward)}
    inputs = make_inputs(api.get_inputs, 11, device)
    timer = timing.CudaTimer(device)
    print(f"backward={api.backward} read_ms={timer.read_ms:.4f} max_reads={timer.max_flush_reads}")
    with torch.no_grad():
        for name, model in models.items():
            for _ in range(3):
                model(*inputs)
            torch.cuda.synchronize()
            rows = []
            for i in range(calls):
                reads = timer.flush_reads
                t0 = time.perf_counter()
                reading = timer(lambda: model(*inputs))
                host_ms = (time.perf_counter() - t0) * 1e3
                rows.append((reading.timed_ms, reading.wall_ms, reads, reading.flush_ms, reading.tail_ms,
                             timer._recent_launch_ms[-1], host_ms))
            for r in rows[:: max(1, calls // 10)]:
                print(f"{name:9s} timed {r[0]:.4f} wall {r[1]:.4f} reads {r[2]:2d} flush/read {r[3]:.4f} "
                      f"tail {r[4]:.4f} launched {r[5]:.4f} host {r[6]:.4f}")
            timed = [r[0] for r in rows]
            walls = [r[1] for r in rows]
            print(f"{name:9s} MEDIAN timed {statistics.median(timed):.4f} wall {statistics.median(walls):.4f} "
                  f"launched {statistics.median(r[5] for r in rows):.4f} disagrees "
                  f"{timing.timer_disagrees(timed, walls)}")
    # the same calls profiled by torch: which host ops take the launch time
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                            torch.profiler.ProfilerActivity.CUDA]) as prof:
        with torch.no_grad():
            for _ in range(5):
                models["candidate"](*inputs)
            torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=15))


if __name__ == "__main__":
    main()
