"""The float functions, each declared once: what every stage and device builds its kernel,
its gradient, its Tensor method's facts and its tests from.

A ``Function`` is an elementwise function of one float tensor (integer and bool inputs
take the default float dtype first, as PyTorch's ``torch.tan`` does). Its row holds:

- ``derivative``: the input's gradient from the input ``x``, the output ``y`` and the
  upstream gradient ``g``, written with Tensor operations (``ops.DERIVATIVES`` reads it);
- ``python``: stage 0's scalar, a float to a float, with IEEE results where Python's
  ``math`` would raise (NaN outside the domain, +-inf at a pole); stage 1 shares it;
- ``c``: stage 2's, a C expression of ``x`` evaluated in double and rounded once to the
  operand's type (``libc.math``'s functions); stage 3 computes in stage 2's kernel what it
  has no SIMD kernel for;
- ``cuda``: the CUDA device's, an expression of ``x`` of type ``T`` (float or double) from
  ``kernels/math.cuh``'s ``m_`` functions;
- ``wgsl``: the WebGPU device's, an expression of the f32 ``v1`` from ``math.wgsl``'s
  ``_f`` functions (WGSL's own are undefined at NaN and infinity);
- ``domain``: an interval away from poles and domain edges, where the tests check values
  and gradients against PyTorch's function of the same name.

From this table ``vocabulary.UNARY`` takes each function's facts, stage 0's ``backend.UNARY``
its scalar, ``ops.DERIVATIVES`` its derivative, stage 2's ``_elementwise.pyx.tp`` its loop
(at build time), both GPU drivers their kernels, ``common_tests/test_math_ops.py`` its
cases and the API reference its rows. ``docs/contributing.md`` walks through adding one.
This module imports nothing of the project: ``setup.py`` reads it before anything is built.
"""
import math
from typing import Callable, NamedTuple

INF, NAN = float("inf"), float("nan")
_LN2, _LN10 = math.log(2.0), math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


class Function(NamedTuple):
    """One float function of one tensor: its ``name`` (the op name every backend's ``unary``
    takes, and the Tensor method's), and its meaning for each stage and device (see the
    module's docstring)."""
    name: str
    derivative: Callable
    python: Callable
    c: str
    cuda: str
    wgsl: str
    domain: tuple


# ---------------------------------------------------------------- IEEE results in Python

def periodic(f):
    """``f`` (a trigonometric function) giving NaN at +-inf and NaN, where ``math`` raises."""
    def safe(x):
        return f(x) if x - x == 0 else NAN
    return safe


def on_domain(f):
    """``f`` with IEEE results where Python's math raises: outside the domain NaN, at a pole
    or on overflow +-inf with the sign of the limit (math.atanh(1) raises, C gives inf)."""
    def safe(x):
        try:
            return f(x)
        except ValueError:
            if f is math.atanh and abs(x) == 1:
                return math.copysign(INF, x)
            return NAN
        except OverflowError:
            return -INF if f is math.sinh and x < 0 else INF
    return safe


def logarithm(f):
    """A logarithm ``f``: -inf at zero (either sign, as C's), NaN below it."""
    def safe(x):
        if x > 0:
            return f(x)
        return -INF if x == 0 else NAN
    return safe


def _logit(x):
    if 0 < x < 1:
        return math.log(x / (1 - x))
    if x == 0 or x == 1:
        return math.copysign(INF, x - 0.5)
    return NAN  # outside [0, 1], or NaN


# ---------------------------------------------------------------- the table

FUNCTIONS = (
    Function("tan", lambda x, y, g: g * (1 + y * y), periodic(math.tan),
             c="tan(x)", cuda="m_tan(x)", wgsl="tan_f(v1)", domain=(-1.4, 1.4)),
    Function("asin", lambda x, y, g: g * (1 - x * x).rsqrt(), on_domain(math.asin),
             c="asin(x)", cuda="m_asin(x)", wgsl="asin_f(v1)", domain=(-0.95, 0.95)),
    Function("acos", lambda x, y, g: -g * (1 - x * x).rsqrt(), on_domain(math.acos),
             c="acos(x)", cuda="m_acos(x)", wgsl="acos_f(v1)", domain=(-0.95, 0.95)),
    Function("atan", lambda x, y, g: g / (1 + x * x), math.atan,
             c="atan(x)", cuda="m_atan(x)", wgsl="atan_f(v1)", domain=(-5.0, 5.0)),
    Function("sinh", lambda x, y, g: g * x.cosh(), on_domain(math.sinh),
             c="sinh(x)", cuda="m_sinh(x)", wgsl="sinh_f(v1)", domain=(-5.0, 5.0)),
    Function("cosh", lambda x, y, g: g * x.sinh(), on_domain(math.cosh),
             c="cosh(x)", cuda="m_cosh(x)", wgsl="cosh_f(v1)", domain=(-5.0, 5.0)),
    Function("asinh", lambda x, y, g: g * (x * x + 1).rsqrt(), math.asinh,
             c="asinh(x)", cuda="m_asinh(x)", wgsl="asinh_f(v1)", domain=(-5.0, 5.0)),
    Function("acosh", lambda x, y, g: g * (x * x - 1).rsqrt(), on_domain(math.acosh),
             c="acosh(x)", cuda="m_acosh(x)", wgsl="acosh_f(v1)", domain=(1.1, 6.0)),
    Function("atanh", lambda x, y, g: g / (1 - x * x), on_domain(math.atanh),
             c="atanh(x)", cuda="m_atanh(x)", wgsl="atanh_f(v1)", domain=(-0.95, 0.95)),
    Function("exp2", lambda x, y, g: g * y * _LN2, on_domain(math.exp2),
             c="exp2(x)", cuda="m_exp2(x)", wgsl="exp2_f(v1)", domain=(-5.0, 5.0)),
    Function("expm1", lambda x, y, g: g * (y + 1), on_domain(math.expm1),
             c="expm1(x)", cuda="m_expm1(x)", wgsl="expm1_f(v1)", domain=(-5.0, 5.0)),
    Function("log2", lambda x, y, g: g / (x * _LN2), logarithm(math.log2),
             c="log2(x)", cuda="m_log2(x)", wgsl="log2_f(v1)", domain=(0.1, 6.0)),
    Function("log10", lambda x, y, g: g / (x * _LN10), logarithm(math.log10),
             c="log10(x)", cuda="m_log10(x)", wgsl="log10_f(v1)", domain=(0.1, 6.0)),
    Function("erfc", lambda x, y, g: g * (x * x * -1).exp() * -_TWO_OVER_SQRT_PI, math.erfc,
             c="erfc(x)", cuda="m_erfc(x)", wgsl="erfc_f(v1)", domain=(-3.0, 3.0)),
    # log(x / (1 - x)): 1 - x is exact for x >= 1/2, so the one division rounds once
    Function("logit", lambda x, y, g: g / (x * (1 - x)), _logit,
             c="log(x / (1.0 - x))", cuda="m_log(x / (T(1) - x))", wgsl="log_f(div_f(v1, 1.0 - v1))",
             domain=(0.05, 0.95)),
)
BY_NAME = {f.name: f for f in FUNCTIONS}
