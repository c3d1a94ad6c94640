"""What a candidate whose own extension the compiler refuses (and which falls back to torch) costs per
judging: the first judging compiles it, every later one is told the refusal at once, in the judged
process and in the profiled one (the confirmation, on a GPU).

    python bench/build/refused_builds.py [--device cuda|cpu] [--judgings 3] [--out FILE]

Judges one such bundle --judgings times with a fresh build cache; writes each judging's verdict,
stage durations and whether the refusal was told again to --out (default
bench/results/build/refused-builds-<device>.json).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "judge"))
from harness import RELU_REFERENCE, make_bundle  # noqa: E402

REFUSED_AGAIN = "refused by the compiler before"

CANDIDATE = '''
import torch
from torch.utils.cpp_extension import load_inline

CUDA = """
__global__ void relu_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0 ? x[i] : 0  // the ';' is missing
}
torch::Tensor relu_forward(torch::Tensor x) {
    auto y = torch::empty_like(x);
    relu_kernel<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
    return y;
}
"""
CPP = """
at::Tensor relu_forward(const at::Tensor& x) { return x.clamp_min(0) }  // the ';' is missing
"""

try:  # its own extension does not build: it falls back to torch
    if torch.cuda.is_available():
        relu = load_inline(name="refused_relu_cuda", cpp_sources="torch::Tensor relu_forward(torch::Tensor x);",
                           cuda_sources=CUDA, functions=["relu_forward"]).relu_forward
    else:
        relu = load_inline(name="refused_relu_cpp", cpp_sources=CPP, functions=["relu_forward"]).relu_forward
except RuntimeError:
    relu = torch.relu


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return relu(x)
'''


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if _has_cuda() else "cpu")
    parser.add_argument("--judgings", type=int, default=3)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="refused-builds-"))
    bundle, cache = make_bundle(work, "bundle", RELU_REFERENCE.format(n=4096 * 1024), CANDIDATE), work / "cache"
    judgings = []
    for number in range(1, args.judgings + 1):
        result_path = work / f"result-{number}.json"
        subprocess.run([sys.executable, "-m", "profiler_agent", "judge", str(bundle), "--device", args.device,
                        "--cache-dir", str(cache), "--json", str(result_path)], cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        result = json.loads(result_path.read_text())
        logs = result.get("logs") or {}
        row = {"judging": number, "status": result.get("status"),
               "durations_s": {k: None if v is None else round(v, 2) for k, v in (result.get("durations_s") or {}).items()},
               "refusal_told_again": REFUSED_AGAIN in (logs.get("compile") or "") + (logs.get("stderr") or ""),
               "flags": result.get("flags")}
        judgings.append(row)
        print(json.dumps(row))
    out = Path(args.out) if args.out else ROOT / "bench" / "results" / "build" / f"refused-builds-{args.device}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"command": f"python bench/build/refused_builds.py --device {args.device} "
                                          f"--judgings {args.judgings}",
                               "device": _device_name(args.device), "judgings": judgings}, indent=2) + "\n")
    print(f"written to {out}")


def _has_cuda():
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


def _device_name(device):
    if device == "cuda":
        import torch
        return torch.cuda.get_device_name(0)
    return "cpu"


if __name__ == "__main__":
    main()
