"""A stand-in for CuPy that runs stage 4's CUDA kernels on the host, for checking the
kernels' logic and the launch layer on a machine without a GPU. Not a GPU: its timings
mean nothing, and what only hardware shows (occupancy, races between warps, NVRTC itself)
it cannot show.

Put this folder first on ``PYTHONPATH`` and ``sg.cuda.is_available()`` is True: memory is
NumPy's, a ``RawModule`` pastes the kernel source after ``emulation.h`` and compiles it
with g++ (C++20, cached under ``$STAGEGRAD_CUDA_ON_HOST_CACHE``), and a launch runs every
block in turn. Only what stage 4 and its tests use is here.

Pinned memory (``cuda.alloc_pinned_memory``) comes from a pool, as CuPy's does: a block
goes back to it when the last reference to its ``PinnedMemoryPointer`` dies, and every
block the pool holds, in use or free, is "page-locked" to ``runtime.pointerGetAttributes``
(memory type host), as cudaHostAlloc's memory is until freed. Copies are synchronous here,
so an asynchronous copy is finished when it returns.

A stream captures as CuPy's does (``Stream.begin_capture``, ``end_capture`` giving a
``Graph``, ``Graph.launch``): the stream's ``ptr`` is the address of a small struct
(emulation.h's ``on_host::Stream``) that the compiled launch reads, and while it captures a
launch hands its argument bytes to the stream's recorder instead of running; a library call
(``matmul``) on a capturing stream is recorded too. ``Graph.launch`` runs the records in
order. Device memory comes from NumPy, or, inside ``cuda.using_allocator``, from the
allocator given, such as a ``cuda.MemoryPool``, which keeps every block it hands out for
itself (a freed block goes back to it, never to NumPy) while it lives.
"""
import contextlib
import ctypes
import hashlib
import os
import subprocess
import tempfile
import time
import types
import weakref

import numpy as np

_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_CACHE = os.environ.get("STAGEGRAD_CUDA_ON_HOST_CACHE",
                        os.path.join(tempfile.gettempdir(), "stagegrad-cuda-on-host"))
float32, float16, uint16, uint32, uint64 = np.float32, np.float16, np.uint16, np.uint32, np.uint64
__version__ = "0+host-emulation"


class ndarray(np.ndarray):
    """Device memory: host memory here, with CuPy's transfer methods."""

    def set(self, arr, stream=None):
        self[...] = arr

    def get(self, stream=None, **kwargs):
        return np.array(self)

    @property
    def data(self):
        return _MemoryPointer(self.__array_interface__["data"][0])


class _MemoryPointer:
    """CuPy's ``MemoryPointer``: an address, and copies between it and host memory (``mem``:
    an int or a ``ctypes.c_void_p``), done at once whatever the stream (a copy from the host
    on a capturing stream is recorded instead)."""

    def __init__(self, ptr):
        self.ptr = ptr

    def copy_from_host_async(self, mem, size, stream=None):
        """Copy ``size`` bytes from host address ``mem`` here."""
        dst, src = self.ptr, getattr(mem, "value", mem)
        if stream is not None and stream.is_capturing():
            stream._records.append(lambda: ctypes.memmove(dst, src, size))
        else:
            ctypes.memmove(dst, src, size)

    def copy_from_device_async(self, src, size, stream=None):
        """Copy ``size`` bytes from the device pointer ``src`` here."""
        ctypes.memmove(self.ptr, src.ptr, size)

    def copy_to_host_async(self, mem, size, stream=None):
        """Copy ``size`` bytes from here to host address ``mem``."""
        ctypes.memmove(getattr(mem, "value", mem), self.ptr, size)


class PinnedMemoryPointer(np.ndarray):
    """Page-locked host memory from the pool (``alloc_pinned_memory``): its buffer protocol
    gives the bytes, ``ptr`` their address. An array here only so that it exports a buffer
    (a Python class cannot before 3.12); treat it as CuPy's pointer object."""

    @property
    def ptr(self):
        """The block's address."""
        return self.__array_interface__["data"][0]


