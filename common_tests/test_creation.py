"""Tensor construction, dtypes and conversion to and from Python and NumPy."""
import numpy as np
import pytest

from .helpers_core import DTYPES, NP, T, assert_close, data, need_torch, sgdt


@pytest.mark.parametrize("value,dtype", [
    (1.5, "float32"),
    (7, "int64"),
    (True, "bool"),
    ([1, 2, 3], "int64"),
    ([[1.0, 2], [3, 4]], "float32"),
    ([True, False, True], "bool"),
    ([[1, 2.5]], "float32"),
    ([[True, 2], [3, 4]], "int64"),
    ([[[1], [2]], [[3], [4]]], "int64"),
    ([], "float32"),
])
def test_tensor_infers_dtype_like_torch(sg, value, dtype):
    t = sg.tensor(value)
    assert t.dtype is sgdt(sg, dtype)
    assert_close(t, np.array(value, dtype=NP[dtype]))


@pytest.mark.parametrize("dtype", DTYPES)
def test_tensor_explicit_dtype_converts(sg, dtype):
    # float -> int truncates toward zero (a C cast), anything nonzero -> True
    value = [[1.7, -2.2, 0.0], [3.0, -0.5, 9.9]]
    t = sg.tensor(value, dtype=sgdt(sg, dtype))
    assert t.dtype is sgdt(sg, dtype)
    assert_close(t, np.array(value).astype(NP[dtype]))


def test_bool_alias(sg):
    assert sg.bool is sg.bool_
    assert sg.tensor([1, 0], dtype=sg.bool).dtype is sg.bool_


@pytest.mark.parametrize("src", DTYPES)
@pytest.mark.parametrize("method,dst", [("float", "float32"), ("double", "float64"),
                                        ("long", "int64"), ("int", "int32"), ("bool", "bool")])
def test_conversion_methods(sg, src, method, dst):
    a = data((2, 3), src, seed=3, low=-3, high=3)
    t = getattr(T(sg, a), method)()
    assert t.dtype is sgdt(sg, dst)
    assert_close(t, a.astype(NP[dst]))


@pytest.mark.parametrize("src", ["float32", "float64"])
@pytest.mark.parametrize("dst", DTYPES)
def test_to_dtype(sg, dst, src):
    a = data((4,), src, seed=5, low=-3, high=3)
    t = T(sg, a).to(sgdt(sg, dst))
    assert_close(t, a.astype(NP[dst]))


def test_metadata(sg):
    t = sg.zeros(2, 3, 4)
    assert tuple(t.shape) == (2, 3, 4)
    assert t.shape == (2, 3, 4)
    assert t.ndim == 3 and t.dim() == 3
    assert t.numel() == 24
    assert tuple(t.size()) == (2, 3, 4) and t.size(1) == 3 and t.size(-1) == 4
    assert len(t) == 2
    assert sg.tensor(3.0).shape == () and sg.tensor(3.0).ndim == 0
    assert isinstance(t, sg.Tensor)


@pytest.mark.parametrize("fn,np_fn", [("zeros", np.zeros), ("ones", np.ones)])
@pytest.mark.parametrize("shape_args", [((2, 3),), (2, 3), ([2, 3],), (4,), ((),), ((0, 3),)])
def test_zeros_ones_shape_forms(sg, fn, np_fn, shape_args):
    t = getattr(sg, fn)(*shape_args)
    shape = shape_args[0] if len(shape_args) == 1 and not isinstance(shape_args[0], int) else shape_args
    assert_close(t, np_fn(tuple(shape), dtype=np.float32))


@pytest.mark.parametrize("dtype", DTYPES)
def test_zeros_ones_dtype(sg, dtype):
    assert_close(sg.zeros(3, 2, dtype=sgdt(sg, dtype)), np.zeros((3, 2), NP[dtype]))
    assert_close(sg.ones((2,), dtype=sgdt(sg, dtype)), np.ones((2,), NP[dtype]))


