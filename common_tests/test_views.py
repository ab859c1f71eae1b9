"""Views: the layout PyTorch gives each view (strides, offset, contiguity), aliasing of
writes between a view, its base and its siblings, and ``diagonal``/``unfold``.

Layout and aliasing are checked on stages with the ``views`` capability; the values
and gradients of every view op are checked on all stages (stage 0 computes them by
copying)."""
import numpy as np
import pytest

from .helpers_core import TT, T, assert_close, check_grads, data, need_torch

views = pytest.mark.capability("views")

# (name, shape, the view chain as a function of the tensor library's tensor)
CHAINS = [
    ("transpose", (3, 4), lambda x: x.transpose(0, 1)),
    ("T", (3, 4), lambda x: x.T),
    ("permute", (2, 3, 4), lambda x: x.permute(2, 0, 1)),
    ("slice_steps", (5, 6), lambda x: x[1::2, ::3]),
    ("slice_then_transpose", (5, 6), lambda x: x[1:4, 2:].t()),
    ("select", (3, 4, 5), lambda x: x[1]),
    ("select_inner", (3, 4, 5), lambda x: x[:, 2]),
    ("none_index", (3, 4), lambda x: x[None, :, None]),
    ("ellipsis", (2, 3, 4), lambda x: x[..., 1:3]),
    ("narrow", (4, 5), lambda x: x.narrow(1, 1, 3)),
    ("expand", (3, 1), lambda x: x.expand(2, 3, 4)),
    ("expand_0d", (), lambda x: x.expand(3, 2)),
    ("unsqueeze", (3, 4), lambda x: x.unsqueeze(1)),
    ("unsqueeze_last", (3, 4), lambda x: x.unsqueeze(-1)),
    ("squeeze", (3, 1, 4, 1), lambda x: x.squeeze()),
    ("flatten", (2, 3, 4), lambda x: x.flatten(1)),
    ("view", (2, 3, 4), lambda x: x.view(6, 4)),
    ("view_of_slice", (4, 6), lambda x: x[1:3].view(2, 2, 3)),
    ("reshape_transposed_dims_kept", (4, 6), lambda x: x.t().reshape(3, 2, 4)),
    ("split", (6, 4), lambda x: x.split(2)[1]),
    ("chunk", (4, 6), lambda x: x.chunk(3, dim=1)[2]),
    ("unbind", (3, 4), lambda x: x.unbind(1)[2]),
    ("diagonal", (4, 4), lambda x: x.diagonal()),
    ("diagonal_offset", (3, 5), lambda x: x.diagonal(2)),
    ("diagonal_negative", (5, 3), lambda x: x.diagonal(-1)),
    ("diagonal_dims", (2, 3, 4), lambda x: x.diagonal(1, 0, 2)),
    ("diagonal_of_transpose", (3, 4), lambda x: x.t().diagonal()),
    ("unfold", (7,), lambda x: x.unfold(0, 3, 2)),
    ("unfold_2d", (4, 6), lambda x: x.unfold(1, 2, 2)),
    ("unfold_overlap", (3, 5), lambda x: x.unfold(1, 3, 1)),
    ("chain", (4, 5, 6), lambda x: x[1:, ::2].permute(2, 0, 1)[:, 1].unsqueeze(0)),
]
IDS = [c[0] for c in CHAINS]


def _pair(sg, shape, seed=0):
    a = data(shape, seed=seed)
    return T(sg, a), TT(a)


@pytest.mark.parametrize("name,shape,f", CHAINS, ids=IDS)
def test_view_values_match_torch(sg, name, shape, f):
    need_torch()
    x, tx = _pair(sg, shape, seed=1)
    assert_close(f(x), f(tx))


@views
@pytest.mark.parametrize("name,shape,f", CHAINS, ids=IDS)
def test_view_layout_matches_torch(sg, name, shape, f):
    need_torch()
    x, tx = _pair(sg, shape, seed=2)
    v, tv = f(x), f(tx)
    assert tuple(v.shape) == tuple(tv.shape)
    if tv.numel() > 1:  # torch's strides for one element are not meaningful
        assert tuple(v.stride()) == tuple(tv.stride()), f"{name}: {v.stride()} != {tv.stride()}"
    assert v.storage_offset() == tv.storage_offset()
    assert v.is_contiguous() == tv.is_contiguous()
    assert v.untyped_storage_id() == x.untyped_storage_id()
    # data_ptr names where element 0 lives, so offsets show in it as in torch
    assert v.data_ptr() - x.data_ptr() == tv.data_ptr() - tx.data_ptr()


