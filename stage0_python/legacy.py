"""PyTorch's legacy tensor types: ``FloatTensor``, ``DoubleTensor``, ``LongTensor``,
``IntTensor`` and ``BoolTensor``; ``HalfTensor``, ``BFloat16Tensor``, ``ByteTensor``,
``CharTensor`` and ``ShortTensor`` exist too, and raise CapabilityError when called on a
stage that lacks their dtype.

Each is a constructor (``sg.LongTensor([1, 2])`` from data, ``sg.FloatTensor(2, 3)`` as a
zero-filled shape) and a type that ``isinstance`` checks by dtype, as in PyTorch. Their
names, as ``Tensor.type()`` returns them, are PyTorch's (``'torch.FloatTensor'``,
``'torch.cuda.FloatTensor'`` on a GPU), because programs compare them with those strings;
``Tensor.type`` accepts them back, and with the stage's package name in place of ``torch``.
"""
from . import dtypes as D
from .arguments import to_dtype
from .device import check_device
from .tensor import Tensor, _legacy_buffer

_STAGE = __name__.rpartition(".")[0]  # this stage's package: Tensor.type() accepts it for torch


class _LegacyType(type):
    """The metaclass that makes each legacy type a constructor and an isinstance check."""

    def __call__(cls, *args, device=None):
        check_device(device, cls.__name__)
        kind = getattr(device, "type", str(device).partition(":")[0])
        if device is not None and kind != "cpu":  # as PyTorch's, on a stage with a GPU too
            raise RuntimeError(f"{cls.__name__}: the legacy types are CPU tensors, but device '{device}' was "
                               f"given; make it with sg.tensor(data, device=...) instead")
        to_dtype(cls.dtype, cls.__name__)  # a dtype this stage only names is refused here
        if args and isinstance(args[0], Tensor) and args[0].dtype is not cls.dtype:
            raise TypeError(f"{cls.__name__}: expected a {cls.dtype.name} tensor, got {args[0].dtype.name} "
                            f"(convert with .to({cls.dtype.name}) or .type({cls.__name__}))")
        return Tensor._make(_legacy_buffer(args, cls.dtype, cls.__name__))

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype

    def __repr__(cls):
        return f"<class '{cls.__module__}.{cls.__name__}'>"


def _legacy(name, dtype, doc):
    return _LegacyType(name, (), {"dtype": dtype, "__doc__": doc, "__module__": _STAGE})


FloatTensor = _legacy("FloatTensor", D.float32, "A float32 tensor: ``FloatTensor(data)`` or ``FloatTensor(*sizes)``.")
DoubleTensor = _legacy("DoubleTensor", D.float64,
                       "A float64 tensor: ``DoubleTensor(data)`` or ``DoubleTensor(*sizes)``.")
LongTensor = _legacy("LongTensor", D.int64, "An int64 tensor: ``LongTensor(data)`` or ``LongTensor(*sizes)``.")
IntTensor = _legacy("IntTensor", D.int32, "An int32 tensor: ``IntTensor(data)`` or ``IntTensor(*sizes)``.")
BoolTensor = _legacy("BoolTensor", D.bool_, "A bool tensor: ``BoolTensor(data)`` or ``BoolTensor(*sizes)``.")

HalfTensor = _legacy("HalfTensor", D.float16, "A float16 tensor (see the stage's LACKS).")
BFloat16Tensor = _legacy("BFloat16Tensor", D.bfloat16, "A bfloat16 tensor (see the stage's LACKS).")
ByteTensor = _legacy("ByteTensor", D.uint8, "A uint8 tensor (see the stage's LACKS).")
CharTensor = _legacy("CharTensor", D.int8, "An int8 tensor (see the stage's LACKS).")
ShortTensor = _legacy("ShortTensor", D.int16, "An int16 tensor (see the stage's LACKS).")

BY_DTYPE = {t.dtype: t for t in (FloatTensor, DoubleTensor, LongTensor, IntTensor, BoolTensor, HalfTensor,
                                 BFloat16Tensor, ByteTensor, CharTensor, ShortTensor)}


def type_name(dtype, device_type="cpu"):
    """``Tensor.type()``'s answer for ``dtype`` on ``device_type``: ``'torch.FloatTensor'``,
    ``'torch.cuda.FloatTensor'`` and so on, PyTorch's spelling."""
    return f"torch.{'' if device_type == 'cpu' else device_type + '.'}{BY_DTYPE[dtype].__name__}"


def dtype_of(spec):
    """The dtype, and the device type or None, that a ``Tensor.type(spec)`` argument names: a
    dtype, a legacy type, or its name (``'torch.FloatTensor'``, ``'torch.cuda.FloatTensor'``,
    or with this stage's package name for ``torch``)."""
    if isinstance(spec, _LegacyType):
        return spec.dtype, None
    if isinstance(spec, str):
        prefix, _, name = spec.rpartition(".")
        package, _, device = prefix.partition(".")
        for t in BY_DTYPE.values():
            if name == t.__name__ and package in (_STAGE, "torch") and device in ("", "cuda"):
                return t.dtype, device or "cpu"
        raise ValueError(f"invalid type: {spec!r} (expected e.g. 'torch.FloatTensor', "
                         f"'torch.cuda.FloatTensor' or '{_STAGE}.FloatTensor')")
    return spec, None
