"""Functional forms of the ``nn`` layers, as in ``torch.nn.functional``.

The losses and softmax live in the stage's core ``functional`` and are re-exported here.
Everything is built from differentiable Tensor operations, except the im2col step of
convolution and pooling: ``unfold``/``fold`` are backend kernels, wrapped in a
``Function`` pair whose backwards are each other.
"""
import math
import numbers
import warnings

from .. import backend as B
from .. import functional as _core
from ..functional import _reduce
from .. import shapes
from .. import random as _random
from ..autocast import float32 as _float32
from ..autocast import lower as _lower
from ..autograd import Function, no_grad
from ..creation import cat
from ..device import fused, max_buffer_bytes, place
from ..dtypes import int64
from ..shapes import ShapeError
from ..tensor import Tensor, where

# the core's functions (softmax, losses, activations), named one by one so that readers and
# autodoc see them; ``relu`` and ``silu`` are defined below with ``inplace=``. The reference
# test checks that every name in the core's ``__all__`` is here.
from ..functional import (binary_cross_entropy, binary_cross_entropy_with_logits, cross_entropy, gelu,
                          l1_loss, log_softmax, logsigmoid, mse_loss, nll_loss, one_hot, sigmoid, softmax,
                          softplus, tanh)


def _ntuple(value, n, name, what):
    if isinstance(value, numbers.Integral):
        return (int(value),) * n
    value = tuple(value)
    if len(value) == 1:
        return value * n
    if len(value) != n or not all(isinstance(v, numbers.Integral) for v in value):
        raise ValueError(f"{name}: {what} must be an int or a tuple of {n} ints, got {value}")
    return tuple(int(v) for v in value)


def _const(values, shape, like, dtype=None):
    """A constant tensor (no grad) with ``like``'s dtype unless ``dtype`` is given."""
    return like.new_tensor(values, dtype=dtype or like.dtype).reshape(shape)


def _inplace(fn, input):
    """The ``inplace=True`` form: write ``fn(input)`` into ``input`` and return it. ``fn``
    reads a copy, so what its backward saved is not the tensor being overwritten."""
    return input.copy_(fn(input.clone()))


# ------------------------------------------------------------------ activations

def relu(input, inplace=False):
    """See torch.nn.functional.relu."""
    return input.relu_() if inplace else input.relu()


def silu(input, inplace=False):
    """See torch.nn.functional.silu."""
    return _inplace(silu, input) if inplace else input.silu()


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """See torch.nn.functional.leaky_relu."""
    if inplace:
        return _inplace(lambda x: leaky_relu(x, negative_slope), input)
    return where(input > 0, input, input * negative_slope)


def _act(fn, input, inplace):
    return _inplace(fn, input) if inplace else fn(input)


def _elu(x, alpha, scale=1.0, input_scale=1.0):
    # exp only sees the non-positive side: exp of a large x would overflow to inf, and the
    # unselected branch's zero gradient would become inf * 0 = nan
    neg = ((x.clamp(max=0.0) * input_scale).exp() - 1) * alpha
    out = where(x > 0, x, neg)
    return out if scale == 1.0 else out * scale


def elu(input, alpha=1.0, inplace=False):
    """``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``; at 0 the slope is ``alpha``,
    PyTorch's choice."""
    return _act(lambda x: _elu(x, alpha), input, inplace)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input, inplace=False):
    """``scale * elu(x, alpha)`` with the self-normalising constants of Klambauer et al."""
    return _act(lambda x: _elu(x, _SELU_ALPHA, _SELU_SCALE), input, inplace)


def celu(input, alpha=1.0, inplace=False):
    """``x`` where ``x > 0``, else ``alpha * (exp(x / alpha) - 1)``."""
    if alpha == 0:
        raise ValueError("celu: alpha must be non-zero (it divides the input)")
    return _act(lambda x: _elu(x, alpha, 1.0, 1.0 / alpha), input, inplace)


def mish(input, inplace=False):
    """``x * tanh(softplus(x))``."""
    return _act(lambda x: x * _core.softplus(x).tanh(), input, inplace)


def hardswish(input, inplace=False):
    """``x * relu6(x + 3) / 6``: 0 up to -3, ``x`` from 3, a parabola between; at the kinks
    the slope is the outer piece's (0 at -3, 1 at 3), as in PyTorch."""
    # the middle piece is the fallback, so that NaN stays NaN
    return _act(lambda x: where(x <= -3, 0.0, where(x >= 3, x, x * (x + 3) / 6)), input, inplace)


def hardsigmoid(input, inplace=False):
    """``relu6(x + 3) / 6``: 0 below -3, 1 above 3, linear between (slope 0 at the kinks)."""
    return _act(lambda x: _Hardtanh.apply(x + 3, 0.0, 6.0) / 6, input, inplace)


class _Hardtanh(Function):
    """``clamp(x, lo, hi)`` whose gradient is 0 at the bounds themselves, as PyTorch's
    (``Tensor.clamp`` passes it there)."""

    @staticmethod
    def forward(ctx, x, lo, hi):
        ctx.save_for_backward(x)
        ctx.bounds = lo, hi
        return x.clamp(lo, hi)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        lo, hi = ctx.bounds
        # written as "outside" so that a NaN input passes its gradient, as in PyTorch
        return where((x <= lo) | (x >= hi), 0.0, g), None, None


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """``x`` clamped to ``[min_val, max_val]``; the gradient is 0 outside and at the bounds."""
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val ({min_val}) cannot be greater than max_val ({max_val})")
    return _act(lambda x: _Hardtanh.apply(x, min_val, max_val), input, inplace)


def relu6(input, inplace=False):
    """``hardtanh(x, 0, 6)``."""
    return hardtanh(input, 0.0, 6.0, inplace)


def softsign(input):
    """``x / (1 + |x|)``."""
    return input / (input.abs() + 1)


def tanhshrink(input):
    """``x - tanh(x)``."""
    return input - input.tanh()


