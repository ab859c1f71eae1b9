"""Property tests for views: random programs of view, in-place and out-of-place ops run
on the stage and on PyTorch side by side. After every step each live tensor must hold
the same values, the same layout (shape, strides, offset, contiguity), and alias the
same others; with autograd on, the final gradient must agree too, or both must refuse.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .helpers_core import TT, T, assert_close, need_torch

pytestmark = pytest.mark.capability("views")
SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


class Live:
    """A tensor on both sides, and whether its elements overlap in memory (unfold
    windows), where PyTorch leaves in-place results unspecified."""

    def __init__(self, s, t, overlapping=False):
        self.s, self.t, self.overlapping = s, t, overlapping


def _view_op(draw, x):
    """A random view of ``x`` (a Live), as a function of either library's tensor."""
    shape = tuple(x.t.shape)
    nd = len(shape)
    kinds = ["slice", "select", "unsqueeze", "squeeze", "flatten", "expand", "unfold"]
    if nd >= 2:
        kinds += ["transpose", "permute", "diagonal"]
    kinds = [k for k in kinds if nd or k in ("unsqueeze", "expand", "flatten")]
    kind = draw(st.sampled_from(kinds))
    overlap = False
    if kind == "transpose":
        d0, d1 = draw(st.permutations(range(nd)))[:2]
        f = lambda v: v.transpose(d0, d1)  # noqa: E731
    elif kind == "permute":
        order = draw(st.permutations(range(nd)))
        f = lambda v: v.permute(*order)  # noqa: E731
    elif kind == "slice":
        d = draw(st.integers(0, nd - 1))
        n = shape[d]
        start = draw(st.integers(0, max(n - 1, 0)))
        stop = draw(st.integers(start + 1, max(n, start + 1)))
        step = draw(st.integers(1, 3))
        key = (slice(None),) * d + (slice(start, stop, step),)
        f = lambda v: v[key]  # noqa: E731
    elif kind == "select":
        d = draw(st.integers(0, nd - 1))
        i = draw(st.integers(0, max(shape[d] - 1, 0)))
        key = (slice(None),) * d + (i,)
        f = lambda v: v[key]  # noqa: E731
    elif kind == "unsqueeze":
        d = draw(st.integers(0, nd))
        f = lambda v: v.unsqueeze(d)  # noqa: E731
    elif kind == "squeeze":
        f = lambda v: v.squeeze()  # noqa: E731
    elif kind == "flatten":
        f = lambda v: v.reshape(-1)  # noqa: E731  (a copy when the strides do not allow a view)
    elif kind == "expand":
        sizes = [draw(st.integers(2, 3)) if n == 1 else n for n in shape]
        lead = draw(st.integers(0 if nd else 1, 1))
        sizes = [2] * lead + sizes
        f = lambda v: v.expand(*sizes)  # noqa: E731
    elif kind == "diagonal":
        d0, d1 = draw(st.permutations(range(nd)))[:2]
        off = draw(st.integers(max(-1, 1 - shape[d0]), min(1, shape[d1] - 1)))  # non-empty
        f = lambda v: v.diagonal(off, d0, d1)  # noqa: E731
    else:  # unfold
        d = draw(st.integers(0, max(nd - 1, 0)))
        n = shape[d] if nd else 1
        size = draw(st.integers(1, n))
        step = draw(st.integers(1, 3))
        overlap = step < size
        f = lambda v: v.unfold(d, size, step)  # noqa: E731
    return f, overlap or x.overlapping


INPLACE = {
    "add_": lambda v, c: v.add_(1.0),
    "mul_": lambda v, c: v.mul_(-0.5),
    "zero_": lambda v, c: v.zero_(),
    "fill_": lambda v, c: v.fill_(2.0),
    "clamp_": lambda v, c: v.clamp_(-0.5, 0.5),
    "copy_": lambda v, c: v.copy_(c),
    "iadd": lambda v, c: v.__iadd__(c),
    "setitem": lambda v, c: v.__setitem__(0, 3.0),
}