@pytest.mark.parametrize("fill,dtype", [(1.5, "float32"), (3, "int64"), (True, "bool"), (-2.25, "float32")])
def test_full_infers_dtype_from_fill(sg, fill, dtype):
    t = sg.full((2, 3), fill)
    assert t.dtype is sgdt(sg, dtype)
    assert_close(t, np.full((2, 3), fill, dtype=NP[dtype]))


@pytest.mark.capability("float64")
def test_full_explicit_dtype(sg):
    assert_close(sg.full((3,), 2, dtype=sg.float64), np.full((3,), 2, np.float64))
    assert_close(sg.full([2, 2], 2.9, dtype=sg.int32), np.full((2, 2), 2, np.int32))


@pytest.mark.parametrize("dtype", DTYPES)
def test_empty_shape_and_dtype(sg, dtype):
    t = sg.empty(2, 5, dtype=sgdt(sg, dtype))
    assert t.shape == (2, 5) and t.dtype is sgdt(sg, dtype)
    assert sg.empty((3,)).dtype is sg.float32
    assert np.asarray(t.tolist()).shape == (2, 5)


@pytest.mark.parametrize("args,kwargs", [
    ((5,), {}),
    ((2, 7), {}),
    ((1, 10, 3), {}),
    ((10, 0, -2), {}),
    ((5.0,), {}),
    ((0.0, 1.0, 0.25), {}),
    ((-1, 1, 0.1), {}),
    ((0, 4), {"dtype": "float64"}),
    ((3, 3), {}),
])
def test_arange(sg, args, kwargs):
    kw = {k: sgdt(sg, v) for k, v in kwargs.items()}
    t = sg.arange(*args, **kw)
    default = "float32" if any(isinstance(a, float) for a in args) else "int64"
    dtype = kwargs.get("dtype", default)
    assert_close(t, np.arange(*args).astype(NP[dtype]))


@pytest.mark.parametrize("start,end,steps", [(0, 1, 5), (-1.0, 1.0, 4), (2, 2, 1), (0, 10, 6), (3, -3, 7), (0, 1, 0)])
def test_linspace(sg, start, end, steps):
    assert_close(sg.linspace(start, end, steps), np.linspace(start, end, steps).astype(np.float32),
                 atol=1e-6)


@pytest.mark.parametrize("args", [(3,), (2, 4), (4, 2), (1,)])
def test_eye(sg, args):
    assert_close(sg.eye(*args), np.eye(*args, dtype=np.float32))


def test_eye_dtype(sg):
    assert_close(sg.eye(3, dtype=sg.int64), np.eye(3, dtype=np.int64))


