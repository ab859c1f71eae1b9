"""Writing along an axis by index: ``scatter`` (with ``reduce=``), ``scatter_add``,
``scatter_reduce``, ``index_add``/``index_fill``/``index_copy`` and ``masked_scatter``, as
PyTorch defines them (``selecting.py`` holds the reading side: gather, index_select).

Every form comes down to the flat positions, in the input's row-major order, that the
index selects, and one backend primitive: ``put``, which writes, adds, multiplies or keeps
the larger or smaller value there. ``ScatterReduce`` is the one new Function; the index
forms are scatters with an expanded index, so their gradients come from it.
"""
from stage0_python.vocabulary import ArgumentError

from . import backend as B
from . import ops
from .device import place
from .dtypes import bool_, int64
from .graph import Function
from .method_forms import inplace_form
from .ops import where
from .shapes import IndexRangeError, ShapeError, out_of_range
from .tensor_core import TensorCore

# Tensor lists ScatterMethods among its bases, so this module loads before Tensor exists: it
# tests and makes tensors through Tensor's base, as tensor_core and ops do
wrap = TensorCore._make

REDUCES = ("sum", "prod", "mean", "amax", "amin")


def _flat(t):
    return B.reshape(t._data, (t.numel(),))


def _take(t, pos):
    """``t.flat[pos]``, shaped like ``pos``."""
    return wrap(B.take(_flat(t), pos._data))


def _put(t, pos, vals, mode=False):
    """A copy of ``t`` with ``vals`` put at the flat ``pos`` (combined by ``mode``)."""
    out = B.copy(t._data)
    B.put(out, pos._data, vals._data if isinstance(vals, TensorCore) else B.full((), vals, t.dtype), mode)
    return wrap(out)


def positions(x, d, index, op):
    """The flat positions in ``x`` that ``index`` selects along dim ``d`` (the other
    coordinates are the index element's own); IndexRangeError for an index outside
    ``[0, size)``, before anything is written."""
    index = index.to(int64)
    n = x.shape[d] if x.ndim else 1
    bad = out_of_range(index, 0, n)
    if bad is not None:
        raise IndexRangeError(f"{op}: index {bad} is out of bounds for dimension {d} with size {n}")
    strides, s = [1] * x.ndim, 1
    for k in range(x.ndim - 1, -1, -1):
        strides[k], s = s, s * x.shape[k]
    pos = index * strides[d] if x.ndim else index
    for k in range(index.ndim):
        if k != d and index.shape[k] > 1:
            along = [1] * index.ndim
            along[k] = index.shape[k]
            step = place(B.arange(0, index.shape[k] * strides[k], strides[k], int64), index.device)
            pos = pos + wrap(step).reshape(along)
    return pos


def _source(self, index, src, op):
    """``src`` cut to ``index``'s shape (PyTorch reads only that corner) in ``self``'s dtype."""
    if not isinstance(src, TensorCore):
        return self._scalar(src, self.dtype)
    if src.dtype is not self.dtype and op != "scatter_add":
        if src.dtype.category > self.dtype.category:
            raise TypeError(f"{op}: expected src to have dtype {self.dtype.name}, got {src.dtype.name}")
    if src.ndim and tuple(src.shape) != tuple(index.shape):
        src = src[tuple(slice(0, n) for n in index.shape)]
    return src.to(self.dtype).reshape(index.shape)


class ScatterReduce(Function):
    """``x`` with ``src`` combined into the flat positions ``pos`` by ``reduce`` (sum,
    prod, amax, amin); ``include_self=False`` leaves ``x``'s own values out of positions
    that receive any."""

    @staticmethod
    def forward(ctx, x, pos, src, reduce, include_self):
        out = x
        if not include_self:  # start from the reduction's identity (amax, amin: from src)
            out = _put(x, pos, src if reduce in ("amax", "amin") else (1 if reduce == "prod" else 0))
        out = _put(out, pos, src, reduce)
        ctx.save_for_backward(x, src, out)
        ctx.pos, ctx.reduce, ctx.include_self = pos, reduce, include_self
        return out.detach()

    @staticmethod
    def backward(ctx, g):
        x, src, out = ctx.saved_tensors
        pos, reduce, own = ctx.pos, ctx.reduce, ctx.include_self
        hit = _put(x.new_zeros(x.shape, dtype=bool_), pos, True)  # positions that receive src
        g_at = _take(g, pos)
        if reduce == "sum":
            return (g if own else g.masked_fill(hit, 0)), None, g_at, None, None
        if reduce in ("amax", "amin"):
            # the gradient is shared evenly among the elements that equal the result
            won_src = src == _take(out, pos)
            won_x = (x == out) & hit if own else x.new_zeros(x.shape, dtype=bool_)
            count = _put(won_x.to(g.dtype), pos, won_src.to(g.dtype), "sum")
            share = g / count.masked_fill(count == 0, 1)
            gx = where(hit, share.masked_fill(~won_x, 0), g)
            return gx, None, _take(share, pos).masked_fill(~won_src, 0), None, None
        # prod: each element's gradient is the product of the others at its position,
        # found from the product of the nonzero ones and the number of zeros
        ones_for_zeros = lambda t: t.masked_fill(t == 0, 1)  # noqa: E731
        base = ones_for_zeros(x) if own else x.new_ones(x.shape)
        nonzero_prod = _put(base, pos, ones_for_zeros(src), "prod")
        zeros = _put((x == 0).to(int64) if own else x.new_zeros(x.shape, dtype=int64), pos,
                     (src == 0).to(int64), "sum")

        def others(e, p, z):
            alone = where(z == 0, p / ones_for_zeros(e), p.new_zeros(p.shape))
            return where((z == 1) & (e == 0), p, alone)
        gx = where(hit, g * others(x, nonzero_prod, zeros) if own else g.new_zeros(g.shape), g)
        gsrc = g_at * others(src, _take(nonzero_prod, pos), _take(zeros, pos))
        return gx, None, gsrc, None, None


