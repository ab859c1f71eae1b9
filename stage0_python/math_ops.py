"""Elementwise math beyond the arithmetic operators: trigonometric and hyperbolic
functions, exp2/expm1/log2/log10, trunc, erfc, the inf predicates, the float binary ops
(atan2, copysign, fmod, hypot, logaddexp), and the bitwise operators, each a Tensor
method (with the in-place form where PyTorch has one) and a top-level function.

The methods are ``MathMethods``, a base of ``Tensor``, so that ``tensor.py`` stays the
core API; every stage runs this file on its own ``Tensor`` and backend.
"""
from . import backend as B
from . import dtypes as D
from . import ops
from .dtypes import bool_
from .method_forms import inplace_form
from .tensor_core import TensorCore

# Tensor lists MathMethods among its bases, so this module loads before Tensor exists: it
# tests and makes tensors through Tensor's base, as tensor_core and ops do

_NUMBER = (bool, int, float)

# ------------------------------------------------------------------ unary


def _float_unary(op):
    """Method ``op``: ints and bools promote to the default float dtype, as for sin."""
    def method(self):
        return self._unary(op)
    method.__name__ = op
    method.__doc__ = f"See torch.{op}: integer and bool tensors give the default float dtype."
    return method


def _predicate(op):
    def method(self):
        return TensorCore._make(B.unary(op, self._data))
    method.__name__ = op
    method.__doc__ = f"See torch.{op}: a bool tensor; integer and bool inputs are all finite."
    return method


# ------------------------------------------------------------------ float binary

def _operand(other, op):
    if not isinstance(other, (TensorCore,) + _NUMBER):
        raise TypeError(f"{op}: other must be a Tensor or a Python number, got {type(other).__name__}")


def _float_binary(self, other, op, fn, ints):
    """Float op ``op`` of ``self`` and ``other`` through Function ``fn``. ``ints``: integer
    operands promote to the default float dtype (atan2, copysign), else they are refused
    (hypot, logaddexp), as in PyTorch."""
    _operand(other, op)
    dtype = D.result_type(self, other)
    a, b = self, other
    if not dtype.is_floating_point:
        if not ints:
            names = " and ".join(t.dtype.name if isinstance(t, TensorCore) else type(t).__name__
                                 for t in (self, other))
            raise D.DTypeNotImplementedError(f"{op}: not implemented for {names} operands (floating point only)")
        a = self.to(D.get_default_dtype())
        if isinstance(other, TensorCore):
            b = other.to(D.get_default_dtype())
    return a._binary(b, op, fn)


# ------------------------------------------------------------------ bitwise

_LOGICAL = {"bitwise_and": "logical_and", "bitwise_or": "logical_or", "bitwise_xor": "logical_xor"}


def _bitwise(self, other, op, reverse=False):
    """``op`` of integer (or bool) operands; on bool, & | ^ are the logical ops."""
    if not isinstance(other, (TensorCore,) + _NUMBER):
        return NotImplemented
    dtype = D.result_type(self, other)
    if dtype is bool_ and op in _LOGICAL:
        return self._binary(other, _LOGICAL[op], None, reverse)
    if dtype is bool_ or dtype.is_floating_point:
        names = " and ".join(t.dtype.name if isinstance(t, TensorCore) else type(t).__name__
                             for t in (self, other))
        raise D.DTypeNotImplementedError(f"{op}: not implemented for {names} operands (result {dtype.name}); "
                                         f"it takes integer{' or bool' if op in _LOGICAL else ''} tensors")
    return self._binary(other, op, None, reverse)


def _int_result(out, op, name, operand):
    """``out``, a bitwise result; TypeError naming ``op`` where it is NotImplemented, which
    ``operand`` (the argument ``name``), being no Tensor or int, made it."""
    if out is NotImplemented:
        raise TypeError(f"{op}: {name} must be a Tensor or a Python int, got {type(operand).__name__}")
    return out


def _bitwise_method(op):
    def method(self, other):
        return _int_result(_bitwise(self, other, op), op, "other", other)
    method.__name__ = op
    method.__doc__ = f"See torch.{op}: integer and bool tensors only (floats: DTypeNotImplementedError)."
    return method


def _operator(op, reverse):
    def method(self, other):
        return _bitwise(self, other, op, reverse)
    method.__name__ = f"__{'r' if reverse else ''}{op}__"
    name = op if op.startswith("bitwise") else "bitwise_" + op
    method.__doc__ = f"{'Reflected ' if reverse else ''}{op}: see torch.Tensor.{name}."
    return method


# ------------------------------------------------------------------ the methods

