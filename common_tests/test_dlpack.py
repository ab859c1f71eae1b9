"""DLPack: tensors shared with NumPy and PyTorch without a copy, both ways.

Sharing is checked by writing through one side and reading the other. Lifetimes (the
producer deleted, the pool reusing blocks, capsules dropped unconsumed) run in a fresh
interpreter: a use-after-free there fails a test instead of ending the run. Stages that
cannot share memory declare ``dlpack`` in their LACKS and must say why.
"""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from .helpers_core import data
from .oracle import need_torch

DTYPES = ["bool", "int32", "int64", "float32", "float64"]
SHAPES = [(), (0,), (2, 0, 3), (5,), (3, 4)]


def _sample(shape, dtype, seed=0):
    return data(shape, dtype=dtype, seed=seed) if shape else np.array(data((1,), dtype, seed)[0])


def _new_value(dtype):
    """A value no sample holds (bool: the negation is taken instead)."""
    return 77 if dtype != "bool" else None


def _write(arr_like, index, dtype):
    """Write a new value at ``index`` (for bool, flip it) and return what now sits there."""
    old = arr_like[index].item() if hasattr(arr_like[index], "item") else arr_like[index]
    value = (not old) if dtype == "bool" else _new_value(dtype)
    arr_like[index] = value
    return value


# ---------------------------------------------------------------- stages that lack it

def test_dlpack_device_is_the_cpu(sg):
    assert sg.zeros(2, device="cpu").__dlpack_device__() == (1, 0)


def test_a_stage_that_lacks_dlpack_says_why(sg):
    if "dlpack" not in sg.LACKS:
        pytest.skip(f"{sg.__name__} shares memory through DLPack")
    calls = [lambda: sg.zeros(2).__dlpack__(), lambda: np.from_dlpack(sg.zeros(2))]
    if "dlpack" not in getattr(sg, "DEVICE_LACKS", ()):  # a device lacks exports; the stage imports
        calls.append(lambda: sg.from_dlpack(np.zeros(2)))
    for call in calls:
        with pytest.raises(sg.CapabilityError, match=r"memory.*lacks dlpack"):
            call()


# ---------------------------------------------------------------- NumPy

@pytest.mark.capability("dlpack")
@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_reads_our_tensor_in_place(sg, dtype):
    t = sg.tensor(data((2, 3), dtype=dtype, seed=1).tolist(), dtype=getattr(sg, dtype))
    a = np.from_dlpack(t)
    assert str(a.dtype) == dtype and a.tolist() == t.tolist()
    assert a.ctypes.data == t.data_ptr()
    v = _write(a, (1, 2), dtype)  # NumPy writes, we read
    assert t[1, 2].item() == v
    v = _write(t, (0, 1), dtype)  # we write, NumPy reads
    assert a[0, 1] == v


@pytest.mark.capability("dlpack")
@pytest.mark.parametrize("dtype", DTYPES)
def test_we_read_a_numpy_array_in_place(sg, dtype):
    a = data((2, 3), dtype=dtype, seed=2)
    t = sg.from_dlpack(a)
    assert t.dtype is getattr(sg, dtype) and t.tolist() == a.tolist()
    assert t.data_ptr() == a.ctypes.data and t.shape == (2, 3) and t.stride() == (3, 1)
    v = _write(a, (1, 0), dtype)
    assert t[1, 0].item() == v
    v = _write(t, (0, 2), dtype)
    assert a[0, 2] == v
    if dtype != "bool":
        t.add_(1)  # an in-place kernel on foreign memory
        assert a[0, 2] == _new_value(dtype) + 1


@pytest.mark.capability("dlpack")
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_numpy_round_trips_every_shape(sg, shape):
    a = _sample(shape, "float32", seed=3)
    t = sg.from_dlpack(a)
    assert t.shape == shape and t.tolist() == a.tolist()
    back = np.from_dlpack(t)
    assert back.shape == shape and back.tolist() == a.tolist()
    if a.size:
        assert back.ctypes.data == a.ctypes.data  # the same memory, after two hand-overs


