"""Problems judged forward and backward: a reference that sets `JUDGE_BACKWARD = True`.

Every process builds such a problem's models wrapped (loading.build_model): a call runs the forward
with autograd on, then the backward with a fixed upstream gradient, and returns the forward's
outputs followed by the gradients of every floating-point input, then of every parameter, in
order. Correctness then compares gradients as outputs (call by call, in the verifier too), and
the timing, the batched figure, the FLOP count and the timing confirmation all measure forward
plus backward, with no other change to the harness. The candidate defines its parameters in the
reference's order (they are drawn from the same seed) and gives its outputs a gradient (a
torch.autograd.Function around its kernels).
"""

from __future__ import annotations

import torch

FLAG = "JUDGE_BACKWARD"
UPSTREAM_SEED = 2026_0002  # the upstream gradient is fixed: public, and the same for both models


def declared(module) -> bool:
    return getattr(module, FLAG, False) is True


def _leaves(value) -> list:
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in _leaves(item)]
    if isinstance(value, dict):
        return [leaf for key in sorted(value) for leaf in _leaves(value[key])]
    return [value]


def _differentiable(value) -> bool:
    return isinstance(value, torch.Tensor) and (value.is_floating_point() or value.is_complex())


class ForwardBackward(torch.nn.Module):
    """`model` called forward and backward: (forward outputs..., input gradients..., parameter gradients...)."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model
        self._upstream: dict[tuple, torch.Tensor] = {}
        self.output_names: list[str] = []  # what each output of the last call is (compare's reasons)
        self.scaled_outputs: frozenset[int] = frozenset()  # the gradients: atol relative to their scale

    def upstream(self, output: torch.Tensor) -> torch.Tensor:
        """The gradient flowing into `output`: random values from a fixed seed (a wrong gradient
        that ones would hide, such as a sign error on a sum, shows), made once per shape."""
        key = (tuple(output.shape), output.dtype, output.device)
        if key not in self._upstream:
            generator = torch.Generator().manual_seed(UPSTREAM_SEED)
            values = torch.randn(tuple(output.shape), generator=generator, dtype=torch.float64)
            self._upstream[key] = values.to(dtype=output.dtype, device=output.device)
        return self._upstream[key]

    def forward(self, *inputs):
        # the backward on this thread, not on autograd's device thread: the timer's event pair, the
        # wall-clock check and ncu's NVTX range (the confirmation, the census) all see the calling thread
        with torch.enable_grad(), torch.autograd.set_multithreading_enabled(False):
            # leaves of their own (views: no copy), so the inputs' gradients are this call's
            leaves = [x.detach().requires_grad_() if _differentiable(x) else x for x in inputs]
            output = self.model(*leaves)
            outputs = [o for o in _leaves(output) if _differentiable(o) and o.requires_grad]
            if not outputs:
                raise RuntimeError("the forward's outputs carry no gradient: a problem judged forward and "
                                   "backward needs the kernels wrapped in a torch.autograd.Function")
            inputs_wrt = [i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor) and x.requires_grad]
            parameters = [(name, p) for name, p in self.model.named_parameters() if p.requires_grad]
            wrt = [leaves[i] for i in inputs_wrt] + [p for _, p in parameters]
            grads = torch.autograd.grad(outputs, wrt, grad_outputs=[self.upstream(o) for o in outputs],
                                        allow_unused=True)
        grads = [torch.zeros_like(w) if g is None else g for g, w in zip(grads, wrt)]
        forward = [o.detach() if isinstance(o, torch.Tensor) else o for o in _leaves(output)]
        what = ([f"the forward's output {i}" for i in range(len(forward))]
                + [f"the gradient of input {i}" for i in inputs_wrt]
                + [f"the gradient of parameter {name}" for name, _ in parameters])
        self.output_names = [f"output {i} ({about})" for i, about in enumerate(what)]
        self.scaled_outputs = frozenset(range(len(forward), len(what)))
        return (*forward, *grads)
