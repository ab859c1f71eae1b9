"""Helpers for the nn conformance tests: build the same layer in the stage and in
PyTorch, give both the same weights, and compare outputs, every gradient and every
buffer."""
import numpy as np

from .helpers_core import GRAD_TOL, T, upstream
from .oracle import assert_close, need_torch


def same_layer(sg, make, randomize=True, seed=0):
    """``make(nn)`` built with ``torch.nn`` and ``sg.nn``, the stage's copy loaded from
    PyTorch's state dict. With ``randomize``, PyTorch's floating parameters and buffers
    are first set to random values (norm layers start at ones and zeros, which would
    hide mistakes); variances stay positive."""
    torch = need_torch()
    theirs = make(torch.nn)
    ours = make(sg.nn)
    if randomize:
        rng = np.random.default_rng(seed)
        with torch.no_grad():
            for name, t in list(theirs.named_parameters()) + list(theirs.named_buffers()):
                if not t.is_floating_point():
                    continue
                if name.endswith("running_var"):
                    vals = rng.uniform(0.5, 2.0, tuple(t.shape))
                else:
                    vals = rng.standard_normal(tuple(t.shape))
                t.copy_(torch.from_numpy(vals))
    load_from_torch(sg, ours, theirs)
    return ours, theirs


def load_from_torch(sg, ours, theirs):
    state = {k: T(sg, v.detach().numpy()) for k, v in theirs.state_dict().items()}
    ours.load_state_dict(state)


def tol(dtype, rtol=None, atol=None):
    r, a = GRAD_TOL[dtype]
    return (r if rtol is None else rtol), (a if atol is None else atol)


def compare_state(ours, theirs, rtol, atol):
    """Every parameter and buffer equal (running statistics included)."""
    mine = ours.state_dict()
    other = theirs.state_dict()
    assert list(mine) == list(other)
    for k, v in other.items():
        assert_close(mine[k], v, rtol=rtol, atol=atol, check_dtype=False)


def compare_grads(ours, theirs, rtol, atol):
    mine = dict(ours.named_parameters())
    for name, p in theirs.named_parameters():
        g = mine[name].grad
        if p.grad is None:
            assert g is None, f"{name}: PyTorch gives no gradient, the stage gives one"
        else:
            assert g is not None, f"{name}: no gradient"
            assert_close(g, p.grad, rtol=rtol, atol=atol)


def forward_backward_both(sg, ours, theirs, inputs, grads, dtype=None, rtol=None, atol=None, seed=12345):
    """Call ``ours`` on the stage's tensors of ``inputs`` (NumPy arrays; those ``grads`` marks
    require grad) and ``theirs`` on PyTorch's; check the outputs, backpropagate one random
    upstream gradient through both and check the inputs' gradients, within ``tol(dtype)``
    (the output's dtype unless given). Returns the stage's inputs, its output and the
    tolerances."""
    torch = need_torch()
    xs = [T(sg, a, requires_grad=g) for a, g in zip(inputs, grads)]
    ts = [torch.tensor(np.asarray(a), requires_grad=g) for a, g in zip(inputs, grads)]
    out = ours(*xs)
    tout = theirs(*ts)
    dtype = dtype or str(tout.dtype).replace("torch.", "")
    r, a = tol(dtype, rtol, atol)
    assert_close(out, tout, rtol=r, atol=a)
    g = upstream(tuple(tout.shape), dtype, seed)
    out.backward(T(sg, g))
    tout.backward(torch.tensor(g))
    for k, (x, t) in enumerate(zip(xs, ts)):
        if grads[k]:
            assert x.grad is not None, f"input {k}: no gradient"
            assert_close(x.grad, t.grad, rtol=r, atol=a)
    return xs, out, (r, a)


def run_both(sg, ours, theirs, inputs, train=True, seed=12345, rtol=None, atol=None):
    """Forward ``inputs`` (NumPy arrays; float ones require grad) through both, check the
    outputs, backpropagate one random upstream gradient, check input and parameter
    gradients and the state; return the stage's inputs and output."""
    ours.train(train)
    theirs.train(train)
    diff = [np.asarray(a).dtype.kind == "f" for a in inputs]
    xs, out, (r, a) = forward_backward_both(sg, ours, theirs, inputs, diff, rtol=rtol, atol=atol, seed=seed)
    compare_grads(ours, theirs, r, a)
    compare_state(ours, theirs, r, a)
    return xs, out


def rand(shape, dtype="float32", seed=0, low=-2.0, high=2.0):
    rng = np.random.default_rng(seed + 1000 * len(shape) + sum(shape))
    return rng.uniform(low, high, shape).astype(dtype)
