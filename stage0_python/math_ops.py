"""Elementwise math beyond the arithmetic operators: trigonometric and hyperbolic
functions, exp2/expm1/log2/log10, trunc, erfc, the inf predicates, the float binary ops
(atan2, copysign, fmod, hypot, logaddexp), and the bitwise operators, each a Tensor
method (with the in-place form where PyTorch has one) and a top-level function.

The methods are attached to ``Tensor`` here, so that ``tensor.py`` stays the core API;
every stage runs this file on its own ``Tensor`` and backend.
"""
from . import backend as B
from . import dtypes as D
from . import ops
from .dtypes import bool_
from .tensor import Tensor, inplace_form

_NUMBER = (bool, int, float)

# ------------------------------------------------------------------ unary

# op: the torch docs name; ints and bools promote to the default float dtype, as for sin
_FLOAT_UNARY = ("tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "exp2",
                "expm1", "log2", "log10", "erfc")
_ALIASES = {"arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh",
            "arccosh": "acosh", "arctanh": "atanh", "fix": "trunc", "arctan2": "atan2"}


def _float_unary(op):
    def method(self):
        return self._unary(op)
    method.__name__ = op
    method.__doc__ = f"See torch.{op}: integer and bool tensors give the default float dtype."
    return method


def trunc(self):
    """See torch.trunc: rounds toward zero, keeping -0.0; integer tensors are returned as
    they are (as floor and ceil do here)."""
    return self if not self.dtype.is_floating_point else self._unary("trunc")


def _predicate(op):
    def method(self):
        return Tensor._make(B.unary(op, self._data))
    method.__name__ = op
    method.__doc__ = f"See torch.{op}: a bool tensor; integer and bool inputs are all finite."
    return method


# ------------------------------------------------------------------ float binary

def _operand(other, op):
    if not isinstance(other, (Tensor,) + _NUMBER):
        raise TypeError(f"{op}: other must be a Tensor or a Python number, got {type(other).__name__}")


def _float_binary(op, fn, ints):
    """Method for float op ``op`` through Function ``fn``. ``ints``: integer operands promote
    to the default float dtype (atan2, copysign), else they are refused (hypot, logaddexp),
    as in PyTorch."""
    def method(self, other):
        _operand(other, op)
        dtype = D.result_type(self, other)
        a, b = self, other
        if not dtype.is_floating_point:
            if not ints:
                names = " and ".join(t.dtype.name if isinstance(t, Tensor) else type(t).__name__
                                     for t in (self, other))
                raise TypeError(f"{op}: not implemented for {names} operands (floating point only)")
            a = self.to(D.get_default_dtype())
            if isinstance(other, Tensor):
                b = other.to(D.get_default_dtype())
        return a._binary(b, op, fn)
    method.__name__ = op
    method.__doc__ = f"See torch.{op}; broadcasts, and ``other`` may be a Python number."
    return method


def fmod(self, other):
    """See torch.fmod: the remainder of truncated division, with the dividend's sign
    (``remainder`` takes the divisor's); integer tensors stay integers and refuse a zero
    divisor (ZeroDivisionError)."""
    _operand(other, "fmod")
    if D.result_type(self, other) is bool_:
        raise TypeError("fmod: not implemented for two bool operands")
    return self._binary(other, "fmod", ops.Fmod)


# ------------------------------------------------------------------ bitwise

_LOGICAL = {"bitwise_and": "logical_and", "bitwise_or": "logical_or", "bitwise_xor": "logical_xor"}


def _bitwise(self, other, op, reverse=False):
    """``op`` of integer (or bool) operands; on bool, & | ^ are the logical ops."""
    if not isinstance(other, (Tensor,) + _NUMBER):
        return NotImplemented
    dtype = D.result_type(self, other)
    if dtype is bool_ and op in _LOGICAL:
        return self._binary(other, _LOGICAL[op], None, reverse)
    if dtype is bool_ or dtype.is_floating_point:
        names = " and ".join(t.dtype.name if isinstance(t, Tensor) else type(t).__name__
                             for t in (self, other))
        raise TypeError(f"{op}: not implemented for {names} operands (result {dtype.name}); it "
                        f"takes integer{' or bool' if op in _LOGICAL else ''} tensors")
    return self._binary(other, op, None, reverse)


def _bitwise_method(op):
    def method(self, other):
        out = _bitwise(self, other, op)
        if out is NotImplemented:
            raise TypeError(f"{op}: other must be a Tensor or a Python int, got {type(other).__name__}")
        return out
    method.__name__ = op
    method.__doc__ = f"See torch.{op}: integer and bool tensors only (TypeError for floats)."
    return method


def _operator(op, reverse):
    def method(self, other):
        return _bitwise(self, other, op, reverse)
    method.__name__ = f"__{'r' if reverse else ''}{op}__"
    method.__doc__ = f"{'Reflected ' if reverse else ''}{op}: see torch.Tensor.{op if op.startswith('bitwise') else 'bitwise_' + op}."
    return method


def bitwise_not(self):
    """See torch.bitwise_not (``~``): logical not on bool tensors; TypeError on floats."""
    if self.dtype is bool_:
        return Tensor._make(B.unary("logical_not", self._data))
    if self.dtype.is_floating_point:
        raise TypeError(f"bitwise_not: ~ is only implemented on integer and bool tensors, got "
                        f"{self.dtype.name}")
    return Tensor._make(B.unary("bitwise_not", self._data))


# ------------------------------------------------------------------ attach

