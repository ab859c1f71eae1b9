"""Indexing: ``t[key]`` and ``t[key] = value`` with ints, slices (positive steps),
``None``, ``...``, boolean masks and integer tensors, as in NumPy and PyTorch.

The basic part of a key becomes one strided region (a ``Slice``: a view on stages with
views); the advanced part becomes a gather over the flattened indexed dims, placed where
NumPy places it.
"""
import operator

from . import autograd, ops, views
from . import backend as B
from . import dtypes as D
from .device import place
from .dtypes import bool_, int64
from .ops import where
from .shapes import ShapeError, out_of_range
from .tensor import Tensor


def getitem(t, key):
    """``t[key]``: basic indexing as one strided slice, then NumPy-style advanced
    indexing (int and bool tensors) as a gather."""
    starts, steps, counts, view_shape, adv = parse_index(t.shape, key)
    x = t
    if counts != list(t.shape):
        x = ops.Slice.apply(x, starts, steps, counts)
    x = x.reshape(view_shape)
    if adv:
        x = advanced(x, adv)
    return x


def setitem(t, key, value):
    """``t[key] = value``, in place (through a view where the stage has views)."""
    if not isinstance(value, Tensor):
        D.scalar_category(value)  # TypeError for non-numbers
        value = t._scalar(value, t.dtype)
    elif value.dtype.category > t.dtype.category:
        raise TypeError(f"setitem: cannot assign {value.dtype.name} values into a "
                        f"{t.dtype.name} tensor")
    starts, steps, counts, view_shape, adv = parse_index(t.shape, key)
    if not adv:
        target = tuple(view_shape)
        if B.broadcast_shapes(target, value.shape) != target:
            raise ShapeError(f"setitem: value of shape {list(value.shape)} cannot be broadcast "
                             f"to the indexed shape {list(target)}")
    views.refuse_copied_view(t, "setitem")
    if t._view is not None and autograd.is_grad_enabled():
        t._sync_view()
    tracked = autograd.is_grad_enabled() and (t.requires_grad or value.requires_grad)
    if not adv and not tracked:
        v = B.cast(value._data, t.dtype)
        if value.numel() != 1:
            v = B.reshape(B.expand(v, tuple(view_shape)), counts)
        B.assign(t._data, starts, steps, counts, v)
        return
    if not adv:
        region = t[key]
        if region is t or B.shares_storage(region._data, t._data):
            # a view (stages with views): write through it, as PyTorch does
            region._inplace(lambda x: ops.Overwrite.apply(x, value.to(t.dtype)), "setitem")
            return
    positions = Tensor._make(place(B.arange(0, t.numel(), 1, int64), t.device)).reshape(t.shape)[key]
    if B.broadcast_shapes(positions.shape, value.shape) != tuple(positions.shape):
        raise ShapeError(f"setitem: value of shape {list(value.shape)} cannot be broadcast to "
                         f"the indexed shape {list(positions.shape)}")
    t._inplace(lambda x: ops.IndexPut.apply(x, positions, value.to(t.dtype)), "setitem")