@views
@pytest.mark.parametrize("name,shape,f", [c for c in CHAINS if "expand" not in c[0]
                                          and c[0] != "unfold_overlap"],
                         ids=[i for i in IDS if "expand" not in i and i != "unfold_overlap"])
def test_write_through_view_reaches_base_and_siblings(sg, name, shape, f):
    need_torch()
    x, tx = _pair(sg, shape, seed=3)
    sibling, tsibling = x.reshape(-1), tx.reshape(-1)  # a view of the whole base
    v, tv = f(x), f(tx)
    marks = np.arange(1, tv.numel() + 1, dtype=np.float32).reshape(tuple(tv.shape)) * 10
    v.copy_(T(sg, marks))
    tv.copy_(TT(marks))
    assert_close(x, tx)
    assert_close(sibling, tsibling)
    # and the other way: a write to the base shows in the view
    x.mul_(-1.0)
    tx.mul_(-1.0)
    assert_close(v, tv)


@views
def test_writes_through_overlapping_views(sg):
    need_torch()
    x, tx = _pair(sg, (4, 4), seed=4)
    a, ta = x[1:3], tx[1:3]
    b, tb = x[:, 1:3], tx[:, 1:3]
    d, td = x.diagonal(), tx.diagonal()
    a.add_(1.0)
    ta.add_(1.0)
    b[0] = 5.0
    tb[0] = 5.0
    d.zero_()
    td.zero_()
    for s, t in ((x, tx), (a, ta), (b, tb), (d, td)):
        assert_close(s, t)


@views
def test_reshape_copies_when_strides_do_not_allow_a_view(sg):
    need_torch()
    x, tx = _pair(sg, (3, 4), seed=5)
    r, tr = x.t().reshape(12), tx.t().reshape(12)
    assert r.untyped_storage_id() != x.untyped_storage_id()
    r[0] = 100.0
    tr[0] = 100.0
    assert_close(x, tx)  # the copy does not write back
    assert r.is_contiguous() and r.stride() == (1,)
    with pytest.raises(ValueError):
        x.t().view(12)


@views
def test_contiguous_copies_only_when_needed(sg):
    x = T(sg, data((3, 4), seed=6))
    assert x.contiguous() is x
    t = x.t()
    c = t.contiguous()
    assert c.is_contiguous() and not t.is_contiguous()
    assert c.untyped_storage_id() != x.untyped_storage_id()
    assert_close(c, data((3, 4), seed=6).T)


@views
def test_views_allocate_nothing(sg):
    # a view is new metadata over the same storage: no element is copied
    x = T(sg, data((50, 40), seed=7))
    before = sg.memory.stats()["allocations"]
    vs = [x.t(), x[::2, 1::3], x.reshape(40, 50), x.unsqueeze(0).expand(3, 50, 40), x.diagonal(),
          x.unfold(1, 4, 2), x.narrow(0, 5, 10), x.view(2000), x.permute(1, 0)[3]]
    assert sg.memory.stats()["allocations"] == before
    assert all(v.untyped_storage_id() == x.untyped_storage_id() for v in vs)


@views
def test_view_keeps_storage_alive_after_base_dies(sg):
    a = data((6, 5), seed=8)
    x = T(sg, a)
    v = x[2:4, 1:]
    del x
    junk = [T(sg, data((6, 5), seed=9)) for _ in range(4)]  # would reuse a freed array
    assert_close(v, a[2:4, 1:])
    del junk


@views
def test_detach_and_data_alias(sg):
    x = T(sg, data((3,), seed=10), requires_grad=True)
    with sg.no_grad():
        x.detach()[1] = 4.0
        x.data[2] = 5.0
    assert x.tolist()[1:] == [4.0, 5.0]
    assert x.detach().untyped_storage_id() == x.untyped_storage_id()


# ---------------------------------------- diagonal and unfold on every stage

@pytest.mark.parametrize("offset,dims", [(0, (0, 1)), (1, (0, 1)), (-2, (0, 1)), (0, (1, 2)),
                                         (1, (2, 0)), (5, (0, 1))])
def test_diagonal_matches_numpy(sg, offset, dims):
    a = data((4, 3, 5), seed=11)
    expected = np.diagonal(a, offset, *dims)
    assert_close(T(sg, a).diagonal(offset, *dims), np.ascontiguousarray(expected))


@pytest.mark.parametrize("shape,dim,size,step", [((7,), 0, 3, 2), ((3, 6), 1, 2, 1),
                                                  ((4, 5), 0, 4, 3), ((2, 3, 4), -1, 4, 1),
                                                  ((5,), 0, 0, 1), ((), 0, 1, 1)])
