"""Reductions: ``sum mean prod``, ``max min amax amin argmax argmin``, ``var std``,
``logsumexp norm``, ``any all``, ``trace`` and ``count_nonzero``.

Each checks its dims, picks the dtype it accumulates in (integers and bools sum as int64)
and calls one ``ops`` Function or backend reduction; ``mean``, ``var``, ``std``,
``logsumexp`` and ``norm`` are composed from those. The methods are ``ReductionMethods``, a
base of ``Tensor``; the package exports most of them as functions too.
"""
import math

from . import backend as B
from . import dtypes as D
from . import ops
from .arguments import to_dtype
from .device import place
from .dtypes import int64
from .method_forms import ValuesIndices, accepts_axis
from .ops import where
from .shapes import ShapeError
from .tensor_core import TensorCore

wrap = TensorCore._make


class ReductionMethods:
    """Tensor's reductions over one dim, several, or all of them."""

    __slots__ = ()

    def _reduce_dtype(self):
        return int64 if not self.dtype.is_floating_point else self.dtype

    @accepts_axis
    def sum(self, dim=None, keepdim=False, dtype=None):
        """The sum over ``dim`` (integers and bools sum as int64); see torch.sum."""
        axes = self._dims(dim, "sum")
        out = to_dtype(dtype) or self._reduce_dtype()
        x = self if self.dtype is out else self.to(out)
        return ops.Sum.apply(x, axes, keepdim)

    @accepts_axis
    def mean(self, dim=None, keepdim=False, dtype=None):
        """The mean over ``dim`` (a floating-point tensor, or ``dtype=`` one); see torch.mean."""
        x = self.to(dtype) if dtype is not None else self
        if not x.dtype.is_floating_point:
            raise TypeError(f"mean: input dtype must be floating point, got {x.dtype.name}")
        axes = x._dims(dim, "mean")
        n = B.prod(x.shape[d] for d in axes)
        return x.sum(dim=axes, keepdim=keepdim) / (n if n else math.nan)

    @accepts_axis
    def prod(self, dim=None, keepdim=False):
        """The product over ``dim``; see torch.prod."""
        axes = self._dims(dim, "prod")
        x = self if self.dtype is self._reduce_dtype() else self.to(self._reduce_dtype())
        return ops.Prod.apply(x, axes, keepdim)

    def _extreme(self, op, dim, keepdim):
        if dim is None:
            if self.numel() == 0:
                raise ValueError(f"{op}: cannot reduce an empty tensor of shape {list(self.shape)}")
            return ops.Extreme.apply(self, op, tuple(range(self.ndim)), False)
        d = self._dim(dim, op)
        if self.ndim and self.shape[d] == 0:
            raise ValueError(f"{op}: cannot reduce dim {d} of size 0 (shape {list(self.shape)})")
        if not self.ndim:
            return ValuesIndices(self, wrap(place(B.full((), 0, int64), self.device)))
        return ValuesIndices(*ops.ExtremeDim.apply(self, op, d, keepdim))

    @accepts_axis
    def max(self, dim=None, keepdim=False):
        """The maximum; with ``dim``, ``(values, indices)``; with a tensor, ``maximum``. See torch.max."""
        if isinstance(dim, TensorCore):
            return self.maximum(dim)
        return self._extreme("max", dim, keepdim)

    @accepts_axis
    def min(self, dim=None, keepdim=False):
        """The minimum; with ``dim``, ``(values, indices)``; with a tensor, ``minimum``. See torch.min."""
        if isinstance(dim, TensorCore):
            return self.minimum(dim)
        return self._extreme("min", dim, keepdim)

    def _extreme_over(self, op, name, dim, keepdim):
        axes = self._dims(dim, name)
        if any(self.shape[d] == 0 for d in axes):
            raise ValueError(f"{name}: cannot reduce an empty dim of shape {list(self.shape)}")
        return ops.Extreme.apply(self, op, axes, keepdim)

    @accepts_axis
    def amax(self, dim=None, keepdim=False):
        """The maximum over ``dim`` (one or several dims), without indices; see torch.amax."""
        return self._extreme_over("max", "amax", dim, keepdim)

    @accepts_axis
    def amin(self, dim=None, keepdim=False):
        """The minimum over ``dim`` (one or several dims), without indices; see torch.amin."""
        return self._extreme_over("min", "amin", dim, keepdim)

    def _arg(self, op, dim, keepdim):
        if dim is None:
            if self.numel() == 0:
                raise ValueError(f"{op}: cannot reduce an empty tensor of shape {list(self.shape)}")
            out = wrap(B.arg_reduce(op, B.reshape(self._data, (self.numel(),)), 0, False))
            return out.reshape((1,) * self.ndim) if keepdim else out
        if not self.ndim:
            return wrap(place(B.full((), 0, int64), self.device))
        d = self._dim(dim, op)
        if self.shape[d] == 0:  # only the reduced dim must hold something: (0, 4) over dim 1 is (0,)
            raise ValueError(f"{op}: cannot reduce dim {d} of size 0 (shape {list(self.shape)})")
        return wrap(B.arg_reduce(op, self._data, d, keepdim))

    @accepts_axis
    def argmax(self, dim=None, keepdim=False):
        """The index of the maximum (of the flattened tensor when ``dim`` is None); see torch.argmax."""
        return self._arg("argmax", dim, keepdim)

    @accepts_axis
    def argmin(self, dim=None, keepdim=False):
        """The index of the minimum (of the flattened tensor when ``dim`` is None); see torch.argmin."""
        return self._arg("argmin", dim, keepdim)

    @accepts_axis
    def var(self, dim=None, unbiased=None, keepdim=False, correction=None):
        """The variance over ``dim`` (``correction`` or ``unbiased`` as PyTorch's); see torch.var."""
        if not self.dtype.is_floating_point:
            raise TypeError(f"var: input dtype must be floating point, got {self.dtype.name}")
        if correction is None:
            correction = 1 if unbiased is None or unbiased else 0
        axes = self._dims(dim, "var")
        n = B.prod(self.shape[d] for d in axes)
        centered = self - self.mean(dim=axes, keepdim=True)
        return (centered * centered).sum(dim=axes, keepdim=keepdim) / max(n - correction, 0)

    @accepts_axis
    def std(self, dim=None, unbiased=None, keepdim=False, correction=None):
        """The standard deviation over ``dim`` (``correction`` or ``unbiased`` as PyTorch's); see
        torch.std."""
        return ops.SafeSqrt.apply(self.var(dim, unbiased, keepdim, correction))

    @accepts_axis
    def logsumexp(self, dim, keepdim=False):
        """``log(sum(exp(x)))`` over ``dim``, computed stably; see torch.logsumexp."""
        x = self if self.dtype.is_floating_point else self.to(D.get_default_dtype())
        axes = x._dims(dim, "logsumexp")
        # over an empty dim the sum is 0 and its log -inf: no shift (a 0 of the kept shape)
        m = x.detach()
        m = m.amax(dim=axes, keepdim=True) if all(x.shape[d] for d in axes) else m.sum(dim=axes, keepdim=True)
        m = where(m.abs() == math.inf, 0.0, m)  # all -inf (or inf) rows: no shift
        out = (x - m).exp().sum(dim=axes, keepdim=True).log() + m
        return out if keepdim else out.squeeze(axes)

    def norm(self, p=2, dim=None, keepdim=False):
        """The ``p``-norm over ``dim`` (all elements by default); see torch.Tensor.norm."""
        if p == 2:
            return ops.SafeSqrt.apply((self * self).sum(dim=dim, keepdim=keepdim))
        if p == 1:
            return self.abs().sum(dim=dim, keepdim=keepdim)
        if p in (math.inf, "inf"):
            return self.abs().amax(dim=dim, keepdim=keepdim)
        return (self.abs() ** p).sum(dim=dim, keepdim=keepdim) ** (1.0 / p)

    @accepts_axis
    def any(self, dim=None, keepdim=False):
        """Whether any element (over ``dim``) is nonzero; see torch.any."""
        return wrap(B.reduce("any", self._data, self._dims(dim, "any"), keepdim))

    @accepts_axis
    def all(self, dim=None, keepdim=False):
        """Whether every element (over ``dim``) is nonzero; see torch.all."""
        return wrap(B.reduce("all", self._data, self._dims(dim, "all"), keepdim))

    def trace(self):
        """The sum of the main diagonal of a 2-d tensor (see torch.trace)."""
        if self.ndim != 2:
            raise ShapeError(f"trace: expected a 2-d tensor, got shape {list(self.shape)}")
        return self.diagonal().sum()

    @accepts_axis
    def count_nonzero(self, dim=None):
        """The number of nonzero elements (over ``dim``); see torch.count_nonzero."""
        return (self != 0).sum(dim=dim)
