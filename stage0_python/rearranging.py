"""Shape ops composed from differentiable primitives: ``roll diag diag_embed outer ger
repeat_interleave``, and the non-differentiable ``unique unique_consecutive equal``.

Each is a few lines over ``narrow``/``cat``, ``where``, ``index_select`` and ``sort``:
their gradients come from those. The methods are ``RearrangingMethods``, a base of
``Tensor``; the package exports them as functions too.
"""
import operator

from . import backend as B
from .device import place
from .dtypes import bool_, int64
from .ops import where
from .shapes import ShapeError
from .tensor_core import TensorCore

# Tensor lists RearrangingMethods among its bases, so this module loads before Tensor
# exists: it tests and makes tensors through Tensor's base, as tensor_core and ops do
wrap = TensorCore._make


def _tensor(x, op, name="input"):
    if not isinstance(x, TensorCore):
        raise TypeError(f"{op}: {name} must be a Tensor, got {type(x).__name__}")


def _ints(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,)


def _groups(keys, order):
    """Walk ``order`` (positions), starting a group wherever the key differs from the last:
    (first position of each group, group of each position, group sizes)."""
    firsts, group, counts = [], [0] * len(keys), []
    for pos in order:
        if not firsts or keys[pos] != keys[firsts[-1]]:
            firsts.append(pos)
            counts.append(0)
        group[pos] = len(firsts) - 1
        counts[-1] += 1
    return firsts, group, counts


def _unique(input, sort, return_inverse, return_counts, dim, op):
    _tensor(input, op)
    if dim is None:
        x, d = input.reshape(-1), 0
    else:
        d = input._dim(dim, op)
        x = input if input.ndim else input.reshape(1)
    n = x.shape[d]
    if x.ndim > 1:  # each slice along d as one key
        keys = x.permute([d] + [i for i in range(x.ndim) if i != d]).reshape(n, -1).tolist()
    else:
        keys = x.tolist()
    order = range(n)
    if sort:  # stable, NaN last; each NaN is its own value (NaN != NaN), as in PyTorch
        order = sorted(order, key=lambda i: [(1, 0.0) if v != v else (0, v) for v in _ints(keys[i])])
    firsts, group, counts = _groups(keys, order)
    out = x.detach().index_select(d, wrap(place(B.from_list(firsts, (len(firsts),), int64), x.device)))
    res = [out]
    if return_inverse:
        inv = wrap(place(B.from_list(group, (n,), int64), x.device))
        res.append(inv.reshape(input.shape) if dim is None else inv)
    if return_counts:
        res.append(wrap(place(B.from_list(counts, (len(counts),), int64), x.device)))
    return res[0] if len(res) == 1 else tuple(res)


