"""Elementwise primitives on the WebGPU device: ``unary``, ``binary``, ``where``, ``cast``,
and the strided copy under every movement primitive, all one WGSL kernel
(``kernels/elementwise.wgsl``) filled in with the operation's expression.

Each op is a WGSL expression over the loaded operands ``v1``, ``v2`` (``v3`` for
``where``), per kind of element type: float (``f32``), integer (``i32``/``i64``, written
``T``) and bool (``u32`` words holding 0 or 1). The float functions WGSL lacks or leaves
undefined at NaN and infinity are in ``kernels/math.wgsl``.
"""
import os

from ..dtypes import bool_
from .buffer import WGSL, empty
from .runtime import WORKGROUP, runtime

_DIR = os.path.join(os.path.dirname(__file__), "kernels")


def _read(name):
    with open(os.path.join(_DIR, name), encoding="utf-8") as f:
        return f.read()


MATH = _read("math.wgsl")
# the first line of a kernel that includes MATH: its OPAQUE zero, from a count the
# compiler cannot know to be non-negative
MATH_SETUP = "OPAQUE = select(0u, 1u, p[0] < 0);"
_FILLED = {}


def kernel_source(name, **fill):
    """``kernels/<name>.wgsl`` with each ``{KEY}`` replaced by ``fill[KEY]`` (and SETUP by
    MATH_SETUP where HELPERS brings MATH). Cached: a launch then finds its compiled
    pipeline by a string whose hash Python already holds."""
    key = (name, tuple(sorted(fill.items())))
    src = _FILLED.get(key)
    if src is None:
        if "HELPERS" in fill:
            fill["SETUP"] = MATH_SETUP if fill["HELPERS"] else ""
        src = _read(name + ".wgsl")
        for k, v in fill.items():
            src = src.replace("{" + k + "}", v)
        _FILLED[key] = src
    return src
_TEMPLATE = _read("elementwise.wgsl")

_BOOL_OF = "select(0u, 1u, {})"
_FLOAT_UNARY = {
    "neg": "-v1", "abs": "abs(v1)", "exp": "exp_f(v1)", "log": "log_f(v1)", "sqrt": "sqrt_f(v1)",
    "rsqrt": "rsqrt_f(v1)", "sin": "sin_f(v1)", "cos": "cos_f(v1)", "tan": "tan_f(v1)",
    "tanh": "tanh_f(v1)", "sigmoid": "sigmoid_f(v1)", "relu": "select(v1, 0.0, v1 < 0.0)",
    "sign": "sign_f(v1)", "reciprocal": "recip_f(v1)", "gelu": "gelu_f(v1)",
    "silu": "silu_f(v1)", "erf": "erf_f(v1)", "erfc": "erfc_f(v1)",
    "log1p": "log1p_f(v1)", "expm1": "expm1_f(v1)", "floor": "floor(v1)", "ceil": "ceil(v1)",
    "round": "round(v1)", "trunc": "trunc(v1)", "asin": "asin_f(v1)", "acos": "acos_f(v1)",
    "atan": "atan_f(v1)", "sinh": "sinh_f(v1)", "cosh": "cosh_f(v1)", "asinh": "asinh_f(v1)",
    "acosh": "acosh_f(v1)", "atanh": "atanh_f(v1)", "exp2": "exp2_f(v1)", "log2": "log2_f(v1)",
    "log10": "log10_f(v1)",
    "isnan": _BOOL_OF.format("is_nan(v1)"), "isinf": _BOOL_OF.format("is_inf(v1)"),
    "isfinite": _BOOL_OF.format("is_finite(v1)"),
    "isposinf": _BOOL_OF.format("is_inf(v1) && v1 > 0.0"),
    "isneginf": _BOOL_OF.format("is_inf(v1) && v1 < 0.0"),
    "logical_not": _BOOL_OF.format("v1 == 0.0"),
}
_INT_UNARY = {
    "neg": "-v1", "abs": "abs(v1)", "sign": "select(select(T(0), T(1), v1 > T(0)), T(-1), v1 < T(0))",
    "bitwise_not": "~v1", "logical_not": _BOOL_OF.format("v1 == T(0)"),
    "isnan": "0u", "isinf": "0u", "isposinf": "0u", "isneginf": "0u", "isfinite": "1u",
    "relu": "max(v1, T(0))",
}
_BOOL_UNARY = {"logical_not": "1u - v1", "bitwise_not": "1u - v1", "abs": "v1",
               "isnan": "0u", "isinf": "0u", "isposinf": "0u", "isneginf": "0u", "isfinite": "1u"}

_COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_LOGICAL = {"logical_and": "&&", "logical_or": "||", "logical_xor": "!="}


# WGSL's != on floats may compile to an ordered comparison, false for NaN: IEEE's is
# unordered (NaN != anything), so float tests for "not equal" are written !(a == b)
def _common_binary(zero):
    ops = {k: _BOOL_OF.format(f"v1 {s} v2") for k, s in _COMPARE.items()}
    ops["ne"] = _BOOL_OF.format("!(v1 == v2)")
    ops.update({k: _BOOL_OF.format(f"!(v1 == {zero}) {s} !(v2 == {zero})")
                for k, s in _LOGICAL.items()})
    return ops


_FLOAT_BINARY = dict(_common_binary("0.0"), **{
    "add": "v1 + v2", "sub": "v1 - v2", "mul": "v1 * v2", "div": "div_f(v1, v2)",
    "pow": "pow_f(v1, v2)", "maximum": "max_f(v1, v2)", "minimum": "min_f(v1, v2)",
    "floordiv": "floordiv_f(v1, v2)", "remainder": "remainder_f(v1, v2)",
    "atan2": "atan2_f(v1, v2)", "copysign": "copysign_f(v1, v2)", "fmod": "fmod_f(v1, v2)",
    "hypot": "hypot_f(v1, v2)"})
_INT_BINARY = dict(_common_binary("T(0)"), **{
    "add": "v1 + v2", "sub": "v1 - v2", "mul": "v1 * v2", "pow": "pow_T(v1, v2)",
    "maximum": "max(v1, v2)", "minimum": "min(v1, v2)", "floordiv": "floordiv_T(v1, v2)",
    "remainder": "remainder_T(v1, v2)", "fmod": "v1 % v2", "bitwise_and": "v1 & v2",
    "bitwise_or": "v1 | v2", "bitwise_xor": "v1 ^ v2", "left_shift": "shl_T(v1, v2)",
    "right_shift": "shr_T(v1, v2)"})
_BOOL_BINARY = dict(_common_binary("0u"), **{
    "add": "v1 | v2", "mul": "v1 & v2", "maximum": "v1 | v2", "minimum": "v1 & v2",
    "bitwise_and": "v1 & v2", "bitwise_or": "v1 | v2", "bitwise_xor": "v1 ^ v2"})
# the integer ops whose divisor or exponent the host checks first (see _check_int_operand)
INT_DIVISIONS = ("floordiv", "remainder", "fmod")

_INT_HELPERS = """
fn floordiv_T(a: T, b: T) -> T {
  var q = a / b;
  if (a % b != T(0) && ((a < T(0)) != (b < T(0)))) { q -= T(1); }
  return q;
}
fn remainder_T(a: T, b: T) -> T {
  var r = a % b;
  if (r != T(0) && ((r < T(0)) != (b < T(0)))) { r += b; }
  return r;
}
fn pow_T(a: T, b: T) -> T {
  var r = T(1);
  var base = a;
  var e = b;
  loop {
    if (e <= T(0)) { break; }
    if ((e & T(1)) == T(1)) { r *= base; }
    base *= base;
    e = e >> 1u;
  }
  return r;
}
fn shl_T(a: T, s: T) -> T { if (s < T(0) || s >= T(BITS)) { return T(0); } return a << u32(s); }
fn shr_T(a: T, s: T) -> T {
  if (s < T(0) || s >= T(BITS)) { return select(T(0), T(-1), a < T(0)); }
  return a >> u32(s);
}
"""


def _kind(dtype):
    if dtype is bool_:
        return "bool"
    return "float" if dtype.is_floating_point else "int"


def cast_expr(expr, src, dst):
    """``expr`` (of dtype ``src``) converted to ``dst``."""
    if src is dst:
        return expr
    if dst is bool_:
        return expr if src is bool_ else _BOOL_OF.format(f"!({expr} == {WGSL[src.name][0]}(0))")
    if src.is_floating_point and dst.name == "int32":  # WGSL's i32() saturates: wrap as the CPU
        return f"wrap_i32_f({expr})"
    if src.is_floating_point and dst.name == "int64":
        # the low word in halves: Mesa's lavapipe sign-extends i64() of a u32 at or above 2^31
        w = f"trunc_words_f({expr})"
        return f"((i64({w}.y) << 32u) | (i64({w}.x >> 16u) << 16u) | i64({w}.x & 0xffffu))"
    return f"{WGSL[dst.name][0]}({expr})"


