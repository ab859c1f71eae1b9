"""Elementwise math on Tensor's own methods: the rest of the arithmetic operators (``**``,
``//``, ``%``, unary ``+`` and ``abs()``) and their named forms (``add sub mul div pow``),
the unary functions with their own kernel (``exp log sqrt sin tanh relu ...``, through
``_unary``), the logical ops and ``isnan``, ``isclose``/``allclose``, ``maximum minimum
clamp``, ``where masked_fill lerp addcmul addcdiv``, and ``softmax``/``log_softmax``.

``+ - * /`` and the comparisons are ``TensorCore``'s (tensor_core.py, the path every
operation runs); the trigonometric and bitwise rest is ``MathMethods`` (math_ops.py). The
methods here are ``ElementwiseMethods``, a base of ``Tensor``; the package exports most of
them as functions too.
"""
from stage0_python.vocabulary import UNARY, ArgumentError

from . import backend as B
from . import dtypes as D
from . import functional, ops, shapes
from .dtypes import bool_
from .method_forms import accepts_axis
from .ops import checked_where, where
from .shapes import ShapeError
from .tensor_core import TensorCore

wrap = TensorCore._make


class ElementwiseMethods:
    """Tensor's elementwise methods beyond ``TensorCore``'s operators and ``MathMethods``."""

    __slots__ = ()

    def __pow__(self, o):
        return self._binary(o, "pow", ops.Pow)

    def __rpow__(self, o):
        return self._binary(o, "pow", ops.Pow, True)

    def __floordiv__(self, o):
        return self._binary(o, "floordiv", None)

    def __rfloordiv__(self, o):
        return self._binary(o, "floordiv", None, True)

    def __mod__(self, o):
        """The remainder with the sign of the divisor (the ``%`` operator); see torch.remainder."""
        return self._binary(o, "remainder", None)

    def __rmod__(self, o):
        return self._binary(o, "remainder", None, True)

    remainder = __mod__

    def __pos__(self):
        return self

    def __abs__(self):
        return self.abs()

    # ~ & | ^ << >> and the rest of elementwise math: MathMethods (math_ops.py)

    eq, ne, lt, le, gt, ge = (TensorCore.__eq__, TensorCore.__ne__, TensorCore.__lt__, TensorCore.__le__,
                              TensorCore.__gt__, TensorCore.__ge__)

    def add(self, other, alpha=1):
        """``self + alpha * other``; see torch.add."""
        return self + (other * alpha if alpha != 1 else other)

    def sub(self, other, alpha=1):
        """``self - alpha * other``; see torch.sub."""
        return self - (other * alpha if alpha != 1 else other)

    def mul(self, other):
        """``self * other``; see torch.mul."""
        return self * other

    def div(self, other, rounding_mode=None):
        """``self / other``; with ``rounding_mode`` "floor" or "trunc" the quotient rounded
        down or toward zero, which keeps an integer dtype, as in PyTorch."""
        if rounding_mode is None:
            return self / other
        if rounding_mode == "floor":
            return self // other
        if rounding_mode == "trunc":
            dtype = D.result_type(self, other)
            if dtype.is_floating_point:
                q = self / other
                return q.sign() * q.abs().floor()
            if not isinstance(other, TensorCore):  # the number in the integer dtype first (uint8 wraps -3)
                other = self._scalar(other, dtype)
            q = self // other  # integers stay integers (and division by zero is refused)
            # floor and trunc differ only for an inexact negative quotient: one step up
            return q + ((q * other != self) & ((self < 0) != (other < 0)))
        raise ArgumentError(f"div: rounding_mode must be None, 'floor' or 'trunc', got {rounding_mode!r}")

    def pow(self, other):
        """``self ** other``; see torch.pow."""
        return self ** other

    def logical_not(self):
        """See torch.logical_not."""
        return wrap(B.unary("logical_not", self._data))

    def logical_and(self, other):
        """See torch.logical_and."""
        return self.bool()._binary(other.bool() if isinstance(other, TensorCore) else other, "logical_and", None)

    def logical_or(self, other):
        """See torch.logical_or."""
        return self.bool()._binary(other.bool() if isinstance(other, TensorCore) else other, "logical_or", None)

    def logical_xor(self, other):
        """See torch.logical_xor."""
        return self.bool()._binary(other.bool() if isinstance(other, TensorCore) else other, "logical_xor", None)

    def isnan(self):
        """See torch.isnan."""
        return wrap(B.unary("isnan", self._data))

    def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        """Elementwise ``|self - other| <= atol + rtol * |other|``, as ``torch.isclose``:
        equal values (equal infinities included) are close, NaN only with ``equal_nan``, an
        infinite difference never. Both tensors have one dtype (DTypeMismatchError else);
        integers and bools are compared in the default float dtype, as in PyTorch."""
        if not isinstance(other, TensorCore):
            raise TypeError(f"isclose: expected a Tensor as other, got {type(other).__name__}")
        if self.dtype is not other.dtype:
            raise D.DTypeMismatchError(f"isclose: cannot compare tensors of different dtypes "
                                       f"{self.dtype.name} and {other.dtype.name}")
        for name, tol in (("rtol", rtol), ("atol", atol)):
            if not tol >= 0:
                raise ArgumentError(f"isclose: {name} must be greater than or equal to zero, got {tol}")
        close = self == other
        if equal_nan and self.dtype.is_floating_point:
            close = close | (self.isnan() & other.isnan())
        if rtol == 0 and atol == 0:  # only equality is close: inf - inf would not be
            return close
        a, b = self, other
        if not a.dtype.is_floating_point:  # a uint8 difference would wrap
            a, b = a.to(D.get_default_dtype()), b.to(D.get_default_dtype())
        err = (a - b).abs()
        # an infinite error is never within tolerance, though inf <= atol + rtol * inf holds
        return close | (err.isfinite() & (err <= atol + (b * rtol).abs()))

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        """True when every element of ``self`` is ``isclose`` to ``other``'s."""
        return bool(self.isclose(other, rtol, atol, equal_nan).all().item())

    def _unary(self, op):
        x = self  # integers made the default float dtype where the vocabulary says the op promotes them
        if not x.dtype.is_floating_point:
            if UNARY[op].integers == "promote":
                x = x.to(D.get_default_dtype())
            elif x.dtype is bool_:
                raise TypeError(f"{op}: not supported on bool tensors")
        return ops.Unary.apply(x, op)

    def exp(self):
        """See torch.exp."""
        return self._unary("exp")

    def log(self):
        """See torch.log."""
        return self._unary("log")

    def log1p(self):
        """See torch.log1p."""
        return self._unary("log1p")

    def sqrt(self):
        """See torch.sqrt."""
        return self._unary("sqrt")

    def rsqrt(self):
        """``1 / sqrt(x)``; see torch.rsqrt."""
        return self._unary("rsqrt")

    def sin(self):
        """See torch.sin."""
        return self._unary("sin")

    def cos(self):
        """See torch.cos."""
        return self._unary("cos")

    def tanh(self):
        """See torch.tanh."""
        return self._unary("tanh")

    def sigmoid(self):
        """See torch.sigmoid."""
        return self._unary("sigmoid")

    def gelu(self):
        """The GELU of each element (erf form); see torch.nn.functional.gelu (PyTorch has no such method)."""
        return self._unary("gelu")

    def silu(self):
        """``x * sigmoid(x)`` of each element; see torch.nn.functional.silu (PyTorch has no such method)."""
        return self._unary("silu")

    def erf(self):
        """See torch.erf."""
        return self._unary("erf")

    def reciprocal(self):
        """``1 / x``; see torch.reciprocal."""
        return self._unary("reciprocal")

    def relu(self):
        """``max(x, 0)``; see torch.relu."""
        return self._unary("relu")

    def abs(self):
        """See torch.abs."""
        return self._unary("abs")

    def sign(self):
        """See torch.sign."""
        return self._unary("sign")

    def neg(self):
        """``-self``; see torch.neg."""
        return -self

    def floor(self):
        """See torch.floor (integer tensors are returned unchanged)."""
        return self if not self.dtype.is_floating_point else self._unary("floor")

    def ceil(self):
        """See torch.ceil (integer tensors are returned unchanged)."""
        return self if not self.dtype.is_floating_point else self._unary("ceil")

    def round(self):
        """Round half to even; see torch.round (integer tensors are returned unchanged)."""
        return self if not self.dtype.is_floating_point else self._unary("round")

    def square(self):
        """``x * x``; see torch.square."""
        return self * self

    def maximum(self, other):
        """Elementwise maximum (NaN propagates); see torch.maximum."""
        return self._binary(other, "maximum", ops.Maximum)

    def minimum(self, other):
        """Elementwise minimum (NaN propagates); see torch.minimum."""
        return self._binary(other, "minimum", ops.Minimum)

    def clamp(self, min=None, max=None):
        """Limit every element to ``[min, max]`` (either may be None, not both); see torch.clamp. ``clip``
        is the same function."""
        if min is None and max is None:
            raise ArgumentError("clamp: at least one of min and max must be given")
        dtype = D.result_type(*(v for v in (self, min, max) if v is not None))
        x = self.to(dtype)
        lo = None if min is None else (min.to(dtype) if isinstance(min, TensorCore) else self._scalar(min, dtype))
        hi = None if max is None else (max.to(dtype) if isinstance(max, TensorCore) else self._scalar(max, dtype))
        for bound in (lo, hi):
            if bound is not None and B.broadcast_shapes(x.shape, bound.shape) != tuple(x.shape):
                raise ShapeError(f"clamp: bound of shape {list(bound.shape)} does not broadcast to "
                                 f"{list(x.shape)}")
        return ops.Clamp.apply(x, lo, hi)

    clip = clamp

    def where(self, condition, other):
        """``self`` where ``condition``, ``other`` elsewhere; see torch.Tensor.where."""
        return where(condition, self, other)

    @accepts_axis
    def softmax(self, dim):
        """See torch.softmax."""
        return functional.softmax(self, dim)

    @accepts_axis
    def log_softmax(self, dim):
        """See torch.log_softmax."""
        return functional.log_softmax(self, dim)

    def masked_fill(self, mask, value):
        """``value`` where the bool ``mask`` is True, ``self`` elsewhere; see torch.Tensor.masked_fill."""
        if not isinstance(mask, TensorCore) or mask.dtype is not bool_:
            raise TypeError(f"masked_fill: mask must be a bool tensor, got "
                            f"{getattr(mask, 'dtype', type(mask).__name__)}")
        if isinstance(value, TensorCore) and value.ndim:
            raise ShapeError(f"masked_fill: value must be a number or a 0-dim tensor, got shape "
                             f"{list(value.shape)}")
        if shapes.broadcast("masked_fill", self.shape, mask.shape) != tuple(self.shape):
            raise ShapeError(f"masked_fill: mask of shape {list(mask.shape)} cannot be broadcast to "
                             f"the input's shape {list(self.shape)}")
        value = value.to(self.dtype) if isinstance(value, TensorCore) else self._scalar(value, self.dtype)
        return checked_where(mask, value, self, "masked_fill")

    def lerp(self, end, weight):
        # from the nearer end, as PyTorch does: exact at weight 0 and at weight 1
        """``self + weight * (end - self)``, exact at weight 0 and 1; see torch.lerp."""
        if isinstance(weight, TensorCore):
            return where(weight < 0.5, self + (end - self) * weight, end - (end - self) * (1 - weight))
        if weight < 0.5:
            return self + (end - self) * weight
        return end - (end - self) * (1 - weight)

    def clamp_min(self, min):
        """See torch.Tensor.clamp_min."""
        return self.clamp(min=min)

    def clamp_max(self, max):
        """See torch.Tensor.clamp_max."""
        return self.clamp(max=max)

    def addcmul(self, tensor1, tensor2, value=1):
        """``self + value * tensor1 * tensor2``; see torch.addcmul."""
        return self + tensor1 * tensor2 * value

    def addcdiv(self, tensor1, tensor2, value=1):
        """``self + value * tensor1 / tensor2``; see torch.addcdiv."""
        return self + tensor1 / tensor2 * value
