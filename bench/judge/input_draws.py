"""What drawing a call's inputs costs, on the CPU and on the device (profiler_agent.trials.input_draws),
and whether two processes draw the same values from one seed there.

    python bench/judge/input_draws.py --out DIR [--device cuda] [--elements 16777216] [--repeats 5]

For each get_inputs (a float draw, a float and an index draw, one with a CPU generator that falls
back to the CPU): the median seconds of make_inputs on the CPU and on the device, and the SHA-256 of
the device draw's bytes in two fresh processes (equal: every process of a judging draws alike).
Writes DIR/input-draws.json and prints a line per get_inputs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

GET_INPUTS = {
    "randn": "lambda: [torch.randn({n})]",
    "randn and randint": "lambda: [torch.randn({n} // 8192, 8192), torch.randint(0, 8192, ({n} // 8192,))]",
    "cpu generator": "lambda: [torch.randn({n}, generator=torch.Generator().manual_seed(5))]",
}


def get_inputs(name: str, elements: int):
    import torch

    return eval(GET_INPUTS[name].format(n=elements), {"torch": torch})  # noqa: S307  (this file's own lambdas)


def digest(name: str, elements: int, device: str, seed: int) -> str:
    """The draw's bytes, hashed, in this process."""
    import torch

    from profiler_agent.trials.input_draws import make_inputs

    inputs = make_inputs(get_inputs(name, elements), seed, device)
    hashed = hashlib.sha256()
    for tensor in inputs:
        hashed.update(tensor.cpu().contiguous().view(torch.uint8).numpy().tobytes())
    return hashed.hexdigest()


def timed(name: str, elements: int, device: str, repeats: int) -> float:
    from profiler_agent.trials.input_draws import make_inputs
    from profiler_agent.util.tensors import synchronize
    import torch

    draw = get_inputs(name, elements)
    make_inputs(draw, 0, device)  # lazy initialization
    times = []
    for seed in range(1, repeats + 1):
        synchronize(torch.device(device))
        started = time.perf_counter()
        make_inputs(draw, seed, device)
        synchronize(torch.device(device))
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--elements", type=int, default=1 << 24)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--digest", nargs=3, metavar=("NAME", "DEVICE", "SEED"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.digest:
        print(digest(args.digest[0], args.elements, args.digest[1], int(args.digest[2])))
        return
    rows = []
    for name in GET_INPUTS:
        hashes = [subprocess.run([sys.executable, __file__, "--out", str(args.out), "--elements", str(args.elements),
                                  "--digest", name, args.device, "42"], capture_output=True, text=True,
                                 check=True).stdout.strip() for _ in range(2)]
        row = {"get_inputs": GET_INPUTS[name].format(n="N"), "elements": args.elements,
               "cpu_s": round(timed(name, args.elements, "cpu", args.repeats), 4),
               "device_s": round(timed(name, args.elements, args.device, args.repeats), 4),
               "same_in_two_processes": hashes[0] == hashes[1]}
        rows.append(row)
        print(f"{name}: cpu {row['cpu_s']:.4f} s, {args.device} {row['device_s']:.4f} s, "
              f"same values in two processes: {row['same_in_two_processes']}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "input-draws.json").write_text(json.dumps({"device": args.device, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
