"""The CUDA device: one GPU opened through CuPy, its memory pool and stream, and the launch
of one of the project's kernels.

Design: CuPy supplies what the project does not write itself (device memory from its
caching pool, one ``cupy.cuda.Stream`` every launch and copy is queued on, NVRTC to
compile ``kernels/*.cu`` at run time, cuBLAS as the matmul peer). A launch is the kernel's
grid and block and its arguments, which ``kernels.py`` declares once per kernel (pointers,
64-bit integers, doubles) and ``launch`` checks and converts: a CuPy kernel argument of
the wrong scalar type is not an error, it is a corrupted argument. Sizes, strides and
offsets travel as one small int64 array on the device (``p``), as the webgpu device's
parameter buffer does. The host does not wait for a launch; it waits where it reads a
value back (``download``) or asks to (``synchronize``).

Copies between host and device (``copy_to_device``, ``copy_to_host``) go straight between a
host tensor's memory and the device array, one cudaMemcpyAsync each on our stream. From or
into page-locked memory (``alloc_pinned``, CuPy's pinned pool) that is a DMA the host need
not wait for; the runtime then keeps the host memory alive (``_hold``) until the stream has
passed the copy, since CuPy's pinned pool would hand a freed block out again at once.
"""
import ctypes
import hashlib
import os

from ..device import DeviceError
from ..gpu.opening import Opening
from .kernels import KERNELS, source

BLOCK = 256  # threads per block of the one-thread-per-element kernels
MAX_BLOCKS = 1 << 20  # blocks per launch; the kernels loop (grid-stride) past this
PARAMS_KEPT = 4096  # parameter arrays kept on the device (a few hundred KiB at most)
MEMORY_TYPE_HOST = 1  # cudaMemoryTypeHost: what cudaPointerGetAttributes says of page-locked memory
# compiled kernels, keyed by everything that shapes the binary (see Runtime._compile)
CACHE = os.environ.get("STAGEGRAD_CUDA_CACHE",
                       os.path.join(os.path.expanduser("~"), ".cache", "stagegrad", "cuda-kernels"))


