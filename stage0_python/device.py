"""``sg.device``: where a tensor lives. Every stage up to 3 computes on the CPU only, so
``device`` objects can name any device PyTorch knows (a program may build
``device("cuda")`` before asking whether one exists), but a tensor can be put only on
the CPU; asking for another device raises ``DeviceError`` naming it."""

# one device class and one DeviceError for every stage (the vocabulary's): a device is a
# value, as ``torch.device`` is, and stage 4 rewrites this module around the same ones
from stage0_python.vocabulary import DeviceError, device

CPU = device("cpu")


class DefaultDevice:
    """The device creation functions use when given none: the CPU until ``set``. Each
    stage's device module keeps one (``_DEFAULT``), which asks that module's
    ``check_device`` whether the stage can use a device set."""
    __slots__ = ("device", "_check")

    def __init__(self, check_device):
        self.device = CPU
        self._check = check_device

    def get(self):
        """The device creation functions use when given none (the CPU unless set)."""
        return self.device

    def set(self, dev):
        """Make ``dev`` (None: the CPU) the device creation functions use when given none, as
        ``torch.set_default_device``; a device the stage cannot use raises DeviceError."""
        self.device = CPU if dev is None else self._check(dev, "set_default_device")


def check_device(dev, op):
    """``dev`` (a device, a string, or None for the default device) made a device, refused
    unless it is the CPU: a DeviceError naming ``op`` and the device."""
    if dev is None:
        return _DEFAULT.device
    d = dev if isinstance(dev, device) else device(dev)
    if d.type != "cpu":
        raise DeviceError(f"{op}: device {str(d)!r} is not available: this stage runs on the CPU "
                          f"only (use device='cpu')")
    return d  # any CPU index is the one CPU, as in PyTorch


_DEFAULT = DefaultDevice(check_device)
get_default_device, set_default_device = _DEFAULT.get, _DEFAULT.set


def device_of(buf):
    """The device a backend buffer lives on: the CPU, on every stage before stage 4."""
    return CPU


def place(buf, dev, non_blocking=False):
    """``buf`` on ``dev`` (a device ``check_device`` returned): ``buf`` itself here.
    ``non_blocking`` (PyTorch's) has nothing to overlap here."""
    return buf


def pin(buf):
    """``buf`` in page-locked memory, for copies to a GPU that the host need not wait for:
    a RuntimeError here, as on a PyTorch build without an accelerator, since page-locked
    memory belongs to a GPU and this stage has none (stage 4 rewrites this)."""
    raise RuntimeError("Cannot access accelerator device when none is available.")


def is_pinned(buf):
    """Whether ``buf`` lies in page-locked memory: never, here (see ``pin``)."""
    return False


def fused(name, *bufs):
    """Whether the backend's fused kernel ``name`` takes these buffers (see ``FUSED``)."""
    return name in _B.FUSED


def max_buffer_bytes(dev):
    """The largest buffer one kernel can use on ``dev``, or None where memory alone limits it
    (the CPU): convolution splits its batch to keep its im2col under it."""
    return None


from . import backend as _B  # noqa: E402  (the backend imports nothing from here)
