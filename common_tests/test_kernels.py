"""Kernel edge cases, on every stage: empty tensors and zero-size dims, size-1
broadcasting, non-contiguous operands, NaN and inf exactly as NumPy gives them, integer
wrap-around (the documented overflow behaviour), sound float32 accumulation, block edges
of matmul and im2col, index checks, the random stream shared with stage 0, and (on
stages that declare the capability) zero-copy export through the buffer protocol."""
import gc
import math

import numpy as np
import pytest

import stage0_python

from .helpers_core import T, data, float64_if, settled
from .oracle import np_


def same(t, expected):
    """Values (NaN where NumPy has NaN, signed infinities), shape and dtype all equal."""
    expected = np.asarray(expected)
    a = np_(t)
    assert a.shape == expected.shape, f"shape {a.shape} != {expected.shape}"
    assert a.dtype == expected.dtype, f"dtype {a.dtype} != {expected.dtype}"
    np.testing.assert_array_equal(a, expected)


def close(t, expected, rtol=1e-6, atol=1e-6):
    expected = np.asarray(expected)
    a = np_(t)
    assert a.shape == expected.shape and a.dtype == expected.dtype, (a.shape, a.dtype, expected.shape)
    np.testing.assert_allclose(a, expected, rtol=rtol, atol=atol, equal_nan=True)


# ---------------------------------------------------------------- empty tensors

@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4), (2, 0, 3)])
def test_elementwise_on_empty(sg, shape):
    a, b = np.zeros(shape, np.float32), np.ones(shape[-1:], np.float32)
    x = T(sg, a)
    same(x + T(sg, b), a + b)
    same(x.exp(), np.exp(a))
    same(x < 1.0, a < 1.0)
    same(sg.where(x > 0, x, T(sg, b)), np.where(a > 0, a, b))
    same(x.to(sg.int64), a.astype(np.int64))
    same(x.T.contiguous(), a.T.copy())


def test_reductions_over_zero_size_dims(sg):
    a = np.zeros((2, 0, 3), np.float32)
    x = T(sg, a)
    same(x.sum(dim=1), a.sum(axis=1))
    same(x.sum(), a.sum(dtype=np.float32))
    same(x.prod(dim=1), a.prod(axis=1))
    same(x.sum(dim=(0, 2), keepdim=True), a.sum(axis=(0, 2), keepdims=True))
    same((x > 0).any(dim=1), (a > 0).any(axis=1))
    same((x > 0).all(dim=1), (a > 0).all(axis=1))
    same(x.amax(dim=2), a.max(axis=2))  # the non-empty dim reduces fine


def test_matmul_with_zero_sizes(sg):
    for sa, sb in [((3, 0), (0, 4)), ((0, 5), (5, 2)), ((4, 5), (5, 0)), ((2, 0, 3), (2, 3, 4))]:
        a, b = data(sa, seed=1), data(sb, seed=2)
        same(T(sg, a) @ T(sg, b), a @ b)


def test_cat_gather_and_index_with_empty_parts(sg):
    a, e = data((2, 3), seed=3), np.zeros((2, 0), np.float32)
    same(sg.cat([T(sg, a), T(sg, e), T(sg, a)], dim=1), np.concatenate([a, e, a], axis=1))
    idx = np.zeros((2, 0), np.int64)
    same(T(sg, a).gather(1, T(sg, idx)), np.take_along_axis(a, idx, axis=1))
    same(T(sg, a)[:, 1:1], a[:, 1:1])


# ---------------------------------------------------------------- broadcasting, strides

@pytest.mark.parametrize("sa,sb", [((3, 1, 4), (1, 5, 1)), ((1,), (2, 3)), ((), (2, 3)),
                                   ((2, 1), (1,)), ((1, 1, 1), (4, 1, 2)), ((5, 1), (5, 3))])
def test_size_one_broadcasting(sg, sa, sb):
    a, b = data(sa, seed=4), data(sb, seed=5, away_from=0.0)
    x, y = T(sg, a), T(sg, b)
    close(x + y, a + b)
    close(x * y, a * b)
    close(y / x.abs().add(1), b / (np.abs(a) + 1))
    same(x.maximum(y), np.maximum(a, b))
    same(x >= y, a >= b)
    same(sg.where(x > 0, y, x), np.where(a > 0, b, a))


