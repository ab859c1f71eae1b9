"""Scans along one dim: ``cumsum cumprod cummax cummin logcumsumexp`` (and ``cumsum_``).

One backend primitive, ``scan(op, x, axis)``, computes them; each backward is written
from Tensor ops, so it is differentiable again. The methods are ``ScanMethods``, a base of
``Tensor``; the package exports them as functions too.
"""
from . import backend as B
from .arguments import to_dtype
from .dtypes import int64
from .graph import Function
from .method_forms import ValuesIndices
from .ops import Picked, where
from .tensor_core import TensorCore

# Tensor lists ScanMethods among its bases, so this module loads before Tensor exists: it
# tests and makes tensors through Tensor's base, as tensor_core and ops do
wrap = TensorCore._make


def _reverse_cumsum(g, d):
    return g.flip(d).cumsum(d).flip(d)


class Scan(Function):
    """cumsum, cumprod and logcumsumexp."""

    @staticmethod
    def forward(ctx, x, op, dim):
        y = wrap(B.scan(op, x._data, dim)[0])
        ctx.op, ctx.dim = op, dim
        if op != "sum":
            ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        d = ctx.dim
        if ctx.op == "sum":
            return _reverse_cumsum(g, d), None, None
        x, y = ctx.saved_tensors
        if ctx.op == "prod":
            return _cumprod_grad(x, y, g, d), None, None
        # logcumsumexp: dx_j = sum_{i>=j} g_i exp(x_j - y_i), summed in log space for the
        # positive and the negative parts of g apart, so nothing overflows
        pos, neg = where(g > 0, g, 0.0).log(), where(g < 0, -g, 0.0).log()
        up = (x + (pos - y).flip(d).logcumsumexp(d).flip(d)).exp()
        down = (x + (neg - y).flip(d).logcumsumexp(d).flip(d)).exp()
        return up - down, None, None


def _cumprod_grad(x, y, g, d):
    """The gradient of cumprod without dividing by a zero: before a row's first zero it is
    reverse_cumsum(g * y) / x (later outputs are 0 and add nothing); at the first zero, the
    products that skip it; after it, 0 (every output there holds that zero)."""
    zero = x == 0
    zeros_so_far = zero.to(int64).cumsum(d)
    before = zeros_so_far == 0
    first = zero & (zeros_so_far == 1)
    g_before = _reverse_cumsum(g * y, d) / where(before, x, 1.0)
    skipping = where(first, 1.0, x).cumprod(d)  # x_z read as 1: the products that skip it
    at_first = (g * skipping * (zeros_so_far >= 1).to(g.dtype)).sum(dim=d, keepdim=True)
    return where(before, g_before, where(first, at_first, 0.0))


class ScanExtreme(Picked):
    """cummax and cummin: values and the index each running extreme came from."""

    @staticmethod
    def forward(ctx, x, op, dim):
        return Picked.picked(ctx, x, dim, *B.scan(op, x._data, dim))


def _check(x, name):
    if not isinstance(x, TensorCore):
        raise TypeError(f"{name}: input must be a Tensor, got {type(x).__name__}")


def _scan(x, op, dim, name):
    _check(x, name)
    d = x._dim(dim, name)
    if not x.ndim:  # a 0-d tensor scans as one element
        out = _scan(x.reshape(1), op, 0, name)
        return ValuesIndices(*(t.reshape(()) for t in out)) if isinstance(out, tuple) else out.reshape(())
    if op in ("max", "min"):
        return ValuesIndices(*ScanExtreme.apply(x, op, d))
    return Scan.apply(x, op, d)


def _accumulating(x, dtype, name):
    """PyTorch's rule: an explicit dtype is cast to first; integers and bool become int64."""
    _check(x, name)
    dtype = to_dtype(dtype)
    if dtype is None:
        dtype = x.dtype if x.dtype.is_floating_point else int64
    return x if x.dtype is dtype else x.to(dtype)


class ScanMethods:
    """Tensor's scans. Each but ``cumsum_`` is also the package's function (``sg.cumsum(x, 0)``
    is ``x.cumsum(0)``), so its first parameter keeps the function's name, ``input``."""

    __slots__ = ()

    def cumsum(input, dim, dtype=None):
        """See torch.cumsum. Floats accumulate in double, as PyTorch's CPU kernel does."""
        return _scan(_accumulating(input, dtype, "cumsum"), "sum", dim, "cumsum")

    def cumprod(input, dim, dtype=None):
        """See torch.cumprod; the gradient is exact where the input holds zeros."""
        return _scan(_accumulating(input, dtype, "cumprod"), "prod", dim, "cumprod")

    def cummax(input, dim):
        """See torch.cummax: (values, indices); a tie takes the later index, NaN stays."""
        return _scan(input, "max", dim, "cummax")

    def cummin(input, dim):
        """See torch.cummin: (values, indices); a tie takes the later index, NaN stays."""
        return _scan(input, "min", dim, "cummin")

    def logcumsumexp(input, dim):
        """See torch.logcumsumexp: log(cumsum(exp(x))) without overflow or underflow."""
        if isinstance(input, TensorCore) and not input.dtype.is_floating_point:
            raise TypeError(f"logcumsumexp: expected a floating point tensor, got {input.dtype.name} "
                            f"(shape {list(input.shape)})")
        return _scan(input, "logsumexp", dim, "logcumsumexp")

    def cumsum_(self, dim, dtype=None):
        """See ``torch.Tensor.cumsum_``: in place, keeping this tensor's dtype."""
        return self._inplace(lambda x: x.cumsum(dim, dtype=dtype or self.dtype), "cumsum_")


# the package's functions: the methods, called with the tensor first
cumsum, cumprod, cummax, cummin, logcumsumexp = (ScanMethods.cumsum, ScanMethods.cumprod, ScanMethods.cummax,
                                                 ScanMethods.cummin, ScanMethods.logcumsumexp)