def _check_reduce(reduce, op, allowed=REDUCES):
    if reduce not in allowed:
        raise ArgumentError(f"{op}: reduce must be one of {', '.join(map(repr, allowed))}, got {reduce!r}")


def _along(self, dim, index, op, source_shape=None):
    """An index for the scatter forms of ``index_*``: the 1-d ``index`` spread over every
    other dim of ``source_shape`` (``self``'s with ``dim`` resized to the index)."""
    d = self._dim(dim, op) if self.ndim else 0
    if not isinstance(index, TensorCore) or index.dtype.is_floating_point or index.dtype is bool_:
        raise TypeError(f"{op}: index must be an int64 or int32 tensor, got "
                        f"{getattr(index, 'dtype', type(index).__name__)}")
    if index.ndim > 1:
        raise ShapeError(f"{op}: index must be 0-d or 1-d, got shape {list(index.shape)}")
    index = index.reshape(-1)
    shape = list(self.shape) or [1]
    shape[d] = index.numel()
    if source_shape is not None and list(source_shape or [1]) != shape:
        raise ShapeError(f"{op}: source of shape {list(source_shape)} does not match the input of shape "
                         f"{list(self.shape)} with dim {d} of size {index.numel()}")
    view = [1] * len(shape)
    view[d] = index.numel()
    return d, index.reshape(view).expand(shape)


