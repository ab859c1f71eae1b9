"""Each backend primitive as ONNX nodes: ``PRIMITIVES[name](g, args, out)``.

``args`` are the primitive's arguments with buffers replaced by ``Val``s and sizes that
change with a dynamic axis by ``Sym``s; ``out`` is the Val (or tuple of Vals) the
primitive produced. Each function adds the nodes computing ``out.name``.
"""
import math

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
    start, stop, step, dtype = args
    _out(g, "Range", [g.scalar(v, dtype.name) for v in (start, stop, step)], out)


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
    if op == "log1p":
        return g.node("Log", [g.node("Add", [x, c(1.0)])])
    if op == "expm1":
        return g.node("Sub", [g.node("Exp", [x]), c(1.0)])
    if op == "exp2":
        return g.node("Pow", [c(2.0), x])
    if op in ("log2", "log10"):
        return g.node("Div", [g.node("Log", [x]), c(math.log(2.0 if op == "log2" else 10.0))])
    if op == "erfc":
        return g.node("Sub", [c(1.0), g.node("Erf", [x])])
    if op == "trunc":  # toward zero: floor of |x| with the sign put back
        return g.node("Mul", [g.node("Sign", [x]), g.node("Floor", [g.node("Abs", [x])])])
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
    if op in _SIMPLE_UNARY:
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
    want = out.dtype if logical else dtype
    x, y = g.cast(a.name, a.dtype, want), g.cast(b.name, b.dtype, want)
    floating = want.is_floating_point
    if op in _SIMPLE_BINARY:
        return _out(g, _SIMPLE_BINARY[op], [x, y], out)
    if op == "ne":
        return _out(g, "Not", [g.node("Equal", [x, y])], out)
    if op == "fmod":
        return _out(g, "Mod", [x, y], out, fmod=1)
    if op == "remainder" and not floating:
        return _out(g, "Mod", [x, y], out, fmod=0)
    if op in ("floordiv", "remainder"):
        # floor(a / b) in double, exact for int32 and for int64 up to 2**53
        fa, fb = (g.cast(v, want, "float64") for v in (x, y))
        q = g.node("Floor", [g.node("Div", [fa, fb])])
        if op == "floordiv":
            return _out(g, "Cast", [q], out, to=ONNX_DTYPES[want.name])
        r = g.node("Sub", [fa, g.node("Mul", [q, fb])])
        return _out(g, "Cast", [r], out, to=ONNX_DTYPES[want.name])
    if op == "hypot":
        return _out(g, "Sqrt", [g.node("Add", [g.node("Mul", [x, x]), g.node("Mul", [y, y])])], out)
    raise ExportError(f"the elementwise operation {op!r} has no ONNX mapping")


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
    if op in ("any", "all"):  # over 0/1 ints: any is a max, all a min
        ints = g.node("Cast", [name], to=ONNX_DTYPES["int32"])
        r = g.reduce("Max" if op == "any" else "Min", ints, axes, keepdim)
        return _out(g, "Cast", [r], out, to=ONNX_DTYPES["bool"])
    r = g.reduce(op.capitalize(), name, axes, keepdim)
    g.node("Identity", [r], [out.name])


def arg_reduce(g, args, out):
    op, x, axis, keepdim = args
    _out(g, "ArgMax" if op == "argmax" else "ArgMin", [x.name], out, axis=axis, keepdims=int(keepdim))


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
    _out(g, "Reshape", [x.name, g.ints(shape)], out)


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
    import numpy as np
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
    y = g.node("ScatterElements", [flat(dst.name), flat(index.name), flat(updates)], axis=0,
               reduction=_PUT_REDUCTION[accumulate])
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
