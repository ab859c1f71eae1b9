"""Elementwise primitives on the CUDA device: ``unary``, ``binary``, ``where``, ``cast``,
``fill``, and the strided copy under every movement primitive, all instantiations of
``kernels/elementwise.cu``'s templates: the element types and the operation (a struct of
``kernels/math.cuh``) are template arguments, named here per kind of element type.
"""
from ..dtypes import bool_
from ..webgpu.elementwise import layout_params  # the same layout: sizes, then each operand's
from .buffer import empty
from .kernels import CTYPE
from .runtime import BLOCK, runtime

_FLOAT_UNARY = {
    "neg": "Neg", "abs": "Abs", "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "rsqrt": "Rsqrt",
    "sin": "Sin", "cos": "Cos", "tan": "Tan", "tanh": "Tanh", "sigmoid": "Sigmoid", "relu": "Relu",
    "sign": "Sign", "reciprocal": "Reciprocal", "gelu": "Gelu", "silu": "Silu", "erf": "Erf",
    "erfc": "Erfc", "log1p": "Log1p", "expm1": "Expm1", "floor": "Floor", "ceil": "Ceil",
    "round": "Round", "trunc": "Trunc", "asin": "Asin", "acos": "Acos", "atan": "Atan",
    "sinh": "Sinh", "cosh": "Cosh", "asinh": "Asinh", "acosh": "Acosh", "atanh": "Atanh",
    "exp2": "Exp2", "log2": "Log2", "log10": "Log10", "isnan": "IsNan", "isinf": "IsInf",
    "isfinite": "IsFinite", "isposinf": "IsPosInf", "isneginf": "IsNegInf",
    "logical_not": "LogicalNot"}
_PREDICATES = {"isnan": "IsNan", "isinf": "IsInf", "isposinf": "IsPosInf", "isneginf": "IsNegInf",
               "isfinite": "IsFinite", "logical_not": "LogicalNot"}
_INT_UNARY = dict(_PREDICATES, neg="Neg", abs="Abs", sign="Sign", bitwise_not="BitwiseNot",
                  relu="Relu")
_BOOL_UNARY = dict(_PREDICATES, bitwise_not="BitwiseNot", abs="Abs")

_COMPARE = {"eq": "Eq", "ne": "Ne", "lt": "Lt", "le": "Le", "gt": "Gt", "ge": "Ge",
            "logical_and": "LogicalAnd", "logical_or": "LogicalOr", "logical_xor": "LogicalXor"}
_FLOAT_BINARY = dict(_COMPARE, add="Add", sub="Sub", mul="Mul", div="Div", pow="Pow",
                     maximum="Maximum", minimum="Minimum", floordiv="FloorDiv",
                     remainder="Remainder", atan2="Atan2", copysign="Copysign", fmod="Fmod",
                     hypot="Hypot")
_INT_BINARY = dict(_COMPARE, add="Add", sub="Sub", mul="Mul", pow="Pow", maximum="Maximum",
                   minimum="Minimum", floordiv="FloorDiv", remainder="Remainder", fmod="Fmod",
                   bitwise_and="BitwiseAnd", bitwise_or="BitwiseOr", bitwise_xor="BitwiseXor",
                   left_shift="LeftShift", right_shift="RightShift")
_BOOL_BINARY = dict(_COMPARE, add="Add", mul="Mul", maximum="Maximum", minimum="Minimum",
                    bitwise_and="BitwiseAnd", bitwise_or="BitwiseOr", bitwise_xor="BitwiseXor")
# the integer ops whose divisor the host checks first
INT_DIVISIONS = ("floordiv", "remainder", "fmod")
BOOL_RESULT = frozenset(_PREDICATES) | frozenset(_COMPARE)

# each kind's dtypes, and its tables by arity
_KINDS = {"float": ("float32", "float64"), "int": ("int32", "int64"), "bool": ("bool",)}
_TABLES = {("float", 1): _FLOAT_UNARY, ("int", 1): _INT_UNARY, ("bool", 1): _BOOL_UNARY,
           ("float", 2): _FLOAT_BINARY, ("int", 2): _INT_BINARY, ("bool", 2): _BOOL_BINARY}


def kind(dtype):
    """``float``, ``int`` or ``bool``: which table of operations applies to ``dtype``."""
    if dtype is bool_:
        return "bool"
    return "float" if dtype.is_floating_point else "int"


def operation(op, dtype, arity):
    """The struct of math.cuh that computes ``op`` on ``dtype`` (None where there is none)."""
    return _TABLES[kind(dtype), arity].get(op)


def _strides_to(x, shape):
    """x's strides read at ``shape`` (broadcast dims stride 0)."""
    pad = len(shape) - len(x.shape)
    return tuple(0 if d < pad or x.shape[d - pad] == 1 and shape[d] != 1 else x.strides[d - pad]
                 for d in range(len(shape)))


def launch(kernel, instance, out, inputs):
    """``instance`` of the elementwise ``kernel`` over ``inputs`` broadcast to ``out``."""
    rt = runtime()
    inputs = [x if x.storage is not out.storage else _fresh_copy(x) for x in inputs]
    views = [(out.offset, out.strides)] + [(x.offset, _strides_to(x, out.shape)) for x in inputs]
    params, n = layout_params(out.shape, views)
    if n == 0:
        return out
    rt.launch(kernel, instance, -(-n // BLOCK), BLOCK,
              [rt.params(params), out.array] + [x.array for x in inputs])
    return out


def unary_into(op_struct, out, x):
    """``out = op(x)`` (converted to out's dtype), any views."""
    return launch("unary", f"unary<{out.ctype}, {x.ctype}, {op_struct}>", out, [x])


def binary_into(op_struct, out, a, b):
    """``out = op(a, b)``, broadcast, a and b of one dtype."""
    return launch("binary", f"binary<{out.ctype}, {a.ctype}, {op_struct}>", out, [a, b])


def where_into(out, cond, a, b):
    """``out = cond ? a : b``, broadcast; cond bool, a and b of out's dtype."""
    return launch("where", f"where<{out.ctype}>", out, [cond, a, b])


def _fresh_copy(x):
    return unary_into("Identity", empty(x.shape, x.dtype), x)


def copy_into(dst, src):
    """Write ``src`` (broadcast, and converted to dst's dtype) into the view ``dst``."""
    unary_into("Identity", dst, src)
    dst.storage.version += 1


def fill_contiguous(out, value):
    """Every element of the contiguous buffer ``out`` set to ``value``."""
    rt = runtime()
    if out.numel:
        v = rt.upload(rt.np.array([value]).astype(out.array.dtype), out.array.dtype)
        rt.launch("fill", f"fill<{out.ctype}>", -(-out.numel // BLOCK), BLOCK,
                  [out.array[out.offset:], out.numel, v])
    return out


def instances():
    """Every elementwise instantiation this module can launch."""
    out = []
    for (k, arity), table in _TABLES.items():
        for name in _KINDS[k]:
            t = CTYPE[name]
            for op, struct in table.items():
                result = "bool" if op in BOOL_RESULT else t
                kernel = "unary" if arity == 1 else "binary"
                out.append((kernel, f"{kernel}<{result}, {t}, {struct}>"))
    names = list(CTYPE)
    out += [("unary", f"unary<{CTYPE[o]}, {CTYPE[i]}, Identity>") for o in names for i in names]
    out += [(k, f"{k}<{CTYPE[n]}>") for k in ("where", "fill") for n in names]
    return out
