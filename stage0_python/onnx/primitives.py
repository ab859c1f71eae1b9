"""Each backend primitive as ONNX nodes: ``PRIMITIVES[name](g, args, out)``.

``args`` are the primitive's arguments with buffers replaced by ``Val``s and sizes that
change with a dynamic axis by ``Sym``s; ``out`` is the Val (or tuple of Vals) the
primitive produced. Each function adds the nodes computing ``out.name``.
"""
import math

import numpy as np

from .errors import ExportError
from .graph import ONNX_DTYPES
from .sizes import same


def _out(g, op, inputs, out, **attrs):
    return g.node(op, inputs, [out.name], **attrs)


# ---------------------------------------------------------------- creation

def full(g, args, out):
    shape, value, dtype = args
    g.node("Expand", [g.scalar(value, dtype.name), g.ints(shape)], [out.name])


def arange(g, args, out):
    """Integers through ``Range``; floats as ``start + i * step`` in double over an integer
    ``i``, as the stage computes them (ONNX Runtime's float Range accumulates its step)."""
    start, stop, step, dtype = args
    if not dtype.is_floating_point:
        return _out(g, "Range", [g.scalar(v, dtype.name) for v in (start, stop, step)], out)
    i = g.node("Range", [g.scalar(0, "int64"), g.scalar(g.shapes[out.name][0], "int64"), g.scalar(1, "int64")])
    x = g.node("Add", [g.node("Mul", [g.cast(i, "int64", "float64"), g.scalar(step, "float64")]),
                       g.scalar(start, "float64")])
    g.node("Identity", [g.cast(x, "float64", dtype)], [out.name])


def from_list(g, args, out):
    values, shape, dtype = args
    g.node("Identity", [g.const(values, dtype.name, shape)], [out.name])


def cast(g, args, out):
    _out(g, "Cast", [args[0].name], out, to=ONNX_DTYPES[args[1].name])


# ---------------------------------------------------------------- elementwise

_SIMPLE_UNARY = {"neg": "Neg", "abs": "Abs", "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "sin": "Sin",
                 "cos": "Cos", "tan": "Tan", "tanh": "Tanh", "sigmoid": "Sigmoid", "relu": "Relu",
                 "sign": "Sign", "reciprocal": "Reciprocal", "erf": "Erf", "floor": "Floor",
                 "ceil": "Ceil", "round": "Round", "asin": "Asin", "acos": "Acos", "atan": "Atan",
                 "sinh": "Sinh", "cosh": "Cosh", "asinh": "Asinh", "acosh": "Acosh", "atanh": "Atanh",
                 "isnan": "IsNaN", "logical_not": "Not", "bitwise_not": "BitwiseNot"}


def composite_unary(g, op, x, dtype):
    """The unary ops ONNX has no single operator for, written with those it has."""
    c = lambda v: g.const(v, dtype)  # noqa: E731
    if op == "rsqrt":
        return g.node("Reciprocal", [g.node("Sqrt", [x])])
    if op == "silu":
        return g.node("Mul", [x, g.node("Sigmoid", [x])])
    if op == "gelu":  # x * (1 + erf(x / sqrt 2)) / 2, the exact form PyTorch's default computes
        erf = g.node("Erf", [g.node("Mul", [x, c(1 / math.sqrt(2))])])
        return g.node("Mul", [g.node("Mul", [x, c(0.5)]), g.node("Add", [erf, c(1.0)])])
    if op == "gelu_tanh":  # x * (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) / 2, approximate="tanh"
        cube = g.node("Mul", [g.node("Mul", [x, x]), x])
        inner = g.node("Add", [x, g.node("Mul", [cube, c(0.044715)])])
        inner = g.node("Mul", [inner, c(math.sqrt(2 / math.pi))])
        return g.node("Mul", [g.node("Mul", [x, c(0.5)]), g.node("Add", [g.node("Tanh", [inner]), c(1.0)])])
    if op == "log1p":  # log(u) * x / (u - 1) with u = 1 + x keeps the digits 1 + x loses
        u = g.node("Add", [x, c(1.0)])
        scaled = g.node("Mul", [g.node("Log", [u]), g.node("Div", [x, g.node("Sub", [u, c(1.0)])])])
        exact = g.node("Or", [g.node("Equal", [u, c(1.0)]), g.node("IsInf", [x], detect_negative=0)])
        return g.node("Where", [exact, x, scaled])
    if op == "expm1":  # (u - 1) * x / log(u) with u = exp(x), for the same reason
        u = g.node("Exp", [x])
        um1 = g.node("Sub", [u, c(1.0)])
        scaled = g.node("Mul", [um1, g.node("Div", [x, g.node("Log", [u])])])
        exact = g.node("Or", [g.node("Equal", [u, c(1.0)]), g.node("IsInf", [u])])
        return g.node("Where", [exact, g.node("Where", [g.node("Equal", [u, c(1.0)]), x, um1]),
                                g.node("Where", [g.node("Equal", [um1, c(-1.0)]), um1, scaled])])
    if op == "exp2":
        return g.node("Pow", [c(2.0), x])
    if op in ("log2", "log10"):
        return g.node("Div", [g.node("Log", [x]), c(math.log(2.0 if op == "log2" else 10.0))])
    if op == "erfc":
        return g.node("Sub", [c(1.0), g.node("Erf", [x])])
    if op == "trunc":  # toward zero: floor of |x| with the sign put back
        return g.node("Mul", [g.node("Sign", [x]), g.node("Floor", [g.node("Abs", [x])])])
    if op in ("isinf", "isposinf", "isneginf", "isnan") and not dtype.startswith("float"):
        return g.node("Not", [g.node("Equal", [x, x])])  # an integer is never inf or nan
    if op == "isfinite" and not dtype.startswith("float"):
        return g.node("Equal", [x, x])
    if op == "isinf":
        return g.node("IsInf", [x])
    if op == "isposinf":
        return g.node("IsInf", [x], detect_negative=0)
    if op == "isneginf":
        return g.node("IsInf", [x], detect_positive=0)
    if op == "isfinite":
        return g.node("Not", [g.node("Or", [g.node("IsNaN", [x]), g.node("IsInf", [x])])])
    raise ExportError(f"the elementwise operation {op!r} has no ONNX mapping")