class Runtime:
    """The GPU and CuPy's handles on it, opened once (``runtime()``)."""

    def __init__(self):
        import cupy  # the optional dependency: imported only when the device is used
        import numpy
        self.cp, self.np = cupy, numpy
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as e:  # no driver, or a driver older than CuPy's CUDA
            raise DeviceError(f"cuda: no usable CUDA driver ({type(e).__name__}: {e})") from None
        if count == 0:
            raise DeviceError("cuda: no CUDA GPU (the driver reports 0 devices)")
        self.count = count
        self.gpu = cupy.cuda.Device(0)
        self.gpu.use()
        props = cupy.cuda.runtime.getDeviceProperties(0)
        name = props["name"]
        self.name = name.decode() if isinstance(name, bytes) else str(name)
        self.capability = (int(props["major"]), int(props["minor"]))
        self.pool = cupy.get_default_memory_pool()
        # a blocking stream: work queued on the legacy default stream (by another thread,
        # or by a library) stays ordered with ours
        self.stream = cupy.cuda.Stream(non_blocking=False)
        self._modules = {}  # (kernel, name expression) -> (its module, the compiled kernel)
        self._params = {}  # a launch's parameters (tuple) -> their device array (params())
        self._held = []  # (event, host memory) of copies the host did not wait for (_hold)
        self.launches = 0
        self._probe()

    def _probe(self):
        """Compile, launch and read back one small kernel, so that a GPU whose NVRTC or
        driver cannot run our kernels is reported unavailable, with why, here."""
        np = self.np
        try:
            out = self.alloc(1, np.float32)
            value = self.upload(np.array([1.5], dtype=np.float32), np.float32)
            self.launch("fill", "fill<float>", 1, 1, [out, 1, value])
            got = self.download(out, 0, 1)[0]
        except Exception as e:
            raise DeviceError(f"cuda: {self.name} cannot run a kernel (NVRTC or the driver failed: "
                              f"{type(e).__name__}: {e})") from None
        if got != 1.5:
            raise DeviceError(f"cuda: a probe kernel on {self.name} wrote {got}, not 1.5")

    def enter(self):
        """Make this runtime's stream the calling thread's current one (CuPy's copies and
        allocations follow the current stream)."""
        if self.cp.cuda.get_current_stream().ptr != self.stream.ptr:
            self.stream.use()

    # ------------------------------------------------------------ memory

    def alloc(self, n, dtype):
        """A new 1-D CuPy array of ``n`` elements of NumPy ``dtype`` from the pool."""
        self.enter()
        return self.cp.empty(max(n, 1), dtype=dtype)

    def upload(self, host, dtype):
        """A new device array holding ``host`` (a NumPy array), copied on our stream."""
        self.enter()
        out = self.cp.empty(max(host.size, 1), dtype=dtype)
        if host.size:
            out[:host.size].set(self.np.ascontiguousarray(host, dtype=dtype).reshape(-1),
                                stream=self.stream)
        return out

    def download(self, arr, start, count):
        """``count`` elements of ``arr`` from ``start`` as a NumPy array: the host waits for
        every launch queued before."""
        self.enter()
        out = arr[start:start + count].get(stream=self.stream)
        self.stream.synchronize()
        return out

    def alloc_pinned(self, nbytes):
        """``nbytes`` (at least 1) of page-locked host memory from CuPy's pinned memory pool:
        an object with the buffer protocol and ``ptr``, back to the pool when it dies."""
        return self.cp.cuda.alloc_pinned_memory(max(nbytes, 1))

    def is_pinned(self, ptr):
        """Whether the host address ``ptr`` lies in page-locked memory, as the driver says
        (memory pinned by another library counts too, as in PyTorch)."""
        try:
            attrs = self.cp.cuda.runtime.pointerGetAttributes(ptr)
        except Exception:  # drivers before CUDA 11 refuse a pageable address instead
            return False
        return getattr(attrs, "type", getattr(attrs, "memoryType", None)) == MEMORY_TYPE_HOST

    def copy_to_device(self, arr, ptr, nbytes, hold=None):
        """Queue a copy of ``nbytes`` from host address ``ptr`` to the start of the device
        array ``arr``. From pageable memory the driver has read the source when this returns
        (it stages it); from page-locked memory it has not: pass ``hold``, the object that
        keeps that memory alive, and the runtime keeps it until the copy is done."""
        self.enter()
        if nbytes:
            # a ctypes pointer, not an int: older CuPy reads the address from its .value
            arr.data.copy_from_host_async(ctypes.c_void_p(ptr), nbytes, self.stream)
            self._hold(hold)

    def copy_to_host(self, arr, start, nbytes, ptr, hold=None):
        """Queue a copy of ``nbytes`` from element ``start`` of the device array ``arr`` to
        host address ``ptr``, after every launch queued before; the host reads it only after
        a ``synchronize()``. ``hold`` as in ``copy_to_device``."""
        self.enter()
        if nbytes:
            arr[start:].data.copy_to_host_async(ctypes.c_void_p(ptr), nbytes, self.stream)
            self._hold(hold)

    def _hold(self, memory):
        """Keep ``memory`` alive until the stream passes this point; forget what it has
        passed already."""
        if memory is None:
            return
        event = self.cp.cuda.Event(disable_timing=True)
        event.record(self.stream)
        self._held = [(e, m) for e, m in self._held if not e.done]
        self._held.append((event, memory))

    def empty_cache(self):
        """Return the pool's unused blocks to the driver (``sg.cuda.empty_cache()``)."""
        self.synchronize()
        self.pool.free_all_blocks()

    def synchronize(self):
        """Wait until every launch so far has finished."""
        self.stream.synchronize()
        self._held.clear()  # every copy is done: their host memory may go

    # ------------------------------------------------------------ kernels

    def function(self, kernel, instance):
        """The compiled ``instance`` (a name expression such as ``unary<float, float, Exp>``,
        or the kernel's own name) of ``kernel``, compiled by NVRTC on first use."""
        key = (kernel, instance)
        fn = self._modules.get(key)
        if fn is None:
            binary, lowered = self._compile(source(KERNELS[kernel].file), instance)
            module = self.cp.cuda.function.Module()
            module.load(binary)
            fn = self._modules[key] = (module, module.get_function(lowered))
        return fn[1]

    def _compile(self, code, instance):
        """NVRTC's binary of ``code`` and the lowered name of ``instance`` in it, from the
        on-disk cache (``CACHE``) when this source, instance, GPU and compiler built it
        before. NVRTC is called directly: CuPy's ``RawModule`` appends ``-ftz=true`` to the
        caller's options, which flushes float32 subnormals to zero (found on an H200)."""
        digest = hashlib.sha256(repr((code, OPTIONS, instance, self.capability, self.cp.__version__,
                                      self._nvrtc_version())).encode()).hexdigest()
        path = os.path.join(CACHE, digest)
        try:
            with open(path, "rb") as f:
                lowered, binary = f.read().split(b"\n", 1)
            return binary, lowered.decode()
        except (OSError, ValueError):  # not cached yet, or an unreadable entry: compile it
            pass
        binary, mapping = self.cp.cuda.compiler.compile_using_nvrtc(code, options=OPTIONS,
                                                                    name_expressions=[instance])
        lowered = (mapping or {}).get(instance, instance)
        try:  # each process writes its own file, then renames it: workers may compile at once
            os.makedirs(CACHE, exist_ok=True)
            with open(f"{path}.{os.getpid()}", "wb") as f:
                f.write(lowered.encode() + b"\n" + (binary if isinstance(binary, bytes) else binary.encode()))
            os.replace(f"{path}.{os.getpid()}", path)
        except OSError:  # a read-only home: compile again next time
            pass
        return binary, lowered

    def _nvrtc_version(self):
        """NVRTC's version, part of the cache key (a new compiler rebuilds)."""
        try:
            from cupy_backends.cuda.libs import nvrtc
            return nvrtc.getVersion()
        except (ImportError, AttributeError):  # the host emulation
            return None

    def params(self, values):
        """The int64 parameter array ``p`` of a launch, on the device. A training loop
        launches the same shapes every step, so each distinct array is uploaded once and
        kept (no kernel writes its ``p``): a launch then costs no host-to-device copy."""
        key = tuple(values)
        p = self._params.get(key)
        if p is None:
            if len(self._params) >= PARAMS_KEPT:
                self._params.clear()
            p = self._params[key] = self.upload(self.np.array(key, dtype=self.np.int64), self.np.int64)
        return p

    def launch(self, kernel, instance, blocks, threads, args):
        """Queue ``instance`` of ``kernel`` over ``blocks`` blocks (at most MAX_BLOCKS: the
        kernels loop past it) of ``threads`` threads."""
        if blocks > 0:
            self.launch_grid(kernel, instance, (min(int(blocks), MAX_BLOCKS),), (int(threads),), args)

    def launch_grid(self, kernel, instance, grid, block, args):
        """Queue ``instance`` of ``kernel`` over the ``grid`` and ``block`` tuples with
        ``args``, each checked against and converted to the kind ``KERNELS`` declares."""
        spec = KERNELS[kernel]
        if len(args) != len(spec.args):
            raise TypeError(f"cuda: {kernel} takes {len(spec.args)} arguments, got {len(args)}")
        converted = []
        for kind, a in zip(spec.args, args):
            if kind == "ptr":
                if not isinstance(a, self.cp.ndarray):
                    raise TypeError(f"cuda: {kernel}: a pointer argument must be a device array, "
                                    f"got {type(a).__name__}")
                converted.append(a)
            else:
                converted.append(SCALARS[kind](self.np)(a))
        self.enter()
        fn = self.function(kernel, instance)
        fn(tuple(int(g) for g in grid), tuple(int(b) for b in block), tuple(converted),
           stream=self.stream)
        self.launches += 1


# each scalar kind's exact C type, as NumPy scalars (CuPy passes their bytes as they are)
SCALARS = {"i64": lambda np: np.int64, "f64": lambda np: np.float64, "f32": lambda np: np.float32,
           "i32": lambda np: np.int32}
# NVRTC's options: C++17 for `if constexpr`; IEEE arithmetic (subnormals kept, division and
# square root correctly rounded: NVRTC's defaults, stated). Contraction into fused
# multiply-adds stays on: CUDA's own math functions are written for it (with it off, erfc
# and pow in float64 lose ulps). Never fast math.
OPTIONS = ("--std=c++17", "--ftz=false", "--prec-div=true", "--prec-sqrt=true")

_OPENING = Opening("cuda", Runtime,
                   not_installed="CuPy is not installed ({}); on a machine with an NVIDIA GPU install the "
                                 "'cuda' extra: pip install 'stagegrad[cuda]'",
                   failed="the GPU could not be opened")
runtime = _OPENING.runtime
is_available = _OPENING.is_available
unavailable_reason = _OPENING.unavailable_reason
