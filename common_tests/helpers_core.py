"""Shared helpers for the core (Tensor + autograd) conformance tests.

Data is generated with NumPy, handed to the stage through ``sg.tensor(list)`` (the
most basic constructor), and compared with NumPy for forward values and with
PyTorch for gradients.
"""
import math

import numpy as np
import pytest

from .oracle import assert_close, need_torch, np_

NP = {"float32": np.float32, "float64": np.float64, "int64": np.int64,
      "int32": np.int32, "int16": np.int16, "int8": np.int8, "uint8": np.uint8, "bool": np.bool_}
INTS = ("int64", "int32", "int16", "int8", "uint8")
SMALL_INTS = INTS[2:]  # the 1- and 2-byte integers: checked wherever int32 is
FLOATS = ("float32", "float64")
DTYPES = ("float32", "float64", "int64", "int32", "bool")

# gradients are sums of products: allow for a different summation order than PyTorch
GRAD_TOL = {"float32": (1e-4, 1e-5), "float64": (1e-9, 1e-11)}


def float64_if(value, needed):
    """``value`` as a test parameter that needs float64 where ``needed`` (a device run skips
    it, as the device lacks float64)."""
    return pytest.param(value, marks=[pytest.mark.capability("float64")] if needed else [])


def settled(out):
    """``out`` (a tensor, or a tuple or list of them) once read back to the host: a device
    that checks index values in its kernels (cuda) raises what they found at that
    synchronization, not at the operation, as PyTorch's device-side asserts do. Returns
    ``out``."""
    for t in out if isinstance(out, (tuple, list)) else (out,):
        if hasattr(t, "tolist"):
            t.tolist()
    return out


def sgdt(sg, name):
    """The stage's dtype object for a dtype name."""
    name = getattr(name, "name", name)
    name = str(np.dtype(name)) if not isinstance(name, str) else name
    return sg.bool_ if name == "bool" else getattr(sg, name)


def data(shape, dtype="float32", seed=0, low=-2.0, high=2.0, away_from=None):
    """Reproducible random data; ``away_from`` keeps values at least 0.1 from a
    point (kinks of relu/abs/clamp, zeros of a divisor)."""
    rng = np.random.default_rng(seed + 7919 * len(shape) + sum(shape))
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype in INTS:  # uint8 from 0: its values are never negative
        return rng.integers(max(int(low), 0) if dtype == "uint8" else int(low), int(high) + 1,
                            size=shape).astype(dtype)
    x = rng.uniform(low, high, size=shape)
    if away_from is not None:
        for p in np.atleast_1d(away_from):
            close = np.abs(x - p) < 0.1
            x = np.where(close, p + np.where(x >= p, 0.1, -0.1) + (x - p), x)
    return np.asarray(x.astype(dtype))


def T(sg, arr, requires_grad=False):
    """A stage tensor holding the NumPy array ``arr`` (same dtype)."""
    arr = np.asarray(arr)
    if arr.size == 0:  # a nested empty list cannot carry the shape
        t = sg.zeros(arr.shape, dtype=sgdt(sg, str(arr.dtype)))
        return t.requires_grad_() if requires_grad else t
    return sg.tensor(arr.tolist(), dtype=sgdt(sg, str(arr.dtype)), requires_grad=requires_grad)


def TT(arr, requires_grad=False):
    torch = need_torch()
    return torch.tensor(np.asarray(arr), requires_grad=requires_grad)


def upstream(shape, dtype="float32", seed=12345):
    """A random upstream gradient: backward must not be checked with ones only."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape).astype(dtype)


def _seed_outputs(out, dtype, seed):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [upstream(tuple(o.shape), dtype, seed + k) for k, o in enumerate(outs)]


def _backward_sg(sg, out, grads):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    if len(outs) == 1:
        outs[0].backward(T(sg, grads[0]))
        return
    total = None
    for o, g in zip(outs, grads):
        term = (o * T(sg, g)).sum()
        total = term if total is None else total + term
    total.backward()


def _backward_torch(out, grads):
    torch = need_torch()
    outs = out if isinstance(out, (tuple, list)) else (out,)
    torch.autograd.backward(list(outs), [torch.tensor(g) for g in grads])


def check_grads(sg, f_sg, f_torch, *arrays, seed=12345, rtol=None, atol=None, check_forward=True):
    """Run ``f`` on the stage and on PyTorch with the same inputs, backpropagate the
    same random upstream gradient, and compare outputs and input gradients."""
    torch = need_torch()
    diff = [np.asarray(a).dtype.kind == "f" for a in arrays]
    xs = [T(sg, a, requires_grad=d) for a, d in zip(arrays, diff)]
    ts = [torch.tensor(np.asarray(a), requires_grad=d) for a, d in zip(arrays, diff)]
    out = f_sg(*xs)
    tout = f_torch(*ts)
    dtype = str(np.asarray([a for a, d in zip(arrays, diff) if d][0]).dtype)
    r, a = GRAD_TOL[dtype]
    r, a = (r if rtol is None else rtol), (a if atol is None else atol)
    if isinstance(tout, (tuple, list)):
        assert isinstance(out, (tuple, list)) and len(out) == len(tout), \
            f"{len(out) if isinstance(out, (tuple, list)) else 1} outputs, expected {len(tout)}"
    if check_forward:
        pairs = zip(out, tout) if isinstance(out, (tuple, list)) else [(out, tout)]
        for o, t in pairs:
            assert_close(o, t, rtol=r, atol=a)
    first = tout[0] if isinstance(tout, (tuple, list)) else tout
    grads = _seed_outputs(tout, str(first.dtype).replace("torch.", ""), seed)
    _backward_sg(sg, out, grads)
    _backward_torch(tout, grads)
    for k, (x, t) in enumerate(zip(xs, ts)):
        if not diff[k]:
            continue
        assert x.grad is not None, f"input {k} got no gradient"
        assert_close(x.grad, t.grad, rtol=r, atol=a)
    return xs


def gradcheck(sg, f, *arrays):
    """Finite differences in float64 through the stage's own gradcheck."""
    xs = [T(sg, np.asarray(a, dtype=np.float64) if np.asarray(a).dtype.kind == "f" else a,
            requires_grad=np.asarray(a).dtype.kind == "f") for a in arrays]
    assert sg.autograd.gradcheck(f, xs)
    return xs


def np_gelu(x):
    erf = np.vectorize(math.erf)
    return (0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))).astype(x.dtype)


def np_sigmoid(x):
    with np.errstate(over="ignore"):  # exp overflows to inf for very negative x: sigmoid is 0
        return (1.0 / (1.0 + np.exp(-x.astype(np.float64)))).astype(x.dtype)


def functional(sg):
    """Where the stage keeps its functional ops (``sg.nn.functional`` as in torch)."""
    nn = getattr(sg, "nn", None)
    if nn is not None and hasattr(nn, "functional"):
        return nn.functional
    return sg.functional


__all__ = ["NP", "FLOATS", "DTYPES", "GRAD_TOL", "sgdt", "data", "T", "TT", "upstream",
           "check_grads", "gradcheck", "np_gelu", "np_sigmoid", "functional",
           "assert_close", "need_torch", "np_"]