def unary(g, args, out):
    op, x = args[:2]
    dtype = args[2] if len(args) > 2 and args[2] is not None else None
    name = x.name
    if op == "logical_not":
        name = g.cast(name, x.dtype, out.dtype)
    elif dtype is not None:
        name = g.cast(name, x.dtype, dtype)
    if op in _SIMPLE_UNARY and not (op == "isnan" and not x.dtype.is_floating_point):
        return _out(g, _SIMPLE_UNARY[op], [name], out)
    g.node("Identity", [composite_unary(g, op, name, (dtype or x.dtype).name)], [out.name])


_SIMPLE_BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow", "maximum": "Max",
                  "minimum": "Min", "eq": "Equal", "lt": "Less", "le": "LessOrEqual", "gt": "Greater",
                  "ge": "GreaterOrEqual", "logical_and": "And", "logical_or": "Or", "logical_xor": "Xor",
                  "bitwise_and": "BitwiseAnd", "bitwise_or": "BitwiseOr", "bitwise_xor": "BitwiseXor"}
_ON_BOOL = {"add": "logical_or", "mul": "logical_and", "maximum": "logical_or", "minimum": "logical_and"}


def binary(g, args, out):
    op, a, b, dtype = args
    if dtype.name == "bool" and op in _ON_BOOL:
        op = _ON_BOOL[op]
    logical = op.startswith("logical_")
    want = out.dtype.name if logical else dtype.name
    if want == "bool" and op in _COMPARE:  # ONNX Runtime orders no bools: compare 0/1 bytes
        want = "uint8"
    x, y = g.cast(a.name, a.dtype, want), g.cast(b.name, b.dtype, want)
    if op in _SIMPLE_BINARY:
        return _out(g, _SIMPLE_BINARY[op], [x, y], out)
    if op == "ne":
        return _out(g, "Not", [g.node("Equal", [x, y])], out)
    if op == "fmod":
        return _out(g, "Mod", [x, y], out, fmod=1)
    if op in ("floordiv", "remainder"):
        name = (_floor_division if want.startswith("float") else _int_division)(g, op, x, y, want)
        return _out(g, "Identity", [name], out)
    if op == "hypot":
        return _out(g, "Sqrt", [g.node("Add", [g.node("Mul", [x, x]), g.node("Mul", [y, y])])], out)
    raise ExportError(f"the elementwise operation {op!r} has no ONNX mapping")


_COMPARE = frozenset({"lt", "le", "gt", "ge"})


def _int_division(g, op, a, b, dtype):
    """Python's floor division and remainder on integers, exactly: ``Mod`` with
    ``fmod=0`` takes the divisor's sign, and ``a - a mod b`` divides evenly."""
    mod = g.node("Mod", [a, b], fmod=0)
    return mod if op == "remainder" else g.node("Div", [g.node("Sub", [a, mod]), b])