class _BlockPool:
    """A pool as CuPy's: blocks rounded up to 512 bytes, a freed block kept for the next
    allocation of its size; ``pointer`` is the class of what ``malloc`` hands out."""
    pointer = None

    def __init__(self):
        self._free = {}  # rounded size -> blocks (plain arrays owning their memory)
        self._blocks = {}  # address -> size, of every block held (in use or free)

    def malloc(self, size):
        """A ``pointer`` to at least ``size`` bytes: a free block of that rounded size when
        the pool has one; the block comes back to the pool when the pointer dies."""
        size = max(512, -(-size // 512) * 512)
        free = self._free.get(size)
        block = free.pop() if free else np.empty(size, np.uint8)
        self._blocks[block.__array_interface__["data"][0]] = size
        mem = block.view(self.pointer)
        weakref.finalize(mem, self._release, size, block)
        return mem

    def _release(self, size, block):
        """A pointer died: its block is free for the next allocation of its size."""
        self._free.setdefault(size, []).append(block)

    def n_free_blocks(self):
        """Blocks held for reuse, not in use."""
        return sum(len(v) for v in self._free.values())

    def free_all_blocks(self):
        """Give the free blocks back (they stop being page-locked)."""
        for blocks in self._free.values():
            for b in blocks:
                del self._blocks[b.__array_interface__["data"][0]]
        self._free.clear()

    def _holds(self, ptr):
        """Whether ``ptr`` lies in a block of the pool, in use or free."""
        return any(start <= ptr < start + size for start, size in self._blocks.items())

    def used_bytes(self):
        """Bytes of the blocks in use."""
        return self.total_bytes() - sum(len(b) for v in self._free.values() for b in v)

    def total_bytes(self):
        """Bytes of every block held, in use or free."""
        return sum(self._blocks.values())


class PinnedMemoryPool(_BlockPool):
    """CuPy's pinned memory pool."""
    pointer = PinnedMemoryPointer


class MemoryPointer(np.ndarray):
    """A block of a ``MemoryPool``: its buffer protocol gives the bytes (an array here only
    for that, as ``PinnedMemoryPointer``), ``ptr`` their address."""

    @property
    def ptr(self):
        return self.__array_interface__["data"][0]


class MemoryPool(_BlockPool):
    """CuPy's device memory pool, as a graph's private pool uses it: every block it hands
    out stays its own while it lives (NumPy never gets a freed block back to hand to
    another allocation)."""
    pointer = MemoryPointer


_PINNED = PinnedMemoryPool()
_ALLOCATOR = [None]  # using_allocator's: None allocates from NumPy


@contextlib.contextmanager
def _using_allocator(allocator=None):
    """CuPy's ``cuda.using_allocator``: device memory from ``allocator(nbytes)`` inside."""
    previous, _ALLOCATOR[0] = _ALLOCATOR[0], allocator
    try:
        yield
    finally:
        _ALLOCATOR[0] = previous


def get_default_pinned_memory_pool():
    return _PINNED


def _pointer_attributes(ptr):
    """cudaPointerGetAttributes: type 1 (cudaMemoryTypeHost) for page-locked memory, 0
    (unregistered) for any other host address."""
    return types.SimpleNamespace(type=1 if _PINNED._holds(ptr) else 0, device=-1,
                                 hostPointer=ptr if _PINNED._holds(ptr) else 0, devicePointer=0)


def _device(a):
    return np.asarray(a).view(ndarray)


def empty(shape, dtype=np.float64):
    """Memory filled with 0x7f bytes, never zeros: a kernel that skips an element shows.
    From NumPy, or from the allocator ``cuda.using_allocator`` set (the array keeps the
    block it was given)."""
    allocator = _ALLOCATOR[0]
    if allocator is None:
        a = np.empty(shape, dtype=dtype)
    else:
        dtype = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64))
        # through a memoryview, which holds the block's pointer: NumPy would skip past an
        # array base to the block's owner, and the pointer's death returns the block
        mem = memoryview(allocator(max(count * dtype.itemsize, 1)))
        a = np.frombuffer(mem, dtype=dtype, count=count).reshape(shape)
    a.view(np.uint8)[...] = 0x7F
    return a.view(ndarray)


def empty_like(a):
    return empty(a.shape, a.dtype)


def asarray(a, dtype=None):
    return np.array(a, dtype=dtype).view(ndarray)


def asnumpy(a):
    return np.array(a)


def where(condition, x, y):
    return _device(np.where(condition, x, y))


def abs(a):  # noqa: A001  (CuPy's name)
    return _device(np.abs(np.asarray(a)))


