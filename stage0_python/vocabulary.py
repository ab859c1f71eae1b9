"""The vocabulary every stage and device shares, defined once: the dtypes with the codes
compiled kernels know them by, the elementwise, reduction and scan ops with their facts,
the error a stage raises for what it lacks, the errors for arguments PyTorch refuses
at run time, and ``device`` with its error.

Stages reach this module by its absolute name, ``stage0_python.vocabulary``, never
through a stage's ``__path__``: so there is one ``float32`` object and one
``CapabilityError`` class in a process, whichever stages it imports (as there is one
``torch.float32``), and a kernel of any stage can compare dtypes by identity. What
differs between stages (which dtypes each computes in, the default dtype) stays in each
stage's ``dtypes`` module. ``common_tests/test_vocabulary.py`` checks every backend's
kernel tables (Python, Cython, C++, WGSL, CUDA) against this one. The float functions
(``tan`` ... ``logit``) are declared whole, kernels and derivative included, in
``op_table``: their facts here are read from it.
"""
from typing import NamedTuple

from stage0_python.op_table import FUNCTIONS


class DType:
    """A tensor element type, as ``torch.dtype``: ``itemsize`` bytes, ``is_floating_point``,
    ``is_signed``; ``typecode`` is the ``array`` module's code (None where it has none),
    ``code`` the number compiled kernels know it by (None for a dtype no stage stores)."""
    __slots__ = ("name", "typecode", "itemsize", "category", "is_floating_point", "is_signed", "code")
    is_complex = False

    def __init__(self, name, typecode, itemsize, category, code, is_signed=True):
        self.name = name
        self.typecode = typecode
        self.itemsize = itemsize
        self.category = category  # 0 bool, 1 integer, 2 floating
        self.is_floating_point = category == 2
        self.is_signed = is_signed
        self.code = code

    def __repr__(self):
        return f"stagegrad.{self.name}"

    def __reduce__(self):
        # dtypes are singletons: unpickle (and deepcopy) to the module constant
        return (_lookup, (self.name,))

    @property
    def python_type(self):
        """The Python type of one element: ``bool``, ``int`` or ``float``."""
        return (bool, int, float)[self.category]


# The codes are those of ``stage2_cython/_types.pxd``'s ``DTypeCode``, which the Cython
# templates and the C++ tables are checked against.
bool_ = DType("bool", "B", 1, 0, 0, is_signed=False)
int32 = DType("int32", "i", 4, 1, 1)
int64 = DType("int64", "q", 8, 1, 2)
float32 = DType("float32", "f", 4, 2, 3)
float64 = DType("float64", "d", 8, 2, 4)
float16 = DType("float16", None, 2, 2, 5)
bfloat16 = DType("bfloat16", None, 2, 2, 6)
uint8 = DType("uint8", "B", 1, 1, 7, is_signed=False)
int8 = DType("int8", "b", 1, 1, 8)
int16 = DType("int16", "h", 2, 1, 9)

DTYPES = (bool_, int32, int64, float32, float64, float16, bfloat16, uint8, int8, int16)
BY_NAME = {d.name: d for d in DTYPES}
BY_NAME.update({"float": float32, "double": float64, "long": int64, "int": int32, "half": float16,
                "short": int16})
BY_CODE = {d.code: d for d in DTYPES if d.code is not None}
FLOAT_CODES = (float32.code, float64.code)  # what the SIMD kernels compute in
HALF_CODES = (float16.code, bfloat16.code)  # stored in 2 bytes, computed in float32
SMALL_INT_CODES = (uint8.code, int8.code, int16.code)  # stored in 1 or 2 bytes, computed in int32


def _lookup(name):
    return BY_NAME[name]


class CapabilityError(NotImplementedError):
    """An operation needs a capability this stage lacks (its ``LACKS`` names it): a dtype it
    does not compute in, or a view on a stage that copies. A ``NotImplementedError``, as
    PyTorch raises for a dtype an operation does not implement."""


class ArgumentError(ValueError, RuntimeError):
    """An argument whose value the operation refuses: an unknown rounding mode or reduction,
    malformed einsum subscripts, a step or window below 1, clamp without bounds. A
    ``ValueError``, as this project's bad arguments are, and the ``RuntimeError`` PyTorch
    raises for them, so that ``except RuntimeError`` written for PyTorch catches it."""


class UnknownModeError(ValueError, NotImplementedError):
    """A mode the operation does not have (``pad``'s). A ``ValueError``, and the
    ``NotImplementedError`` (a ``RuntimeError``) PyTorch raises for it."""


# ---------------------------------------------------------------- devices

# the device types PyTorch accepts in a device string
_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga",
          "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone", "webgpu")


class DeviceError(RuntimeError, ValueError):
    """A device this stage cannot use, or a device string that names none. A RuntimeError,
    as PyTorch's is, and a ValueError, as this project's bad arguments are."""


