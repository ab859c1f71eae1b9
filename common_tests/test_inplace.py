"""In-place operations: their values, their gradients, the version counter, and (on
stages with views) how they act through aliases, compared with PyTorch."""
import numpy as np
import pytest

from .helpers_core import TT, T, assert_close, data, need_torch, upstream

views = pytest.mark.capability("views")

INPLACE = [
    ("add_", lambda x, o: x.add_(o, alpha=0.5)),
    ("sub_", lambda x, o: x.sub_(o)),
    ("mul_", lambda x, o: x.mul_(o)),
    ("div_", lambda x, o: x.div_(o.abs() + 1)),
    ("iadd", lambda x, o: x.__iadd__(o)),
    ("imul", lambda x, o: x.__imul__(2.0)),
    ("clamp_", lambda x, o: x.clamp_(-0.5, 0.75)),
    ("addcmul_", lambda x, o: x.addcmul_(o, o, value=0.25)),
    ("lerp_", lambda x, o: x.lerp_(o, 0.3)),
    ("copy_", lambda x, o: x.copy_(o)),
    ("fill_", lambda x, o: x.fill_(1.5)),
    ("zero_", lambda x, o: x.zero_()),
    ("neg_", lambda x, o: x.neg_()),
    ("relu_", lambda x, o: x.relu_()),
    ("setitem", lambda x, o: x.__setitem__((slice(None), 0), 7.0) or x),
]
IDS = [n for n, _ in INPLACE]


@pytest.mark.parametrize("name,op", INPLACE, ids=IDS)
def test_inplace_values_match_torch(sg, name, op):
    need_torch()
    a, b = data((3, 4), seed=1), data((3, 4), seed=2)
    x, tx = T(sg, a), TT(a)
    out = op(x, T(sg, b))
    op(tx, TT(b))
    assert out is x
    assert_close(x, tx)


@pytest.mark.parametrize("name,op", [c for c in INPLACE if c[0] not in ("fill_", "zero_")],
                         ids=[i for i in IDS if i not in ("fill_", "zero_")])
def test_inplace_on_non_leaf_gradients_match_torch(sg, name, op):
    need_torch()
    a, b = data((3, 4), seed=3, away_from=[0.0, -0.5, 0.75]), data((3, 4), seed=4)
    g = upstream((3, 4), seed=5)
    x, tx = T(sg, a, requires_grad=True), TT(a, requires_grad=True)
    o, to = T(sg, b, requires_grad=True), TT(b, requires_grad=True)
    y, ty = x * 1.5, tx * 1.5
    op(y, o)
    op(ty, to)
    assert_close(y, ty)
    (y * T(sg, g)).sum().backward()
    (ty * TT(g)).sum().backward()
    assert_close(x.grad, tx.grad, rtol=1e-5, atol=1e-6)
    if to.grad is None:
        assert o.grad is None
    else:
        assert_close(o.grad, to.grad, rtol=1e-5, atol=1e-6)


def test_version_counts_inplace_writes(sg):
    x = T(sg, data((4,), seed=6))
    v0 = x._version
    x.add_(1.0)
    x[0] = 2.0
    with sg.no_grad():
        x.mul_(3.0)
    assert x._version == v0 + 3
    y = x + 1  # out of place: a new tensor at its own version, x unchanged
    assert x._version == v0 + 3 and y._version == 0


def test_saved_tensor_changed_in_place_raises_at_backward(sg):
    need_torch()
    a = data((3,), seed=7)
    for x in (T(sg, a, requires_grad=True), TT(a, requires_grad=True)):
        y = x * 2.0
        z = y.sin()  # saves y
        y.add_(1.0)
        with pytest.raises(RuntimeError):
            z.sum().backward()


