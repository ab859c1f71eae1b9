"""NumPy arrays in every layout through ``tensor``, ``as_tensor`` and ``from_numpy``.

Sliced, reversed, Fortran-ordered, transposed, broadcast, read-only, misaligned, 0-d and
empty arrays of every dtype a stage holds give PyTorch's values, dtype and shape. ``tensor``
and ``as_tensor`` copy (the stage's documented promise). ``from_numpy`` shares the array's
memory, as PyTorch's does, where the stage can (its ``LACKS`` omits "dlpack") and the array
is writable and aligned; elsewhere it copies, as its docstring says, and a write to the
tensor leaves the array as it was.
"""
import importlib
import warnings

import numpy as np
import pytest

from .helpers_core import sgdt
from .oracle import need_torch

# every dtype a stage may hold that NumPy has (NumPy has no bfloat16)
DTYPES = ("float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8", "bool")


def _base(dtype):
    # zeros among the values, so that a fill with 1 shows whether a write went through
    return (np.arange(18).reshape(3, 6) % (2 if dtype == "bool" else 5)).astype(dtype)


def _read_only(a):
    a = a.copy()
    a.flags.writeable = False
    return a


def _misaligned(a):
    raw = np.zeros(a.nbytes + 1, np.uint8)
    m = np.ndarray(a.shape, a.dtype, buffer=raw, offset=1)
    m[...] = a
    return m


LAYOUTS = {
    "contiguous": lambda a: a,
    "sliced columns": lambda a: a[:, ::2],
    "sliced rows": lambda a: a[1::2],
    "negative strides": lambda a: a[::-1, ::-2],
    "reversed 1-d": lambda a: a[0, ::-1],
    "fortran order": np.asfortranarray,
    "transposed": lambda a: a.T,
    "broadcast": lambda a: np.broadcast_to(a[1], (4, 6)),
    "read-only": _read_only,
    "misaligned": _misaligned,
    "0-d": lambda a: a[1, 2, ...],
    "empty": lambda a: a[:, :0],
    "empty rows": lambda a: a[3:],
}


def _host(t):
    return t.cpu().numpy() if t.device.type != "cpu" else t.numpy()


def _shares(sg, array):
    """Whether the stage's from_numpy promises to share ``array``'s memory: the package's
    LACKS decides (its tensor is on the CPU, even where a device is the default)."""
    lacks = importlib.import_module(sg.__name__).LACKS
    return "dlpack" not in lacks and array.flags.writeable and array.flags.aligned


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_layouts_give_pytorchs_values(sg, dtype, layout):
    torch = need_torch()
    array = LAYOUTS[layout](_base(dtype))
    if dtype in sg.LACKS:  # a dtype the stage declares it lacks is refused, by every entry point
        for make in (sg.tensor, sg.as_tensor, sg.from_numpy):
            with pytest.raises(sg.CapabilityError):
                make(array)
        return
    before = array.copy()
    want = torch.tensor(array.copy()).numpy()  # a copy: PyTorch refuses negative strides even here
    for name in ("tensor", "as_tensor", "from_numpy"):
        t = getattr(sg, name)(array)
        assert t.dtype is sgdt(sg, dtype), name
        assert tuple(t.shape) == want.shape, name
        got = _host(t)
        assert got.dtype == want.dtype and np.array_equal(got, want), f"{name}: {got} != {want}"
        if name == "from_numpy":
            assert t.device.type == "cpu"  # as PyTorch's, whatever the default device
        shared = name == "from_numpy" and _shares(sg, array)
        t.fill_(1)
        if shared:
            assert np.all(array == 1), f"{name}: a write to the tensor did not reach the array"
            array[...] = 0
            assert not _host(t).any(), f"{name}: a write to the array did not reach the tensor"
            array[...] = before
        else:
            assert np.array_equal(array, before), f"{name}: a copy wrote to the array"


def _stage_shares(sg, layout):
    """Whether a write to the stage's from_numpy of a fresh ``layout`` array reaches it."""
    array = LAYOUTS[layout](_base("float32"))
    before = array.copy()
    sg.from_numpy(array).fill_(7)
    return not np.array_equal(array, before)


def _pytorch_shares(torch, layout):
    """Whether PyTorch's from_numpy shares a ``layout`` array's memory (None: it refuses)."""
    array = LAYOUTS[layout](_base("float32"))
    with warnings.catch_warnings():  # a read-only array: shared, with a warning
        warnings.simplefilter("ignore")
        try:
            t = torch.from_numpy(array)
        except ValueError:
            return None
    return bool(array.size) and np.shares_memory(t.numpy(), array)


# where the stage's from_numpy and PyTorch's part, as (PyTorch, stage): PyTorch shares a
# read-only array (a broadcast one included) and warns that writing is undefined, where
# stagegrad tensors are always writable; the stage copies a misaligned array, which its
# kernels may not read; PyTorch refuses negative strides, which the stage's views hold
SHARING_DIFFERS = {"broadcast": (True, False), "read-only": (True, False), "misaligned": (True, False),
                   "negative strides": (None, True), "reversed 1-d": (None, True)}


@pytest.mark.capability("dlpack")
@pytest.mark.parametrize("layout", LAYOUTS)
def test_from_numpy_shares_where_pytorch_does(sg, layout):
    """Every layout PyTorch's from_numpy shares, the stage's shares too (an empty one has
    nothing to share), but for the differences above."""
    theirs = _pytorch_shares(need_torch(), layout)
    ours = _stage_shares(sg, layout)
    assert (theirs, ours) == SHARING_DIFFERS.get(layout, (theirs, theirs))