VIEWS = {  # every kind of stride, on a (6, 18) base
    "transposed": lambda x: x.T,
    "stepped": lambda x: x[::2, 1::3],
    "permuted": lambda x: x.reshape(2, 3, 18).permute(2, 0, 1)[:, :, ::3],
    "expanded": lambda x: x[:1].expand(5, 18),
    "column": lambda x: x[:, 4],
}


@pytest.mark.parametrize("view", VIEWS)
def test_kernels_read_through_strides(sg, view):
    a = data((6, 18), seed=6)
    v = VIEWS[view](T(sg, a))
    ref = np_(v)  # the view's values, whatever the stage's layout
    np.testing.assert_array_equal(ref, VIEWS[view](_NpView(a)).a)
    close(v * 2 + 1, ref * 2 + 1)
    close(v.exp(), np.exp(ref))
    close(v.sum(dim=0), ref.sum(axis=0), rtol=1e-5)
    close(v.sum(), np.float32(ref.sum(dtype=np.float64)), rtol=1e-5)
    same(v.amax(dim=-1), ref.max(axis=-1))
    same(v.argmax(dim=0), ref.argmax(axis=0))
    same(v.to(sg.int32), ref.astype(np.int32))
    same(v.contiguous(), ref)
    same(sg.cat([v, v], dim=0), np.concatenate([ref, ref], axis=0))


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.capability("float64")
def test_casts_to_float64_read_through_strides(sg, view):
    a = data((6, 18), seed=6)
    v = VIEWS[view](T(sg, a))
    same(v.to(sg.float64), VIEWS[view](_NpView(a)).a.astype(np.float64))


class _NpView:
    """The same indexing on a NumPy array (``expand`` and ``permute`` spelled as NumPy's)."""

    def __init__(self, a):
        self.a = a

    def __getitem__(self, key):
        return _NpView(self.a[key])

    @property
    def T(self):
        return _NpView(self.a.T)

    def reshape(self, *shape):
        return _NpView(self.a.reshape(shape))

    def permute(self, *dims):
        return _NpView(self.a.transpose(dims))

    def expand(self, *shape):
        return _NpView(np.broadcast_to(self.a, shape))


def test_non_contiguous_operands_together(sg):
    a, b = data((4, 6), seed=7), data((6, 4), seed=8)
    x, y = T(sg, a), T(sg, b)
    close(x + y.T, a + b.T)
    close(x.T @ y.T, a.T @ b.T, rtol=1e-5)
    close(x[:, ::2] @ y[::2], a[:, ::2] @ b[::2], rtol=1e-5)
    close(sg.where(x.T > 0, y, x.T), np.where(a.T > 0, b, a.T))
    idx = np.array([[5, 0, 1], [0, 0, 2], [3, 4, 4], [1, 1, 0]])
    same(y.T.gather(1, T(sg, idx)), np.take_along_axis(b.T, idx, axis=1))


def test_reduce_several_axes_of_a_permuted_view(sg):
    a = data((3, 4, 5), seed=9)
    v, r = T(sg, a).permute(2, 0, 1), a.transpose(2, 0, 1)
    close(v.sum(dim=(0, 2)), r.sum(axis=(0, 2)), rtol=1e-5)
    close(v.sum(dim=(0, 2), keepdim=True), r.sum(axis=(0, 2), keepdims=True), rtol=1e-5)
    same(v.amin(dim=(1, 2)), r.min(axis=(1, 2)))
    close(v.prod(dim=1), r.prod(axis=1), rtol=1e-5)


# ---------------------------------------------------------------- NaN and inf, as NumPy

SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 2.5, -2.5, np.inf, -np.inf, np.nan, 1e30, -1e-30], np.float32)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_binary_special_values_match_numpy(sg, dtype):
    a = np.repeat(SPECIAL, len(SPECIAL)).astype(dtype)
    b = np.tile(SPECIAL, len(SPECIAL)).astype(dtype)
    x, y = T(sg, a), T(sg, b)
    with np.errstate(all="ignore"):
        same(x + y, a + b)
        same(x - y, a - b)
        same(x * y, a * b)
        same(x / y, a / b)
        same(x.maximum(y), np.maximum(a, b))
        same(x.minimum(y), np.minimum(a, b))
        same(x // y, np.floor_divide(a, b))
        same(x % y, np.remainder(a, b))
        close(x ** y, np.power(a, b), rtol=1e-6 if dtype == "float32" else 1e-14, atol=0)
    for op in ("eq", "ne", "lt", "le", "gt", "ge"):
        same(getattr(x, op)(y), getattr(np, {"eq": "equal", "ne": "not_equal", "lt": "less",
                                             "le": "less_equal", "gt": "greater",
                                             "ge": "greater_equal"}[op])(a, b))


@pytest.mark.capability("float64")
def test_pow_special_cases_match_numpy(sg):
    base = np.array([0.0, -0.0, 0.0, -0.0, -8.0, 1.0, np.nan, np.inf, -np.inf, -2.0, 2.0], np.float64)
    expo = np.array([-1.0, -1.0, 0.0, -2.0, 1 / 3, np.nan, 0.0, -1.0, 3.0, 0.5, 2000.0], np.float64)
    with np.errstate(all="ignore"):
        same(T(sg, base) ** T(sg, expo), np.power(base, expo))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_unary_special_values_match_numpy(sg, dtype):
    a = SPECIAL.astype(dtype)
    x = T(sg, a)
    with np.errstate(all="ignore"):
        for name, ref in [("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt), ("tanh", np.tanh),
                          ("sin", np.sin), ("cos", np.cos), ("abs", np.abs), ("neg", np.negative),
                          ("sign", np.sign), ("floor", np.floor), ("ceil", np.ceil),
                          ("round", np.round), ("reciprocal", np.reciprocal), ("log1p", np.log1p),
                          ("relu", lambda v: np.where(v > 0, v, np.where(np.isnan(v), v, 0)).astype(v.dtype))]:
            got = getattr(x, name)()
            exp = ref(a)
            if name in ("exp", "log", "tanh", "sin", "cos", "log1p"):  # libm: allow an ulp
                close(got, exp, rtol=3e-7 if dtype == "float32" else 1e-15, atol=0)
                np.testing.assert_array_equal(np.isnan(np_(got)), np.isnan(exp), err_msg=name)
                np.testing.assert_array_equal(np.isinf(np_(got)), np.isinf(exp), err_msg=name)
            else:
                same(got, exp)
        sig = x.sigmoid()
        close(sig, (1 / (1 + np.exp(-a.astype(np.float64)))).astype(dtype), rtol=1e-6, atol=0)
    same(x.isnan(), np.isnan(a))


@pytest.mark.capability("float64")
def test_round_is_half_to_even(sg):
    a = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4999, 1e20], np.float64)
    same(T(sg, a).round(), np.round(a))


def test_reductions_propagate_nan_and_inf_as_numpy(sg):
    rows = np.array([[1.0, np.nan, 3.0], [np.inf, -np.inf, 1.0], [np.inf, 1.0, 2.0],
                     [-np.inf, -np.inf, 0.0], [0.0, np.inf, 5.0]], np.float32)
    x = T(sg, rows)
    with np.errstate(all="ignore"):
        same(x.sum(dim=1), rows.sum(axis=1))
        same(x.prod(dim=1), rows.prod(axis=1))
        same(x.amax(dim=1), rows.max(axis=1))
        same(x.amin(dim=0), rows.min(axis=0))
        same(x.argmax(dim=1), rows.argmax(axis=1))
        same(x.argmin(dim=1), rows.argmin(axis=1))
    same(T(sg, np.array([2.0, np.nan, 7.0, np.nan], np.float32)).argmax(), np.int64(1))