def matmul(a, b, out=None):
    """cuBLAS's place: a float64 product rounded to the operands' dtype; on a capturing
    stream, recorded (into ``out``, or a new array) and not run."""
    if out is None:
        out = empty((*a.shape[:-1], b.shape[-1]), a.dtype)

    def run():
        out[...] = np.matmul(np.asarray(a, np.float64), np.asarray(b, np.float64)).astype(a.dtype)
    stream = _CURRENT[0]
    if stream.is_capturing():
        stream._records.append(run)
    else:
        run()
    return out


class _Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


# emulation.h's on_host::Stream: its recorder, and the signature of a module's kernel handle
_RECORD = ctypes.CFUNCTYPE(None, ctypes.c_void_p, *[ctypes.c_uint] * 6, ctypes.POINTER(ctypes.c_ubyte),
                           ctypes.POINTER(ctypes.c_uint), ctypes.c_uint)
_KERNEL = ctypes.CFUNCTYPE(None, _Dim3, _Dim3, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p)


class _StreamState(ctypes.Structure):
    _fields_ = [("record", _RECORD)]


class _Launch:
    """One recorded launch: the kernel's handle, its grid and block, and a copy of its
    arguments' bytes (16-byte aligned, as the kernel's parameters lay them out), with the
    pointer to each that the handle takes."""

    def __init__(self, f, grid, block, data, offsets, count):
        size = offsets[count]
        self.buffer = ctypes.create_string_buffer(size + 16)
        base = -(-ctypes.addressof(self.buffer) // 16) * 16
        ctypes.memmove(base, data, size)
        self.args = (ctypes.c_void_p * max(count, 1))(*[base + offsets[i] for i in range(count)])
        self.kernel, self.grid, self.block = _KERNEL(f), _Dim3(*grid), _Dim3(*block)

    def __call__(self):
        self.kernel(self.grid, self.block, self.args, None)


class _Stream:
    """CuPy's ``Stream``. ``ptr`` is the address of its ``on_host::Stream``, which the
    compiled launch reads to tell a capturing stream."""

    def __init__(self, non_blocking=False):
        self._state = _StreamState()
        self.ptr = ctypes.addressof(self._state)
        self._records = None  # the capture's records while capturing
        self._recorder = _RECORD(self._record)  # kept: the struct holds its address

    def use(self):
        _CURRENT[0] = self

    def synchronize(self):
        if self.is_capturing():
            raise RuntimeError("cudaErrorStreamCaptureUnsupported: operation not permitted when stream is "
                               "capturing")

    def begin_capture(self, mode=None):
        """Record the launches on this stream from now on, running none."""
        if self.is_capturing():
            raise RuntimeError("cudaErrorIllegalState: the stream is already capturing")
        self._records = []
        self._state.record = self._recorder

    def end_capture(self):
        """Stop recording: the ``Graph`` of what was recorded."""
        if not self.is_capturing():
            raise RuntimeError("cudaErrorIllegalState: the stream is not capturing")
        records, self._records = self._records, None
        self._state.record = _RECORD()
        return Graph(records)

    def is_capturing(self):
        return self._records is not None

    def _record(self, f, gx, gy, gz, bx, by, bz, data, offsets, count):
        self._records.append(_Launch(f, (gx, gy, gz), (bx, by, bz), data, offsets, count))


class Graph:
    """CuPy's ``cuda.Graph``: the records of one capture, run in order by ``launch``."""

    def __init__(self, records):
        self._records = records

    def launch(self, stream=None):
        for run in self._records:
            run()


_CURRENT = [_Stream()]


class _Pool:
    """No pool: the figures are stand-ins (NumPy owns the memory)."""

    def used_bytes(self):
        return 1 << 30

    def total_bytes(self):
        return 1 << 30

    def free_all_blocks(self):
        pass


def get_default_memory_pool():
    return _Pool()


class _Device:
    def __init__(self, index):
        pass

    def use(self):
        pass


class _Event:
    done = True  # every copy and launch has finished when it returns

    def __init__(self, block=False, disable_timing=False, interprocess=False):
        pass

    def record(self, stream=None):
        self.t = time.perf_counter()

    def synchronize(self):
        pass


class _Generator:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def standard_normal(self, shape, dtype=np.float64):
        return _device(self.rng.standard_normal(shape).astype(dtype))


random = types.SimpleNamespace(default_rng=_Generator)
cuda = types.SimpleNamespace(
    runtime=types.SimpleNamespace(
        getDeviceCount=lambda: 1, memGetInfo=lambda: (1 << 30, 1 << 30),
        pointerGetAttributes=_pointer_attributes, memoryTypeHost=1,
        # two SMs of 512 threads: a grid-stride kernel's grid (Runtime.grid) stays small, so
        # that its threads loop, as on a GPU under a large tensor
        getDeviceProperties=lambda i: {"name": b"host emulation (tools/cuda_on_host)", "major": 8,
                                       "minor": 0, "multiProcessorCount": 2,
                                       "maxThreadsPerMultiProcessor": 512}),
    Device=_Device, Stream=_Stream, Graph=Graph, alloc_pinned_memory=_PINNED.malloc,
    PinnedMemoryPointer=PinnedMemoryPointer, PinnedMemoryPool=PinnedMemoryPool,
    MemoryPool=MemoryPool, MemoryPointer=MemoryPointer, using_allocator=_using_allocator,
    compiler=types.SimpleNamespace(compile_using_nvrtc=lambda code, options=(), name_expressions=():
                                   (code.encode(), {n: n for n in name_expressions})),
    function=types.SimpleNamespace(Module=lambda: _Module()),
    Event=_Event, get_current_stream=lambda: _CURRENT[0],
    get_elapsed_time=lambda a, b: (b.t - a.t) * 1e3)

class _Module:
    """CuPy's ``cuda.function.Module``: here the "binary" is the source itself, and each
    function a one-name ``RawModule``."""

    def load(self, binary):
        self.code = binary.decode()

    def get_function(self, name):
        return RawModule(self.code, name_expressions=[name]).get_function(name)


class RawModule:
    """The kernels of ``code``, compiled by g++ for the host on first use."""

    def __init__(self, code, options=(), name_expressions=()):
        if any(line.startswith("#include") for line in code.splitlines()):
            raise ValueError("the source includes a header: NVRTC is given no include path")
        self.code, self.names = code, list(name_expressions)
        self.barriers = "__syncthreads" in code

    def get_function(self, name):
        if name not in self.names:
            raise ValueError(f"{name} is not among the module's name expressions")
        with open(os.path.join(_HERE, "emulation.h"), encoding="utf-8") as f:
            src = (f.read() + "\n" + self.code + "\n"
                   # the kernel's handle: a function of the grid, the block, the arguments and
                   # the capturing stream that records the launch (none: run it)
                   'extern "C" void stagegrad_kernel(dim3 grid, dim3 block, void** args, '
                   "const on_host::Stream* capturing) {\n"
                   f"  on_host::launch_on(&{name}, (void*)&stagegrad_kernel, grid, block, args, "
                   f"{str(self.barriers).lower()}, capturing);\n}}\n"
                   # what the runtime launches it through, in place of the driver's cuLaunchKernel
                   'extern "C" int stagegrad_cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, '
                   "unsigned bx, unsigned by, unsigned bz, unsigned shared_bytes, void* stream, "
                   "void** params, void** extra) {\n"
                   "  return on_host::launch_kernel(f, gx, gy, gz, bx, by, bz, shared_bytes, stream, params, "
                   "extra);\n}\n")
        os.makedirs(_CACHE, exist_ok=True)
        lib = os.path.join(_CACHE, hashlib.sha1(src.encode()).hexdigest() + ".so")
        if not os.path.exists(lib):
            part = f"{lib[:-3]}.{os.getpid()}"  # this process's own files: workers may compile it at once
            with open(part + ".cpp", "w", encoding="utf-8") as f:
                f.write(src)
            r = subprocess.run(["g++", "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", "-w", "-o",
                                part + ".so", part + ".cpp"], capture_output=True, text=True)
            os.remove(part + ".cpp")
            if r.returncode:
                raise RuntimeError(f"{name} does not compile for the host:\n{r.stderr[-3000:]}")
            os.replace(part + ".so", lib)
        return Function(ctypes.CDLL(lib))


class Function:
    """A compiled kernel as CuPy's ``Function`` shows it: ``ptr``, its handle (the address
    of the library's ``stagegrad_kernel``), and ``launch_entry``, the address of the
    library's function with the driver's ``cuLaunchKernel`` signature, which the runtime's
    compiled launcher calls as it calls the driver's on a GPU."""

    def __init__(self, lib):
        self._lib = lib  # kept: the addresses live as long as the library stays loaded
        self.ptr = ctypes.cast(lib.stagegrad_kernel, ctypes.c_void_p).value
        self.launch_entry = ctypes.cast(lib.stagegrad_cuLaunchKernel, ctypes.c_void_p).value
