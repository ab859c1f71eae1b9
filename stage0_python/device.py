"""``sg.device``: where a tensor lives. Every stage up to 3 computes on the CPU only, so
``device`` objects can name any device PyTorch knows (a program may build
``device("cuda")`` before asking whether one exists), but a tensor can be put only on
the CPU; asking for another device raises ``DeviceError`` naming it."""

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


CPU = device("cpu")


def check_device(dev, op):
    """``dev`` (a device, a string, or None for the default device) made a device, refused
    unless it is the CPU: a DeviceError naming ``op`` and the device."""
    if dev is None:
        return _DEFAULT[0]
    d = dev if isinstance(dev, device) else device(dev)
    if d.type != "cpu":
        raise DeviceError(f"{op}: device {str(d)!r} is not available: this stage runs on the CPU "
                          f"only (use device='cpu')")
    return d  # any CPU index is the one CPU, as in PyTorch


_DEFAULT = [CPU]


def get_default_device():
    """The device creation functions use when given none (the CPU unless set)."""
    return _DEFAULT[0]


def set_default_device(dev):
    """Make ``dev`` (None: the CPU) the device creation functions use when given none, as
    ``torch.set_default_device``; a device the stage cannot use raises DeviceError."""
    _DEFAULT[0] = CPU if dev is None else check_device(dev, "set_default_device")


def device_of(buf):
    """The device a backend buffer lives on: the CPU, on every stage before stage 4."""
    return CPU


def place(buf, dev):
    """``buf`` on ``dev`` (a device ``check_device`` returned): ``buf`` itself here."""
    return buf


def fused(name, *bufs):
    """Whether the backend's fused kernel ``name`` takes these buffers (see ``FUSED``)."""
    return name in _B.FUSED


def max_buffer_bytes(dev):
    """The largest buffer one kernel can use on ``dev``, or None where memory alone limits it
    (the CPU): convolution splits its batch to keep its im2col under it."""
    return None


from . import backend as _B  # noqa: E402  (the backend imports nothing from here)