@pytest.mark.capability("dlpack")
def test_our_views_export_their_strides_and_offset(sg):
    base = sg.arange(24.0).reshape(4, 6)
    for view in (base[1:, ::2], base.T, base[2:, 1:].T, base[3], base[1, 4]):
        a = np.from_dlpack(view)
        assert a.tolist() == view.tolist()
        assert a.strides == tuple(s * 4 for s in view.stride()) and a.ctypes.data == view.data_ptr()
    view = base[1:, ::2]
    np.from_dlpack(view)[0, 1] = -5.0
    assert base[1, 2].item() == -5.0


@pytest.mark.capability("dlpack")
def test_numpy_views_arrive_as_strided_views(sg):
    a = np.arange(24, dtype=np.int64).reshape(4, 6)
    for view in (a[1:, ::2], a.T, a[::-1, 1::3], a[:, ::-2], a[2]):
        t = sg.from_dlpack(view)
        assert t.tolist() == view.tolist()
        assert t.stride() == tuple(s // 8 for s in view.strides) and t.data_ptr() == view.ctypes.data
    t = sg.from_dlpack(a[::-1])  # negative strides: the storage spans the lowest address up
    t[0, 0] = 100
    assert a[3, 0] == 100 and (t + 0).tolist() == a[::-1].tolist()


@pytest.mark.capability("dlpack")
@pytest.mark.parametrize("dtype", ["float16", "uint8", "int8", "int16"])
def test_a_dtype_the_stage_lacks_is_refused_by_name(sg, dtype):
    a = np.ones(3, dtype=dtype)
    if dtype not in sg.LACKS:  # a stage that computes in it shares the memory
        t = sg.from_dlpack(a)
        t[1] = 5
        assert t.dtype is getattr(sg, dtype) and a.tolist() == [1, 5, 1] == t.tolist()
        return
    with pytest.raises(sg.CapabilityError, match=dtype):
        sg.from_dlpack(a)
    assert a.tolist() == [1, 1, 1]  # the capsule was never consumed: the array is untouched


@pytest.mark.capability("dlpack")
def test_an_unknown_dtype_is_a_type_error(sg):
    with pytest.raises(TypeError, match="complex64"):
        sg.from_dlpack(np.ones(3, dtype=np.complex64))


@pytest.mark.capability("dlpack")
def test_a_read_only_array_is_refused(sg):
    a = np.arange(3.0)
    a.flags.writeable = False
    with pytest.raises(BufferError, match="read-only"):
        sg.from_dlpack(a)
    assert sg.from_dlpack(a.copy()).tolist() == [0.0, 1.0, 2.0]


# ---------------------------------------------------------------- PyTorch

@pytest.mark.needs_torch
@pytest.mark.capability("dlpack")
@pytest.mark.parametrize("dtype", DTYPES)
def test_torch_reads_our_tensor_in_place(sg, dtype):
    torch = need_torch()
    t = sg.tensor(data((2, 3), dtype=dtype, seed=4).tolist(), dtype=getattr(sg, dtype))
    b = torch.from_dlpack(t)
    assert str(b.dtype) == f"torch.{dtype}" and b.tolist() == t.tolist()
    assert b.data_ptr() == t.data_ptr()
    v = _write(b, (0, 0), dtype)
    assert t[0, 0].item() == v
    v = _write(t, (1, 1), dtype)
    assert b[1, 1].item() == v


@pytest.mark.needs_torch
@pytest.mark.capability("dlpack")
@pytest.mark.parametrize("dtype", DTYPES)
def test_we_read_a_torch_tensor_in_place(sg, dtype):
    torch = need_torch()
    b = torch.from_numpy(data((3, 2), dtype=dtype, seed=5))
    t = sg.from_dlpack(b)
    assert t.dtype is getattr(sg, dtype) and t.tolist() == b.tolist() and t.data_ptr() == b.data_ptr()
    v = _write(b, (2, 1), dtype)
    assert t[2, 1].item() == v
    v = _write(t, (0, 0), dtype)
    assert b[0, 0].item() == v
    if dtype != "bool":
        b.mul_(2)  # PyTorch's in-place kernel, read by us
        assert t[0, 0].item() == 2 * _new_value(dtype)


@pytest.mark.needs_torch
@pytest.mark.capability("dlpack")
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_torch_round_trips_every_shape(sg, shape):
    torch = need_torch()
    b = torch.from_numpy(_sample(shape, "float64", seed=6))
    t = sg.from_dlpack(b)
    assert t.shape == shape and t.tolist() == b.tolist()
    back = torch.from_dlpack(t)
    assert back.shape == b.shape and back.tolist() == b.tolist()


@pytest.mark.needs_torch
@pytest.mark.capability("dlpack")
def test_strided_views_cross_to_torch_and_back(sg):
    torch = need_torch()
    base = sg.arange(24, dtype=sg.int32).reshape(2, 3, 4)
    view = base.permute(2, 0, 1)[1:, :, ::2]
    b = torch.from_dlpack(view)
    assert b.tolist() == view.tolist() and b.stride() == view.stride() and b.data_ptr() == view.data_ptr()
    b[0, 1, 0] = -1
    assert base[1, 0, 1].item() == -1
    x = torch.arange(30.0).reshape(5, 6)
    for v in (x.t(), x[1:, ::3], x[2:4, 1:].t(), x[:1].expand(4, 6)):
        t = sg.from_dlpack(v)
        assert t.tolist() == v.tolist() and t.stride() == v.stride() and t.data_ptr() == v.data_ptr()


@pytest.mark.needs_torch
@pytest.mark.capability("dlpack")
def test_torch_bfloat16_is_refused_by_name(sg):
    torch = need_torch()
    theirs = torch.tensor([1.5, -3.0, 1e30], dtype=torch.bfloat16)
    if "bfloat16" in sg.LACKS:
        with pytest.raises(sg.CapabilityError, match="bfloat16"):
            sg.from_dlpack(theirs)
        return
    ours = sg.from_dlpack(theirs)  # shared both ways, bit for bit
    ours[0] = 2.5
    assert ours.dtype is sg.bfloat16 and ours.tolist() == theirs.tolist() == [2.5, -3.0, theirs[2].item()]
    back = torch.from_dlpack(ours * 2)
    assert back.dtype == torch.bfloat16 and back.tolist() == (theirs * 2).tolist()


@pytest.mark.needs_torch
@pytest.mark.capability("dlpack")
def test_a_capsule_is_consumed_once(sg):
    torch = need_torch()
    t = sg.arange(4.0)
    capsule = t.__dlpack__()
    assert torch.from_dlpack(capsule).tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(BufferError, match="already consumed"):
        sg.from_dlpack(capsule)
    capsule = torch.arange(3).__dlpack__()
    assert sg.from_dlpack(capsule).tolist() == [0, 1, 2]  # a raw capsule is accepted
    with pytest.raises(BufferError, match="already consumed"):
        sg.from_dlpack(capsule)


# ---------------------------------------------------------------- the protocol's arguments

@pytest.mark.capability("dlpack")
def test_dlpack_arguments(sg):
    t = sg.arange(3.0)
    assert t.__dlpack__(max_version=(1, 0)) is not None  # a legacy capsule, whatever max_version
    assert np.from_dlpack(t, device="cpu").ctypes.data == t.data_ptr()
    copied = np.from_dlpack(t, copy=True)
    copied[0] = 9.0
    assert t[0].item() == 0.0
    with pytest.raises(BufferError, match="stream"):
        t.__dlpack__(stream=1)
    with pytest.raises(BufferError, match="device"):
        t.__dlpack__(dl_device=(2, 0))
    with pytest.raises(RuntimeError, match="requires grad"):
        sg.ones(2, requires_grad=True).__dlpack__()
    with pytest.raises(TypeError, match="__dlpack__"):
        sg.from_dlpack([1, 2])


@pytest.mark.capability("dlpack")
def test_our_own_tensors_share_through_dlpack(sg):
    t = sg.arange(6).reshape(2, 3)
    u = sg.from_dlpack(t.T)
    u[2, 1] = 50
    assert t[1, 2].item() == 50 and u.data_ptr() == t.T.data_ptr()


# ---------------------------------------------------------------- lifetimes, in a subprocess

def _run(stage, script, torch_needed=False):
    """Run ``script`` (``sg`` is the stage) in a fresh interpreter; it must print OK. A
    crash (a use-after-free, a double free) fails the test with the child's stderr."""
    if torch_needed:
        need_torch()
    prelude = "import gc, importlib, sys\nimport numpy as np\nsg = importlib.import_module(sys.argv[1])\n"
    proc = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(script) + "\nprint('OK')", stage],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("OK"), (
        f"exit {proc.returncode}: {proc.stdout[-500:]} {proc.stderr[-1500:]}")