@pytest.mark.parametrize("fn", ["rand", "randn"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rand_shape_dtype(sg, fn, dtype):
    t = getattr(sg, fn)(3, 4, dtype=sgdt(sg, dtype))
    assert t.shape == (3, 4) and t.dtype is sgdt(sg, dtype)
    u = getattr(sg, fn)((2,))
    assert u.shape == (2,) and u.dtype is sg.float32
    a = t.numpy()
    assert np.all(np.isfinite(a))
    if fn == "rand":
        assert a.min() >= 0.0 and a.max() < 1.0


def test_randint_shape_dtype_range(sg):
    t = sg.randint(-3, 4, (5, 6))
    assert t.shape == (5, 6) and t.dtype is sg.int64
    a = t.numpy()
    assert a.min() >= -3 and a.max() <= 3
    assert sg.randint(0, 5, (3,), dtype=sg.int32).dtype is sg.int32


def test_randint_high_only(sg):
    # torch.randint(high, size)
    a = sg.randint(4, (50,)).numpy()
    assert a.dtype == np.int64 and a.min() >= 0 and a.max() <= 3


@pytest.mark.parametrize("fn,np_fn", [("zeros_like", np.zeros_like), ("ones_like", np.ones_like)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
@pytest.mark.parametrize("to", ["int32", "float64"])
def test_zeros_ones_like(sg, fn, np_fn, dtype, to):
    a = data((2, 3), dtype)
    assert_close(getattr(sg, fn)(T(sg, a)), np_fn(a))
    assert_close(getattr(sg, fn)(T(sg, a), dtype=getattr(sg, to)), np_fn(a, dtype=to))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_full_like_empty_like_rand_like(sg, dtype):
    """The *_like functions keep the shape and dtype of their argument."""
    x = T(sg, data((2, 3), dtype))
    assert_close(sg.full_like(x, 2.5), np.full((2, 3), 2.5, dtype=dtype))
    e = sg.empty_like(x)
    assert e.shape == (2, 3) and e.dtype is getattr(sg, dtype)
    for fn in ("rand_like", "randn_like"):
        r = getattr(sg, fn)(x)
        assert r.shape == (2, 3) and r.dtype is getattr(sg, dtype)
        assert not r.requires_grad


@pytest.mark.parametrize("dtype", DTYPES)
def test_from_numpy_and_back(sg, dtype):
    a = data((2, 3), dtype, seed=11, low=-5, high=5)
    t = sg.from_numpy(a)
    assert t.dtype is sgdt(sg, dtype)
    assert_close(t, a)
    b = t.numpy()
    assert isinstance(b, np.ndarray) and b.dtype == a.dtype
    np.testing.assert_array_equal(b, a)


def test_from_numpy_noncontiguous(sg):
    a = np.arange(12, dtype=np.float32).reshape(3, 4).T[::2]
    assert_close(sg.from_numpy(a), a)


@pytest.mark.parametrize("dtype", DTYPES)
def test_tolist_matches_numpy(sg, dtype):
    a = data((2, 2, 3), dtype, seed=2)
    lst = T(sg, a).tolist()
    assert lst == a.tolist()
    py = {"bool": bool, "int64": int, "int32": int}.get(dtype, float)
    assert type(lst[0][0][0]) is py


def test_item(sg):
    assert sg.tensor(2.5).item() == 2.5 and type(sg.tensor(2.5).item()) is float
    assert sg.tensor([[7]]).item() == 7 and type(sg.tensor([[7]]).item()) is int
    assert sg.tensor(True).item() is True
    v = np.float32(0.1)
    assert sg.tensor([0.1]).item() == float(v)  # float32 storage is visible
    with pytest.raises((RuntimeError, ValueError)):
        sg.tensor([1.0, 2.0]).item()


def test_scalar_conversions(sg):
    assert float(sg.tensor(1.25)) == 1.25
    assert int(sg.tensor(3)) == 3
    assert bool(sg.tensor([1.0])) is True and bool(sg.tensor(0.0)) is False


def test_tensor_from_tensor_list(sg):
    # torch.tensor accepts a list of zero-dim tensors
    t = sg.tensor([sg.tensor(1.0), sg.tensor(2.0)])
    assert_close(t, np.array([1.0, 2.0], np.float32))


def test_clone_is_independent(sg):
    x = T(sg, data((3,)))
    y = x.clone()
    before = x.tolist()
    y[0] = 100.0
    assert x.tolist() == before
    assert y.tolist()[0] == 100.0


@pytest.mark.parametrize("dtype", DTYPES)
def test_is_floating_point_matches_torch(sg, dtype):
    torch = need_torch()
    t = sg.zeros(1, dtype=sgdt(sg, dtype))
    tdt = torch.bool if dtype == "bool" else getattr(torch, dtype)
    assert t.dtype.is_floating_point == tdt.is_floating_point
    assert t.is_floating_point() == torch.zeros(1, dtype=tdt).is_floating_point()


def test_default_dtype(sg):
    assert sg.tensor([1.0]).dtype is sg.float32
    assert sg.ones(2).dtype is sg.float32
    assert sg.arange(3).dtype is sg.int64


def test_linspace_bool_is_refused_as_torch(sg):
    torch = need_torch()
    with pytest.raises(Exception) as want:
        torch.linspace(0, 1, 3, dtype=torch.bool)
    with pytest.raises(type(want.value)) as got:
        sg.linspace(0, 1, 3, dtype=sg.bool)
    assert "linspace" in str(got.value) and "bool" in str(got.value)
    assert sg.linspace(0, 1, 3, dtype=sg.float32).tolist() == torch.linspace(0, 1, 3).tolist()