class RearrangingMethods:
    """Tensor's rearranging methods. Each is also the package's function (``sg.roll(x, 1)``
    is ``x.roll(1)``), so its first parameter keeps the function's name, ``input``."""

    __slots__ = ()

    def roll(input, shifts, dims=None):
        """See torch.roll: elements shifted along ``dims`` (wrapping round); with ``dims=None``
        the flattened tensor is rolled and the shape restored."""
        _tensor(input, "roll")
        shifts = tuple(operator.index(s) for s in _ints(shifts))
        if dims is None:
            if len(shifts) != 1:
                raise ShapeError(f"roll: {len(shifts)} shifts need as many dims, got dims=None "
                                 f"(shape {list(input.shape)})")
            return roll(input.flatten(), shifts, 0).reshape(input.shape)
        dims = _ints(dims)
        if len(shifts) != len(dims):
            raise ShapeError(f"roll: shifts {list(shifts)} and dims {list(dims)} must have the same length "
                             f"(shape {list(input.shape)})")
        from .creation import cat  # here: creation builds on Tensor
        x = input
        for s, dim in zip(shifts, dims):
            d = x._dim(dim, "roll")
            n = x.shape[d] if x.ndim else 1
            s = s % n if n else 0
            if s and x.ndim:  # the last s elements move to the front
                x = cat([x.narrow(d, n - s, s), x.narrow(d, 0, n - s)], d)
        return x if x is not input else input.clone()

    def diag_embed(input, offset=0, dim1=-2, dim2=-1):
        """See torch.diag_embed: the last dim of ``input`` laid on the ``offset`` diagonal of
        new dims ``dim1`` and ``dim2`` (zeros elsewhere)."""
        from .creation import cat  # here: creation builds on Tensor
        _tensor(input, "diag_embed")
        if not input.ndim:
            raise ShapeError("diag_embed: input must have at least one dim, got a 0-d tensor")
        offset = operator.index(offset)
        m = input.shape[-1]
        n = m + abs(offset)
        nd = input.ndim + 1
        probe = wrap(B.full((0,) * nd, 0, input.dtype))  # only to check dims against nd
        d1, d2 = probe._dim(dim1, "diag_embed"), probe._dim(dim2, "diag_embed")
        if d1 == d2:
            raise ShapeError(f"diag_embed: dim1 and dim2 cannot be the same dimension, got {dim1} and {dim2}")
        # row r holds element r - max(-offset, 0) on column r + offset: pad x to n rows
        pad = [d for d in input.shape[:-1]]
        zeros = input.new_zeros([*pad, abs(offset)])
        rows = cat([input, zeros] if offset >= 0 else [zeros, input], -1) if offset else input
        r = wrap(place(B.arange(0, n, 1, int64), input.device))
        on = r.reshape(n, 1) + offset == r.reshape(1, n)
        out = where(on, rows.unsqueeze(-1), input.new_zeros(()))
        perm = [None] * nd
        perm[d1], perm[d2] = nd - 2, nd - 1
        rest = iter(range(nd - 2))
        perm = [p if p is not None else next(rest) for p in perm]
        return out.permute(perm).contiguous()

    def diag(input, diagonal=0):
        """See torch.diag: a 1-d input becomes a square matrix with it on the ``diagonal``-th
        diagonal; a 2-d input gives that diagonal (a copy, as in PyTorch)."""
        _tensor(input, "diag")
        if input.ndim == 1:
            return diag_embed(input, diagonal, 0, 1)
        if input.ndim == 2:
            return input.diagonal(diagonal, 0, 1).clone()
        raise ShapeError(f"diag: input must be 1-d or 2-d, got shape {list(input.shape)}")

    def outer(input, vec2):
        """See torch.outer: ``input[i] * vec2[j]`` for two 1-d tensors."""
        _tensor(input, "outer")
        _tensor(vec2, "outer", "vec2")
        if input.ndim != 1 or vec2.ndim != 1:
            raise ShapeError(f"outer: expected two 1-d tensors, got shapes {list(input.shape)} and "
                             f"{list(vec2.shape)}")
        return input.reshape(-1, 1) * vec2.reshape(1, -1)

    def ger(input, vec2):
        """See torch.ger: the old name of ``outer``."""
        return outer(input, vec2)

    def repeat_interleave(input, repeats=None, dim=None, output_size=None):
        """See torch.repeat_interleave: each element repeated ``repeats`` times along ``dim``
        (the flattened tensor when ``dim`` is None); ``repeats`` an int or a tensor with one
        count per element. ``repeat_interleave(counts)`` alone repeats each index."""
        op = "repeat_interleave"
        _tensor(input, op)
        if repeats is None:  # the one-argument form: indices 0..n-1, each counts[i] times
            repeats, input, dim = input, wrap(place(B.arange(0, input.numel(), 1, int64), input.device)), 0
        x = input.flatten() if dim is None else input
        d = x._dim(0 if dim is None else dim, op)
        n = x.shape[d] if x.ndim else 1
        if isinstance(repeats, TensorCore):
            if repeats.dtype.is_floating_point or repeats.dtype is bool_:
                raise TypeError(f"{op}: repeats must be an integer tensor, got {repeats.dtype.name}")
            if repeats.ndim > 1:
                raise ShapeError(f"{op}: repeats must be 0-d or 1-d, got shape {list(repeats.shape)}")
            counts = repeats.reshape(-1).tolist()
            if len(counts) == 1:
                counts = counts * n
        else:
            counts = [operator.index(repeats)] * n
        if len(counts) != n:
            raise ShapeError(f"{op}: {len(counts)} repeats for dim {d} of size {n} (shape "
                             f"{list(input.shape)})")
        if any(c < 0 for c in counts):
            raise ShapeError(f"{op}: repeats must be non-negative, got {min(counts)}")
        total = sum(counts)
        if output_size is not None and output_size != total:
            raise ShapeError(f"{op}: output_size={output_size} but the repeats add up to {total}")
        if not x.ndim:
            x = x.reshape(1)
        index = [i for i, c in enumerate(counts) for _ in range(c)]
        return x.index_select(d, wrap(place(B.from_list(index, (len(index),), int64), x.device)))

    def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
        """See torch.unique: the distinct values (slices along ``dim``), always sorted here;
        optionally where each element went (``return_inverse``) and how many each has."""
        return _unique(input, True, return_inverse, return_counts, dim, "unique")

    def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
        """See torch.unique_consecutive: each run of equal consecutive values (slices) once."""
        return _unique(input, False, return_inverse, return_counts, dim, "unique_consecutive")

    def equal(input, other):
        """See torch.equal: True when both have the same shape and equal elements (NaN is
        never equal)."""
        _tensor(input, "equal")
        _tensor(other, "equal", "other")
        return tuple(input.shape) == tuple(other.shape) and bool((input == other).all())


# the package's functions: the methods, called with the tensor first
_M = RearrangingMethods
roll, diag, diag_embed, outer, ger = _M.roll, _M.diag, _M.diag_embed, _M.outer, _M.ger
repeat_interleave, unique, unique_consecutive = _M.repeat_interleave, _M.unique, _M.unique_consecutive
equal = _M.equal
del _M
