"""The pool on a GPU (run on the device machine; CUDA contexts and ncu's confirmation in waiting processes)."""

import pytest
import torch

from profiler_agent.judge import warm_pool
from profiler_agent.judge.judging import WARM_NOTE
from profiler_agent.judge.options import JudgeOptions
from tests.agent.conftest import REPO
from tests.agent.test_slots import judged_at

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA contexts made ahead need a GPU")


def test_warm_cuda_judgings_pass_and_are_confirmed(build_cache, tmp_path):
    options = JudgeOptions(device="cuda", cache_dir=build_cache, keep_warm=True)
    try:
        results = [judged_at(REPO / "bench" / "fixtures" / "bundles" / "lb-matmul-relu", tmp_path, options) for _ in range(3)]
    finally:
        warm_pool.POOL.drop()
    assert [r["status"] for r in results] == ["passed"] * 3
    assert [WARM_NOTE in r["logs"]["stderr"] for r in results] == [False, True, True]
    for result in results[1:]:
        assert result["timing"]["confirmation"]["confirmed"] is True, result["timing"]["confirmation"]
        assert result["durations_s"]["total"] < results[0]["durations_s"]["total"]