def _attach():
    for op in _FLOAT_UNARY:
        setattr(Tensor, op, _float_unary(op))
    Tensor.trunc = trunc
    for op in ("isinf", "isfinite", "isposinf", "isneginf"):
        setattr(Tensor, op, _predicate(op))
    Tensor.atan2 = _float_binary("atan2", ops.Atan2, ints=True)
    Tensor.copysign = _float_binary("copysign", ops.Copysign, ints=True)
    Tensor.hypot = _float_binary("hypot", ops.Hypot, ints=False)
    Tensor.logaddexp = _float_binary("logaddexp", ops.LogAddExp, ints=False)
    Tensor.logaddexp2 = _float_binary("logaddexp2", ops.LogAddExp2, ints=False)
    Tensor.fmod = fmod
    for alias, op in _ALIASES.items():
        setattr(Tensor, alias, getattr(Tensor, op))
    for op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        setattr(Tensor, op, _bitwise_method(op))
    Tensor.bitwise_left_shift = _bitwise_method("left_shift")
    Tensor.bitwise_right_shift = _bitwise_method("right_shift")
    Tensor.bitwise_not = Tensor.__invert__ = bitwise_not
    for dunder, op in (("and", "bitwise_and"), ("or", "bitwise_or"), ("xor", "bitwise_xor"),
                       ("lshift", "left_shift"), ("rshift", "right_shift")):
        setattr(Tensor, f"__{dunder}__", _operator(op, False))
        setattr(Tensor, f"__r{dunder}__", _operator(op, True))
    inplace = (_FLOAT_UNARY + tuple(_ALIASES) + ("trunc", "atan2", "copysign", "hypot", "fmod",
               "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
               "bitwise_right_shift", "remainder"))
    for name in inplace:
        setattr(Tensor, name + "_", inplace_form(name))
    for dunder, name in (("and", "bitwise_and"), ("or", "bitwise_or"), ("xor", "bitwise_xor"),
                         ("lshift", "bitwise_left_shift"), ("rshift", "bitwise_right_shift"),
                         ("mod", "remainder")):
        setattr(Tensor, f"__i{dunder}__", getattr(Tensor, name + "_"))


_attach()


# ------------------------------------------------------------------ top-level functions
# A Python number may come first where torch accepts one; a tensor first goes straight
# to the method (one isinstance check).

def remainder(input, other):
    """See torch.remainder: Python's modulo (the divisor's sign); ``input`` may be a Python
    number when ``other`` is a tensor."""
    if isinstance(input, Tensor):
        return input % other
    if not isinstance(other, Tensor):
        raise TypeError(f"remainder: expected a Tensor operand, got {type(input).__name__} and "
                        f"{type(other).__name__}")
    return other.__rmod__(input)


def pow(input, exponent):  # noqa: A001
    """See torch.pow: ``input`` may be a Python number (the base) when ``exponent`` is a
    tensor."""
    if isinstance(input, Tensor):
        return input ** exponent
    if not isinstance(exponent, Tensor):
        raise TypeError(f"pow: expected a Tensor operand, got {type(input).__name__} and "
                        f"{type(exponent).__name__}")
    return exponent.__rpow__(input)


def _number_first(name, dunder):
    method = getattr(Tensor, name)

    def function(input, other):
        if isinstance(input, Tensor):
            return method(input, other)
        if not isinstance(other, Tensor):
            raise TypeError(f"{name}: expected a Tensor operand, got {type(input).__name__} and "
                            f"{type(other).__name__}")
        out = getattr(other, f"__r{dunder}__")(input)
        if out is NotImplemented:
            raise TypeError(f"{name}: input must be a Tensor or a Python int, got {type(input).__name__}")
        return out
    function.__name__ = name
    function.__doc__ = f"See torch.{name}: ``input`` may be a Python number."
    return function


bitwise_and = _number_first("bitwise_and", "and")
bitwise_or = _number_first("bitwise_or", "or")
bitwise_xor = _number_first("bitwise_xor", "xor")
bitwise_left_shift = _number_first("bitwise_left_shift", "lshift")
bitwise_right_shift = _number_first("bitwise_right_shift", "rshift")

# the rest take a tensor first: the methods themselves
_T = Tensor
(tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh, arcsin, arccos, arctan, arcsinh, arccosh,
 arctanh) = (_T.tan, _T.asin, _T.acos, _T.atan, _T.sinh, _T.cosh, _T.asinh, _T.acosh, _T.atanh,
             _T.arcsin, _T.arccos, _T.arctan, _T.arcsinh, _T.arccosh, _T.arctanh)
exp2, expm1, log2, log10, erfc, fix = _T.exp2, _T.expm1, _T.log2, _T.log10, _T.erfc, _T.fix
isinf, isfinite, isposinf, isneginf, bitwise_not = (_T.isinf, _T.isfinite, _T.isposinf, _T.isneginf,
                                                    _T.bitwise_not)
atan2, arctan2, copysign, hypot, logaddexp, logaddexp2 = (_T.atan2, _T.arctan2, _T.copysign, _T.hypot,
                                                          _T.logaddexp, _T.logaddexp2)
del _T

__all__ = ["tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "arcsin", "arccos",
           "arctan", "arcsinh", "arccosh", "arctanh", "exp2", "expm1", "log2", "log10", "erfc", "trunc",
           "fix", "isinf", "isfinite", "isposinf", "isneginf", "atan2", "arctan2", "copysign", "fmod",
           "hypot", "logaddexp", "logaddexp2", "remainder", "pow", "bitwise_and", "bitwise_or",
           "bitwise_xor", "bitwise_not", "bitwise_left_shift", "bitwise_right_shift"]
