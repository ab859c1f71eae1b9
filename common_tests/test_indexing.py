"""Indexing and index assignment: basic (ints, slices with steps, None, ...) and
advanced (boolean masks, integer tensors and lists), against NumPy and PyTorch."""
import numpy as np
import pytest

from .helpers_core import SMALL_INTS, T, assert_close, check_grads, data, need_torch

SHAPE = (4, 5, 3)
_MASK3 = data(SHAPE, "bool", seed=1)
_MASK1 = np.array([True, False, True, True])
_MASK2 = data((4, 5), "bool", seed=2)

# index expressions; NumPy arrays inside become stage / torch tensors
INDICES = {
    "int": 1,
    "neg_int": -1,
    "int_int": (1, 2),
    "int_int_int": (-1, 0, 2),
    "slice": slice(1, 3),
    "slice_step": slice(None, None, 2),
    "slice_start_step": slice(1, None, 2),
    "slice_neg_start": slice(-3, None),
    "slice_neg_stop": slice(None, -1),
    "slice_out_of_range": slice(2, 99),
    "slice_empty": slice(10, 20),
    "slice_2d": (slice(None), slice(1, 4, 2)),
    "slice_step3_int_step": (slice(0, 4, 3), 1, slice(None, None, 2)),
    "none": None,
    "none_int": (None, 1),
    "slice_none_int": (slice(None), None, 2),
    "ellipsis": Ellipsis,
    "ellipsis_int": (Ellipsis, 1),
    "int_ellipsis": (1, Ellipsis),
    "ellipsis_none": (Ellipsis, None),
    "int_ellipsis_slice": (0, Ellipsis, slice(1, 3)),
    "zero_dim_tensor": np.array(2),
    "mask_full": _MASK3,
    "mask_first": _MASK1,
    "mask_two": _MASK2,
    "mask_slice": (_MASK1, slice(1, 3)),
    "bool_list": [True, False, True, True],
    "int_tensor": np.array([0, 2, 3]),
    "int_tensor_2d": np.array([[0, 1], [3, 3]]),
    "int_tensor_int32": np.array([3, 1], dtype=np.int32),
    "list": [0, 2],
    "list_neg": [-1, 0],
    "list_repeated": [1, 1, 2],
    "slice_list": (slice(None), [0, 4]),
    "tensor_pair": (np.array([0, 2]), np.array([1, 3])),
    "adv_split_by_slice": ([0, 1], slice(None), [2, 0]),
    "int_and_list": (1, [0, 2]),
    "slice_broadcast_adv": (slice(1, 3), np.array([[0], [1]]), np.array([0, 2])),
    "ellipsis_list": (Ellipsis, [2, 0]),
}
NAMES = list(INDICES)


def _convert(idx, make):
    if isinstance(idx, tuple):
        return tuple(_convert(i, make) for i in idx)
    if isinstance(idx, np.ndarray):
        return make(idx)
    return idx


@pytest.mark.parametrize("name", NAMES)
def test_getitem(sg, name):
    a = data(SHAPE, seed=3)
    idx = INDICES[name]
    out = T(sg, a)[_convert(idx, lambda arr: T(sg, arr))]
    assert_close(out, a[idx])


@pytest.mark.parametrize("name", NAMES)
def test_getitem_grad_vs_torch(sg, name):
    torch = need_torch()
    idx = INDICES[name]
    check_grads(sg, lambda x: x[_convert(idx, lambda arr: T(sg, arr))],
                lambda t: t[_convert(idx, torch.tensor)], data(SHAPE, seed=4))


@pytest.mark.parametrize("dtype", ["int64", "bool", "float64", *SMALL_INTS])
def test_getitem_other_dtypes(sg, dtype):
    a = data(SHAPE, dtype, seed=5)
    x = T(sg, a)
    assert_close(x[1:, ::2, 0], a[1:, ::2, 0])
    assert_close(x[[0, 3]], a[[0, 3]])
    assert_close(x[T(sg, _MASK2)], a[_MASK2])


