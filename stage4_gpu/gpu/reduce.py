"""Reductions on a device: ``reduce`` (sum prod max min any all over any axes) and
``arg_reduce`` (argmax argmin), one group of threads per output element, each reading
its elements through x's strides (no copy first)."""
from ..dtypes import bool_, int64


def axes_layout(x, axes):
    """The reduction kernels' parameters: [count (filled in at launch), elements per output,
    kept dims, reduced dims, x's offset, then the kept dims' sizes and strides and the
    reduced dims' sizes and strides]."""
    kept = [d for d in range(len(x.shape)) if d not in axes]
    red = [d for d in range(len(x.shape)) if d in axes]
    inner = 1
    for d in red:
        inner *= x.shape[d]
    params = [0, inner, len(kept), len(red), x.offset]
    params += [x.shape[d] for d in kept] + [x.strides[d] for d in kept]
    params += [x.shape[d] for d in red] + [x.strides[d] for d in red]
    return params


def _out_shape(shape, axes, keepdim):
    return tuple(1 if d in axes else n for d, n in enumerate(shape) if keepdim or d not in axes)


def _launch(hook, op, out, x, axes):
    params = axes_layout(x, axes)
    params[0] = out.numel
    if out.numel:
        hook(op, out, x, params)
    return out


def reduce(op, x, axes, keepdim, dtype=None):
    """``op`` over ``axes`` of x (a bool result for any and all; ``dtype`` the result's
    otherwise, x's by default)."""
    axes = set(axes)
    out_dtype = bool_ if op in ("any", "all") else dtype or x.dtype
    out = type(x).empty(_out_shape(x.shape, axes, keepdim), out_dtype)
    return _launch(x.driver.reduce, op, out, x, axes)


def arg_reduce(op, x, axis, keepdim):
    """The int64 position of the first extreme along ``axis`` (NaN counts as the extreme)."""
    out = type(x).empty(_out_shape(x.shape, {axis}, keepdim), int64)
    return _launch(x.driver.arg_reduce, op, out, x, {axis})
