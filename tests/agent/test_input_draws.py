"""Where a call's inputs are drawn (profiler_agent.trials.input_draws): on the judging's device where
get_inputs runs there, else on the CPU; the same seed gives the same values. The "meta" device
stands for a GPU on a CPU host: torch draws there as on any device but the CPU."""

import numpy
import pytest
import torch

from profiler_agent.trials.input_draws import draw_where_it_runs, make_inputs
from profiler_agent.util.submission_failures import SubmissionFailure

META = torch.device("meta")


def recording(get_inputs):
    """get_inputs, noting the device torch draws on at each call."""
    seen = []

    def wrapped():
        seen.append(torch.empty(0).device.type)
        return get_inputs()

    return wrapped, seen


def test_a_plain_draw_is_made_on_the_device():
    get_inputs, seen = recording(lambda: [torch.randn(8, 4), 3])
    inputs = make_inputs(get_inputs, 7, META)
    assert seen == ["meta"]
    assert inputs[0].device == META and inputs[0].shape == (8, 4) and inputs[1] == 3


def test_a_draw_that_cannot_run_there_is_made_on_the_cpu_alike():
    def mixes_numpy():
        return [torch.randn(5) + torch.from_numpy(numpy.random.rand(5).astype(numpy.float32))]

    get_inputs, seen = recording(mixes_numpy)
    assert draw_where_it_runs(get_inputs, 3, META) is None
    inputs = make_inputs(get_inputs, 3, META)
    assert seen == ["meta", "meta", "cpu"]
    assert inputs[0].device == META
    # the CPU draw is the one a CPU host makes from that seed
    first, second = make_inputs(mixes_numpy, 3, "cpu"), make_inputs(mixes_numpy, 3, "cpu")
    assert torch.equal(first[0], second[0])
    assert not torch.equal(first[0], make_inputs(mixes_numpy, 4, "cpu")[0])


def test_the_default_device_is_the_cpu_again_after_a_draw():
    make_inputs(lambda: [torch.randn(2)], 1, META)
    assert torch.empty(1).device.type == "cpu"
    with pytest.raises(SubmissionFailure):
        make_inputs(lambda: [torch.randn(2) + torch.from_numpy(numpy.ones(3, dtype=numpy.float32))], 1, META)
    assert torch.empty(1).device.type == "cpu"


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_what_get_inputs_raises_is_the_submissions(device):
    def fails():
        raise ValueError("no inputs today")

    def exits():
        raise SystemExit(3)

    for get_inputs in (fails, exits):
        with pytest.raises(SubmissionFailure) as caught:
            make_inputs(get_inputs, 1, device)
        assert caught.value.stage == "get_inputs"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="a GPU draw needs a GPU")
def test_a_gpu_draw_is_made_there_and_repeats():
    first = make_inputs(lambda: [torch.randn(1 << 20), torch.randint(0, 9, (64,))], 11, "cuda")
    again = make_inputs(lambda: [torch.randn(1 << 20), torch.randint(0, 9, (64,))], 11, "cuda")
    assert first[0].is_cuda and all(torch.equal(a, b) for a, b in zip(first, again))
    generator = torch.Generator()
    on_cpu = make_inputs(lambda: [torch.randn(16, generator=generator.manual_seed(2))], 11, "cuda")
    assert torch.equal(on_cpu[0].cpu(), torch.randn(16, generator=torch.Generator().manual_seed(2)))