class MathMethods:
    """Tensor's elementwise math beyond the arithmetic operators, the bitwise operators, and
    the in-place twin of each method that has one in PyTorch."""

    __slots__ = ()

    tan, tan_ = _float_unary("tan"), inplace_form("tan")
    asin, asin_ = _float_unary("asin"), inplace_form("asin")
    acos, acos_ = _float_unary("acos"), inplace_form("acos")
    atan, atan_ = _float_unary("atan"), inplace_form("atan")
    sinh, sinh_ = _float_unary("sinh"), inplace_form("sinh")
    cosh, cosh_ = _float_unary("cosh"), inplace_form("cosh")
    asinh, asinh_ = _float_unary("asinh"), inplace_form("asinh")
    acosh, acosh_ = _float_unary("acosh"), inplace_form("acosh")
    atanh, atanh_ = _float_unary("atanh"), inplace_form("atanh")
    exp2, exp2_ = _float_unary("exp2"), inplace_form("exp2")
    expm1, expm1_ = _float_unary("expm1"), inplace_form("expm1")
    erfc, erfc_ = _float_unary("erfc"), inplace_form("erfc")
    log2, log2_ = _float_unary("log2"), inplace_form("log2")
    log10, log10_ = _float_unary("log10"), inplace_form("log10")
    arcsin, arcsin_ = asin, inplace_form("arcsin")
    arccos, arccos_ = acos, inplace_form("arccos")
    arctan, arctan_ = atan, inplace_form("arctan")
    arcsinh, arcsinh_ = asinh, inplace_form("arcsinh")
    arccosh, arccosh_ = acosh, inplace_form("arccosh")
    arctanh, arctanh_ = atanh, inplace_form("arctanh")

    def logit(self, eps=None):
        """See torch.logit: log(x / (1 - x)), with x first clamped to [eps, 1 - eps] when
        ``eps`` is given (so 0 and 1 give finite values); integer and bool tensors give the
        default float dtype."""
        x = self if eps is None else self.clamp(eps, 1 - eps)
        return x._unary("logit")

    logit_ = inplace_form("logit")

    def trunc(self):
        """See torch.trunc: rounds toward zero, keeping -0.0; integer tensors are returned as
        they are (as floor and ceil do here)."""
        return self if not self.dtype.is_floating_point else self._unary("trunc")

    trunc_ = inplace_form("trunc")
    fix, fix_ = trunc, inplace_form("fix")
    isinf, isfinite = _predicate("isinf"), _predicate("isfinite")
    isposinf, isneginf = _predicate("isposinf"), _predicate("isneginf")

    def atan2(self, other):
        """See torch.atan2; broadcasts, and ``other`` may be a Python number."""
        return _float_binary(self, other, "atan2", ops.Atan2, True)

    atan2_ = inplace_form("atan2")
    arctan2, arctan2_ = atan2, inplace_form("arctan2")

    def copysign(self, other):
        """See torch.copysign; broadcasts, and ``other`` may be a Python number."""
        return _float_binary(self, other, "copysign", ops.Copysign, True)

    copysign_ = inplace_form("copysign")

    def hypot(self, other):
        """See torch.hypot; broadcasts, and ``other`` may be a Python number."""
        return _float_binary(self, other, "hypot", ops.Hypot, False)

    hypot_ = inplace_form("hypot")

    def logaddexp(self, other):
        """See torch.logaddexp; broadcasts, and ``other`` may be a Python number."""
        return _float_binary(self, other, "logaddexp", ops.LogAddExp, False)

    def logaddexp2(self, other):
        """See torch.logaddexp2; broadcasts, and ``other`` may be a Python number."""
        return _float_binary(self, other, "logaddexp2", ops.LogAddExp2, False)

    def fmod(self, other):
        """See torch.fmod: the remainder of truncated division, with the dividend's sign
        (``remainder`` takes the divisor's); integer tensors stay integers and refuse a zero
        divisor (ZeroDivisionError)."""
        _operand(other, "fmod")
        if D.result_type(self, other) is bool_:
            raise D.DTypeNotImplementedError("fmod: not implemented for two bool operands")
        return self._binary(other, "fmod", ops.Fmod)

    fmod_ = inplace_form("fmod")

    def floor_divide(self, other):
        """See torch.floor_divide (``//``): the quotient rounded toward minus infinity;
        integer tensors stay integers and refuse a zero divisor (ZeroDivisionError)."""
        return self // other

    def true_divide(self, other):
        """See torch.true_divide: ``self / other``, in floating point."""
        return self / other

    floor_divide_ = inplace_form("floor_divide")
    true_divide_ = inplace_form("true_divide")
    remainder_ = inplace_form("remainder")  # remainder itself is Tensor's (``%``)

    bitwise_and, bitwise_and_ = _bitwise_method("bitwise_and"), inplace_form("bitwise_and")
    bitwise_or, bitwise_or_ = _bitwise_method("bitwise_or"), inplace_form("bitwise_or")
    bitwise_xor, bitwise_xor_ = _bitwise_method("bitwise_xor"), inplace_form("bitwise_xor")
    bitwise_left_shift = _bitwise_method("left_shift")
    bitwise_left_shift_ = inplace_form("bitwise_left_shift")
    bitwise_right_shift = _bitwise_method("right_shift")
    bitwise_right_shift_ = inplace_form("bitwise_right_shift")

    def bitwise_not(self):
        """See torch.bitwise_not (``~``): logical not on bool tensors; TypeError on floats."""
        if self.dtype is bool_:
            return TensorCore._make(B.unary("logical_not", self._data))
        if self.dtype.is_floating_point:
            raise TypeError(f"bitwise_not: ~ is only implemented on integer and bool tensors, got "
                            f"{self.dtype.name}")
        return TensorCore._make(B.unary("bitwise_not", self._data))

    bitwise_not_ = inplace_form("bitwise_not")

    # the operators: ~ & | ^ << >>, reflected, and in place (the in-place methods)
    __invert__ = bitwise_not
    __and__, __rand__ = _operator("bitwise_and", False), _operator("bitwise_and", True)
    __or__, __ror__ = _operator("bitwise_or", False), _operator("bitwise_or", True)
    __xor__, __rxor__ = _operator("bitwise_xor", False), _operator("bitwise_xor", True)
    __lshift__, __rlshift__ = _operator("left_shift", False), _operator("left_shift", True)
    __rshift__, __rrshift__ = _operator("right_shift", False), _operator("right_shift", True)
    __iand__, __ior__, __ixor__ = bitwise_and_, bitwise_or_, bitwise_xor_
    __ilshift__, __irshift__, __imod__ = bitwise_left_shift_, bitwise_right_shift_, remainder_