class device:
    """A device: a type (``"cpu"``, ``"cuda"``, ...) and an optional index, written
    ``device("cpu")``, ``device("cpu:0")`` or ``device("cpu", 0)``. As ``torch.device``:
    ``str`` gives ``"cpu"`` or ``"cpu:0"``, ``repr`` ``device(type='cpu')``, and two devices
    are equal when type and index are (``device("cpu") != device("cpu:0")``; a device never
    equals a string)."""

    __slots__ = ("type", "index")

    def __init__(self, type, index=None):
        if isinstance(type, device):
            if index is not None:
                raise DeviceError("device(): type (a device) and index cannot both be given")
            type, index = type.type, type.index
        elif not isinstance(type, str):
            raise DeviceError(f"device(): expected a device string such as 'cpu', got {type!r}")
        elif ":" in type:
            if index is not None:
                raise DeviceError(f"device(): type {type!r} already has an index; index={index} "
                                  f"cannot also be given")
            type, _, number = type.partition(":")
            if not number.isdigit() or (len(number) > 1 and number[0] == "0"):
                raise DeviceError(f"Invalid device string: '{type}:{number}'")
            index = int(number)
        if type not in _TYPES:
            raise DeviceError(f"Expected one of {', '.join(_TYPES)} device type at start of device "
                              f"string: {type}")
        if index is not None and (not isinstance(index, int) or isinstance(index, bool) or index < 0):
            raise DeviceError(f"Device index must not be negative (or a non-integer), got {index!r}")
        self.type = type
        self.index = index

    def __repr__(self):
        if self.index is None:
            return f"device(type={self.type!r})"
        return f"device(type={self.type!r}, index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __hash__(self):
        return hash((self.type, self.index))

    def __reduce__(self):
        return device, (self.type, self.index)


# ---------------------------------------------------------------- ops

class Op(NamedTuple):
    """One elementwise op: its ``name`` (the string every backend's ``unary``/``binary``
    takes), ``arity``, whether it ``returns_bool`` whatever its operands, what the frontend
    does with ``integers`` (``"keep"``: computed in their dtype; ``"promote"``: made the
    default float dtype first; ``"refuse"``: a TypeError, as PyTorch's), and its
    ``gradient``: ``"rule"`` (a hand-written derivative), ``"flat"`` (zero almost
    everywhere) or ``None`` (integer and logic ops, never differentiated)."""
    name: str
    arity: int
    returns_bool: bool = False
    integers: str = "keep"
    gradient: str = None


def _ops(arity, names, **facts):
    return [Op(name, arity, **facts) for name in names.split()]


UNARY = {op.name: op for op in (
    _ops(1, "neg abs relu", gradient="rule")
    + _ops(1, "exp log sqrt rsqrt sin cos tanh sigmoid reciprocal gelu silu erf log1p", integers="promote",
           gradient="rule")
    + [Op(f.name, 1, integers="promote", gradient="rule") for f in FUNCTIONS]  # the op table's
    + _ops(1, "sign floor ceil round trunc", gradient="flat")
    + _ops(1, "isnan isinf isfinite isposinf isneginf logical_not", returns_bool=True)
    + _ops(1, "bitwise_not"))}

BINARY = {op.name: op for op in (
    _ops(2, "add sub mul pow maximum minimum fmod", gradient="rule")
    + _ops(2, "div", integers="promote", gradient="rule")  # true division
    + _ops(2, "atan2 copysign", integers="promote", gradient="rule")
    + _ops(2, "hypot", integers="refuse", gradient="rule")
    + _ops(2, "floordiv remainder bitwise_and bitwise_or bitwise_xor left_shift right_shift")
    + _ops(2, "eq ne lt le gt ge logical_and logical_or logical_xor", returns_bool=True))}

BOOL_RESULT = frozenset(name for table in (UNARY, BINARY) for name, op in table.items() if op.returns_bool)
COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
REDUCE = ("sum", "prod", "max", "min", "any", "all")  # reduce(op, ...); any and all give bool
ARG_REDUCE = ("argmax", "argmin")
SCAN = ("sum", "prod", "max", "min", "logsumexp")  # scan(op, ...), the cumulative forms


# ---------------------------------------------------------------- fused kernels

# Every fused kernel a backend may offer, under the name its ``FUSED`` set gives it: the
# backend functions it brings, each with the positions of its buffer arguments (by which
# stage 4 sends a call to the device its buffers live on). A backend's ``FUSED`` names the
# ones it implements; the frontend calls a function only where its kernel is named there.
FUSED_KERNELS = {
    "softmax": {"softmax": (0,), "softmax_backward": (0, 1)},
    "log_softmax": {"log_softmax": (0,), "softmax_backward": (0, 1)},
    "cross_entropy": {"cross_entropy": (0, 1, 2), "cross_entropy_backward": (0, 1, 2, 3)},
    "linear": {"linear": (0, 1, 2), "linear_backward": (0, 1, 2, 3)},
    "layer_norm": {"layer_norm": (0, 2, 3), "layer_norm_backward": (0, 1, 2, 3, 4)},
    "adam": {"adam_step": (0, 1, 2, 3, 4)},
    "sgd": {"sgd_step": (0, 1, 2)},
    "rmsprop": {"rmsprop_step": (0, 1, 2, 3, 4)},
    "conv2d": {"conv2d": (0, 1, 2), "conv2d_backward": (0, 1, 2)},
    "max_pool2d": {"max_pool2d": (0,), "max_pool2d_backward": (0, 1)},
    "avg_pool2d": {"avg_pool2d": (0,), "avg_pool2d_backward": (0,)},
    "batch_norm": {"batch_norm": (0, 1, 2, 3, 4), "batch_norm_backward": (0, 1, 2, 3, 4, 5)},
    "lstm_cell": {"lstm_cell": (0, 1), "lstm_cell_backward": (0, 1, 2, 3, 4)},
    "recurrent": {"recurrent": (3, 4, 5, 6, 7, 8), "recurrent_backward": (3, 4, 5, 7, 9)},
    "gelu": {"gelu": (0,), "gelu_backward": (0, 1)},
    "relu": {"relu_backward": (0, 1)},
    "attention": {"attention": (0, 1, 2, 3), "attention_backward": (0, 1, 2, 3, 4, 5, 6)},
}
