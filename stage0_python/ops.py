"""The differentiable primitives: each a ``Function`` whose forward calls one backend
kernel and whose backward is written by hand from Tensor operations; and ``where``, the
function form of ``Where``, which the backward formulas use too.

Everything richer (``mean``, ``var``, ``softmax``, losses, layers) is composed from
these in ``tensor.py`` and its method mixins, ``functional.py`` and ``nn/``.

Design: this module builds on ``Tensor``'s base, not on ``Tensor``, so that it loads
before the class exists: the method mixins ``Tensor`` lists among its bases import it
while the class is being made. ``wrap`` makes a ``Tensor`` all the same (``tensor_core``
is bound to the class once it exists), and the Functions run only after that.
"""
import math

from stage0_python import vocabulary
from stage0_python.op_table import FUNCTIONS

from . import backend as B
from . import dtypes as D
from . import shapes
from .device import fused, pin, place
from .dtypes import bool_, int64
from .graph import Function
from .tensor_core import TensorCore
from .views import view_of

wrap = TensorCore._make


def unbroadcast(g, shape):
    """Sum ``g`` down to ``shape``: the adjoint of broadcasting."""
    shape = tuple(shape)
    if tuple(g.shape) == shape:
        return g
    lead = g.ndim - len(shape)
    # a dim of size 1 in g sums nothing: the reshape drops or keeps it
    axes = tuple(d for d in range(lead) if g.shape[d] != 1) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and g.shape[lead + i] != 1)
    return g.sum(dim=axes, keepdim=True).reshape(shape) if axes else g.reshape(shape)


# ------------------------------------------------------------------ elementwise

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)

# d(op)/dx times the upstream gradient, from the input x and the output y
DERIVATIVES = {
    "neg": lambda x, y, g: -g,
    "exp": lambda x, y, g: g * y,
    "log": lambda x, y, g: g / x,
    "log1p": lambda x, y, g: g / (x + 1),
    "sqrt": lambda x, y, g: g / (y * 2),
    "rsqrt": lambda x, y, g: g * y * y * y * -0.5,
    "sin": lambda x, y, g: g * x.cos(),
    "cos": lambda x, y, g: -g * x.sin(),
    "tanh": lambda x, y, g: g * (1 - y * y),
    "sigmoid": lambda x, y, g: g * y * (1 - y),
    "relu": lambda x, y, g: g * (x > 0),
    "abs": lambda x, y, g: g * x.sign(),
    "reciprocal": lambda x, y, g: -g * y * y,
    "gelu": lambda x, y, g: g * (0.5 * (1 + (x * (0.5 ** 0.5)).erf()) + x * (x * x * -0.5).exp() * _INV_SQRT_2PI),
    "silu": lambda x, y, g: g * x.sigmoid() * (1 + x * (1 - x.sigmoid())),
    "erf": lambda x, y, g: g * (x * x * -1).exp() * (2 / math.sqrt(math.pi)),
    **{f.name: f.derivative for f in FUNCTIONS},  # the op table's float functions
}
# piecewise-constant ops: zero gradient almost everywhere (the vocabulary's "flat" ones)
FLAT = frozenset(name for name, op in vocabulary.UNARY.items() if op.gradient == "flat")


class Unary(Function):
    @staticmethod
    def forward(ctx, x, op):
        y = wrap(B.unary(op, x._data))
        ctx.op = op
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        if ctx.op in FLAT:
            return g * 0, None
        x, y = ctx.saved_tensors
        if ctx.op == "relu" and fused("relu", g._data, y._data) and g.dtype is y.dtype:
            return wrap(B.relu_backward(g._data, y._data)), None  # one pass where the backend has it
        return DERIVATIVES[ctx.op](x, y, g), None


class SafeSqrt(Function):
    """sqrt whose gradient is 0 where the result is 0 (std and norm of constant or
    zero input), as PyTorch defines it, instead of 0 * inf = nan."""

    @staticmethod
    def forward(ctx, x):
        y = wrap(B.unary("sqrt", x._data))
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return where(y == 0, 0.0, g / (y * 2))