def test_casts_of_special_values(sg):
    a = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40], np.float32)
    same(T(sg, a).to(sg.bool), a.astype(bool))
    with pytest.raises(ValueError):
        T(sg, a).to(sg.int64)


@pytest.mark.capability("float64")
def test_float64_casts_of_special_values(sg):
    a = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40], np.float32)
    same(T(sg, a).to(sg.float64), a.astype(np.float64))
    big = np.array([1e300, -1e300, 1e-300])
    with np.errstate(over="ignore"):
        same(T(sg, big).to(sg.float32), big.astype(np.float32))


# ---------------------------------------------------------------- integers wrap

def _wrap(v, bits):
    return ((v + 2 ** (bits - 1)) % 2 ** bits) - 2 ** (bits - 1)


@pytest.mark.parametrize("dtype,bits", [("int32", 32), ("int64", 64)])
def test_integer_overflow_wraps_in_every_kernel(sg, dtype, bits):
    top, bottom = 2 ** (bits - 1) - 1, -2 ** (bits - 1)
    a = np.array([top, bottom, top, 3, -7], dtype)
    x = T(sg, a)
    same(x + 1, np.array([_wrap(int(v) + 1, bits) for v in a], dtype))
    same(x * 3, np.array([_wrap(int(v) * 3, bits) for v in a], dtype))
    same(-x, np.array([_wrap(-int(v), bits) for v in a], dtype))
    same(x.abs(), np.array([_wrap(abs(int(v)), bits) for v in a], dtype))
    same(x // -1, np.array([_wrap(-int(v), bits) for v in a], dtype))
    same(x % -1, np.zeros(5, dtype))
    same(T(sg, np.array([3, -3, 7], dtype)) ** 41, np.array([_wrap(v ** 41, bits) for v in (3, -3, 7)], dtype))
    m = np.array([[top, top], [2, bottom]], dtype)
    expect = [[_wrap(sum(int(m[i, k]) * int(m[k, j]) for k in range(2)), bits) for j in range(2)]
              for i in range(2)]
    same(T(sg, m) @ T(sg, m), np.array(expect, dtype))


def test_integer_sums_products_and_casts_wrap(sg):
    big = np.array([2 ** 62, 2 ** 62, 5], np.int64)
    same(T(sg, big).sum(), np.int64(_wrap(2 ** 63 + 5, 64)))
    same(T(sg, big).prod(), np.int64(_wrap(2 ** 124 * 5, 64)))
    same(T(sg, np.array([2 ** 40 + 5, -1], np.int64)).to(sg.int32), np.array([5, -1], np.int32))
    f = np.array([2.0 ** 40 + 2.0 ** 17, -(2.0 ** 33) - 2.0 ** 10, 3e19, 2.0 ** 31], np.float32)
    same(T(sg, f).to(sg.int32), np.array([_wrap(math.trunc(float(v)), 32) for v in f], np.int32))
    same(T(sg, f).to(sg.int64), np.array([_wrap(math.trunc(float(v)), 64) for v in f], np.int64))


# float32 values at each word boundary of the cast: fractions, 2^31, 2^32, 2^63, 2^64, beyond
WIDE = np.array([0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 1e-40, -1e-40, 2.0 ** 23 + 1, -(2.0 ** 24),
                 2.0 ** 31 - 128, 2.0 ** 31, -(2.0 ** 31), -(2.0 ** 31) - 256, 2.0 ** 32, -(2.0 ** 32),
                 2.0 ** 32 + 512, 2.0 ** 40 + 2.0 ** 17, 2.0 ** 62, 2.0 ** 63, -(2.0 ** 63), 2.0 ** 64,
                 2.0 ** 64 + 2.0 ** 41, -(2.0 ** 64) - 2.0 ** 41, 3e19, -3e19, 1e30, -1e30, 3.4e38],
                np.float32)


@pytest.mark.parametrize("dtype,bits", [("int32", 32), ("int64", 64)])
def test_float32_casts_to_integers_truncate_and_wrap(sg, dtype, bits):
    x = T(sg, WIDE)
    expected = np.array([_wrap(math.trunc(float(v)), bits) for v in WIDE], dtype)
    same(x.to(getattr(sg, dtype)), expected)
    same(x[::2].to(getattr(sg, dtype)), expected[::2])  # through a strided view


@pytest.mark.parametrize("shape,dim", [((1000,), None), ((3, 700), 1), ((700, 3), 0), ((4, 5, 66), (0, 2))])
def test_int64_sums_and_products_of_many_elements_wrap_as_numpy(sg, shape, dim):
    """Sums and products mod 2**64 do not depend on the order of the reduction, so NumPy's
    wrapped int64 result is the answer exactly, however a kernel splits the work."""
    rng = np.random.default_rng(sum(shape))
    big = rng.integers(2 ** 58, 2 ** 62, size=shape, dtype=np.int64)  # a few dozen of them leave int64
    big[..., ::3] *= -1
    odd = rng.integers(-2 ** 20, 2 ** 20, size=shape, dtype=np.int64) | 1  # odd: no product wraps to 0
    cases = [("sum", big, True), ("sum", odd, False)]  # (reduction, data, whether it leaves int64)
    if not isinstance(dim, tuple):  # prod reduces one dim or all, as torch.prod
        cases.append(("prod", odd, True))
    for name, a, wraps in cases:
        exact = np.asarray(getattr(a.astype(object), name)(axis=dim))  # Python's unbounded ints
        leaves = [not -2 ** 63 <= int(v) < 2 ** 63 for v in exact.flat]
        assert all(leaves) if wraps else not any(leaves)
        with np.errstate(over="ignore"):
            expected = np.asarray(getattr(a, name)(axis=dim))
        assert [_wrap(int(v), 64) for v in exact.flat] == expected.ravel().tolist()
        x = T(sg, a)
        same(getattr(x, name)() if dim is None else getattr(x, name)(dim), expected)


@pytest.mark.capability("float64")
def test_float64_casts_to_integers_wrap(sg):
    f = np.array([2.0 ** 40 + 7, -(2.0 ** 33) - 1.5, 3e19, 2.0 ** 31], np.float64)
    same(T(sg, f).to(sg.int32), np.array([_wrap(math.trunc(v), 32) for v in f], np.int32))
    same(T(sg, f).to(sg.int64), np.array([_wrap(math.trunc(v), 64) for v in f], np.int64))


# ---------------------------------------------------------------- accumulation

def test_float32_sum_of_a_million_is_accurate(sg):
    rng = np.random.default_rng(0)
    a = (rng.random(10 ** 6) + 1000.0).astype(np.float32)  # naive float32 summing loses ~4 digits
    exact = a.astype(np.float64).sum()
    s = T(sg, a).sum().item()
    assert abs(s - exact) <= 2.0 ** -23 * abs(exact), (s, exact)
    m = T(sg, a).mean().item()  # two roundings: the sum's, the division's
    assert abs(m - exact / a.size) <= 2.0 ** -22 * abs(exact / a.size)
    cols = T(sg, a.reshape(1000, 1000))
    np.testing.assert_allclose(np_(cols.sum(dim=0)), a.reshape(1000, 1000).astype(np.float64).sum(axis=0),
                               rtol=2.0 ** -23)
    np.testing.assert_allclose(np_(cols.sum(dim=1)), a.reshape(1000, 1000).astype(np.float64).sum(axis=1),
                               rtol=2.0 ** -23)


BLOCK_EDGES = [(1, 1, 1), (5, 3, 7), (67, 300, 129), (130, 9, 520), (4, 600, 8), (130, 67, 97)]


@pytest.mark.parametrize("n,k,m", BLOCK_EDGES)
def test_matmul_block_edges(sg, n, k, m):
    a, b = data((n, k), seed=n), data((k, m), seed=m)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    close(T(sg, a) @ T(sg, b), ref.astype(np.float32), rtol=1e-4, atol=1e-4 * math.sqrt(k))
    for dtype in ("int64", "int32"):
        ai, bi = data((n, k), dtype, seed=n, low=-50, high=50), data((k, m), dtype, seed=m, low=-50, high=50)
        same(T(sg, ai) @ T(sg, bi), ai @ bi)


@pytest.mark.parametrize("n,k,m", BLOCK_EDGES)
@pytest.mark.capability("float64")
def test_float64_matmul_block_edges(sg, n, k, m):
    a, b = data((n, k), "float64", seed=n), data((k, m), "float64", seed=m)
    close(T(sg, a) @ T(sg, b), a @ b, rtol=1e-12, atol=1e-12)


def test_batched_matmul_with_broadcast_and_transposed_batches(sg):
    a, b = data((3, 5, 4), seed=10), data((4, 6), seed=11)
    x, w = T(sg, a), T(sg, b)
    close(x @ w, a @ b, rtol=1e-5)
    close(x @ w.expand(3, 4, 6), a @ np.broadcast_to(b, (3, 4, 6)), rtol=1e-5)
    close(x.permute(0, 2, 1) @ x, a.transpose(0, 2, 1) @ a, rtol=1e-5)


# ---------------------------------------------------------------- convolution windows

def _im2col(x, k, d, p, s):
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    cols = np.zeros((n, c, k[0], k[1], oh, ow), x.dtype)
    for i in range(k[0]):
        for j in range(k[1]):
            cols[:, :, i, j] = xp[:, :, i * d[0]:i * d[0] + s[0] * oh:s[0], j * d[1]:j * d[1] + s[1] * ow:s[1]]
    return cols.reshape(n, c * k[0] * k[1], oh * ow)


@pytest.mark.parametrize("k,d,p,s", [((3, 3), (1, 1), (1, 1), (1, 1)), ((2, 3), (2, 1), (0, 2), (2, 3)),
                                     ((1, 1), (1, 1), (0, 0), (1, 1)), ((3, 2), (1, 2), (2, 1), (3, 1))])
def test_unfold_and_fold_are_im2col_and_its_adjoint(sg, k, d, p, s):
    F = sg.nn.functional
    x = data((2, 3, 7, 6), seed=12)
    cols = F.unfold(T(sg, x), k, dilation=d, padding=p, stride=s)
    same(cols, _im2col(x, k, d, p, s))
    y = data(tuple(cols.shape), seed=13)
    back = F.fold(T(sg, y), (7, 6), k, dilation=d, padding=p, stride=s)
    # <unfold(x), y> == <x, fold(y)>: fold sums every column back where unfold read it
    lhs = float((_im2col(x, k, d, p, s).astype(np.float64) * y).sum())
    rhs = float((x.astype(np.float64) * np_(back)).sum())
    assert abs(lhs - rhs) <= 1e-4 * max(1.0, abs(lhs))
    xv = T(sg, data((2, 7, 3, 6), seed=14)).permute(0, 2, 1, 3)  # a non-contiguous input
    same(F.unfold(xv, k, dilation=d, padding=p, stride=s), _im2col(np_(xv), k, d, p, s))


# ---------------------------------------------------------------- indexing

def test_gather_and_scatter_add_refuse_negative_indices_as_pytorch(sg):
    """Advanced indexing counts negative indices from the end; gather and scatter_add,
    like PyTorch's, take indices in [0, size) only and leave every tensor as it was."""
    a = data((3, 4), seed=15)
    x = T(sg, a)
    idx = np.array([[-1, 0], [3, 0], [2, 2]])
    with pytest.raises(IndexError, match="-1"):
        settled(x.gather(1, T(sg, idx)))
    with pytest.raises(IndexError, match="-1"):
        settled(x.scatter_add(1, T(sg, idx), T(sg, data((3, 2), seed=16))))
    same(x, a)
    good = idx % 4
    same(x.gather(1, T(sg, good)), np.take_along_axis(a, good, axis=1))
    src = data((3, 2), seed=16)
    out = T(sg, np.zeros((3, 4), np.float32)).scatter_add(1, T(sg, good), T(sg, src))
    ref = np.zeros((3, 4), np.float32)
    np.add.at(ref, (np.arange(3)[:, None], good), src)
    close(out, ref)


def test_bad_indices_raise_and_leave_tensors_unchanged(sg):
    a = data((3, 4), seed=17)
    x = T(sg, a)
    with pytest.raises(IndexError):
        settled(x.gather(1, T(sg, np.array([[0, 4]] * 3))))
    with pytest.raises(IndexError):
        settled(x.scatter_add(1, T(sg, np.array([[0, -5]] * 3)), T(sg, data((3, 2), seed=1))))
    with pytest.raises(IndexError):
        x[T(sg, np.array([0, 3]))] = 1.0
    same(x, a)


def test_setitem_strided_region_and_repeated_indices(sg):
    a = data((4, 5), seed=18)
    x, r = T(sg, a), a.copy()
    x[1:4:2, ::2] = T(sg, data((2, 3), seed=20))
    r[1:4:2, ::2] = data((2, 3), seed=20)
    same(x, r)
    x[T(sg, np.array([0, 2, 2]))] = T(sg, data((5,), seed=19))
    r[[0, 2, 2]] = data((5,), seed=19)
    same(x, r)


# ---------------------------------------------------------------- random: stage 0's stream

@pytest.mark.parametrize("make", [
    lambda m, g: m.rand(7, 3, generator=g),
    float64_if(lambda m, g: m.rand(5, dtype=m.float64, generator=g), True),
    lambda m, g: m.randn(7, generator=g),
    lambda m, g: m.normal(2.0, 0.5, (4, 3), generator=g),
    lambda m, g: m.randint(-5, 9, (11,), generator=g),
    lambda m, g: m.randint(0, 2 ** 40, (6,), generator=g),
    lambda m, g: m.zeros(3, 4).uniform_(-2.0, 3.0, generator=g),
])
def test_random_fills_match_stage0_bit_for_bit(sg, make):
    g0, g = stage0_python.Generator(1234), sg.Generator(1234)
    for _ in range(2):  # and the generator's state continues in step
        same(make(sg, g), np_(make(stage0_python, g0)))
        assert g.get_state() == g0.get_state()


# ---------------------------------------------------------------- buffer protocol

@pytest.mark.capability("buffer_protocol")
def test_buffer_protocol_exports_without_copying(sg):
    t = sg.arange(12.0).reshape(3, 4)
    arr = np.asarray(t._data)
    assert arr.dtype == np.float32 and arr.shape == (3, 4)
    assert arr.ctypes.data == t.data_ptr()
    arr[1, 2] = 100.0  # a write through NumPy is a write into the tensor
    assert t[1, 2].item() == 100.0
    tt = np.asarray(t.T._data)  # a view exports its strides, not a copy
    assert tt.shape == (4, 3) and tt.strides == (4, 16) and tt.ctypes.data == t.data_ptr()
    assert tt[2, 1] == 100.0
    e = np.asarray(t[:1].expand(5, 4)._data)
    assert e.strides == (0, 4) and e[4, 2] == 2.0
    mv = memoryview(t[1:, ::2]._data)
    assert mv.format == "f" and mv.shape == (2, 2) and mv.strides == (16, 8)
    assert mv.tolist() == [[4.0, 100.0], [8.0, 10.0]]
    storage = np.asarray(t._data.storage)
    assert storage.shape == (12,) and storage.ctypes.data == t.data_ptr()
    assert storage.ctypes.data % 64 == 0  # cache-line aligned
    for dtype, np_dtype in [(sg.bool, np.bool_), (sg.int32, np.int32), (sg.int64, np.int64),
                            (sg.float64, np.float64)]:
        v = np.asarray(sg.ones(3, dtype=dtype)._data)
        assert v.dtype == np_dtype and v.tolist() == [1, 1, 1]


@pytest.mark.capability("buffer_protocol")
def test_exported_memory_outlives_the_tensor(sg):
    arr = np.asarray(sg.arange(1000.0)._data)  # the tensor is gone at once; the export keeps it
    gc.collect()
    others = [sg.full((1000,), 7.0) for _ in range(20)]  # the pool must not hand its memory out
    assert arr.tolist() == list(map(float, range(1000)))
    assert all(o.sum().item() == 7000.0 for o in others)