def parse_index(shape, key):
    """Split an index into its basic part (a strided region plus the view shape after
    dropping int dims and inserting None dims) and its advanced part: a list of
    (position in the view shape, int64 index tensor)."""
    if not isinstance(key, tuple):
        key = (key,)
    items = []
    for k in key:
        if isinstance(k, (list, tuple)):  # a sequence inside an index tuple is an advanced index
            k = Tensor._infer(k, dtype=int64) if not k else Tensor._infer(k)
            if k.dtype.is_floating_point:
                raise IndexError("tensors used as indices must be long, int or bool tensors")
        items.append(k)
    def dims_used(k):  # a bool mask consumes as many dims as it has
        if k is None or k is Ellipsis:
            return 0
        return k.ndim if isinstance(k, Tensor) and k.dtype is bool_ else 1
    consumed = sum(map(dims_used, items))
    ellipses = [i for i, k in enumerate(items) if k is Ellipsis]
    if len(ellipses) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if consumed > len(shape):
        raise IndexError(f"too many indices for tensor of dimension {len(shape)} (shape {list(shape)})")
    fill = [slice(None)] * (len(shape) - consumed)
    if ellipses:
        items[ellipses[0]:ellipses[0] + 1] = fill
    else:
        items += fill
    starts, steps, counts, view, adv = [], [], [], [], []
    d = 0
    for k in items:
        if d >= len(shape) and k is not None:
            break
        if k is None:
            view.append(1)
            continue
        if isinstance(k, Tensor):
            if k.dtype is bool_:
                if tuple(k.shape) != tuple(shape[d:d + k.ndim]):
                    raise IndexError(f"the shape of the mask {list(k.shape)} does not match the shape "
                                     f"of the indexed tensor {list(shape)} at dim {d}")
                for j, idx in enumerate(k.nonzero(as_tuple=True) if k.ndim else ()):
                    starts.append(0), steps.append(1), counts.append(shape[d + j])
                    view.append(shape[d + j])
                    adv.append((len(view) - 1, idx))
                if not k.ndim:  # x[True] / x[False]: a new dim of size 1 or 0
                    view.append(1)
                    adv.append((len(view) - 1, Tensor._make(B.full((1 if k.item() else 0,), 0, int64))))
                d += k.ndim
                continue
            if k.dtype.is_floating_point:
                raise IndexError(f"tensors used as indices must be long, int or bool tensors, got "
                                 f"{k.dtype.name}")
            starts.append(0), steps.append(1), counts.append(shape[d])
            view.append(shape[d])
            adv.append((len(view) - 1, k.long()))
            d += 1
            continue
        n = shape[d]
        if isinstance(k, slice):
            start, stop, step = k.indices(n) if k.step is None or k.step > 0 else (0, 0, 0)
            if k.step is not None and k.step <= 0:
                raise ValueError(f"getitem: slice step must be positive, got {k.step}")
            count = len(range(start, stop, step))
            starts.append(start if count else 0), steps.append(step), counts.append(count)
            view.append(count)
            d += 1
            continue
        if isinstance(k, float) or isinstance(k, bool):
            raise TypeError(f"getitem: invalid index of type {type(k).__name__}")
        try:
            i = operator.index(k)
        except TypeError:
            raise TypeError(f"getitem: invalid index of type {type(k).__name__}") from None
        if not -n <= i < n:
            raise IndexError(f"index {i} is out of bounds for dimension {d} with size {n}")
        starts.append(i % n), steps.append(1), counts.append(1)
        d += 1
    return starts, steps, counts, view, adv


def advanced(x, adv):
    """NumPy-style advanced indexing of ``x`` by int tensors at view positions."""
    dims = [p for p, _ in adv]
    idx = [t.to(x.device) for _, t in adv]  # index tensors go to the data, as in PyTorch
    bshape = B.broadcast_shapes(*(t.shape for t in idx))
    if bshape is None:
        raise IndexError(f"shape mismatch: indexing tensors could not be broadcast together with "
                         f"shapes {[list(t.shape) for t in idx]}")
    rest = [d for d in range(x.ndim) if d not in dims]
    sizes = [x.shape[d] for d in dims]
    lin = None
    for t, n, stride in zip(idx, sizes, B.contiguous_strides(sizes)):
        bad = out_of_range(t, -n, n)
        if bad is not None:
            raise IndexError(f"index {bad} is out of bounds for dimension with size {n}")
        t = where(t < 0, t + n, t) * stride
        lin = t if lin is None else lin + t
    lin = lin.expand(bshape) if tuple(lin.shape) != bshape else lin
    y = x.permute(dims + rest) if dims + rest != list(range(x.ndim)) else x
    rest_shape = [x.shape[d] for d in rest]
    flat = y.reshape(B.prod(sizes), *rest_shape)
    out = flat.index_select(0, lin.reshape(-1)).reshape(*bshape, *rest_shape)
    consecutive = dims == list(range(dims[0], dims[0] + len(dims)))
    if consecutive and dims[0] > 0:
        k = len(bshape)
        order = list(range(k, k + dims[0])) + list(range(k)) + list(range(k + dims[0], out.ndim))
        out = out.permute(order)
    return out
