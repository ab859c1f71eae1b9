"""The cuda device's caching allocator (``stage4_gpu/_device_memory.pyx``) and its compiled
elementwise path (``stage4_gpu/_cuda_elementwise.pyx``), under the host emulation of CuPy
in a subprocess (the suite's own process has no GPU).

The allocator: a dead tensor's block goes to the next tensor of its size class, not to
another; the counters (``memory_allocated``, its peak, ``reset_peak_memory_stats``) follow
the live tensors; ``empty_cache`` releases the free blocks; a CUDA graph's pool is its own.
The compiled path: for every kind of operand it takes (row-major, one shape, one dtype) and
every kind it hands to the device layer (broadcast, strided, mixed dtypes, an integer
division the host checks), the values match NumPy's, with one launch an op.
"""
import numpy as np
import pytest

from .emulation import run_emulated

PROGRAM = r'''
import gc, json
import numpy as np
import stage4_gpu as sg
from stage4_gpu._device_memory import rounded
from stage4_gpu.cuda.runtime import runtime

assert sg.cuda.is_available(), sg.cuda.unavailable_reason()
cuda = sg.cuda
out = {}

# the allocator: reuse by size class, and its counters
base = cuda.memory_allocated()
a = sg.empty(1000, device="cuda")
ptr, size = a.data_ptr(), cuda.memory_allocated() - base
del a
b = sg.empty(1001, device="cuda")  # 4004 bytes: the same 4096-byte class as 4000
c = sg.empty(5000, device="cuda")  # another class
out["reuse"] = [b.data_ptr() == ptr, c.data_ptr() != ptr, size, rounded(4000)]
cuda.reset_peak_memory_stats()
peak0 = cuda.max_memory_allocated()
d = sg.empty(1 << 16, device="cuda")
peak1 = cuda.max_memory_allocated()
del d, b, c
out["counters"] = [peak0 - base, peak1 - base, cuda.max_memory_allocated() - base, cuda.memory_allocated() - base]
cached = runtime().memory.cached_bytes
cuda.empty_cache()
out["emptied"] = [cached, runtime().memory.cached_bytes]

# the compiled path and the device layer's, against NumPy, launches counted
rng = np.random.default_rng(0)
x = rng.standard_normal((3, 4)).astype(np.float32)
y = rng.standard_normal((3, 4)).astype(np.float32)
X, Y = sg.tensor(x, device="cuda"), sg.tensor(y, device="cuda")
ix, iy = np.array([[7, -7, 3], [9, 0, -2]], np.int32), np.array([[2, 3, -2], [4, 5, 3]], np.int32)
IX, IY = sg.tensor(ix, device="cuda"), sg.tensor(iy, device="cuda")
YD = Y.double()


def run(name, f):
    before = cuda._launch_count()
    value = f()
    out[name] = [value.cpu().tolist(), str(value.dtype), cuda._launch_count() - before]


run("add", lambda: X + Y)                          # row-major, one shape: compiled
run("exp", lambda: X.exp())
run("lt", lambda: X < Y)                           # a bool result
run("int_mul", lambda: IX * IY)
run("int_floordiv", lambda: IX // IY)              # checked by the host first: the device layer
run("offset", lambda: X[1:] - Y[:2])               # row-major views at offsets
run("broadcast", lambda: X * Y[0])                 # the device layer
run("strided", lambda: X.t() + Y.t())              # the device layer
run("mixed", lambda: X + YD)                        # promoted: a cast, then the op
run("empty", lambda: X[:0] + Y[:0])
try:
    IX // sg.zeros_like(IX)
    out["division_by_zero"] = None
except ZeroDivisionError as e:
    out["division_by_zero"] = str(e)

# a graph's pool is its own: memory a capture allocates is not an eager tensor's
g = cuda.CUDAGraph()
static = sg.ones(256, device="cuda")
with cuda.graph(g):
    inside = static * 2
inside_ptr = inside.data_ptr()
del inside
gc.collect()
eager = [sg.empty(256, device="cuda").data_ptr() for _ in range(4)]
out["graph_pool_kept"] = inside_ptr not in eager
print(json.dumps(out))
'''


@pytest.fixture(scope="module")
def emulated():
    """What ``PROGRAM`` saw on stage 4's cuda device under the host emulation of CuPy."""
    return run_emulated(["-c", PROGRAM], timeout=600)


def test_a_dead_tensors_block_goes_to_the_next_tensor_of_its_size_class(emulated):
    same_block, other_block, size, rounded = emulated["reuse"]
    assert same_block and other_block
    assert size == rounded == 4096


def test_the_counters_follow_the_live_tensors(emulated):
    peak_before, peak_with, peak_after, allocated = emulated["counters"]
    # b (4096 bytes) and c (20480) live at the reset; d adds 262144; the peak stays after d dies
    assert peak_before == 4096 + 20480
    assert peak_with == peak_after == 4096 + 20480 + 262144
    assert allocated == 0


def test_empty_cache_releases_the_free_blocks(emulated):
    cached, after = emulated["emptied"]
    assert cached >= 4096 + 20480 + 262144 and after == 0


def test_a_graphs_memory_is_not_handed_to_eager_tensors(emulated):
    assert emulated["graph_pool_kept"]


X = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
Y = np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32)[3:]
IX, IY = np.array([[7, -7, 3], [9, 0, -2]], np.int32), np.array([[2, 3, -2], [4, 5, 3]], np.int32)
# each case's NumPy answer, dtype, and launches (None: the host's checks launch their own)
CASES = {"add": (X + Y, "float32", 1), "exp": (np.exp(X), "float32", 1), "lt": (X < Y, "bool", 1),
         "int_mul": (IX * IY, "int32", 1), "int_floordiv": (IX // IY, "int32", None),
         "offset": (X[1:] - Y[:2], "float32", 1), "broadcast": (X * Y[0], "float32", 1),
         "strided": (X.T + Y.T, "float32", 1), "mixed": (X + Y.astype(np.float64), "float64", 2),
         "empty": (X[:0] + Y[:0], "float32", 0)}


@pytest.mark.parametrize("name", list(CASES))
def test_elementwise_ops_match_numpy_on_either_path(emulated, name):
    values, dtype, launches = emulated[name]
    want, want_dtype, want_launches = CASES[name]
    np.testing.assert_allclose(np.asarray(values, dtype=want.dtype).reshape(want.shape), want, rtol=1e-6)
    assert dtype.endswith(want_dtype)
    assert want_launches is None or launches == want_launches


def test_an_integer_division_by_zero_is_still_refused(emulated):
    assert "division by zero" in emulated["division_by_zero"]