class Add(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = a._data.shape, b._data.shape
        return wrap(B.binary("add", a._data, b._data, a.dtype))

    @staticmethod
    def backward(ctx, g):
        sa, sb = ctx.shapes
        return unbroadcast(g, sa), unbroadcast(g, sb)


class Sub(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = a._data.shape, b._data.shape
        return wrap(B.binary("sub", a._data, b._data, a.dtype))

    @staticmethod
    def backward(ctx, g):
        sa, sb = ctx.shapes
        return unbroadcast(g, sa), unbroadcast(-g, sb)


def _needed(ctx, a, b):
    """Save only the operand the other's gradient needs, as PyTorch does: a tensor saved
    needlessly makes a later in-place change of it an error at backward."""
    return a if ctx.needs_input_grad[1] else None, b if ctx.needs_input_grad[0] else None


class Mul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(*_needed(ctx, a, b))
        ctx.shapes = a._data.shape, b._data.shape
        return wrap(B.binary("mul", a._data, b._data, a.dtype))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        sa, sb = ctx.shapes
        ga = unbroadcast(g * b, sa) if ctx.needs_input_grad[0] else None
        gb = unbroadcast(g * a, sb) if ctx.needs_input_grad[1] else None
        return ga, gb


class Div(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(_needed(ctx, a, b)[0], b)
        ctx.shape = a._data.shape
        return wrap(B.binary("div", a._data, b._data, a.dtype))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        ga = unbroadcast(g / b, ctx.shape) if ctx.needs_input_grad[0] else None
        gb = unbroadcast(-g * a / (b * b), b.shape) if ctx.needs_input_grad[1] else None
        return ga, gb


class Pow(Function):
    @staticmethod
    def forward(ctx, a, b):
        y = wrap(B.binary("pow", a._data, b._data, a.dtype))
        ctx.save_for_backward(a, b, y)
        return y

    @staticmethod
    def backward(ctx, g):
        a, b, y = ctx.saved_tensors
        ga = gb = None
        if ctx.needs_input_grad[0]:
            # b * a**(b-1), written so that b == 0 gives 0 even where a == 0
            ga = unbroadcast(where(b == 0, 0.0, g * b * a ** (b - 1)), a.shape)
        if ctx.needs_input_grad[1]:
            gb = unbroadcast(where((a == 0) & (b >= 0), 0.0, g * y * a.log()), b.shape)
        return ga, gb


class Maximum(Function):
    """Ties split the gradient in half, as PyTorch does."""
    op = "maximum"

    @classmethod
    def forward(cls, ctx, a, b):
        ctx.save_for_backward(a, b)
        return wrap(B.binary(cls.op, a._data, b._data, a.dtype))

    @classmethod
    def backward(cls, ctx, g):
        a, b = ctx.saved_tensors
        wins = (a > b) if cls.op == "maximum" else (a < b)
        share = where(a == b, 0.5, wins.to(g.dtype))
        return unbroadcast(g * share, a.shape), unbroadcast(g * (1 - share), b.shape)


class Minimum(Maximum):
    op = "minimum"


class BinaryMath(Function):
    """A float binary op whose gradients are ``rule(a, b, y, g)``: the pair before
    unbroadcasting (``Atan2``, ``Copysign``, ``Fmod``, ``Hypot`` below)."""
    op = None

    @classmethod
    def forward(cls, ctx, a, b):
        y = wrap(B.binary(cls.op, a._data, b._data, a.dtype))
        ctx.save_for_backward(a, b, y)
        return y

    @classmethod
    def backward(cls, ctx, g):
        a, b, y = ctx.saved_tensors
        ga, gb = cls.rule(a, b, y, g)
        return (unbroadcast(ga, a.shape) if ctx.needs_input_grad[0] else None,
                unbroadcast(gb, b.shape) if ctx.needs_input_grad[1] else None)


class Atan2(BinaryMath):
    op = "atan2"

    @staticmethod
    def rule(a, b, y, g):
        r2 = a * a + b * b
        return g * b / r2, -g * a / r2


class Copysign(BinaryMath):
    op = "copysign"

    @staticmethod
    def rule(a, b, y, g):
        # +-1 where the sign flips or not; PyTorch's gradient is 0 at a == 0, and the sign
        # operand gets none
        return where(a == 0, 0.0, g * (y / a)), g * 0


class Fmod(BinaryMath):
    op = "fmod"

    @staticmethod
    def rule(a, b, y, g):
        return g, -g * (a / b).trunc()  # a - b * trunc(a / b)


class Hypot(BinaryMath):
    op = "hypot"

    @staticmethod
    def rule(a, b, y, g):
        return g * a / y, g * b / y


class LogAddExp(BinaryMath):
    """log(exp(a) + exp(b)) without overflow: the larger plus log1p of the smaller's share.
    ``base`` 2 gives logaddexp2."""
    base = math.e

    @classmethod
    def forward(cls, ctx, a, b):
        # grad mode is off here: these Tensor ops record nothing
        d = -(a - b).abs()
        if cls.base == 2:
            soft = (d * math.log(2.0)).exp().log1p() / math.log(2.0)
        else:
            soft = d.exp().log1p()
        # equal infinities make d nan; their sum is that infinity
        y = where(a == b, a + (1.0 if cls.base == 2 else math.log(2.0)), a.maximum(b) + soft)
        ctx.save_for_backward(a, b, y)
        return y

    @classmethod
    def rule(cls, a, b, y, g):
        # PyTorch's form: g / (1 + base**(other - self)), nan for two equal infinities
        if cls.base == 2:
            return g / (1 + (b - a).exp2()), g / (1 + (a - b).exp2())
        return g / (1 + (b - a).exp()), g / (1 + (a - b).exp())


class LogAddExp2(LogAddExp):
    base = 2


class Where(Function):
    @staticmethod
    def forward(ctx, cond, a, b):
        ctx.cond = cond
        ctx.shapes = a._data.shape, b._data.shape
        return wrap(B.where(cond._data, a._data, b._data))

    @staticmethod
    def backward(ctx, g):
        sa, sb = ctx.shapes
        zero = g.new_zeros(())
        return (None, unbroadcast(where(ctx.cond, g, zero), sa),
                unbroadcast(where(ctx.cond, zero, g), sb))


def where(condition, input, other):
    """``input`` where ``condition`` is True, ``other`` elsewhere (numbers allowed, dtypes promoted); see
    torch.where."""
    return checked_where(condition, input, other, "where")


def checked_where(condition, input, other, op):
    """``where``, its errors naming ``op`` (``masked_fill`` is one too)."""
    if not isinstance(condition, TensorCore):
        raise TypeError(f"{op}: condition must be a bool Tensor, got {type(condition).__name__}")
    if condition.dtype is not bool_:
        condition = condition.bool()
    dtype = D.result_type(*(v for v in (input, other)))
    a = input.to(dtype) if isinstance(input, TensorCore) else wrap(B.full((), input, dtype))
    b = other.to(dtype) if isinstance(other, TensorCore) else wrap(B.full((), other, dtype))
    shapes.broadcast(op, condition.shape, a.shape, b.shape, dtype=dtype)
    return Where.apply(condition, a, b)


class Clamp(Function):
    @staticmethod
    def forward(ctx, x, lo, hi):
        y = x._data
        if lo is not None:
            y = B.binary("maximum", y, lo._data, x.dtype)
        if hi is not None:
            y = B.binary("minimum", y, hi._data, x.dtype)
        ctx.save_for_backward(x, lo, hi)
        return wrap(y)

    @staticmethod
    def backward(ctx, g):
        x, lo, hi = ctx.saved_tensors
        keep = x == x  # NaN inputs pass their gradient through, as in PyTorch
        if lo is not None:
            keep = keep & (x >= lo)
        if hi is not None:
            keep = keep & (x <= hi)
        return where(keep, g, 0.0), None, None


class Cast(Function):
    @staticmethod
    def forward(ctx, x, dtype):
        ctx.dtype = x.dtype
        return wrap(B.cast(x._data, dtype))

    @staticmethod
    def backward(ctx, g):
        return g.to(ctx.dtype), None


class ToDevice(Function):
    """A copy on another device (``non_blocking``: see ``device.place``); the gradient goes
    back to the source's."""
    @staticmethod
    def forward(ctx, x, dev, non_blocking=False):
        ctx.source = x.device
        return wrap(place(x._data, dev, non_blocking))

    @staticmethod
    def backward(ctx, g):
        return g.to(ctx.source), None, None


class _Copy(Function):
    """A copy of its input, however laid out: the gradient passes through."""

    @staticmethod
    def backward(ctx, g):
        return g


class PinMemory(_Copy):
    """A copy in page-locked host memory (``device.pin``); the gradient passes through."""
    @staticmethod
    def forward(ctx, x):
        return wrap(pin(x._data))


class Contiguous(_Copy):
    @staticmethod
    def forward(ctx, x):
        return wrap(B.contiguous(x._data))


class Clone(_Copy):
    @staticmethod
    def forward(ctx, x):
        return wrap(B.copy(x._data))


# ------------------------------------------------------------------ reductions

def _keepdim_shape(shape, axes):
    return tuple(1 if d in axes else n for d, n in enumerate(shape))


class Sum(Function):
    @staticmethod
    def forward(ctx, x, axes, keepdim, dtype=None):
        ctx.shape, ctx.axes = x.shape, axes
        return wrap(B.reduce("sum", x._data, axes, keepdim, dtype))

    @staticmethod
    def backward(ctx, g):
        return g.reshape(_keepdim_shape(ctx.shape, ctx.axes)).expand(ctx.shape), None, None, None


class Prod(Function):
    @staticmethod
    def forward(ctx, x, axes, keepdim):
        y = wrap(B.reduce("prod", x._data, axes, keepdim))
        ctx.axes = axes
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        kshape = _keepdim_shape(x.shape, ctx.axes)
        g, y = g.reshape(kshape), y.reshape(kshape)
        zero = x == 0
        zeros = zero.sum(dim=ctx.axes, keepdim=True)
        # the product of the others: y / x without zeros; with one zero, the product of
        # the non-zero entries at the zero; with two or more, nothing
        nonzero_prod = where(zero, 1.0, x).prod(dim=ctx.axes, keepdim=True)
        others = where(zero, where(zeros == 1, nonzero_prod, 0.0),
                              where(zeros == 0, y / where(zero, 1.0, x), 0.0))
        return g * others, None, None


class Extreme(Function):
    """Full or multi-axis max/min: ties share the gradient evenly."""

    @staticmethod
    def forward(ctx, x, op, axes, keepdim):
        y = wrap(B.reduce(op, x._data, axes, keepdim))
        ctx.axes = axes
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        kshape = _keepdim_shape(x.shape, ctx.axes)
        hit = (x == y.reshape(kshape)).to(g.dtype)
        return g.reshape(kshape) * hit / hit.sum(dim=ctx.axes, keepdim=True), None, None, None


class ExtremeDim(Function):
    """max/min along one dim: values and the index of the first extreme."""

    @staticmethod
    def forward(ctx, x, op, dim, keepdim):
        idx = wrap(B.arg_reduce("arg" + op, x._data, dim, True))
        vals = wrap(B.gather(x._data, dim, idx._data))
        ctx.shape, ctx.dim, ctx.keepdim = x.shape, dim, keepdim
        ctx.idx = idx
        if not keepdim:
            vals, idx = vals.squeeze(dim), idx.squeeze(dim)
        ctx.mark_non_differentiable(idx)
        return vals, idx

    @staticmethod
    def backward(ctx, g, _):
        if not ctx.keepdim:
            g = g.unsqueeze(ctx.dim)
        return wrap(B.scatter_add(ctx.shape, ctx.dim, ctx.idx._data, g._data)), None, None, None


class Picked(Function):
    """The base of a Function whose values are elements of ``x`` picked along ``dim``,
    returned with their indices (sort, cummax, cummin): the gradient of each value goes back
    to where it was picked."""

    @staticmethod
    def picked(ctx, x, dim, vals, idx):
        """The outputs ``(vals, idx)`` as tensors, with what the backward needs kept in ``ctx``."""
        idx = wrap(idx)
        ctx.shape, ctx.dim, ctx.idx = x.shape, dim, idx
        ctx.mark_non_differentiable(idx)
        return wrap(vals), idx

    @staticmethod
    def backward(ctx, g, _):
        return wrap(B.scatter_add(ctx.shape, ctx.dim, ctx.idx._data, g._data)), None, None


# ------------------------------------------------------------------ matmul

class MatMul(Function):
    """(..., n, k) @ (..., k, m) with equal batch dims."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return wrap(B.matmul(a._data, b._data))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        ga = g.matmul(b.transpose(-1, -2)) if ctx.needs_input_grad[0] else None
        gb = a.transpose(-1, -2).matmul(g) if ctx.needs_input_grad[1] else None
        return ga, gb


# ------------------------------------------------------------------ movement

def _scatter_back(g, shape, fn, args):
    """The adjoint of a view op: ``g`` added into a zero tensor of ``shape`` at the
    positions the view reads (found by applying the op to the positions themselves)."""
    n = B.prod(shape)
    pos = fn.apply(wrap(place(B.arange(0, n, 1, int64), g.device)).reshape(shape), *args)
    flat = (g.numel(),)
    return wrap(B.scatter_add((n,), 0, B.reshape(pos._data, flat), B.reshape(g._data, flat))).reshape(shape)


class Reshape(Function):
    @staticmethod
    def forward(ctx, x, shape):
        ctx.shape = x.shape
        return view_of(x, B.reshape(x._data, shape), Reshape, (shape,))

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.shape), None


class Permute(Function):
    @staticmethod
    def forward(ctx, x, dims):
        ctx.inverse = tuple(sorted(range(len(dims)), key=dims.__getitem__))
        return view_of(x, B.permute(x._data, dims), Permute, (dims,))

    @staticmethod
    def backward(ctx, g):
        return g.permute(ctx.inverse), None


class Expand(Function):
    @staticmethod
    def forward(ctx, x, shape):
        ctx.shape = x.shape
        return view_of(x, B.expand(x._data, shape), Expand, (shape,))

    @staticmethod
    def backward(ctx, g):
        return unbroadcast(g, ctx.shape), None


class Slice(Function):
    @staticmethod
    def forward(ctx, x, starts, steps, counts):
        ctx.shape, ctx.region = x.shape, (starts, steps, counts)
        return view_of(x, B.slice(x._data, starts, steps, counts), Slice, (starts, steps, counts))

    @staticmethod
    def backward(ctx, g):
        out = place(B.full(ctx.shape, 0, g.dtype), g.device)
        B.assign(out, *ctx.region, g._data)
        return wrap(out), None, None, None


class _ScatteredView(Function):
    """A view whose elements lie at scattered positions of its input (``view``, from the
    input's buffer and three arguments): its gradient adds back where it read."""

    @classmethod
    def forward(cls, ctx, x, *args):
        ctx.shape, ctx.args = x.shape, args
        return view_of(x, cls.view(x._data, *args), cls, args)

    @classmethod
    def backward(cls, ctx, g):
        return _scatter_back(g, ctx.shape, cls, ctx.args), None, None, None


class Diagonal(_ScatteredView):
    """``Tensor.diagonal``: the diagonal at ``offset`` between ``dim1`` and ``dim2``."""

    @staticmethod
    def view(data, offset, dim1, dim2):
        return B.diagonal(data, offset, dim1, dim2)


class Windows(_ScatteredView):
    """``Tensor.unfold``: overlapping windows, whose gradients add up."""

    @staticmethod
    def view(data, dim, size, step):
        return B.windows(data, dim, size, step)


class Cat(Function):
    @staticmethod
    def forward(ctx, dim, *xs):
        ctx.dim, ctx.sizes = dim, [x.shape[dim] for x in xs]
        return wrap(B.cat([x._data for x in xs], dim))

    @staticmethod
    def backward(ctx, g):
        return (None, *g.split(ctx.sizes, ctx.dim))


class Gather(Function):
    @staticmethod
    def forward(ctx, x, dim, index):
        ctx.shape, ctx.dim, ctx.index = x.shape, dim, index
        return wrap(B.gather(x._data, dim, index._data))

    @staticmethod
    def backward(ctx, g):
        return wrap(B.scatter_add(ctx.shape, ctx.dim, ctx.index._data, g._data)), None, None


class ScatterAdd(Function):
    """``x`` plus ``src`` added at ``index`` along ``dim`` (out of place)."""

    @staticmethod
    def forward(ctx, x, dim, index, src):
        ctx.dim, ctx.index = dim, index
        added = B.scatter_add(x.shape, dim, index._data, src._data)
        return wrap(B.binary("add", x._data, added, x.dtype))

    @staticmethod
    def backward(ctx, g):
        return g, None, None, wrap(B.gather(g._data, ctx.dim, ctx.index._data))


class IndexPut(Function):
    """``x`` with the flat ``positions`` set to ``value`` (out of place)."""

    @staticmethod
    def forward(ctx, x, positions, value):
        out = B.copy(x._data)
        B.put(out, positions._data, value._data)
        ctx.positions, ctx.vshape = positions, value.shape
        return wrap(out)

    @staticmethod
    def backward(ctx, g):
        gx = B.copy(g._data)
        B.put(gx, ctx.positions._data, B.full((), 0, g.dtype))
        gv = wrap(B.take(B.reshape(g._data, (g.numel(),)), ctx.positions._data))
        return wrap(gx), None, unbroadcast(gv, ctx.vshape)


class Overwrite(Function):
    """``v`` broadcast to ``x``'s shape, replacing ``x`` (copy_ and fill_): the old
    contents get no gradient."""

    @staticmethod
    def forward(ctx, x, v):
        ctx.vshape = v.shape
        vd = place(v._data, x.device)  # fill_'s value: a host scalar
        return wrap(B.expand(vd, tuple(x.shape)) if tuple(v.shape) != tuple(x.shape) else B.copy(vd))

    @staticmethod
    def backward(ctx, g):
        return g.new_zeros(g.shape), unbroadcast(g, ctx.vshape)
