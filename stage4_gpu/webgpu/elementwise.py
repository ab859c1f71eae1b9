"""The WebGPU driver's elementwise kernel: one WGSL kernel (``kernels/elementwise.wgsl``)
for every unary and binary op, ``where``, casts and the strided copy, filled in with the
operation's expression.

Each op is a WGSL expression over the loaded operands ``v1``, ``v2`` (``v3`` for
``where``), per kind of element type: float (``f32``), integer (``i32``/``i64``, written
``T``) and bool (``u32`` words holding 0 or 1). The float functions WGSL lacks or leaves
undefined at NaN and infinity are in ``kernels/math.wgsl``.
"""
from stage0_python.op_table import FUNCTIONS
from stage0_python.vocabulary import BOOL_RESULT

from ..dtypes import bool_
from .kernels import MATH, MATH_SETUP, WGSL, groups, launch, read

_TEMPLATE = read("elementwise.wgsl")

_BOOL_OF = "select(0u, 1u, {})"
_FLOAT_UNARY = {
    "neg": "-v1", "abs": "abs(v1)", "exp": "exp_f(v1)", "log": "log_f(v1)", "sqrt": "sqrt_f(v1)",
    "rsqrt": "rsqrt_f(v1)", "sin": "sin_f(v1)", "cos": "cos_f(v1)",
    "tanh": "tanh_f(v1)", "sigmoid": "sigmoid_f(v1)", "relu": "select(v1, 0.0, v1 < 0.0)",
    "sign": "sign_f(v1)", "reciprocal": "recip_f(v1)", "gelu": "gelu_f(v1)",
    "silu": "silu_f(v1)", "erf": "erf_f(v1)", "log1p": "log1p_f(v1)", "floor": "floor(v1)",
    "ceil": "ceil(v1)", "round": "round(v1)", "trunc": "trunc(v1)",
    **{f.name: f.wgsl for f in FUNCTIONS},  # the op table's float functions
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


# each operand kind's expressions by arity, named by the vocabulary's op names
# (common_tests/test_vocabulary.py checks them)
TABLES = {("float", 1): _FLOAT_UNARY, ("int", 1): _INT_UNARY, ("bool", 1): _BOOL_UNARY,
          ("float", 2): _FLOAT_BINARY, ("int", 2): _INT_BINARY, ("bool", 2): _BOOL_BINARY}


def expression(op, dtype, arity):
    """The WGSL expression of ``op`` on operands of ``dtype``, or None where there is none."""
    expr = TABLES[_kind(dtype), arity].get(op)
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


def _literal(value, dtype):
    """``value`` as a WGSL constant of dtype's type."""
    if dtype is bool_:
        return "1u" if value else "0u"
    if not dtype.is_floating_point:
        return f"{WGSL[dtype.name][0]}({int(value)})"
    if value != value or value in (float("inf"), float("-inf")):
        bits = {"nan": 0x7fc00000, "inf": 0x7f800000, "-inf": 0xff800000}[str(value)]
        return f"bitcast<f32>({bits}u)"
    return f"f32({float(value)!r})"


class ElementwiseKernels:
    """The WebGPU driver's elementwise hooks (see ``gpu.driver.Driver``)."""

    def has_op(self, op, dtype, arity):
        """Whether a WGSL expression computes ``op`` on ``dtype``."""
        return expression(op, dtype, arity) is not None

    def elementwise(self, op, out, inputs, params):
        """One launch of elementwise.wgsl with op's expression."""
        x = inputs[0]
        if op is None:
            expr = cast_expr("v1", x.dtype, out.dtype)
        elif op == "where":
            expr = "select(v3, v2, v1 != 0u)"
        else:  # a unary op's result is converted to out's dtype (a predicate's is bool)
            natural = bool_ if op in BOOL_RESULT else x.dtype
            expr = cast_expr(expression(op, x.dtype, len(inputs)), natural, out.dtype)
        self._launch_elementwise(expr, out, inputs, params)

    def fill(self, out, value):
        """Every element of the new buffer ``out`` set to ``value``, a constant of the kernel."""
        if out.numel:  # one flat dimension from offset 0: contiguous
            self._launch_elementwise(_literal(value, out.dtype), out, [], [out.numel, 1, out.numel, 0, 1])

    def _launch_elementwise(self, expr, out, inputs, params):
        n = params[0]
        if params[1] == 0:  # every dim merged away or of size 1: one element, as one dim
            params = [n, 1, 1] + [v for k in range(len(inputs) + 1) for v in (params[2 + k], 0)]
        src = _source(expr, out.wgsl, tuple(x.wgsl for x in inputs), params[1] == 1)
        launch(src, [out, *inputs], params, groups(n))