def threshold(input, threshold, value, inplace=False):
    """``value`` where ``x <= threshold``, else ``x`` (a NaN stays NaN, as in PyTorch)."""
    return _act(lambda x: where(x <= threshold, value, x), input, inplace)


def glu(input, dim=-1):
    """Gated linear unit: split ``dim`` into halves ``a, b`` and return ``a * sigmoid(b)``."""
    if input.ndim == 0:
        raise ShapeError("glu: does not support scalars, the halved dimension must be even")
    d = input._dim(dim, "glu")
    n = input.shape[d]
    if n % 2:
        raise ShapeError(f"glu: halving dimension must be even, but dimension {d} of input of shape "
                         f"{tuple(input.shape)} is size {n}")
    return _narrow(input, d, 0, n // 2) * _narrow(input, d, n // 2, n // 2).sigmoid()


def _implicit_dim(name, ndim, stacklevel):
    # PyTorch's legacy rule for dim=None, with its warning
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to "
                  f"include dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """``softmax(-x, dim)``; ``dtype`` casts the input first."""
    if dim is None:
        dim = _implicit_dim("softmin", input.ndim, _stacklevel)
    x = input if dtype is None else input.to(dtype)
    return _core.softmax(-x, dim)


def prelu(input, weight):
    """``x`` where ``x > 0``, else ``weight * x``; ``weight`` holds one slope, or one per
    channel (dim 1 of the input)."""
    if weight.ndim > 1:
        raise ShapeError(f"prelu: weight must be a scalar or 1-D, got shape {tuple(weight.shape)}")
    n = weight.numel()
    if n == 1:
        w = weight.reshape(())
    else:
        if input.ndim == 0:
            raise ShapeError(f"prelu: a 0-dim input takes a single slope, got weight of shape "
                             f"{tuple(weight.shape)}")
        channels = input.shape[1] if input.ndim > 1 else 1
        if channels != n:
            raise ShapeError(f"prelu: weight has {n} slopes but the input of shape {tuple(input.shape)} "
                             f"has {channels} channels")
        w = weight.reshape((n,) + (1,) * (input.ndim - 2))
    return where(input > 0, input, w * input)


def hardshrink(input, lambd=0.5):
    """0 where ``-lambd <= x <= lambd``, else ``x``."""
    return where((input >= -lambd) & (input <= lambd), 0.0, input)


def softshrink(input, lambd=0.5):
    """0 where ``-lambd <= x <= lambd``, else ``x`` moved ``lambd`` towards 0."""
    if lambd < 0:
        raise ValueError(f"softshrink: lambd must be non-negative, got {lambd}")
    # sign(x) rather than two branches, so that NaN stays NaN
    return where((input >= -lambd) & (input <= lambd), 0.0, input - input.sign() * lambd)


# ------------------------------------------------------------------ linear

def linear(input, weight, bias=None):
    """``input @ weight.T + bias`` over the last dimension of ``input``."""
    input, weight, bias = _lower(input, weight, bias)
    return _linear(input, weight, bias, None)


def _linear(input, weight, bias, act):
    """``linear`` then ``act`` (None, "relu" or "gelu"): one fused Function where the
    backend offers it for these operands, else the composite."""
    if weight.ndim != 2:
        raise ShapeError(f"linear: weight must be 2-D (out_features, in_features), got shape "
                         f"{tuple(weight.shape)}")
    if input.ndim == 0 or input.shape[-1] != weight.shape[1]:
        raise ShapeError(f"linear: input of shape {tuple(input.shape)} does not fit weight of shape "
                         f"{tuple(weight.shape)}: the last input dimension must be {weight.shape[1]}")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise ShapeError(f"linear: bias of shape {tuple(bias.shape)} does not fit weight of shape "
                         f"{tuple(weight.shape)}")
    if fused("linear", input._data, weight._data) and input.dtype is weight.dtype and weight.dtype.is_floating_point and (
            bias is None or bias.dtype is weight.dtype):
        return _Linear.apply(input, weight, bias, act)
    out = input.matmul(weight.transpose(0, 1))
    return _ACTIVATIONS[act](out if bias is None else out + bias)


class _Linear(Function):
    """``act(x @ w.T + b)`` on the backend's fused kernels: the bias and the activation
    are applied to the GEMM's output while it is in cache, and the backward is the
    activation's derivative, two GEMMs on transposed views and a column sum."""

    @staticmethod
    def forward(ctx, x, w, b, act):
        y, pre = B.linear(x._data, w._data, None if b is None else b._data, act)
        out = Tensor._make(y)
        need_x, need_w = ctx.needs_input_grad[:2]
        # relu's derivative comes from the output, gelu's from the values before it
        ctx.act, ctx.pre = act, pre
        ctx.save_for_backward(x if need_w else None, w if need_x else None, out if act == "relu" else None)
        return out

    @staticmethod
    def backward(ctx, g):
        x, w, out = ctx.saved_tensors
        need = ctx.needs_input_grad
        saved = out._data if ctx.act == "relu" else ctx.pre
        grads = B.linear_backward(g._data, None if x is None else x._data, None if w is None else w._data,
                                  saved, ctx.act, *need[:3])
        return (*(None if d is None else Tensor._make(d) for d in grads), None)


_ACTIVATIONS = {None: lambda y: y, "relu": lambda y: y.relu(), "gelu": lambda y: y.gelu()}


# ------------------------------------------------------------------ im2col

class _Unfold(Function):
    """(N, C, *spatial) -> (N, C * prod(kernel), L): every receptive field as a column."""

    @staticmethod
    def forward(ctx, x, kernel, dilation, padding, stride):
        ctx.geometry = (tuple(x.shape[2:]), kernel, dilation, padding, stride)
        return Tensor._make(B.unfold(x._data, kernel, dilation, padding, stride))

    @staticmethod
    def backward(ctx, g):
        # unfold is linear; its adjoint sums each column back where it was read: fold
        return _Fold.apply(g, *ctx.geometry), None, None, None, None


class _Fold(Function):
    """The adjoint of ``_Unfold``: sums columns back into (N, C, *output_size)."""

    @staticmethod
    def forward(ctx, cols, output_size, kernel, dilation, padding, stride):
        ctx.geometry = (kernel, dilation, padding, stride)
        return Tensor._make(B.fold(cols._data, output_size, kernel, dilation, padding, stride))

    @staticmethod
    def backward(ctx, g):
        return _Unfold.apply(g, *ctx.geometry), None, None, None, None, None


def _out_size(size, k, d, p, s):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def _check_geometry(name, kernel, dilation, padding, stride):
    """PyTorch's rules for a sliding window: kernel, dilation and stride positive, padding
    non-negative (each a tuple with one entry per spatial dim)."""
    for what, values, least in (("kernel size", kernel, 1), ("dilation", dilation, 1),
                                ("stride", stride, 1), ("padding", padding, 0)):
        if min(values) < least:
            rule = "positive" if least else "non-negative"
            raise ValueError(f"{name}: {what} must be {rule}, got {tuple(values)}")


def _im2col_shape(name, x, kernel, dilation, padding, stride):
    """The (N, C * K, L) shape ``_Unfold`` produces from ``x``, checked before anything is
    allocated: a window that does not fit, or columns that cannot exist, raise here."""
    _check_geometry(name, kernel, dilation, padding, stride)
    out = [_out_size(n, *g) for n, g in zip(x.shape[2:], zip(kernel, dilation, padding, stride))]
    if min(out) < 1:
        raise ValueError(f"{name}: kernel {tuple(kernel)} with dilation {tuple(dilation)} does not fit "
                         f"input of shape {tuple(x.shape)} padded by {tuple(padding)}")
    cols = (x.shape[0], x.shape[1] * math.prod(kernel), math.prod(out))
    return shapes.check(cols, name, x.dtype), out


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """im2col of a (N, C, H, W) or (C, H, W) input: (N, C * kh * kw, L)."""
    if input.ndim not in (3, 4):
        raise ShapeError(f"unfold: expected a 3-D or 4-D input, got shape {tuple(input.shape)}")
    x = input if input.ndim == 4 else input.unsqueeze(0)
    geom = [_ntuple(v, 2, "unfold", w) for v, w in
            ((kernel_size, "kernel_size"), (dilation, "dilation"), (padding, "padding"), (stride, "stride"))]
    _im2col_shape("unfold", x, *geom)
    out = _Unfold.apply(x, *geom)
    return out if input.ndim == 4 else out.squeeze(0)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """col2im, the adjoint of ``unfold``: ``(N, C * kh * kw, L) -> (N, C, *output_size)``."""
    if input.ndim not in (2, 3):
        raise ShapeError(f"fold: expected a 2-D or 3-D input, got shape {tuple(input.shape)}")
    x = input if input.ndim == 3 else input.unsqueeze(0)
    size = _ntuple(output_size, 2, "fold", "output_size")
    k, d, p, s = (_ntuple(v, 2, "fold", w) for v, w in ((kernel_size, "kernel_size"), (dilation, "dilation"),
                                                         (padding, "padding"), (stride, "stride")))
    _check_geometry("fold", k, d, p, s)
    shapes.check((x.shape[0], x.shape[1] // (k[0] * k[1]), *size), "fold", x.dtype)
    blocks = _out_size(size[0], k[0], d[0], p[0], s[0]) * _out_size(size[1], k[1], d[1], p[1], s[1])
    if x.shape[1] % (k[0] * k[1]) or x.shape[2] != blocks:
        raise ShapeError(f"fold: input of shape {tuple(input.shape)} does not fit output_size {size} "
                         f"with kernel {k}: expected dim 1 divisible by {k[0] * k[1]} and {blocks} blocks")
    out = _Fold.apply(x, size, k, d, p, s)
    return out if input.ndim == 3 else out.squeeze(0)


# ------------------------------------------------------------------ padding

def _narrow(x, dim, start, length):
    return x[(slice(None),) * dim + (slice(start, start + length),)]


def _pad_constant(x, dim, lo, hi, value):
    if lo < 0:
        x, lo = _narrow(x, dim, -lo, x.shape[dim] + lo), 0
    if hi < 0:
        x, hi = _narrow(x, dim, 0, x.shape[dim] + hi), 0
    parts = []
    for n in (lo, None, hi):
        if n is None:
            parts.append(x)
        elif n:
            shape = list(x.shape)
            shape[dim] = n
            parts.append(x.new_full(tuple(shape), value))
    return x if len(parts) == 1 else cat(parts, dim)


def _pad_index(x, dim, lo, hi, mode):
    """Reflect and replicate map each output position through the original edges, so a
    negative side just starts or stops inside; circular crops first and wraps what is
    left, as PyTorch does."""
    if mode == "circular" and (lo < 0 or hi < 0):
        x = _narrow(x, dim, max(-lo, 0), x.shape[dim] + min(lo, 0) + min(hi, 0))
        lo, hi = max(lo, 0), max(hi, 0)
    n = x.shape[dim]
    if mode == "reflect" and (lo >= n or hi >= n):
        raise ShapeError(f"pad: reflect padding ({lo}, {hi}) must be smaller than the dimension "
                         f"size {n}")
    if mode == "circular" and (lo > n or hi > n):
        raise ShapeError(f"pad: circular padding ({lo}, {hi}) must be at most the dimension size {n}")
    positions = []
    for i in range(-lo, n + hi):
        if mode == "replicate":
            positions.append(min(max(i, 0), n - 1))
        elif mode == "reflect":
            positions.append(-i if i < 0 else (2 * (n - 1) - i if i >= n else i))
        else:
            positions.append(i % n)
    index = _const(positions, (len(positions),), x, int64)
    return x[(slice(None),) * dim + (index,)]


def pad(input, pad, mode="constant", value=None):
    """Pad the last ``len(pad) // 2`` dimensions: ``pad`` is (last_left, last_right,
    second_last_left, ...). Modes: constant, reflect, replicate, circular."""
    pad = tuple(pad)
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise ValueError(f"pad: padding length must be even and at most twice the number of "
                         f"dimensions ({input.ndim}), got {pad}")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise ValueError(f"pad: unknown mode {mode!r}")
    if mode != "constant" and value not in (None, 0):
        raise ValueError(f"pad: a padding value is only valid with mode 'constant', got mode {mode!r}")
    out = list(input.shape)
    for i in range(len(pad) // 2):
        lo, hi = pad[2 * i], pad[2 * i + 1]
        n = out[-1 - i]
        if n + min(lo, 0) + min(hi, 0) < 0:
            raise ValueError(f"pad: padding ({lo}, {hi}) would cut more than the {n} elements of "
                             f"dimension {input.ndim - 1 - i} (input shape {list(input.shape)})")
        out[-1 - i] = n + lo + hi
    shapes.check(out, "pad", input.dtype)
    x = input
    for i in range(len(pad) // 2):
        lo, hi = pad[2 * i], pad[2 * i + 1]
        if lo == hi == 0:
            continue
        dim = x.ndim - 1 - i
        if mode == "constant":
            x = _pad_constant(x, dim, lo, hi, 0.0 if value is None else value)
        else:
            x = _pad_index(x, dim, lo, hi, mode)
    return x


# ------------------------------------------------------------------ convolution

def _batched(input, nd, name):
    """Accept (N, C, *spatial) or unbatched (C, *spatial); return a batched view and whether
    the input was batched."""
    if input.ndim == nd + 2:
        return input, True
    if input.ndim == nd + 1:
        return input.unsqueeze(0), False
    raise ValueError(f"{name}: expected a {nd + 1}-D (unbatched) or {nd + 2}-D (batched) input, "
                     f"got shape {tuple(input.shape)}")


def _conv(input, weight, bias, stride, padding, dilation, groups, nd, name):
    input, weight, bias = _lower(input, weight, bias)
    x, batched = _batched(input, nd, name)
    if weight.ndim != nd + 2:
        raise ShapeError(f"{name}: weight must be {nd + 2}-D, got shape {tuple(weight.shape)}")
    stride = _ntuple(stride, nd, name, "stride")
    dilation = _ntuple(dilation, nd, name, "dilation")
    N, C, *size = x.shape
    O, Cg, *kernel = weight.shape
    _check_geometry(name, kernel, dilation, (0,) * nd, stride)
    if groups < 1 or O % groups:
        raise ValueError(f"{name}: groups={groups} must be positive and divide the "
                         f"{O} output channels of weight {tuple(weight.shape)}")
    if C != Cg * groups:
        raise ShapeError(f"{name}: input of shape {tuple(input.shape)} has {C} channels, but weight of "
                         f"shape {tuple(weight.shape)} with groups={groups} expects {Cg * groups}")
    if bias is not None and tuple(bias.shape) != (O,):
        raise ShapeError(f"{name}: bias must have shape ({O},), got {tuple(bias.shape)}")
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0,) * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError(f"{name}: padding='same' is not supported for strided convolutions")
            total = [d * (k - 1) for d, k in zip(dilation, kernel)]
            padding = tuple(t // 2 for t in total)
            extra = [t - 2 * (t // 2) for t in total]  # odd totals pad one more on the right
            if any(extra):
                x = pad(x, [v for e in reversed(extra) for v in (0, e)])
                size = list(x.shape[2:])
        else:
            raise ValueError(f"{name}: padding must be 'valid', 'same', an int or a tuple, got {padding!r}")
    else:
        padding = _ntuple(padding, nd, name, "padding")
    _, out_size = _im2col_shape(name, x, tuple(kernel), dilation, padding, stride)
    shapes.check((N, O, *out_size), name, x.dtype)
    limit = max_buffer_bytes(x.device)
    col_bytes = max(Cg * groups * math.prod(kernel), O) * math.prod(out_size) * x.element_size()
    if limit is not None and N > 1 and N * col_bytes > limit:
        # a device that binds at most ``limit`` bytes to a kernel gets the batch in parts
        per = max(1, limit // col_bytes)
        return cat([_conv(x[i:i + per], weight, bias, stride, padding, dilation, groups, nd, name)
                    for i in range(0, N, per)])
    cols = _Unfold.apply(x, tuple(kernel), dilation, padding, stride)  # (N, C*K, L)
    K, L = Cg * math.prod(kernel), cols.shape[2]
    if groups == 1:
        out = weight.reshape(O, K).matmul(cols)  # (N, O, L)
    else:
        # each group's filters see only that group's channels: a batch of g matmuls
        w = weight.reshape(groups, O // groups, K)
        out = w.matmul(cols.reshape(N, groups, K, L))
    out = out.reshape(N, O, *out_size)
    if bias is not None:
        out = out + bias.reshape(O, *([1] * nd))
    return out if batched else out.squeeze(0)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution (cross-correlation) of (N, C, L) by (O, C/groups, k)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution (cross-correlation) of (N, C, H, W) by (O, C/groups, kh, kw)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


# ------------------------------------------------------------------ pooling

def _pool_args(name, kernel_size, stride, padding, dilation=1):
    k = _ntuple(kernel_size, 2, name, "kernel_size")
    s = k if stride is None or (not isinstance(stride, int) and len(stride) == 0) \
        else _ntuple(stride, 2, name, "stride")
    p = _ntuple(padding, 2, name, "padding")
    d = _ntuple(dilation, 2, name, "dilation")
    _check_geometry(name, k, d, p, s)
    if any(pi > ki // 2 for pi, ki in zip(p, k)):
        raise ShapeError(f"{name}: padding {p} should be at most half of the kernel size {k}")
    return k, s, p, d


def _pool_out(size, k, s, p, d, ceil_mode):
    span = size + 2 * p - d * (k - 1) - 1
    if span < 0:
        return 0
    if not ceil_mode:
        return span // s + 1
    out = -(-span // s) + 1
    if (out - 1) * s >= size + p:  # the last window must start inside the input or left padding
        out -= 1
    return out


def _pool_setup(input, name, k, s, p, d, ceil_mode):
    """The input as (N*C, 1, H, W), the output size, and the extra right padding that
    ceil_mode's partial windows need."""
    x, batched = _batched(input, 2, name)
    N, C, H, W = x.shape
    out = [_pool_out(n, *g, ceil_mode) for n, g in zip((H, W), zip(k, s, p, d))]
    if min(out) < 1:
        raise ValueError(f"{name}: kernel {k} with dilation {d} and padding {p} does not fit input "
                         f"of shape {tuple(input.shape)}")
    shapes.check((N * C, k[0] * k[1], out[0] * out[1]), name, x.dtype)
    extra = [max(0, (o - 1) * si + di * (ki - 1) + 1 - (n + 2 * pi))
             for o, n, ki, si, pi, di in zip(out, (H, W), k, s, p, d)]
    return x.reshape(N * C, 1, H, W), (N, C, H, W), out, extra, batched


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max over each window; padding never wins (it is -inf). With ``return_indices``,
    also the flat position (h * W + w) of each maximum in its input plane."""
    k, s, p, d = _pool_args("max_pool2d", kernel_size, stride, padding, dilation)
    x, (N, C, H, W), (oh, ow), (eh, ew), batched = _pool_setup(input, "max_pool2d", k, s, p, d, ceil_mode)
    if any(p) or eh or ew:
        x = pad(x, (p[1], p[1] + ew, p[0], p[0] + eh), value=-math.inf)
    cols = _Unfold.apply(x, k, d, (0, 0), s)  # (N*C, kh*kw, oh*ow)
    vals, arg = cols.max(dim=1)
    out = vals.reshape(N, C, oh, ow)
    if not batched:
        out = out.squeeze(0)
    if not return_indices:
        return out
    # window offset (arg) + window origin -> position in the unpadded input plane
    L = oh * ow
    rows = _const([(l // ow) * s[0] - p[0] for l in range(L)], (L,), arg, int64)
    cols_ = _const([(l % ow) * s[1] - p[1] for l in range(L)], (L,), arg, int64)
    h = rows + (arg // k[1]) * d[0]
    w = cols_ + (arg % k[1]) * d[1]
    idx = (h * W + w).reshape(N, C, oh, ow)
    return out, idx if batched else idx.squeeze(0)


def _avg_counts(size, k, s, p, out, include_pad):
    """How many elements each window averages along one axis (PyTorch's rule: padding
    counts when ``include_pad``, the ceil-mode overhang never does)."""
    counts = []
    for o in range(out):
        start = o * s - p
        end = min(start + k, size + p)
        full = end - start
        start, end = max(start, 0), min(end, size)
        counts.append(full if include_pad else max(end - start, 1))
    return counts


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """See torch.nn.functional.avg_pool2d."""
    k, s, p, d = _pool_args("avg_pool2d", kernel_size, stride, padding)
    x, (N, C, H, W), (oh, ow), (eh, ew), batched = _pool_setup(input, "avg_pool2d", k, s, p, d, ceil_mode)
    if eh or ew:
        x = pad(x, (0, ew, 0, eh))
    sums = _Unfold.apply(x, k, d, p, s).sum(dim=1)  # (N*C, oh*ow)
    if divisor_override is not None:
        if not divisor_override:
            raise ValueError("avg_pool2d: divisor_override must be non-zero")
        out = sums / divisor_override
    else:
        ch = _avg_counts(H, k[0], s[0], p[0], oh, count_include_pad)
        cw = _avg_counts(W, k[1], s[1], p[1], ow, count_include_pad)
        out = sums / _const([a * b for a in ch for b in cw], (oh * ow,), sums)
    out = out.reshape(N, C, oh, ow)
    return out if batched else out.squeeze(0)


def _as_2d_pool(fn, input, name, kernel_size, stride, padding, **kw):
    """A 1-D pool as a 2-D pool over a height-1 plane."""
    if input.ndim not in (2, 3):
        raise ShapeError(f"{name}: expected a 2-D (unbatched) or 3-D (batched) input, got shape "
                         f"{tuple(input.shape)}")
    one = lambda v: (1, _ntuple(v, 1, name, "size")[0])  # noqa: E731
    stride = None if stride is None or (not isinstance(stride, int) and len(stride) == 0) else one(stride)
    padding = (0, _ntuple(padding, 1, name, "padding")[0])
    out = fn(input.unsqueeze(-2), one(kernel_size), stride, padding, **kw)
    if isinstance(out, tuple):
        return out[0].squeeze(-2), out[1].squeeze(-2)
    return out.squeeze(-2)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """See torch.nn.functional.max_pool1d."""
    return _as_2d_pool(max_pool2d, input, "max_pool1d", kernel_size, stride, padding,
                       dilation=(1, _ntuple(dilation, 1, "max_pool1d", "dilation")[0]),
                       ceil_mode=ceil_mode, return_indices=return_indices)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """See torch.nn.functional.avg_pool1d."""
    return _as_2d_pool(avg_pool2d, input, "avg_pool1d", kernel_size, stride, padding,
                       ceil_mode=ceil_mode, count_include_pad=count_include_pad)


def _adaptive_weights(n_in, n_out, like):
    """(n_out, n_in) averaging matrix: row i averages input[floor(i*n/m) : ceil((i+1)*n/m)]."""
    vals = []
    for i in range(n_out):
        a, b = (i * n_in) // n_out, -(-((i + 1) * n_in) // n_out)
        vals.extend(1.0 / (b - a) if a <= j < b else 0.0 for j in range(n_in))
    return _const(vals, (n_out, n_in), like)


def adaptive_avg_pool2d(input, output_size):
    """Average pooling to a fixed output size: separable, so A_h @ x @ A_w^T."""
    x, batched = _batched(input, 2, "adaptive_avg_pool2d")
    H, W = x.shape[2:]
    if isinstance(output_size, numbers.Integral):
        output_size = (output_size, output_size)
    oh, ow = (n if o is None else int(o) for o, n in zip(tuple(output_size), (H, W)))
    if oh < 1 or ow < 1 or H < 1 or W < 1:
        raise ShapeError(f"adaptive_avg_pool2d: output size {(oh, ow)} and input of shape "
                         f"{tuple(input.shape)} must be non-empty")
    shapes.check((*x.shape[:2], oh, ow), "adaptive_avg_pool2d", x.dtype)
    if oh != H:
        x = _adaptive_weights(H, oh, x).matmul(x)
    if ow != W:
        x = x.matmul(_adaptive_weights(W, ow, x).transpose(0, 1))
    return x if batched else x.squeeze(0)


# ------------------------------------------------------------------ normalization

def _normalize(x, dims, eps):
    mean = x.mean(dim=dims, keepdim=True)
    centered = x - mean
    var = (centered * centered).mean(dim=dims, keepdim=True)  # biased, as the layers use
    return centered * (var + eps).rsqrt(), mean, var


def _check_per_channel(op, input, **tensors):
    """Each of ``tensors`` that is given must hold one value per channel (dim 1)."""
    C = input.shape[1]
    for what, t in tensors.items():
        if t is not None and tuple(t.shape) != (C,):
            raise ShapeError(f"{op}: {what} must have shape ({C},) for input of shape "
                             f"{tuple(input.shape)}, got {tuple(t.shape)}")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Normalise each channel (dim 1) over the batch and spatial dims. In training, batch
    statistics are used and the running ones updated in place (variance unbiased)."""
    if input.ndim < 2:
        raise ShapeError(f"batch_norm: expected an input with a channel dim, got shape {tuple(input.shape)}")
    C = input.shape[1]
    _check_per_channel("batch_norm", input, running_mean=running_mean, running_var=running_var,
                       weight=weight, bias=bias)
    shape = (C,) + (1,) * (input.ndim - 2)
    dims = (0,) + tuple(range(2, input.ndim))
    if training:
        n = input.numel() // C
        if n <= 1:
            raise ValueError(f"batch_norm: expected more than 1 value per channel when training, "
                             f"got input of shape {tuple(input.shape)}")
        y, mean, var = _normalize(input, dims, eps)
        with no_grad():
            if running_mean is not None:
                running_mean.mul_(1 - momentum).add_(mean.reshape(C) * momentum)
            if running_var is not None:
                running_var.mul_(1 - momentum).add_(var.reshape(C) * (momentum * n / (n - 1)))
    else:
        if running_mean is None or running_var is None:
            raise ValueError("batch_norm: running_mean and running_var are required when training=False")
        y = (input - running_mean.reshape(shape)) * (running_var.reshape(shape) + eps).rsqrt()
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def _trailing(input, normalized_shape, name):
    ns = (normalized_shape,) if isinstance(normalized_shape, numbers.Integral) else tuple(normalized_shape)
    if not ns or tuple(input.shape[input.ndim - len(ns):]) != ns or input.ndim < len(ns):
        raise ShapeError(f"{name}: expected an input whose trailing dimensions are {ns}, got shape "
                         f"{tuple(input.shape)}")
    return ns, tuple(range(input.ndim - len(ns), input.ndim))


class _LayerNorm(Function):
    """Layer norm on the backend's fused kernels: a row's statistics, the normalisation,
    scale and shift in one pass; the backward keeps only the mean and 1/std of each row."""

    @staticmethod
    def forward(ctx, x, weight, bias, shape, eps):
        w, b = (None if t is None else t._data for t in (weight, bias))
        y, mean, rstd = B.layer_norm(x._data, B.prod(shape), w, b, eps)
        ctx.stats, ctx.shape = (mean, rstd), shape
        ctx.save_for_backward(x, weight)
        return Tensor._make(y)

    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors
        need = ctx.needs_input_grad
        grads = B.layer_norm_backward(g._data, x._data, *ctx.stats, None if weight is None else weight._data,
                                      ctx.shape, need[0], need[1], need[2])
        return (*(None if d is None else Tensor._make(d) for d in grads), None, None)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the trailing ``normalized_shape`` dims, then scale and shift."""
    input, weight, bias = _float32("layer_norm", input, weight, bias)
    ns, dims = _trailing(input, normalized_shape, "layer_norm")
    if fused("layer_norm", input._data) and input.dtype.is_floating_point and all(
            t is None or (t.dtype is input.dtype and tuple(t.shape) == ns) for t in (weight, bias)):
        return _LayerNorm.apply(input, weight, bias, ns, float(eps))
    y = _normalize(input, dims, eps)[0]
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalise each of ``num_groups`` channel groups over its channels and spatial dims."""
    input, weight, bias = _float32("group_norm", input, weight, bias)
    if input.ndim < 2:
        raise ShapeError(f"group_norm: expected an input with a channel dim, got shape {tuple(input.shape)}")
    N, C = input.shape[:2]
    if num_groups < 1 or C % num_groups:
        raise ShapeError(f"group_norm: {C} channels of input {tuple(input.shape)} cannot be split "
                         f"into {num_groups} groups")
    y = _normalize(input.reshape(N, num_groups, -1), (2,), eps)[0].reshape(input.shape)
    shape = (C,) + (1,) * (input.ndim - 2)
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


# the machine epsilon of each float dtype: RMSNorm's default eps, as in PyTorch
_EPS = {"float32": 2.0 ** -23, "float64": 2.0 ** -52}


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """Divide by the root mean square over the trailing dims (no centering), then scale."""
    ns, dims = _trailing(input, normalized_shape, "rms_norm")
    if eps is None:
        eps = _EPS.get(input.dtype.name, 2.0 ** -23)
    y = input * ((input * input).mean(dim=dims, keepdim=True) + eps).rsqrt()
    return y if weight is None else y * weight


# ------------------------------------------------------------------ dropout and embedding

def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` and scale the rest by 1/(1-p) (training
    only); the mask comes from the project's generator."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        mask = 0.0
    else:
        u = Tensor._make(place(B.uniform(tuple(input.shape), 0.0, 1.0, input.dtype, _random.default_generator),
                               input.device))
        mask = (u < 1.0 - p).to(input.dtype) * (1.0 / (1.0 - p))
    return input.mul_(mask) if inplace else input * mask


class _Embedding(Function):
    """Rows of ``weight`` picked by ``indices``; the backward adds each output row's
    gradient into the row it came from (skipping ``padding_idx``)."""

    @staticmethod
    def forward(ctx, weight, indices, padding_idx, scale_grad_by_freq):
        flat = indices.reshape(-1)
        ctx.save_for_backward(flat)
        ctx.num, ctx.padding_idx, ctx.scale = weight.shape[0], padding_idx, scale_grad_by_freq
        return weight[flat].reshape(*indices.shape, weight.shape[1])

    @staticmethod
    def backward(ctx, g):
        (flat,) = ctx.saved_tensors
        D = g.shape[-1]
        g = g.reshape(-1, D)
        if ctx.padding_idx is not None:
            g = g * (flat != ctx.padding_idx).to(g.dtype).unsqueeze(1)
        if ctx.scale:
            counts = g.new_zeros((ctx.num,)).scatter_add(0, flat, g.new_ones((flat.shape[0],)))
            g = g / counts[flat].unsqueeze(1)
        index = flat.unsqueeze(1).expand(flat.shape[0], D)
        return g.new_zeros((ctx.num, D)).scatter_add(0, index, g), None, None, None


def _embedding_renorm_(weight, indices, max_norm, norm_type):
    """Rescale, in place, the referenced rows whose norm exceeds ``max_norm``."""
    with no_grad():
        rows = _const(sorted(set(indices.reshape(-1).tolist())), (-1,), indices, int64)
        sub = weight[rows]
        norms = (sub.abs() ** norm_type).sum(dim=1) ** (1.0 / norm_type)
        scale = where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight[rows] = sub * scale.unsqueeze(1)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """Look up rows of ``weight`` (num_embeddings, dim) by the integer tensor ``input``."""
    if input.dtype.is_floating_point or input.dtype.name == "bool":
        raise TypeError(f"embedding: indices must be an integer tensor, got {input.dtype.name}")
    if weight.ndim != 2:
        raise ShapeError(f"embedding: weight must be 2-D (num_embeddings, dim), got shape "
                         f"{tuple(weight.shape)}")
    if sparse:
        raise ValueError("embedding: sparse gradients are not supported; use sparse=False")
    V = weight.shape[0]
    if padding_idx is not None:
        if not -V <= padding_idx < V:
            raise ValueError(f"embedding: padding_idx {padding_idx} must be within num_embeddings {V}")
        padding_idx %= V
    bad = shapes.out_of_range(input, 0, V)
    if bad is not None:
        raise IndexError(f"embedding: index {bad} is out of range for {V} embeddings")
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    return _Embedding.apply(weight, input, padding_idx, scale_grad_by_freq)


# ------------------------------------------------------------------ regression and divergence losses

def _legacy_reduction(size_average, reduce, reduction):
    """PyTorch's deprecated ``size_average``/``reduce`` pair, mapped to a reduction."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = "mean" if size_average and reduce else ("sum" if reduce else "none")
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{reduction}' "
                  f"instead.", stacklevel=3)
    return reduction


def _difference(input, target, op):
    if not isinstance(target, Tensor):
        raise TypeError(f"{op}: target must be a Tensor, got {type(target).__name__}")
    if tuple(input.shape) != tuple(target.shape):
        # broadcast as PyTorch does, with its warning
        warnings.warn(f"Using a target size ({list(target.shape)}) that is different to the input size "
                      f"({list(input.shape)}). This will likely lead to incorrect results due to "
                      f"broadcasting. Please ensure they have the same size.", stacklevel=3)
    return input - target


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """``0.5 * d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 * beta`` (``d = input -
    target``); ``beta=0`` is the L1 loss."""
    input, target = _float32("loss", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be non-negative, got {beta}")
    d = _difference(input, target, "smooth_l1_loss")
    ad = d.abs()
    loss = ad if beta == 0 else where(ad < beta, d * d * (0.5 / beta), ad - 0.5 * beta)
    return _reduce(loss, reduction, "smooth_l1_loss")


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """``0.5 * d**2`` where ``|d| < delta``, else ``delta * (|d| - 0.5 * delta)``; an
    optional ``weight`` of the input's shape scales each element before the reduction."""
    input, target, weight = _float32("loss", input, target, weight)
    if delta <= 0:
        raise ValueError(f"huber_loss: delta must be positive, got {delta}")
    d = _difference(input, target, "huber_loss")
    ad = d.abs()
    loss = where(ad < delta, d * d * 0.5, (ad - 0.5 * delta) * delta)
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape):
            raise ValueError(f"huber_loss: weight of shape {list(weight.shape)} must match the input's "
                             f"shape {list(input.shape)}")
        loss = loss * weight
    return _reduce(loss, reduction, "huber_loss")


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Kullback-Leibler divergence of ``target`` from the log-probabilities ``input``:
    ``target * (log(target) - input)``, 0 where ``target`` is 0 (``log_target``: the target
    is a log-probability too). ``'batchmean'`` divides the sum by the batch size."""
    input, target = _float32("loss", input, target)
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce, reduction)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support "
                      "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
                      "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
                      "major release.", stacklevel=2)
    if reduction not in ("mean", "sum", "none", "batchmean"):
        raise ValueError(f"kl_div: reduction must be 'mean', 'batchmean', 'sum' or 'none', got {reduction!r}")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        # xlogy(t, t): 0 * log(0) counts as 0; a negative target still gives NaN
        loss = where(target == 0, 0.0, target * target.log()) - target * input
    if reduction == "batchmean":
        total = loss.sum()
        return total / input.shape[0] if input.ndim else total
    return _reduce(loss, reduction, "kl_div")


# ------------------------------------------------------------------ distances

class _PNorm(Function):
    """``(sum |x|**p) ** (1/p)`` over ``dim`` for a ``p`` other than 0, 1, 2 and inf. The
    backward is ``sign(x) |x|**(p-1) / norm**(p-1)``, set to 0 where the norm or x is 0:
    the composite's pow would give inf * 0 = nan there."""

    @staticmethod
    def forward(ctx, x, p, dim, keepdim):
        n = (x.abs() ** p).sum(dim=dim, keepdim=True) ** (1.0 / p)
        ctx.save_for_backward(x, n)
        ctx.p, ctx.dim, ctx.keepdim = p, dim, keepdim
        return n if keepdim else n.squeeze(dim)

    @staticmethod
    def backward(ctx, g):
        x, n = ctx.saved_tensors
        p = ctx.p
        if not ctx.keepdim:
            g = g.unsqueeze(ctx.dim)
        scale = where(n == 0, 0.0, g / n ** (p - 1))
        return where(x == 0, 0.0, x.sign() * x.abs() ** (p - 1) * scale), None, None, None


def _vector_norm(x, p, dim, keepdim):
    """The ``p``-norm over one dimension, with PyTorch's gradient (0 at a zero vector)."""
    if p == 2:
        return x.norm(2, dim=dim, keepdim=keepdim)
    if p == 1:
        return x.abs().sum(dim=dim, keepdim=keepdim)
    if p == math.inf:
        return x.abs().amax(dim=dim, keepdim=keepdim)
    if p == -math.inf:
        return x.abs().amin(dim=dim, keepdim=keepdim)
    if p == 0:
        return (x != 0).to(x.dtype).sum(dim=dim, keepdim=keepdim)
    return _PNorm.apply(x, float(p), dim, keepdim)


class _ClampMinValueOnly(Function):
    """``max(x, lo)`` in value, the identity for the gradient: PyTorch's cosine similarity
    clamps the norms in place under ``no_grad``, so its gradient flows as if unclamped."""

    @staticmethod
    def forward(ctx, x, lo):
        return x.clamp(min=lo)

    @staticmethod
    def backward(ctx, g):
        return g, None


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``input / max(||input||_p, eps)``, the norm taken over ``dim``."""
    d = input._dim(dim, "normalize")
    result = input / _vector_norm(input, p, d, True).clamp(min=eps)
    return result if out is None else out.copy_(result)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """The cosine of the angle between ``x1`` and ``x2`` along ``dim`` (after broadcasting
    them), each vector's norm taken as at least ``eps``."""
    shape = B.broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
    x1, x2 = x1.expand(*shape), x2.expand(*shape)
    d = x1._dim(dim, "cosine_similarity")
    # each input divided by its own norm first, as PyTorch does: the result stays in [-1, 1]
    n1 = _ClampMinValueOnly.apply(_vector_norm(x1, 2, d, True), eps)
    n2 = _ClampMinValueOnly.apply(_vector_norm(x2, 2, d, True), eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim=d)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """``||x1 - x2 + eps||_p`` over the last dimension (after broadcasting)."""
    diff = x1 - x2 + eps
    return _vector_norm(diff, p, max(diff.ndim - 1, 0), keepdim)


# the resampling, transposed-convolution, unpooling, attention and remaining layers' forms live in
# their own modules (imported last: they build on the helpers above)
from .functional_attention import multi_head_attention_forward, scaled_dot_product_attention  # noqa: E402
from .functional_extra import (alpha_dropout, bilinear, dropout1d, dropout2d, embedding_bag,  # noqa: E402
                               instance_norm, local_response_norm)
from .functional_spatial import (adaptive_avg_pool1d, adaptive_max_pool1d, adaptive_max_pool2d,  # noqa: E402
                                 conv_transpose1d, conv_transpose2d, interpolate, max_unpool1d, max_unpool2d,
                                 pixel_shuffle, pixel_unshuffle, upsample, upsample_bilinear, upsample_nearest)

# every public name, defined here or imported (a literal: linters then count the imports as re-exports)
__all__ = ["adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d",
           "alpha_dropout", "avg_pool1d", "avg_pool2d", "batch_norm", "bilinear", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "celu", "conv1d", "conv2d", "conv_transpose1d",
           "conv_transpose2d", "cosine_similarity", "cross_entropy", "dropout", "dropout1d", "dropout2d",
           "elu", "embedding", "embedding_bag", "fold", "gelu", "glu", "group_norm", "hardshrink",
           "hardsigmoid", "hardswish", "hardtanh", "huber_loss", "instance_norm", "interpolate", "kl_div",
           "l1_loss", "layer_norm", "leaky_relu", "linear", "local_response_norm", "log_softmax",
           "logsigmoid", "max_pool1d", "max_pool2d", "max_unpool1d", "max_unpool2d", "mish", "mse_loss",
           "multi_head_attention_forward", "nll_loss", "normalize", "one_hot", "pad", "pairwise_distance",
           "pixel_shuffle", "pixel_unshuffle", "prelu", "relu", "relu6", "rms_norm",
           "scaled_dot_product_attention", "selu", "sigmoid", "silu", "smooth_l1_loss", "softmax", "softmin",
           "softplus", "softshrink", "softsign", "tanh", "tanhshrink", "threshold", "unfold", "upsample",
           "upsample_bilinear", "upsample_nearest"]
