"""The CUDA driver's elementwise kernels: unary and binary ops, ``where``, casts, ``fill``
and the strided copy, all instantiations of ``kernels/elementwise.cu``'s templates: the
element types and the operation (a struct of ``kernels/math.cuh``, or for the op table's
float functions of the header ``kernels.py`` writes from it) are template
arguments, named here per kind of element type.
"""
from stage0_python.op_table import FUNCTIONS
from stage0_python.vocabulary import BOOL_RESULT

from ..dtypes import bool_
from ..gpu.elementwise import INT_DIVISIONS
from .kernels import CTYPE, function_struct
from .memory import _numpy, bfloat16_bits
from .runtime import BLOCK, runtime

_FLOAT_UNARY = {
    "neg": "Neg", "abs": "Abs", "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "rsqrt": "Rsqrt",
    "sin": "Sin", "cos": "Cos", "tanh": "Tanh", "sigmoid": "Sigmoid", "relu": "Relu",
    "sign": "Sign", "reciprocal": "Reciprocal", "gelu": "Gelu", "silu": "Silu", "erf": "Erf",
    "log1p": "Log1p", "floor": "Floor", "ceil": "Ceil", "round": "Round", "trunc": "Trunc",
    "isnan": "IsNan", "isinf": "IsInf", "isfinite": "IsFinite", "isposinf": "IsPosInf",
    "isneginf": "IsNegInf", "logical_not": "LogicalNot",
    **{f.name: function_struct(f.name) for f in FUNCTIONS}}  # the op table's (op_table.cuh)
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

# each kind's dtypes, and its tables by arity, named by the vocabulary's op names
# (common_tests/test_vocabulary.py checks them)
_KINDS = {"float": ("float32", "float64", "float16", "bfloat16"),
          "int": ("int32", "int64", "uint8", "int8", "int16"), "bool": ("bool",)}
TABLES = {("float", 1): _FLOAT_UNARY, ("int", 1): _INT_UNARY, ("bool", 1): _BOOL_UNARY,
           ("float", 2): _FLOAT_BINARY, ("int", 2): _INT_BINARY, ("bool", 2): _BOOL_BINARY}


def _kind(dtype):
    """``float``, ``int`` or ``bool``: which table of operations applies to ``dtype``."""
    if dtype is bool_:
        return "bool"
    return "float" if dtype.is_floating_point else "int"


def operation(op, dtype, arity):
    """The struct of math.cuh that computes ``op`` on ``dtype`` (None where there is none)."""
    return TABLES[_kind(dtype), arity].get(op)


def may_overlap(shape, strides):
    """Whether two elements of a view with ``shape`` and ``strides`` may share memory: the
    dims taken by increasing stride must each step past everything the smaller ones span."""
    if len(shape) < 2:  # the common case, answered without sorting
        return bool(shape) and shape[0] > 1 and strides[0] == 0
    span = 0
    for stride, n in sorted((abs(st), n) for n, st in zip(shape, strides) if n > 1):
        if stride <= span:
            return True
        span += stride * (n - 1)
    return False


_INSTANCES = {}  # (op, out dtype, first input's dtype, arity) -> (kernel, name expression)


def _instance(op, out, inputs):
    """The kernel and name expression of elementwise.cu that computes ``op`` (None: a copy)
    into ``out`` from ``inputs``, named once per op and dtypes."""
    x = inputs[0]
    key = (op, out.dtype, x.dtype, len(inputs))
    found = _INSTANCES.get(key)
    if found is None:
        if op == "where":
            found = "where", f"where<{out.ctype}>"
        elif len(inputs) == 2:
            found = "binary", f"binary<{out.ctype}, {x.ctype}, {operation(op, x.dtype, 2)}>"
        else:
            struct = "Identity" if op is None else operation(op, x.dtype, 1)
            found = "unary", f"unary<{out.ctype}, {x.ctype}, {struct}>"
        _INSTANCES[key] = found
    return found


def fast_kernel(op, dtype, arity):
    """For the compiled path (``../_cuda_elementwise.pyx``): ``(kernel, output dtype, its
    NumPy dtype)`` of ``op`` on operands of ``dtype``, or None where the op must take the
    device layer's path (no kernel, to be refused there; an integer division or power,
    whose operands the host checks first)."""
    struct = operation(op, dtype, arity)
    if struct is None or (_kind(dtype) == "int" and (op in INT_DIVISIONS or op == "pow")):
        return None
    out = bool_ if op in BOOL_RESULT else dtype
    kernel = "unary" if arity == 1 else "binary"
    instance = f"{kernel}<{CTYPE[out.name]}, {CTYPE[dtype.name]}, {struct}>"
    return runtime().function(kernel, instance), out, _numpy(out)


class ElementwiseKernels:
    """The CUDA driver's elementwise hooks (see ``gpu.driver.Driver``)."""

    def has_op(self, op, dtype, arity):
        """Whether a struct of math.cuh computes ``op`` on ``dtype``."""
        return operation(op, dtype, arity) is not None

    def elementwise(self, op, out, inputs, params):
        """One launch of elementwise.cu's unary, binary or where, instantiated for the
        operands' types and the op's struct (``Identity`` for a copy)."""
        kernel, instance = _instance(op, out, inputs)
        # an output whose elements share memory (an unfold with overlapping windows) is
        # written by one thread in element order, so the last write wins, as on the CPU
        rt = runtime()
        grid, block = (1, 1) if may_overlap(out.shape, out.strides) else (rt.grid(params[0]), BLOCK)
        rt.launch(kernel, instance, grid, block,
                         [params, out.storage.ptr] + [x.storage.ptr for x in inputs])

    def fill(self, out, value):
        """elementwise.cu's fill over the new buffer ``out``, the value's bytes passed by
        value (in an int64, as the kernel reads them)."""
        rt = runtime()
        if out.numel:
            host = rt.np.array([value])
            if out.dtype.name == "bfloat16":
                host = bfloat16_bits(rt.np, host)
            raw = host.astype(out.array.dtype).tobytes()
            bits = int.from_bytes(raw.ljust(8, b"\0"), "little", signed=True)
            rt.launch("fill", f"fill<{out.ctype}>", rt.grid(out.numel), BLOCK,
                      [out.address, out.numel, bits])


def instances():
    """Every elementwise instantiation this module can launch."""
    out = []
    for (k, arity), table in TABLES.items():
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