def test_scalar_product_does_not_save_its_input(sg):
    # x * 2.5 needs nothing of x for its backward: changing x in place afterwards is fine
    need_torch()
    a = data((3,), seed=8)
    x, tx = T(sg, a, requires_grad=True), TT(a, requires_grad=True)
    y, ty = x * 1.0, tx * 1.0
    z, tz = y * 2.5, ty * 2.5
    y.add_(1.0)
    ty.add_(1.0)
    (z + y).sum().backward()
    (tz + ty).sum().backward()
    assert_close(x.grad, tx.grad)


def test_leaf_requiring_grad_cannot_be_changed_in_place(sg):
    a = data((3,), seed=9)
    x = T(sg, a, requires_grad=True)
    with pytest.raises(RuntimeError, match="add_"):
        x.add_(1.0)
    assert_close(x, a)
    with sg.no_grad():
        x.add_(1.0)  # how optimizers update parameters
    assert_close(x, a + 1)
    assert x.is_leaf and x.requires_grad


# ---------------------------------------- through views (stages with the views capability)

VIEW_CASES = [
    ("row", lambda y: y[1]),
    ("column", lambda y: y[:, 2]),
    ("strided", lambda y: y[::2, 1::2]),
    ("transpose", lambda y: y.t()),
    ("diagonal", lambda y: y.diagonal()),
    ("view_of_view", lambda y: y.reshape(12)[3:9].view(2, 3)),
    ("narrow", lambda y: y.narrow(1, 1, 2)),
]
VIEW_IDS = [n for n, _ in VIEW_CASES]


@views
@pytest.mark.parametrize("vname,view", VIEW_CASES, ids=VIEW_IDS)
@pytest.mark.parametrize("name,op", [c for c in INPLACE if c[0] != "setitem"],
                         ids=[i for i in IDS if i != "setitem"])
def test_inplace_through_view_is_seen_by_base(sg, vname, view, name, op):
    need_torch()
    a = data((3, 4), seed=10)
    x, tx = T(sg, a), TT(a)
    v, tv = view(x), view(tx)
    b = data(tuple(tv.shape), seed=11)
    op(v, T(sg, b))
    op(tv, TT(b))
    assert_close(x, tx)
    assert_close(v, tv)
    assert v._version == x._version  # one counter per storage


@views
@pytest.mark.parametrize("vname,view", VIEW_CASES, ids=VIEW_IDS)
def test_inplace_through_view_of_non_leaf_gradients_match_torch(sg, vname, view):
    # PyTorch's CopySlices: the base's history now includes the write through the view
    need_torch()
    a, b = data((3, 4), seed=12), data((3, 4), seed=13)
    g = upstream((3, 4), seed=14)
    x, tx = T(sg, a, requires_grad=True), TT(a, requires_grad=True)
    w, tw = T(sg, b, requires_grad=True), TT(b, requires_grad=True)
    y, ty = x * 2.0, tx * 2.0
    v, tv = view(y), view(ty)
    wv, twv = view(w), view(tw)
    v.mul_(wv)
    tv.mul_(twv)
    v.add_(1.0)
    tv.add_(1.0)
    assert_close(y, ty)
    ((y * T(sg, g)).sum() + (v * v).sum()).backward()
    ((ty * TT(g)).sum() + (tv * tv).sum()).backward()
    assert_close(x.grad, tx.grad, rtol=1e-5, atol=1e-6)
    assert_close(w.grad, tw.grad, rtol=1e-5, atol=1e-6)


@views
@pytest.mark.capability("float64")
def test_views_made_before_an_inplace_change_see_the_new_history(sg):
    need_torch()
    a = data((3, 3), seed=15)
    x, tx = T(sg, a, requires_grad=True), TT(a, requires_grad=True)
    y, ty = x * 1.0, tx * 1.0
    row, trow = y[0], ty[0]  # made before the write below, overlapping it
    col, tcol = y[:, 0], ty[:, 0]
    col.mul_(3.0)
    tcol.mul_(3.0)
    y.add_(y.detach())  # and a write to the base itself
    ty.add_(ty.detach())
    (row * T(sg, [1.0, 2.0, 3.0])).sum().backward()
    (trow * TT(np.array([1.0, 2.0, 3.0], dtype=np.float32))).sum().backward()
    assert_close(row, trow)
    assert_close(x.grad, tx.grad)