class ScatterMethods:
    """Tensor's scatter and index-writing methods, and the in-place twin of each."""

    __slots__ = ()

    def scatter(self, dim, index, src=None, *, value=None, reduce=None):
        """See torch.Tensor.scatter: ``src`` (a tensor or a number; or ``value=``) written into
        ``self`` at ``index`` along ``dim``; ``reduce="add"`` or ``"multiply"`` combines instead.
        Where an index repeats, which write wins is unspecified (the last one here)."""
        src = value if src is None else src
        if src is None:
            raise TypeError("scatter: expected src or value")
        if reduce is not None:
            _check_reduce(reduce, "scatter", ("add", "multiply"))
            reduce = "sum" if reduce == "add" else "prod"
            if not isinstance(src, TensorCore):
                src = self.new_full(index.shape, src)
            return self.scatter_reduce(dim, index, src, reduce)
        d = self._axis_index("scatter", dim, index, src if isinstance(src, TensorCore) else None)
        if isinstance(src, TensorCore) and src.ndim == 0 and index.ndim:
            src = src.expand(index.shape)
        x, idx = (self.reshape(-1), index.reshape(-1)) if not self.ndim or not index.ndim else (self, index)
        d = 0 if x is not self else d
        if isinstance(src, TensorCore) and x is not self:
            src = src.reshape(-1)
        pos = positions(x, d, idx, "scatter")
        return ops.IndexPut.apply(x, pos, _source(x, idx, src, "scatter")).reshape(self.shape)

    def scatter_add(self, dim, index, src):
        """Add ``src`` into a copy of ``self`` at ``index`` along ``dim``; see torch.scatter_add."""
        d = self._axis_index("scatter_add", dim, index, src)
        if index.ndim and src.ndim == index.ndim and tuple(src.shape) != tuple(index.shape):
            src = src[tuple(slice(0, n) for n in index.shape)]  # only this corner is read, by position
        try:
            if not index.ndim or not self.ndim or not index.numel():  # as a 1-d scatter
                x, index, src, d = self.reshape(-1), index.reshape(-1), src.reshape(-1), 0
                return ops.ScatterAdd.apply(x, d, index, src.to(self.dtype)).reshape(self.shape)
            return ops.ScatterAdd.apply(self, d, index, src.to(self.dtype))
        except IndexError as e:
            raise IndexRangeError(f"scatter_add: {e}") from None

    def scatter_reduce(self, dim, index, src, reduce, *, include_self=True):
        """See torch.Tensor.scatter_reduce: ``src`` combined into ``self`` at ``index`` along
        ``dim`` by sum, prod, mean, amax or amin (integer means round down, as PyTorch's)."""
        _check_reduce(reduce, "scatter_reduce")
        d = self._axis_index("scatter_reduce", dim, index, src)
        if not isinstance(src, TensorCore):
            raise TypeError(f"scatter_reduce: src must be a Tensor, got {type(src).__name__}")
        x, idx = (self.reshape(-1), index.reshape(-1)) if not self.ndim or not index.ndim else (self, index)
        d = 0 if x is not self else d
        pos = positions(x, d, idx, "scatter_reduce")
        s = _source(x, idx, src.reshape(-1) if x is not self else src, "scatter_reduce")
        if reduce != "mean":
            return ScatterReduce.apply(x, pos, s, reduce, include_self).reshape(self.shape)
        total = ScatterReduce.apply(x, pos, s, "sum", include_self)
        count = _put(x.new_full(x.shape, 1 if include_self else 0), pos, 1, "sum")
        count = count.masked_fill(count == 0, 1)  # untouched positions keep their value
        out = total / count if x.dtype.is_floating_point else total.div(count, rounding_mode="floor")
        return out.reshape(self.shape)

    def index_add(self, dim, index, source, *, alpha=1):
        """See torch.Tensor.index_add: ``alpha * source`` added to ``self`` at the rows of
        ``dim`` that ``index`` names (repeats add up)."""
        d, idx = _along(self, dim, index, "index_add", source.shape)
        x = self if self.ndim else self.reshape(1)
        src = source.reshape(idx.shape)
        pos = positions(x, d, idx, "index_add")
        return ScatterReduce.apply(x, pos, (src * alpha if alpha != 1 else src).to(self.dtype), "sum",
                                   True).reshape(self.shape)

    def index_copy(self, dim, index, source):
        """See torch.Tensor.index_copy: the rows of ``dim`` that ``index`` names replaced by
        ``source``'s."""
        d, idx = _along(self, dim, index, "index_copy", source.shape)
        x = self if self.ndim else self.reshape(1)
        pos = positions(x, d, idx, "index_copy")
        return ops.IndexPut.apply(x, pos, source.reshape(idx.shape).to(self.dtype)).reshape(self.shape)

    def index_fill(self, dim, index, value):
        """See torch.Tensor.index_fill: the rows of ``dim`` that ``index`` names set to
        ``value`` (a number or a 0-d tensor)."""
        if isinstance(value, TensorCore):
            if value.ndim:
                raise ShapeError(f"index_fill: value must be a 0-d tensor, got shape {list(value.shape)}")
            value = value.item()
        d, idx = _along(self, dim, index, "index_fill")
        x = self if self.ndim else self.reshape(1)
        pos = positions(x, d, idx, "index_fill")
        return ops.IndexPut.apply(x, pos, self._scalar(value, self.dtype)).reshape(self.shape)

    def masked_scatter(self, mask, source):
        """See torch.Tensor.masked_scatter: the elements where ``mask`` is True, in row-major
        order, taken from the start of ``source``."""
        if not isinstance(mask, TensorCore) or mask.dtype is not bool_:
            raise TypeError(f"masked_scatter: mask must be a bool tensor, got "
                            f"{getattr(mask, 'dtype', type(mask).__name__)}")
        if source.dtype is not self.dtype:
            raise TypeError(f"masked_scatter: expected source to have dtype {self.dtype.name}, got "
                            f"{source.dtype.name}")
        pos = mask.expand(self.shape).reshape(-1).nonzero().reshape(-1)
        if pos.numel() > source.numel():
            raise ShapeError(f"masked_scatter: mask selects {pos.numel()} elements but source has only "
                             f"{source.numel()} (shape {list(source.shape)})")
        return ops.IndexPut.apply(self, pos, source.reshape(-1)[:pos.numel()])

    scatter_ = inplace_form("scatter")
    scatter_reduce_ = inplace_form("scatter_reduce")
    index_add_ = inplace_form("index_add")
    index_copy_ = inplace_form("index_copy")
    index_fill_ = inplace_form("index_fill")
    masked_scatter_ = inplace_form("masked_scatter")