def _floor_division(g, op, a, b, dtype):
    """Python's (and the stage's) float floor division and remainder, step by step: from
    C's fmod, moved to the divisor's sign; the quotient rounded from the exact difference.
    A zero divisor gives the plain quotient (inf or nan), as the stage does."""
    c = lambda v: g.const(v, dtype)  # noqa: E731
    fmod = g.node("Mod", [a, b], fmod=1)
    other_sign = g.node("And", [g.node("Not", [g.node("Equal", [fmod, c(0.0)])]),
                                g.node("Xor", [g.node("Less", [b, c(0.0)]), g.node("Less", [fmod, c(0.0)])])])
    if op == "remainder":
        mod = g.node("Where", [other_sign, g.node("Add", [fmod, b]), fmod])
        return g.node("Where", [g.node("Equal", [b, c(0.0)]), c(float("nan")), mod])
    div = g.node("Div", [g.node("Sub", [a, fmod]), b])
    div = g.node("Where", [other_sign, g.node("Sub", [div, c(1.0)]), div])
    q = g.node("Floor", [div])
    q = g.node("Where", [g.node("Greater", [g.node("Sub", [div, q]), c(0.5)]), g.node("Add", [q, c(1.0)]), q])
    return g.node("Where", [g.node("Equal", [b, c(0.0)]), g.node("Div", [a, b]), q])


def where(g, args, out):
    cond, a, b = args
    # ONNX Runtime has no Where on bools: choose among 0/1 bytes instead
    via = "uint8" if out.dtype.name == "bool" else out.dtype.name
    y = g.node("Where", [g.cast(cond.name, cond.dtype, "bool"), g.cast(a.name, a.dtype, via),
                         g.cast(b.name, b.dtype, via)])
    g.node("Identity", [g.cast(y, via, out.dtype)], [out.name])


# ---------------------------------------------------------------- reductions

def reduce(g, args, out):
    op, x, axes, keepdim = args[:4]
    dtype = args[4] if len(args) > 4 else None
    if not axes:
        return _out(g, "Cast", [x.name], out, to=ONNX_DTYPES[out.dtype.name])
    name = g.cast(x.name, x.dtype, dtype) if dtype is not None else x.name
    if op in ("any", "all"):  # over 0/1: any counts the ones (none over an empty group), all is a min
        ones = g.node("Cast", [g.cast(name, dtype or x.dtype, "bool")], to=ONNX_DTYPES["int64"])
        if op == "any":
            r = g.node("Greater", [g.reduce("Sum", ones, axes, keepdim), g.const(0, "int64")])
        else:
            r = g.cast(g.reduce("Min", ones, axes, keepdim), "int64", "bool")
        return _out(g, "Identity", [r], out)
    kind = (dtype or x.dtype).name
    if kind == "bool":  # ONNX Runtime reduces no bools: 0/1 bytes
        name = g.cast(name, kind, "uint8")
    r = g.reduce(op.capitalize(), name, axes, keepdim)
    if op in ("max", "min") and kind.startswith("float"):
        r = g.node("Where", [_any_nan(g, name, lambda m: g.reduce("Max", m, axes, keepdim)),
                             g.const(float("nan"), kind), r])
    g.node("Identity", [g.cast(r, "uint8", "bool") if kind == "bool" else r], [out.name])


def _any_nan(g, x, reduce):
    """Whether a NaN is in each group: ONNX Runtime's max, min and arg-extremes skip NaN,
    where the stage (as PyTorch) lets it win."""
    return g.node("Greater", [reduce(g.node("Cast", [g.node("IsNaN", [x])], to=ONNX_DTYPES["int32"])),
                              g.const(0, "int32")])


def arg_reduce(g, args, out):
    op, x, axis, keepdim = args
    name = g.cast(x.name, x.dtype, "uint8") if x.dtype.name == "bool" else x.name
    r = g.node("ArgMax" if op == "argmax" else "ArgMin", [name], axis=axis, keepdims=int(keepdim))
    if x.dtype.is_floating_point:  # the first NaN is the extreme, as in the stage
        nan = g.node("Cast", [g.node("IsNaN", [name])], to=ONNX_DTYPES["int32"])
        first = g.node("ArgMax", [nan], axis=axis, keepdims=int(keepdim))
        r = g.node("Where", [_any_nan(g, name, lambda m: g.reduce("Max", m, [axis], keepdim)), first, r])
    g.node("Identity", [r], [out.name])