# ------------------------------------------------------------------ top-level functions
# A Python number may come first where torch accepts one; a tensor first goes straight
# to the method (one isinstance check).

def remainder(input, other):
    """See torch.remainder: Python's modulo (the divisor's sign); ``input`` may be a Python
    number when ``other`` is a tensor."""
    if isinstance(input, TensorCore):
        return input % other
    if not isinstance(other, TensorCore):
        raise TypeError(f"remainder: expected a Tensor operand, got {type(input).__name__} and "
                        f"{type(other).__name__}")
    return other.__rmod__(input)


def pow(input, exponent):  # noqa: A001
    """See torch.pow: ``input`` may be a Python number (the base) when ``exponent`` is a
    tensor."""
    if isinstance(input, TensorCore):
        return input ** exponent
    if not isinstance(exponent, TensorCore):
        raise TypeError(f"pow: expected a Tensor operand, got {type(input).__name__} and "
                        f"{type(exponent).__name__}")
    return exponent.__rpow__(input)


def _number_first(name, dunder):
    method = getattr(MathMethods, name)

    def function(input, other):
        if isinstance(input, TensorCore):
            return method(input, other)
        if not isinstance(other, TensorCore):
            raise TypeError(f"{name}: expected a Tensor operand, got {type(input).__name__} and "
                            f"{type(other).__name__}")
        return _int_result(getattr(other, f"__r{dunder}__")(input), name, "input", input)
    function.__name__ = name
    function.__doc__ = f"See torch.{name}: ``input`` may be a Python number."
    return function


bitwise_and = _number_first("bitwise_and", "and")
bitwise_or = _number_first("bitwise_or", "or")
bitwise_xor = _number_first("bitwise_xor", "xor")
bitwise_left_shift = _number_first("bitwise_left_shift", "lshift")
bitwise_right_shift = _number_first("bitwise_right_shift", "rshift")

# the rest take a tensor first: the methods themselves
_T = MathMethods
(tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh, arcsin, arccos, arctan, arcsinh, arccosh,
 arctanh) = (_T.tan, _T.asin, _T.acos, _T.atan, _T.sinh, _T.cosh, _T.asinh, _T.acosh, _T.atanh,
             _T.arcsin, _T.arccos, _T.arctan, _T.arcsinh, _T.arccosh, _T.arctanh)
exp2, expm1, log2, log10, erfc, logit = _T.exp2, _T.expm1, _T.log2, _T.log10, _T.erfc, _T.logit
isinf, isfinite, isposinf, isneginf, bitwise_not = (_T.isinf, _T.isfinite, _T.isposinf, _T.isneginf,
                                                    _T.bitwise_not)
trunc, fix, fmod, floor_divide, true_divide = _T.trunc, _T.fix, _T.fmod, _T.floor_divide, _T.true_divide
atan2, arctan2, copysign, hypot, logaddexp, logaddexp2 = (_T.atan2, _T.arctan2, _T.copysign, _T.hypot,
                                                          _T.logaddexp, _T.logaddexp2)
del _T

__all__ = ["tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "arcsin", "arccos",
           "arctan", "arcsinh", "arccosh", "arctanh", "exp2", "expm1", "log2", "log10", "erfc", "logit", "trunc",
           "fix", "floor_divide", "true_divide", "isinf", "isfinite", "isposinf", "isneginf", "atan2",
           "arctan2", "copysign", "fmod",
           "hypot", "logaddexp", "logaddexp2", "remainder", "pow", "bitwise_and", "bitwise_or",
           "bitwise_xor", "bitwise_not", "bitwise_left_shift", "bitwise_right_shift"]