def test_getitem_zero_dim_and_scalar_result(sg):
    a = data((3,), seed=6)
    x = T(sg, a)
    assert x[1].shape == ()
    assert x[1].item() == float(a[1])
    assert_close(T(sg, np.array(2.5, np.float32))[None], np.array([2.5], np.float32))
    assert_close(T(sg, np.array(2.5, np.float32))[...], np.array(2.5, np.float32))


def test_repeated_index_gradient_accumulates(sg):
    torch = need_torch()
    a = data((5,), seed=7)
    idx = np.array([1, 1, 4, 1, 0])
    check_grads(sg, lambda x: x[T(sg, idx)], lambda t: t[torch.tensor(idx)], a)


def test_index_with_comparison_mask(sg):
    a = data((3, 4), seed=8)
    x = T(sg, a)
    assert_close(x[x > 0], a[a > 0])
    check_grads(sg, lambda x: x[x > 0.2], lambda t: t[t > 0.2], a)


# ------------------------------------------------------------------ setitem

SET_INDICES = {k: v for k, v in INDICES.items() if k not in ("list_repeated", "int_tensor_2d", "slice_empty")}
SET_NAMES = list(SET_INDICES)


@pytest.mark.parametrize("name", SET_NAMES)
def test_setitem_scalar(sg, name):
    a = data(SHAPE, seed=9)
    idx = SET_INDICES[name]
    x = T(sg, a)
    x[_convert(idx, lambda arr: T(sg, arr))] = -7.5
    b = a.copy()
    b[idx] = -7.5
    assert_close(x, b)


@pytest.mark.parametrize("name", SET_NAMES)
def test_setitem_tensor(sg, name):
    a = data(SHAPE, seed=10)
    idx = SET_INDICES[name]
    target_shape = a[idx].shape
    v = data(target_shape, seed=11) + 10
    x = T(sg, a)
    x[_convert(idx, lambda arr: T(sg, arr))] = T(sg, v)
    b = a.copy()
    b[idx] = v
    assert_close(x, b)


@pytest.mark.parametrize("idx,vshape", [((slice(None), 1), (3,)), ((slice(1, 3),), (1, 3)),
                                        ((Ellipsis, 0), (1,)), (([0, 2],), (5, 1))])
def test_setitem_broadcast_value(sg, idx, vshape):
    a = data(SHAPE, seed=12)
    v = data(vshape, seed=13)
    x = T(sg, a)
    x[idx] = T(sg, v)
    b = a.copy()
    b[idx] = v
    assert_close(x, b)


def test_setitem_casts_value_to_tensor_dtype(sg):
    a = data((2, 3), "int64", seed=14)
    x = T(sg, a)
    x[0] = 2.7  # truncated into the int64 tensor
    x[1, 1:] = T(sg, np.array([True, False]))
    b = a.copy()
    b[0] = 2
    b[1, 1:] = [1, 0]
    assert x.dtype is sg.int64
    assert_close(x, b)


def test_setitem_with_list_value(sg):
    a = data((2, 3), seed=15)
    x = T(sg, a)
    x[1] = T(sg, np.array([1.0, 2.0, 3.0], np.float32))
    b = a.copy()
    b[1] = [1.0, 2.0, 3.0]
    assert_close(x, b)


@pytest.mark.parametrize("name", ["int", "slice_step", "slice_2d", "mask_first", "int_tensor", "tensor_pair",
                                  "ellipsis_int", "adv_split_by_slice", "mask_full"])
def test_setitem_grad_vs_torch(sg, name):
    # y = x * 1; y[idx] = v: x gets zero gradient where v was written, v gets the rest
    torch = need_torch()
    idx = SET_INDICES[name]
    a = data(SHAPE, seed=16)
    v = data(a[idx].shape, seed=17)

    def f_sg(x, w):
        y = x * 1
        y[_convert(idx, lambda arr: T(sg, arr))] = w
        return y

    def f_t(x, w):
        y = x * 1
        y[_convert(idx, torch.tensor)] = w
        return y
    check_grads(sg, f_sg, f_t, a, v)


def test_setitem_bumps_gradient_of_later_use(sg):
    # an in-place write before use: the graph sees the new value
    a = data((3, 2), seed=18)

    def f(x):
        y = x * 2
        y[0] = 0.0
        return y * y
    check_grads(sg, f, f, a)