def sort(g, args, outs):
    x, axis, descending = args
    k = g.ints([g.shapes[x.name][axis]])
    g.node("TopK", [x.name, k], [outs[0].name, outs[1].name], axis=axis, largest=int(descending), sorted=1)


def scan(g, args, outs):
    op, x, axis = args
    if op != "sum":
        raise ExportError(f"the cumulative operation {op!r} has no ONNX operator (only cumsum does)")
    g.node("CumSum", [x.name, g.const(axis, "int64")], [outs[0].name])


# ---------------------------------------------------------------- movement

def reshape(g, args, out):
    x, shape = args
    _out(g, "Reshape", [x.name, g.ints(shape)], out, allowzero=1)  # a 0 is a size, not "keep"


def permute(g, args, out):
    x, dims = args
    _out(g, "Transpose", [x.name], out, perm=list(dims))


def expand(g, args, out):
    x, shape = args
    _out(g, "Expand", [x.name, g.ints(shape)], out)


def slice_(g, args, out):
    x, starts, steps, counts = args
    shape = g.shapes[x.name]
    axes = [d for d in range(len(shape))
            if not (starts[d] == 0 and steps[d] == 1 and same(counts[d], shape[d]))]
    if not axes:
        return _out(g, "Identity", [x.name], out)
    ends = [starts[d] + steps[d] * counts[d] for d in axes]
    _out(g, "Slice", [x.name, g.ints([starts[d] for d in axes]), g.ints(ends), g.ints(axes),
                      g.ints([steps[d] for d in axes])], out)


def identity(g, args, out):
    _out(g, "Identity", [args[0].name], out)


def cat(g, args, out):
    xs, axis = args
    _out(g, "Concat", [x.name for x in xs], out, axis=axis)


# ---------------------------------------------------------------- indexing and products

def take(g, args, out):
    x, index = args
    flat = g.node("Reshape", [x.name, g.const([-1], "int64")])
    _out(g, "Gather", [flat, index.name], out, axis=0)


def gather(g, args, out):
    x, axis, index = args
    _out(g, "GatherElements", [x.name, index.name], out, axis=axis)


def scatter_add(g, args, out):
    shape, axis, index, src = args
    zeros = g.node("Expand", [g.const(0, src.dtype.name), g.ints(shape)])
    _out(g, "ScatterElements", [zeros, index.name, src.name], out, axis=axis, reduction="add")


def assign(g, args, out):
    """A write into a basic-slice region: ``ScatterND`` at every index of the region."""
    dst, starts, steps, counts, src = args
    starts, steps, counts = ([g.static(v, "an indexed write's region") for v in vs]
                             for vs in (starts, steps, counts))
    grid = np.stack(np.meshgrid(*[s + st * np.arange(n) for s, st, n in zip(starts, steps, counts)],
                                indexing="ij"), axis=-1)
    updates = g.node("Expand", [g.cast(src.name, src.dtype, dst.dtype), g.ints(counts)])
    _out(g, "ScatterND", [dst.name, g.const(grid, "int64"), updates], out)


_PUT_REDUCTION = {False: "none", True: "add", "sum": "add", "prod": "mul", "amax": "max", "amin": "min"}


def put(g, args, out):
    """A scatter into the flattened tensor, combining as ``accumulate`` says."""
    dst, index, src = args[:3]
    accumulate = args[3] if len(args) > 3 else False
    flat = lambda name: g.node("Reshape", [name, g.const([-1], "int64")])  # noqa: E731
    updates = g.node("Expand", [g.cast(src.name, src.dtype, dst.dtype), g.node("Shape", [index.name])])
    reduction = _PUT_REDUCTION[accumulate]
    if reduction in ("max", "min") and g.opset < 18:
        raise ExportError(f"a scatter combining by {accumulate} needs opset 18 or later (exporting {g.opset})")
    y = g.node("ScatterElements", [flat(dst.name), flat(index.name), flat(updates)], axis=0,
               reduction=reduction)
    _out(g, "Reshape", [y, g.ints(g.shapes[dst.name])], out)


def matmul(g, args, out):
    _out(g, "MatMul", [args[0].name, args[1].name], out)


PRIMITIVES = {
    "full": full, "arange": arange, "from_list": from_list, "cast": cast, "unary": unary,
    "binary": binary, "where": where, "reduce": reduce, "arg_reduce": arg_reduce, "sort": sort,
    "scan": scan, "reshape": reshape, "permute": permute, "expand": expand, "slice": slice_,
    "contiguous": identity, "alias": identity, "copy": identity, "cat": cat, "take": take,
    "gather": gather, "scatter_add": scatter_add, "matmul": matmul, "assign": assign, "put": put,
}