@pytest.mark.capability("dlpack")
def test_an_export_keeps_our_storage_alive(sg):
    _run(sg.__name__, """
        t = sg.arange(10000.0)[5:]
        a = np.from_dlpack(t)
        del t
        gc.collect()
        junk = [sg.full((10000,), -1.0) for _ in range(20)]  # the pool would hand out a freed block
        assert a[0] == 5.0 and a[-1] == 9999.0, a[:3]
        capsule = sg.ones(3).__dlpack__()
        del capsule  # dropped unconsumed: its destructor frees the export
        gc.collect()
    """)


@pytest.mark.capability("dlpack")
def test_an_import_keeps_the_producer_alive_and_frees_it_after(sg):
    _run(sg.__name__, """
        import weakref
        a = np.arange(10000.0)
        alive = weakref.ref(a)
        t = sg.from_dlpack(a)[5:]
        del a
        gc.collect()
        junk = [np.full(10000, -1.0) for _ in range(20)]
        assert alive() is not None and t[0].item() == 5.0 and t[-1].item() == 9999.0
        del t
        gc.collect()
        assert alive() is None  # our storage died, so NumPy's deleter ran
    """)


@pytest.mark.capability("dlpack")
def test_the_pool_never_recycles_foreign_memory(sg):
    _run(sg.__name__, """
        a = np.arange(256.0)
        t = sg.from_dlpack(a)
        assert t._data.storage.is_foreign
        del t
        gc.collect()
        junk = [sg.zeros(256, dtype=sg.float64) for _ in range(20)]  # the same size class
        assert a.tolist() == [float(i) for i in range(256)]
    """)