def expression(op, dtype, arity):
    """The WGSL expression of ``op`` on operands of ``dtype``, or None where there is none."""
    table = {("float", 1): _FLOAT_UNARY, ("int", 1): _INT_UNARY, ("bool", 1): _BOOL_UNARY,
             ("float", 2): _FLOAT_BINARY, ("int", 2): _INT_BINARY, ("bool", 2): _BOOL_BINARY}
    expr = table[_kind(dtype), arity].get(op)
    return None if expr is None else expr.replace("T(", WGSL[dtype.name][0] + "(")


_SOURCES = {}


def _source(expr, out_type, in_types, flat):
    key = (expr, out_type, in_types, flat)
    src = _SOURCES.get(key)
    if src is None:
        lines = [f"@group(0) @binding(0) var<storage, read_write> out: array<{out_type}>;"]
        lines += [f"@group(0) @binding({k}) var<storage, read> x{k}: array<{t}>;"
                  for k, t in enumerate(in_types, 1)]
        lines.append(f"@group(0) @binding({len(in_types) + 1}) var<storage, read> p: array<i32>;")
        loads = " ".join(f"let v{k} = x{k}[{{AT}}(i, {k})];" for k in range(1, len(in_types) + 1))
        src = _TEMPLATE.replace("{BINDINGS}", "\n".join(lines)).replace(
            "{LOADS}", loads).replace("{EXPR}", expr).replace("{AT}", "at_flat" if flat else "at")
        helpers = []
        setup = ""
        if "f32" in in_types or "_f(" in expr:
            helpers.append(MATH)
            setup = MATH_SETUP
        for t, bits in (("i32", 32), ("i64", 64)):
            if f"_{t}(" in expr:
                helpers.append(_INT_HELPERS.replace("_T(", f"_{t}(").replace(
                    "T(", f"{t}(").replace(": T", f": {t}").replace("-> T", f"-> {t}").replace(
                    "BITS", str(bits)))
        src = "\n".join(helpers + [src.replace("{SETUP}", setup)])
        _SOURCES[key] = src
    return src


def layout_params(shape, views):
    """The kernel's parameters for output ``shape`` and ``views`` (offset, strides) of the
    output and each input, with size-1 dims dropped and dims contiguous in every operand
    merged."""
    dims = []
    for d, n in enumerate(shape):
        if n == 1:
            continue
        sts = [v[1][d] for v in views]
        if dims and all(ps == s * n for ps, s in zip(dims[-1][1], sts)):
            dims[-1] = (dims[-1][0] * n, sts)
        else:
            dims.append((n, sts))
    n = 1
    for s in shape:
        n *= s
    params = [n, len(dims)] + [size for size, _ in dims]
    for k, (offset, _) in enumerate(views):
        params.append(offset)
        params.extend(sts[k] for _, sts in dims)
    return params, n


def _strides_to(x, shape):
    """x's strides read at ``shape`` (broadcast dims stride 0)."""
    pad = len(shape) - len(x.shape)
    return tuple(0 if d < pad or x.shape[d - pad] == 1 and shape[d] != 1 else x.strides[d - pad]
                 for d in range(len(shape)))


def run(expr, out, inputs):
    """Write ``expr`` over ``inputs`` (broadcast to ``out.shape``) into the view ``out``."""
    rt = runtime()
    inputs = [x if x.storage is not out.storage else _fresh_copy(x) for x in inputs]
    views = [(out.offset, out.strides)] + [(x.offset, _strides_to(x, out.shape)) for x in inputs]
    params, n = layout_params(out.shape, views)
    if n == 0:
        return out
    if params[1] == 0:  # every dim merged away or of size 1: one element, as one dim
        params = [n, 1, 1] + [v for k in range(len(views)) for v in (params[2 + k], 0)]
    src = _source(expr, out.wgsl, tuple(x.wgsl for x in inputs), params[1] == 1)
    rt.launch(src, [out.storage.gbuf] + [x.storage.gbuf for x in inputs], params,
              -(-n // WORKGROUP))
    return out


def _fresh_copy(x):
    out = empty(x.shape, x.dtype)
    return run("v1", out, [x])


def copy_into(dst, src):
    """Write ``src`` (broadcast, and converted to dst's dtype) into the view ``dst``."""
    run(cast_expr("v1", src.dtype, dst.dtype), dst, [src])
    dst.storage.version += 1