def test_unfold_matches_torch(sg, shape, dim, size, step):
    need_torch()
    a = data(shape, seed=12)
    assert_close(T(sg, a).unfold(dim, size, step), TT(a).unfold(dim, size, step))


@pytest.mark.parametrize("f", [lambda x: x.diagonal(), lambda x: x.diagonal(-1, 1, 0),
                               lambda x: x.unfold(1, 3, 1), lambda x: x.unfold(0, 2, 2),
                               lambda x: x.t().diagonal(1) * 3, lambda x: x[::2].unfold(1, 2, 3)],
                         ids=["diag", "diag_neg", "unfold_overlap", "unfold", "diag_t", "slice_unfold"])
def test_view_op_gradients_match_torch(sg, f):
    check_grads(sg, f, f, data((4, 5), seed=13))


def test_view_op_bad_arguments(sg):
    x = T(sg, data((3, 4), seed=14))
    with pytest.raises(ValueError):
        x.diagonal(0, 1, 1)
    with pytest.raises(IndexError):
        x.diagonal(0, 0, 2)
    with pytest.raises(ValueError):
        x.unfold(1, 5, 1)
    with pytest.raises(ValueError):
        x.unfold(1, 2, 0)
    assert_close(x, data((3, 4), seed=14))


# in-place writes to what PyTorch makes a view of ``t``
VIEW_WRITES = {
    "slice add_": lambda t: t[1:].add_(1),
    "t mul_": lambda t: t.t().mul_(2),
    "diagonal fill_": lambda t: t.diagonal().fill_(1),
    "reshape zero_": lambda t: t.reshape(6).zero_(),
    "select copy_": lambda t: t[0].copy_(t[1] * 3),
    "transposed setitem": lambda t: t.T.__setitem__(0, 7.0),
}


@pytest.mark.parametrize("name", list(VIEW_WRITES))
def test_inplace_write_to_a_view_reaches_its_base_or_is_refused(sg, name):
    # a stage with views writes through them as PyTorch does; one without refuses, naming
    # the capability, instead of losing the write
    write = VIEW_WRITES[name]
    a = data((2, 3), seed=41)
    want = TT(a)
    with need_torch().no_grad():
        write(want)
    t = T(sg, a)
    if "views" in sg.LACKS:
        with pytest.raises(NotImplementedError, match="lacks views"):
            write(t)
        assert_close(t, a)  # left as it was
    else:
        write(t)
        assert_close(t, want.numpy())


@pytest.mark.parametrize("make", [lambda t: t.t().contiguous(), lambda t: t.t().reshape(6),
                                  lambda t: t[:, :2].flatten(), lambda t: t[0].clone()])
def test_inplace_write_to_a_copy_works_on_every_stage(sg, make):
    # where PyTorch copies, the result is no view: writing into it leaves the base alone
    a = data((2, 3), seed=42)
    want_base, want = TT(a), make(TT(a)).add_(1)
    t = T(sg, a)
    got = make(t).add_(1)
    assert_close(got, want.numpy())
    assert_close(t, want_base.numpy())


@pytest.mark.parametrize("make", [lambda t: t.t(), lambda t: t[:, :2], lambda t: t[:, ::2],
                                  lambda t: t[:, :1].expand(2, 3), lambda t: t.permute(1, 0)[1:]])
def test_view_of_a_non_contiguous_layout_is_refused_as_torch(sg, make):
    need_torch()
    a = data((2, 3), seed=43)
    with pytest.raises(RuntimeError):
        make(TT(a)).view(-1)
    with pytest.raises(RuntimeError, match="view"):
        make(T(sg, a)).view(-1)
    # the same layouts reshape (by copying) and view after contiguous(), as in PyTorch
    assert_close(make(T(sg, a)).reshape(-1), make(TT(a)).reshape(-1).numpy())
    assert_close(make(T(sg, a)).contiguous().view(-1), make(TT(a)).contiguous().view(-1).numpy())


@pytest.mark.parametrize("make", [lambda t: t[1:], lambda t: t.t().t(), lambda t: t[:, 1:2],
                                  lambda t: t.unsqueeze(0)[0], lambda t: t.reshape(3, 2)])
def test_view_of_a_viewable_layout_works_as_torch(sg, make):
    a = data((2, 3), seed=44)
    assert_close(make(T(sg, a)).view(-1), make(TT(a)).view(-1).numpy())