def _run(sg, data, grad):
    torch = need_torch()
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3), label="shape"))
    a = np.random.default_rng(len(shape)).uniform(-1, 1, size=shape).astype(np.float32)
    leaf, tleaf = T(sg, a, requires_grad=grad), TT(a, requires_grad=grad)
    live = [Live(leaf * 1.0, tleaf * 1.0)]  # a non-leaf root: in-place on it is allowed
    for step in range(data.draw(st.integers(1, 12), label="steps")):
        x = live[data.draw(st.integers(0, len(live) - 1), label="pick")]
        kind = data.draw(st.sampled_from(["view", "view", "inplace", "inplace", "outplace"]))
        if kind == "view":
            f, overlap = _view_op(data.draw, x)
            live.append(Live(f(x.s), f(x.t), overlap))
        elif kind == "outplace":
            # PyTorch lays a result out like its input; the stages make it contiguous
            if data.draw(st.booleans()):
                live.append(Live(x.s * 0.5 + 1.0, (x.t * 0.5 + 1.0).contiguous()))
            else:  # saves its inputs: a later in-place change of x must stop backward
                live.append(Live(x.s * x.s, (x.t * x.t).contiguous()))
        elif not x.overlapping:
            name = data.draw(st.sampled_from(sorted(INPLACE)))
            if name == "setitem" and not x.t.dim():
                continue
            if grad and name in ("fill_", "zero_") and 0 in x.t.stride():
                continue  # PyTorch fills an expanded view of a graph tensor, then refuses backward
            c = np.random.default_rng(step).uniform(-1, 1, size=tuple(x.t.shape)).astype(np.float32)
            try:
                INPLACE[name](x.t, TT(c))
            except RuntimeError:  # e.g. writing an expanded tensor: the stage must refuse too
                with pytest.raises(RuntimeError):
                    INPLACE[name](x.s, T(sg, c))
            else:
                INPLACE[name](x.s, T(sg, c))
        _compare(live, torch)
    if grad:
        _compare_gradients(sg, live, leaf, tleaf)


def _compare(live, torch):
    for i, x in enumerate(live):
        assert_close(x.s, x.t.detach())
        assert tuple(x.s.shape) == tuple(x.t.shape)
        # strides of size-1 dims never address anything, and PyTorch's are arbitrary there
        ours = [s for s, n in zip(x.s.stride(), x.t.shape) if n > 1]
        assert ours == [s for s, n in zip(x.t.stride(), x.t.shape) if n > 1], (i, x.s.stride(), x.t.stride())
        assert x.s.storage_offset() == x.t.storage_offset()
        assert x.s.is_contiguous() == x.t.is_contiguous()
        for y in live[:i]:
            shares = x.t.untyped_storage().data_ptr() == y.t.untyped_storage().data_ptr()
            assert (x.s.untyped_storage_id() == y.s.untyped_storage_id()) == shares


def _compare_gradients(sg, live, leaf, tleaf):
    rng = np.random.default_rng(0)
    weights = [rng.uniform(-1, 1, size=tuple(x.t.shape)).astype(np.float32) for x in live]
    terms = [(x, w) for x, w in zip(live, weights) if x.t.requires_grad]
    for x, _ in terms:
        assert x.s.requires_grad
    tloss = sum((x.t * TT(w)).sum() for x, w in terms)
    loss = sum((x.s * T(sg, w)).sum() for x, w in terms)
    try:
        tloss.backward()
    except RuntimeError:  # a saved tensor was changed in place: the stage must notice too
        with pytest.raises(RuntimeError):
            loss.backward()
        return
    loss.backward()
    assert_close(leaf.grad, tleaf.grad, rtol=1e-4, atol=1e-5)


@SETTINGS
@given(data=st.data())
def test_random_view_programs_match_torch(sg, data):
    _run(sg, data, grad=False)


@SETTINGS
@given(data=st.data())
def test_random_view_programs_with_autograd_match_torch(sg, data):
    _run(sg, data, grad=True)


@SETTINGS
@given(data=st.data())
def test_view_chains_have_torch_layout(sg, data):
    need_torch()
    shape = tuple(data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=4), label="shape"))
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    x = Live(T(sg, a), TT(a))
    chain = [x]
    for _ in range(data.draw(st.integers(1, 6), label="depth")):
        f, overlap = _view_op(data.draw, chain[-1])
        chain.append(Live(f(chain[-1].s), f(chain[-1].t), overlap))
    _compare(chain, need_torch())