@views
@pytest.mark.capability("float64")
def test_copy_into_view_of_plain_tensor_makes_base_require_grad(sg):
    need_torch()
    a = data((2,), seed=16)
    buf, tbuf = sg.zeros(4), TT(np.zeros(4, dtype=np.float32))
    s, ts = T(sg, a, requires_grad=True), TT(a, requires_grad=True)
    buf[1:3].copy_(s * 2.0)
    tbuf[1:3].copy_(ts * 2.0)
    assert buf.requires_grad and buf.grad_fn is not None
    (buf * T(sg, [1.0, 2.0, 3.0, 4.0])).sum().backward()
    (tbuf * TT(np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32))).sum().backward()
    assert_close(buf, tbuf)
    assert_close(s.grad, ts.grad)


@views
def test_inplace_on_view_of_leaf_requiring_grad_raises(sg):
    torch = need_torch()
    a = data((3, 2), seed=17)
    tx = TT(a, requires_grad=True)
    with pytest.raises(RuntimeError):
        tx[0].mul_(2.0)
    x = T(sg, a, requires_grad=True)
    with pytest.raises(RuntimeError, match="mul_"):
        x[0].mul_(2.0)
    with pytest.raises(RuntimeError, match="setitem"):
        x.t()[1] = 0.0
    assert_close(x, a)
    with sg.no_grad():
        x[0].mul_(2.0)  # an optimizer-style update through a view
    with torch.no_grad():
        tx[0].mul_(2.0)
    assert_close(x, tx)
    assert x.is_leaf


@views
def test_inplace_on_expanded_tensor_raises(sg):
    need_torch()
    x = T(sg, data((3,), seed=18))
    e = x.expand(2, 3)
    with pytest.raises(RuntimeError, match="add_"):
        e.add_(1.0)
    with pytest.raises(RuntimeError):
        e[:, 0] = 1.0
    assert_close(x, data((3,), seed=18))
    e[0, 1] = 4.0  # one element: no overlap, and it is x[1]
    assert x.tolist()[1] == 4.0
    e[:, 2].fill_(5.0)  # a fill is the same whichever copy of an element is written last
    assert x.tolist()[2] == 5.0


@views
def test_saved_view_changed_through_another_alias_raises(sg):
    # one version counter per storage: writing any alias invalidates saved views of it
    need_torch()
    a = data((4,), seed=19)
    x = T(sg, a, requires_grad=True)
    tx = TT(a, requires_grad=True)
    for src in (x, tx):
        y = src * 1.0
        head = y[:2]
        z = head.sin()  # saves head
        y[3] = 0.0  # a different element, but the same storage
        with pytest.raises(RuntimeError):
            z.sum().backward()


@views
def test_setitem_with_overlapping_source(sg):
    need_torch()
    a = data((6,), seed=20)
    x, tx = T(sg, a), TT(a)
    x[1:] = x[:-1].clone()
    tx[1:] = tx[:-1].clone()
    assert_close(x, tx)
    y = T(sg, a)
    y.copy_(y.flip(0))
    assert_close(y, a[::-1].copy())


def test_inplace_on_input_returned_by_custom_function_raises(sg):
    # the output aliases the input: changing it in place would bypass the Function's
    # backward, so it is refused, as PyTorch refuses it
    torch = need_torch()

    def identity(lib):
        class Identity(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g
        return Identity

    a = data((2,), seed=21)
    for lib, x in ((sg, T(sg, a, requires_grad=True)), (torch, TT(a, requires_grad=True))):
        y = x * 1.0
        out = identity(lib).apply(y)
        with pytest.raises(RuntimeError):
            out.mul_(3.0)
        assert_close(y.detach(), a)
        out.clone().mul_(3.0)  # a copy is fine
        (out * 2.0).sum().backward()
        assert_close(x.grad, np.full(2, 2.0, dtype=np.float32))
