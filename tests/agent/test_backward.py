"""Problems judged forward and backward (profiler_agent.bundles.forward_backward): a reference that sets
JUDGE_BACKWARD gets its gradients compared too, in the judged process and in the verifier, and the
forward plus backward timed. CPU path, torch-only candidates (a fused cross-entropy as a
torch.autograd.Function), judged end to end by the CLI."""

import textwrap

import pytest

FAST = ("--timing-budget", "0.2", "--seed", "11")

REFERENCE = textwrap.dedent('''
    import torch

    JUDGE_BACKWARD = True


    class Model(torch.nn.Module):
        """A classifier head and its cross-entropy loss (seed 002: a fused CE loss with its backward)."""

        def __init__(self, features, classes):
            super().__init__()
            self.head = torch.nn.Linear(features, classes)

        def forward(self, x, target):
            return torch.nn.functional.cross_entropy(self.head(x), target)


    def get_inputs():
        return [torch.randn(64, 32), torch.randint(0, 10, (64,))]


    def get_init_inputs():
        return [32, 10]
''')

CANDIDATE = '''
    import torch

    SCALE = {scale}


    class FusedCrossEntropy(torch.autograd.Function):
        @staticmethod
        def forward(ctx, logits, target):
            log_probs = logits.log_softmax(-1)
            ctx.save_for_backward(log_probs, target)
            return -log_probs.gather(1, target[:, None]).mean()

        @staticmethod
        def backward(ctx, grad):
            log_probs, target = ctx.saved_tensors
            grad_logits = log_probs.exp()
            grad_logits[torch.arange(len(target)), target] -= 1
            return grad_logits * (grad / len(target)) * SCALE, None


    class ModelNew(torch.nn.Module):
        def __init__(self, features, classes):
            super().__init__()
            self.head = torch.nn.Linear(features, classes)

        def forward(self, x, target):
            return FusedCrossEntropy.apply(self.head(x), target){detach}
'''


def ce_bundle(make_bundle, name: str, scale: str = "1.0", detach: str = "") -> object:
    bundle = make_bundle(CANDIDATE.format(scale=scale, detach=detach), name=name)
    (bundle / "torchcode.py").write_text(REFERENCE)
    return bundle


def test_a_faithful_forward_and_backward_passes(make_bundle, judge):
    result = judge(ce_bundle(make_bundle, "honest"), *FAST).result
    assert result["status"] == "passed", result["reason"]
    assert result["correctness"]["passed"] is True and result["correctness"]["trials"] >= 3
    assert result["timing"]["candidate"]["median_ms"] > 0 and result["timing"]["speedup"] > 0


def test_a_wrong_gradient_with_a_right_forward_is_a_wrong_answer(make_bundle, judge):
    """The loss itself is right; only its gradient is 2% off: the outputs after the forward's
    (the input's gradient, then the parameters') are what differs, and the reason names which."""
    result = judge(ce_bundle(make_bundle, "wrong-gradient", scale="1.02"), *FAST).result
    assert result["status"] == "wrong_answer"
    # the first gradient, x's, is 2% off: past a tolerance taken at the gradient's own scale
    assert result["reason"].startswith("trial 0: output 1 (the gradient of input 0): max abs error"), result["reason"]
    assert "max rel error 2.0" in result["reason"]
    assert result["timing"]["speedup"] is None


def test_a_forward_without_a_gradient_is_told_so(make_bundle, judge):
    result = judge(ce_bundle(make_bundle, "no-gradient", detach=".detach()"), *FAST).result
    assert result["status"] == "runtime_error"
    assert "carry no gradient" in result["reason"], result["reason"]


def test_a_gradient_is_compared_at_its_own_scale():
    """Gradients of a mean over many rows are tiny (1e-7..5e-4): under a fixed atol of 1e-4 a 2% error
    in one passed (examples/ce-fused-backward-wrong on the H100); relative to the gradient's largest
    value it does not, while the same error in an output at that scale keeps the absolute tolerance."""
    import torch

    from profiler_agent.checkers.compare_outputs import compare_outputs

    grad = torch.linspace(1e-7, 5e-4, 1000)
    assert not compare_outputs((torch.tensor(2.0), grad), (torch.tensor(2.0), grad * 1.02), scaled={1}).passed
    assert compare_outputs((torch.tensor(2.0), grad), (torch.tensor(2.0), grad * (1 + 1e-6)), scaled={1}).passed
    assert compare_outputs((torch.tensor(2.0), grad), (torch.tensor(2.0), grad * 1.02)).passed  # unscaled: hidden


@pytest.mark.parametrize("flag, expected", [("JUDGE_BACKWARD = True", True), ("JUDGE_BACKWARD = 1", False), ("", False)])
def test_only_a_reference_that_declares_it_is_judged_backward(tmp_path, flag, expected):
    from profiler_agent.bundles import module_loading

    path = tmp_path / "torchcode.py"
    path.write_text(REFERENCE.replace("JUDGE_BACKWARD = True", flag))
    api = module_loading.reference_api(path)
    assert api.backward is expected
    model = module_loading.build_model(api.Model, api.get_init_inputs, 3, "cpu", api.backward)
    outputs = model(*api.get_inputs())
    if expected:  # forward and backward: the loss, the gradient of x, then of the head's weight and bias
        assert [tuple(o.shape) for o in outputs] == [(), (64, 32), (10, 32), (10,)]
    else:  # the loss alone
        assert outputs.shape == () and outputs.requires_grad

