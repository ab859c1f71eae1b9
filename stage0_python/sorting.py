"""Sorting and selection: ``sort argsort msort topk kthvalue searchsorted bucketize``.

One backend primitive, ``sort`` (stable, NaN largest), carries them all; the gradient of
a sorted tensor is the upstream gradient scattered back through the indices. The methods
are ``SortingMethods``, a base of ``Tensor``; the package exports them as functions too,
with ``searchsorted`` and ``bucketize``.
"""
from . import backend as B
from .device import place
from .dtypes import bool_, int32, int64
from .method_forms import ValuesIndices
from .ops import Picked
from .shapes import ShapeError
from .tensor_core import TensorCore

# Tensor lists SortingMethods among its bases, so this module loads before Tensor exists:
# it tests and makes tensors through Tensor's base, as tensor_core does
wrap = TensorCore._make


class Sort(Picked):
    @staticmethod
    def forward(ctx, x, dim, descending):
        return Picked.picked(ctx, x, dim, *B.sort(x._data, dim, descending))


def _check_tensor(x, op):
    if not isinstance(x, TensorCore):
        raise TypeError(f"{op}: input must be a Tensor, got {type(x).__name__}")


def _k_in_range(input, k, d, op, low):
    n = input.shape[d] if input.ndim else 1
    if not isinstance(k, int) or isinstance(k, bool):
        raise TypeError(f"{op}: k must be an int, got {type(k).__name__}")
    if not low <= k <= n:
        raise ShapeError(f"{op}: k ({k}) out of range for dimension {d} of size {n} (tensor of shape "
                         f"{list(input.shape)}, {input.dtype.name})")
    return n


class SortingMethods:
    """Tensor's sorting methods. Each is also the package's function (``sg.sort(x)`` is
    ``x.sort()``), so its first parameter keeps the function's name, ``input``."""

    __slots__ = ()

    def sort(input, dim=-1, descending=False, stable=False):
        """See torch.sort. Always stable (``stable`` is accepted and ignored): equal values keep
        their order, so indices equal PyTorch's with ``stable=True``; NaN sorts as the largest."""
        _check_tensor(input, "sort")
        d = input._dim(dim, "sort")
        if not input.ndim:  # a 0-d tensor is its own sort, at index 0
            v, i = Sort.apply(input.reshape(1), 0, bool(descending))
            return ValuesIndices(v.reshape(()), i.reshape(()))
        return ValuesIndices(*Sort.apply(input, d, bool(descending)))

    def argsort(input, dim=-1, descending=False, stable=False):
        """See torch.argsort: the indices of ``sort`` (always stable)."""
        return sort(input, dim, descending).indices

    def msort(input):
        """See torch.msort: the values of ``sort`` along dim 0."""
        return sort(input, 0).values

    def topk(input, k, dim=-1, largest=True, sorted=True):
        """See torch.topk: the ``k`` largest (smallest with ``largest=False``) along ``dim``;
        ties keep their order, and the result is always sorted."""
        _check_tensor(input, "topk")
        d = input._dim(dim, "topk")
        _k_in_range(input, k, d, "topk", 0)
        v, i = sort(input, d, descending=largest)
        if not input.ndim:
            return ValuesIndices(v, i)
        return ValuesIndices(v.narrow(d, 0, k), i.narrow(d, 0, k))

    def kthvalue(input, k, dim=-1, keepdim=False):
        """See torch.kthvalue: the ``k``-th smallest along ``dim`` (k from 1) and its index."""
        _check_tensor(input, "kthvalue")
        d = input._dim(dim, "kthvalue")
        _k_in_range(input, k, d, "kthvalue", 1)
        v, i = sort(input, d)
        if not input.ndim:
            return ValuesIndices(v, i)
        v, i = v.narrow(d, k - 1, 1), i.narrow(d, k - 1, 1)
        return ValuesIndices(v, i) if keepdim else ValuesIndices(v.squeeze(d), i.squeeze(d))


# the package's functions: the methods, called with the tensor first
sort, argsort, msort, topk, kthvalue = (SortingMethods.sort, SortingMethods.argsort, SortingMethods.msort,
                                        SortingMethods.topk, SortingMethods.kthvalue)


def searchsorted(sorted_sequence, values, out_int32=False, right=False, side=None, sorter=None):
    """See torch.searchsorted: for each value, how many entries of the sorted last dim of
    ``sorted_sequence`` come before it (``right``: before or equal). A scalar ``values``
    gives a 0-d result. Counted by comparison, O(n) per value: no binary search, but no
    new primitive either. NaN values go last, as in PyTorch."""
    _check_tensor(sorted_sequence, "searchsorted")
    if side is not None:
        if side not in ("left", "right"):
            raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
        if right and side == "left":
            raise ValueError("searchsorted: side='left' and right=True contradict each other")
        right = side == "right"
    seq = sorted_sequence
    if sorter is not None:
        seq = seq.gather(-1, sorter)
    scalar = not isinstance(values, TensorCore)
    vals = wrap(place(B.full((), values, seq.dtype), seq.device)) if scalar else values
    if seq.dtype is bool_ or vals.dtype is bool_:
        raise TypeError(f"searchsorted: bool tensors are not supported (sorted_sequence "
                        f"{seq.dtype.name}, values {vals.dtype.name})")
    if seq.ndim == 0:
        raise ShapeError("searchsorted: sorted_sequence must have at least one dim, got a 0-d tensor")
    if seq.ndim > 1 and (scalar or tuple(seq.shape[:-1]) != tuple(vals.shape[:-1])):
        raise ShapeError(f"searchsorted: sorted_sequence of shape {list(seq.shape)} and values of "
                         f"shape {list(vals.shape)} must agree in every dim but the last")
    # PyTorch's comparison: an entry counts while not (entry >= v) (with right: > v)
    if seq.ndim == 1:
        s, v = seq, vals.unsqueeze(-1)
    else:
        s, v = seq.unsqueeze(-2), vals.unsqueeze(-1)
    after = (s > v) if right else (s >= v)
    out = after.logical_not().sum(dim=-1)
    return out.to(int32 if out_int32 else int64)


def bucketize(input, boundaries, out_int32=False, right=False):
    """See torch.bucketize: the bucket of each element among the 1-d ``boundaries``."""
    _check_tensor(boundaries, "bucketize")
    if boundaries.ndim != 1:
        raise ShapeError(f"bucketize: boundaries must be 1-d, got shape {list(boundaries.shape)}")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)