@pytest.mark.needs_torch
@pytest.mark.capability("dlpack")
def test_torch_lifetimes_both_ways(sg):
    _run(sg.__name__, """
        import torch
        t = sg.arange(5000, dtype=sg.int64)
        b = torch.from_dlpack(t)
        del t
        gc.collect()
        junk = [sg.full((5000,), -1, dtype=sg.int64) for _ in range(20)]
        assert b[4999].item() == 4999
        x = torch.arange(5000)
        u = sg.from_dlpack(x.t())
        del x, b
        gc.collect()
        junk = [torch.full((5000,), -1) for _ in range(20)]
        assert u[4999].item() == 4999
        back = torch.from_dlpack(u)  # PyTorch's memory, through us, back to PyTorch
        del u
        gc.collect()
        assert back[10].item() == 10
    """, torch_needed=True)


@pytest.mark.capability("dlpack")
def test_a_capsule_from_another_device_is_refused(sg):
    _run(sg.__name__, """
        import ctypes
        class Device(ctypes.Structure):
            _fields_ = [("type", ctypes.c_int32), ("id", ctypes.c_int32)]
        class DType(ctypes.Structure):
            _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]
        class Managed(ctypes.Structure):
            _fields_ = [("data", ctypes.c_void_p), ("device", Device), ("ndim", ctypes.c_int32),
                        ("dtype", DType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                        ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64),
                        ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]
        shape = (ctypes.c_int64 * 1)(4)
        memory = (ctypes.c_float * 4)()
        m = Managed(ctypes.addressof(memory), Device(2, 0), 1, DType(2, 32, 1), shape, None, 0, None, None)
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        capsule = new(ctypes.addressof(m), b"dltensor", None)
        try:
            sg.from_dlpack(capsule)
            raise AssertionError("a CUDA capsule was accepted")
        except BufferError as e:
            assert "CUDA" in str(e) and "CPU" in str(e), e
        m.device.type = 1  # the same capsule, now on the CPU: it was left unconsumed
        assert sg.from_dlpack(capsule).tolist() == [0.0] * 4
    """)
