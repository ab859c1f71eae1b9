"""The CUDA device: one GPU opened through CuPy, its memory pool and stream, and the launch
of one of the project's kernels.

Design: CuPy supplies what the project does not write itself (device memory from its
caching pool, one ``cupy.cuda.Stream`` every launch and copy is queued on, NVRTC to
compile ``kernels/*.cu`` at run time, cuBLAS as the matmul peer). A launch is compiled
code's: ``_launch.Kernel`` (one per compiled kernel, cached here by its name expression)
converts the arguments to the C types ``kernels.py`` declares and calls the driver's
``cuLaunchKernel`` with them, everything by value: sizes, strides and offsets in
common.cuh's ``Params`` struct, pointers as device addresses, so a launch costs no copy
and no array on the device. The host does not wait for a launch; it waits where it reads
a value back (``download``) or asks to (``synchronize``).

Every wait is one ``synchronize``: counted in ``syncs`` (as ``launches`` counts launches), and
where it serves an operation (a read back, a blocking copy) checked against the sync debug
mode first (``sg.cuda.set_sync_debug_mode``: "warn" warns, "error" raises RuntimeError
naming the operation, before anything waits). An explicit ``sg.cuda.synchronize()`` is
counted and not flagged, as PyTorch's mode does not flag ``torch.cuda.synchronize()``.

The kernels that check values on the device (an index of gather, scatter_add and put, a
cross-entropy target) take the runtime's four error words (``checked``) and record the first
bad value there (common.cuh's ``report_error``). The host reads them at the next wait it
makes anyway, and only when such a kernel was queued since the last: their copy is queued
on the stream before the wait, so it costs no wait of its own. A recorded failure is
cleared and raised there, as IndexError naming the operation, the value and the bound.

``STAGEGRAD_CUDA_LAUNCH=null`` (or ``sg.cuda._set_launch_mode("null")``) makes every
launch a null one: counted in ``launches``, never run, so that what the host spends per
operation can be measured apart from the GPU, on any machine (under the host emulation,
``tools/cuda_on_host``): ``stagegrad devices`` reports it.

Copies between host and device (``copy_to_device``, ``copy_to_host``) go straight between a
host tensor's memory and the device array, one cudaMemcpyAsync each on our stream. From or
into page-locked memory (``alloc_pinned``, CuPy's pinned pool) that is a DMA the host need
not wait for; the runtime then keeps the host memory alive (``_hold``) until the stream has
passed the copy, since CuPy's pinned pool would hand a freed block out again at once.

A CUDA graph (``graphs.py``) is captured on this same stream: ``capture_begin`` starts the
driver's stream capture (CuPy's ``Stream.begin_capture``), so each launch, library call
and copy queued until ``capture_end`` is recorded into the graph instead of run, and memory
comes from the graph's private pool meanwhile. A copy from pageable host memory is
recorded from a page-locked snapshot the graph keeps (``_staged``); one from page-locked
memory reads it at each replay. What would make the host wait for the
device, or read device memory, cannot be recorded: it is refused while capturing
(``_refuse_in_capture``), naming the operation, and ends the capture.
"""
import contextlib
import ctypes
import hashlib
import os

from ..device import DeviceError
from ..gpu.opening import Opening
from .kernels import ARCH, KERNELS, source

BLOCK = 256  # threads per block of the one-thread-per-element kernels
LAUNCH_MODES = ("driver", "null")  # see _launch.Launcher
SYNC_WARN, SYNC_ERROR = 1, 2  # sg.cuda.set_sync_debug_mode's "warn" and "error", as PyTorch numbers them
# common.cuh's CHECK_* codes: the kernel whose check failed, its message (of the value, the
# bound, the axis), and the operations that run that kernel (the error surfaces later, so
# the message names them)
CHECKS = {1: ("gather", "index {value} is out of bounds for dimension {axis} with size {bound}",
              "gather, index_select, embedding and indexing by a tensor"),
          2: ("take", "index {value} is out of bounds for a tensor with size {bound}",
              "take and the scatter and index_* operations"),
          3: ("scatter_add", "index {value} is out of bounds for dimension {axis} with size {bound}",
              "scatter_add and the gradients of gather, index_select and embedding"),
          4: ("put", "index {value} is out of bounds for a tensor with size {bound}",
              "index_put, assignment by a tensor index and the scatter and index_* operations"),
          5: ("cross_entropy", "target {value} is out of bounds for {bound} classes", "cross_entropy")}
MEMORY_TYPE_HOST = 1  # cudaMemoryTypeHost: what cudaPointerGetAttributes says of page-locked memory
# compiled kernels, keyed by everything that shapes the binary (see Runtime._compile)
CACHE = os.environ.get("STAGEGRAD_CUDA_CACHE",
                       os.path.join(os.path.expanduser("~"), ".cache", "stagegrad", "cuda-kernels"))


class Runtime:
    """The GPU and CuPy's handles on it, opened once (``runtime()``). ``sync_debug_mode``
    (0, SYNC_WARN or SYNC_ERROR) is the class's, so that it can be set before the GPU opens."""

    sync_debug_mode = 0

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
        # the blocks of BLOCK threads the GPU holds at once: a grid-stride kernel's grid is
        # at most this (``grid``), one wave over every SM, its threads then striding on
        self.sm_count = int(props.get("multiProcessorCount", 1))
        self.resident_blocks = self.sm_count * max(int(props.get("maxThreadsPerMultiProcessor", 2048)) // BLOCK, 1)
        self.pool = cupy.get_default_memory_pool()
        from .._device_memory import CachingAllocator  # compiled, as the launcher
        # tensors' memory: our caching allocator over CuPy's pool (see _device_memory.pyx)
        self.memory = CachingAllocator(self.raw_memory, on_oom=self.pool.free_all_blocks)
        # a blocking stream: work queued on the legacy default stream (by another thread,
        # or by a library) stays ordered with ours
        self.stream = cupy.cuda.Stream(non_blocking=False)
        # per launch mode, name expression -> (its module, its _launch.Kernel)
        self._by_mode = {mode: {} for mode in LAUNCH_MODES}
        self._modules = self._by_mode["driver"]
        self.fast_kernels = {}  # the compiled elementwise path's kernels (_cuda_elementwise.pyx)
        self._driver_entry = None  # the driver's cuLaunchKernel, found on first use
        from .. import _launch  # the compiled launcher: the device is unusable without it
        self.launcher = _launch.Launcher(self.stream.ptr)
        self._held = []  # (event, host memory) of copies the host did not wait for (_hold)
        self.capture = None  # the capture under way (_Capture), or None
        self.syncs = 0  # the host's waits for the stream (synchronize)
        # the device-side checks' error words (code, value, bound, axis), their page-locked
        # host copy, and whether a checking kernel was queued since the last wait
        self._errors = self.upload(numpy.zeros(4, numpy.int64), numpy.int64)
        self._errors_ptr = self._errors.data.ptr
        self._errors_block = self.alloc_pinned(32)
        self._errors_host = numpy.frombuffer(self._errors_block, numpy.int64, 4)
        self._errors_host[:] = 0
        self._errors_pending = False
        self._probe()
        self.set_launch_mode(os.environ.get("STAGEGRAD_CUDA_LAUNCH", "driver"))

    @property
    def launches(self):
        """Kernels launched so far (null launches included): ``launches`` before and after
        a training step counts the step's."""
        return self.launcher.launches

    def set_launch_mode(self, mode):
        """``"driver"``: launches run; ``"null"``: each launch is counted, nothing runs and
        nothing is compiled (the device's memory keeps what it held)."""
        if mode not in LAUNCH_MODES:
            raise ValueError(f"cuda: the launch mode is one of {LAUNCH_MODES}, not {mode!r}")
        self._refuse_in_capture("a change of launch mode")
        if mode != self.launcher.mode:
            self.synchronize()
            self.launcher.mode = mode
            self._modules = self._by_mode[mode]  # a null mode's kernels have no handle
            self.fast_kernels.clear()

    def _probe(self):
        """Compile, launch and read back one small kernel, so that a GPU whose NVRTC or
        driver cannot run our kernels is reported unavailable, with why, here."""
        np = self.np
        try:
            out = self.alloc(1, np.float32)
            bits = int(np.array([1.5], dtype=np.float32).view(np.int32)[0])
            self.launch("fill", "fill<float>", 1, 1, [out, 1, bits])
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

    def allocator(self):
        """The caching allocator new tensors' memory comes from: the runtime's, or while a
        CUDA graph is captured, the graph's pool's."""
        return self.memory if self.capture is None else self.capture.pool.allocator

    def raw_memory(self, nbytes):
        """New device memory for a caching allocator: a 1-D uint8 CuPy array of ``nbytes``
        from CuPy's pool (while capturing, the graph's)."""
        self.enter()
        return self.cp.empty(nbytes, dtype=self.np.uint8)

    def alloc(self, n, dtype):
        """A new 1-D CuPy array of ``n`` elements of NumPy ``dtype`` from CuPy's pool, for
        the runtime's own use (a tensor's memory comes from ``allocator()``)."""
        self.enter()
        return self.cp.empty(max(n, 1), dtype=dtype)

    def upload(self, host, dtype):
        """A new device array holding ``host`` (a NumPy array), copied on our stream."""
        out = self.alloc(host.size, dtype)
        self.upload_into(out, host)
        return out

    def upload_into(self, out, host):
        """Copy the NumPy array ``host`` into the start of the device array ``out``, on our
        stream."""
        self.enter()
        if host.size:
            flat = self.np.ascontiguousarray(host, dtype=out.dtype).reshape(-1)
            if self._recording():
                out.data.copy_from_host_async(ctypes.c_void_p(self._staged(flat.ctypes.data, flat.nbytes)),
                                              flat.nbytes, self.stream)
            else:
                out[:host.size].set(flat, stream=self.stream)
        return out

    def download(self, arr, start, count, what=None):
        """``count`` elements of ``arr`` from ``start`` as a NumPy array: the host waits for
        every launch queued before (a synchronization: ``what`` names it to the sync debug
        mode, as ``synchronize``'s). In null mode, zeros: no kernel wrote the memory, and the
        host's checks that read a value back (an integer divisor) then take the path valid
        input takes."""
        if self.capture is not None:  # in every mode: what fails on a GPU fails here too
            self._refuse_in_capture("a read back of device memory (.item(), .tolist(), .cpu())")
        if self.launcher.mode == "null":
            self.synchronize(what)
            return self.np.zeros(count, dtype=arr.dtype)
        self._flag(what)
        self.enter()
        out = arr[start:start + count].get(stream=self.stream)
        self.synchronize()
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
            if self._recording():
                if hold is None:  # pageable: snapshot it (see _staged)
                    ptr = self._staged(ptr, nbytes)
                else:  # page-locked: each replay reads it, as in CUDA; the graph keeps it alive
                    self.capture.held.append(hold)
                    hold = None
            # a ctypes pointer, not an int: older CuPy reads the address from its .value
            arr.data.copy_from_host_async(ctypes.c_void_p(ptr), nbytes, self.stream)
            self._hold(hold)

    def copy_to_host(self, arr, start, nbytes, ptr, hold=None):
        """Queue a copy of ``nbytes`` from element ``start`` of the device array ``arr`` to
        host address ``ptr``, after every launch queued before; the host reads it only after
        a ``synchronize()``. ``hold`` as in ``copy_to_device``."""
        self._refuse_in_capture("a copy from the device to host memory")
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
        """Return the caching allocator's free blocks, then CuPy's pool's, to the driver
        (``sg.cuda.empty_cache()``)."""
        self._refuse_in_capture("empty_cache")
        self.synchronize()
        self.memory.release_cached()
        self.pool.free_all_blocks()

    def synchronize(self, what=None):
        """Wait until every launch so far has finished; counted in ``syncs``. ``what`` names
        the operation that needs the wait, for the sync debug mode (``_flag``); None for an
        explicit synchronize, which the mode does not flag. Then raise what a device-side
        check recorded (``checked``), if anything."""
        if self.capture is not None:
            self._refuse_in_capture(what or "synchronize")
        self._flag(what)
        self.syncs += 1
        check = self._errors_pending and self.launcher.mode != "null"  # null: no kernel ran
        self._errors_pending = False
        if check:
            self._errors.data.copy_to_host_async(ctypes.c_void_p(self._errors_host.ctypes.data), 32,
                                                 self.stream)
        self.stream.synchronize()
        self._held.clear()  # every copy is done: their host memory may go
        if check and self._errors_host[0]:
            self._raise_recorded()

    def _flag(self, what):
        """The sync debug mode's answer to a synchronizing operation ``what`` (None: not
        flagged): a UserWarning under "warn", a RuntimeError under "error", as PyTorch's."""
        if what is None or not self.sync_debug_mode:
            return
        message = f"called a synchronizing CUDA operation: {what}"
        if self.sync_debug_mode == SYNC_ERROR:
            raise RuntimeError(message)
        import warnings
        warnings.warn(message, UserWarning, stacklevel=3)

    def checked(self):
        """The device address of the error words a checking kernel takes (common.cuh's
        ``report_error``): the next synchronization reads them."""
        self._errors_pending = True
        return self._errors_ptr

    def _raise_recorded(self):
        """Clear the error words a check wrote, then raise what they say (an IndexError that
        is also a RuntimeError, as PyTorch reports a device-side assert)."""
        from ..shapes import IndexRangeError  # this stage's (each stage has its own class)
        code, value, bound, axis = (int(v) for v in self._errors_host)
        self._errors_host[:] = 0
        # zeros back to the device, from the page-locked words (nothing writes them before
        # the stream has passed this copy: the next read of the words is queued after it)
        self._errors.data.copy_from_host_async(ctypes.c_void_p(self._errors_host.ctypes.data), 32,
                                               self.stream)
        op, text, users = CHECKS.get(code, ("a kernel", "check {code} failed with value {value}", "?"))
        raise IndexRangeError(f"{op}: {text.format(value=value, bound=bound, axis=axis, code=code)} "
                              f"(checked on the cuda device by a {op} kernel queued before this "
                              f"synchronization; {users} run it)")

    # ------------------------------------------------------------ graphs (graphs.py)

    def capture_begin(self, pool):
        """Start capturing: launches and library calls on the stream are recorded from now
        on, not run (in null mode only counted: there is nothing to record), and memory is
        allocated from ``pool`` (the graph's ``graphs._GraphPool``: tensors from its caching
        allocator, CuPy's own arrays from its CuPy ``MemoryPool``) on this thread. Returns
        the capture (``_Capture``)."""
        if self.capture is not None:
            raise RuntimeError("cuda: a CUDA graph is already being captured (one capture at a time: "
                               "capture_end it first)")
        self.enter()
        allocating = self.cp.cuda.using_allocator(pool.memory.malloc)
        allocating.__enter__()
        null = self.launcher.mode == "null"
        if not null:
            try:
                # CuPy's default, relaxed mode: its pool may call cudaMalloc while capturing,
                # which the stricter modes forbid; the host waits this runtime would make are
                # refused by _refuse_in_capture instead
                self.stream.begin_capture()
            except Exception:
                allocating.__exit__(None, None, None)
                raise
        self.capture = _Capture(pool, allocating, self.launcher.launches, null)
        return self.capture

    def capture_end(self):
        """End the capture: (the driver's graph, None in null mode; the launches recorded).
        The recorded launches were not run, so the count of launches goes back to where it
        was at ``capture_begin``: each replay counts them."""
        c = self.capture
        if c is None:
            raise RuntimeError("cuda: no CUDA graph is being captured")
        self.capture = None
        c.allocating.__exit__(None, None, None)
        recorded = self.launcher.launches - c.start
        self.launcher.launches = c.start
        graph = None if c.null else self.stream.end_capture()
        return graph, recorded

    def replay(self, graph, recorded):
        """Launch a captured ``graph`` of ``recorded`` launches on the stream, counted as that
        many; in null mode only counted."""
        self._refuse_in_capture("replaying a CUDA graph")
        if self.launcher.mode != "null":
            self.enter()
            graph.launch(self.stream)
            self._errors_pending = True  # its checking kernels, if any, write the error words
        self.launcher.launches += recorded

    def _recording(self):
        """Whether the driver records what is queued now (a capture, not a null mode's)."""
        return self.capture is not None and not self.capture.null

    def _staged(self, ptr, nbytes):
        """While capturing: a copy of the ``nbytes`` at host address ``ptr`` in page-locked
        memory the graph keeps (the address of the copy). A copy from host memory queued now
        is recorded reading that memory, so each replay copies the values the host held at
        capture, as a launch's scalar argument is recorded by value; pageable memory, which
        the caller may free or change, cannot be recorded."""
        block = self.alloc_pinned(nbytes)
        ctypes.memmove(block.ptr, ptr, nbytes)
        self.capture.held.append(block)
        return block.ptr

    def _refuse_in_capture(self, op):
        """While capturing, end the capture (its graph is discarded: ``capture.failed`` says
        why) and raise RuntimeError naming ``op``, as the driver refuses such a call on a
        capturing stream; otherwise nothing."""
        c = self.capture
        if c is None:
            return
        why = (f"cuda: {op}: operation not permitted when stream is capturing (a CUDA graph records "
               f"device work only: the host cannot wait for the device, nor read its memory, until "
               f"capture_end); the capture has been ended and its graph discarded")
        c.failed = why
        # the driver may refuse to end it (an invalidated capture): the runtime is out of it either way
        with contextlib.suppress(Exception):
            self.capture_end()
        raise RuntimeError(why)

    # ------------------------------------------------------------ kernels

    def function(self, kernel, instance):
        """The ``_launch.Kernel`` of ``instance`` (a name expression such as ``unary<float,
        float, Exp>``, or the kernel's own name) of ``kernel``, compiled by NVRTC on first use
        (in null mode: not compiled, a kernel with no handle)."""
        fn = self._modules.get(instance)
        if fn is None:
            args = KERNELS[kernel].args
            if self.launcher.mode == "null":
                fn = self._modules[instance] = (None, _launch_kernel(self.launcher, instance, args, 0, 0))
                return fn[1]
            binary, lowered = self._compile(source(KERNELS[kernel].file), instance, ARCH.get(kernel, (None,))[0])
            module = self.cp.cuda.function.Module()
            module.load(binary)
            compiled = module.get_function(lowered)
            # a loader that is not CUDA's (tools/cuda_on_host) names its own entry
            entry = getattr(compiled, "launch_entry", None) or self._driver()
            fn = self._modules[instance] = (module, _launch_kernel(self.launcher, instance, args,
                                                                   compiled.ptr, entry))
        return fn[1]

    def _driver(self):
        """The address of the driver's cuLaunchKernel, found once: asked of the driver
        through NVIDIA's bindings (``cuda-bindings``, the cuda extra's), else looked up in
        libcuda by name, where CuPy has already loaded it."""
        if self._driver_entry is None:
            self._driver_entry = _bindings_entry() or _libcuda_entry()
        return self._driver_entry

    def _compile(self, code, instance, arch=None):
        """NVRTC's binary of ``code`` and the lowered name of ``instance`` in it, for the GPU's
        architecture or ``arch`` (an arch-specific one, ``kernels.ARCH``), from the on-disk
        cache (``CACHE``) when this source, instance, GPU, architecture and compiler built it
        before. NVRTC is called directly: CuPy's ``RawModule`` appends ``-ftz=true`` to the
        caller's options, which flushes float32 subnormals to zero (found on an H200)."""
        digest = hashlib.sha256(repr((code, OPTIONS, instance, self.capability, arch, self.cp.__version__,
                                      self._nvrtc_version())).encode()).hexdigest()
        path = os.path.join(CACHE, digest)
        try:
            with open(path, "rb") as f:
                lowered, binary = f.read().split(b"\n", 1)
            return binary, lowered.decode()
        except (OSError, ValueError):  # not cached yet, or an unreadable entry: compile it
            pass
        if arch is None or str(getattr(self.cp, "__version__", "")).endswith("host-emulation"):
            binary, mapping = self.cp.cuda.compiler.compile_using_nvrtc(code, options=OPTIONS,
                                                                        name_expressions=[instance])
        else:
            binary, mapping = _compile_for(code, instance, arch)
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

    def grid(self, n, per_block=BLOCK):
        """Blocks for a grid-stride kernel over ``n`` items, ``per_block`` to a block (the
        elements of BLOCK threads, a row, a reduction's output): one block per
        ``per_block`` up to what the GPU holds at once (``resident_blocks``), since more
        blocks than that only queue behind the first wave and each pays its start."""
        return min(-(-n // per_block), self.resident_blocks)

    def launch(self, kernel, instance, blocks, threads, args):
        """Queue ``instance`` of ``kernel`` over ``blocks`` blocks (at most MAX_BLOCKS: the
        kernels loop past it; none when 0) of ``threads`` threads, with ``args`` of the kinds
        ``KERNELS`` declares (a pointer: a device address or a device array; params: a list
        of ints)."""
        fn = self._modules.get(instance)
        k = fn[1] if fn is not None else self.function(kernel, instance)
        try:
            k.launch(blocks, threads, args)
        except Exception as e:
            self._retried(e, lambda: k.launch(blocks, threads, args))

    def _retried(self, error, launch):
        """``launch`` again where ``error`` says this thread has no current context (a
        thread whose first CUDA call is a launch: the runtime API CuPy uses makes the
        device's context current on first use, the driver API does not); else re-raise."""
        if getattr(error, "code", None) != INVALID_CONTEXT:
            raise error
        self.gpu.use()
        self.cp.cuda.runtime.free(0)  # a runtime call: the primary context current here
        launch()

    def library_call(self, fn, *args, **kwargs):
        """``fn(*args, **kwargs)``: a library's kernel (cuBLAS through CuPy), on our stream;
        counted as one launch, and not made in null mode."""
        self.launcher.launches += 1
        if self.launcher.mode != "null":
            self.enter()
            fn(*args, **kwargs)

    def launch_grid(self, kernel, instance, grid, block, args):
        """Queue ``instance`` of ``kernel`` over the ``grid`` and ``block`` tuples with ``args``."""
        k = self.function(kernel, instance)
        try:
            k.launch_grid(grid, block, args)
        except Exception as e:
            self._retried(e, lambda: k.launch_grid(grid, block, args))


INVALID_CONTEXT = 201  # _launch's: CUDA_ERROR_INVALID_CONTEXT


class _Capture:
    """A capture under way: the graph's pool, the allocator context that draws from it, the
    count of launches at its start, whether it is a null mode's (counted, not recorded),
    ``held``, the page-locked copies of host memory its recorded copies read (``_staged``:
    the graph keeps them), and ``failed``, why it was ended early (None while it runs)."""
    __slots__ = ("allocating", "failed", "held", "null", "pool", "start")

    def __init__(self, pool, allocating, start, null):
        self.pool, self.allocating, self.start, self.null = pool, allocating, start, null
        self.held, self.failed = [], None
CUDA_VERSION = 12000  # the cuLaunchKernel asked for: its signature has not changed since CUDA 4
_LIBCUDA = []  # the library _libcuda_entry opened, kept loaded


def _bindings_entry():
    """cuLaunchKernel's address from ``cuda.bindings.driver.cuGetProcAddress``, or None
    where the bindings are missing or do not answer."""
    try:
        from cuda.bindings import driver
        flags = driver.CUdriverProcAddress_flags.CU_GET_PROC_ADDRESS_DEFAULT
        err, pfn, *_ = driver.cuGetProcAddress(b"cuLaunchKernel", CUDA_VERSION, flags)
        return int(pfn) if err == driver.CUresult.CUDA_SUCCESS and pfn else None
    except Exception:  # ImportError, or bindings of another shape: the library has it too
        return None


def _libcuda_entry():
    """cuLaunchKernel's address in the driver's library (``libcuda.so.1``, ``nvcuda.dll``)."""
    import ctypes
    import sys
    lib = ctypes.WinDLL("nvcuda.dll") if sys.platform == "win32" else ctypes.CDLL("libcuda.so.1")
    _LIBCUDA.append(lib)
    return ctypes.cast(lib.cuLaunchKernel, ctypes.c_void_p).value


def _compile_for(code, instance, arch):
    """NVRTC's cubin of ``code`` for the arch-specific target ``sm_<arch>`` (``kernels.ARCH``)
    and ``{instance: its lowered name}``, through CuPy's bindings of NVRTC: CuPy's
    ``compile_using_nvrtc`` takes only a numeric architecture (it compares ``int(arch)``)."""
    from cupy_backends.cuda.libs import nvrtc
    prog = nvrtc.createProgram(code, f"{instance}.cu", (), ())
    try:
        nvrtc.addNameExpression(prog, instance)
        try:
            nvrtc.compileProgram(prog, (*OPTIONS, f"--gpu-architecture=sm_{arch}"))
        except nvrtc.NVRTCError as e:
            raise RuntimeError(f"NVRTC: {instance} for sm_{arch}:\n{nvrtc.getProgramLog(prog)}") from e
        return nvrtc.getCUBIN(prog), {instance: nvrtc.getLoweredName(prog, instance)}
    finally:
        nvrtc.destroyProgram(prog)


def _launch_kernel(launcher, name, args, handle, entry):
    """A ``_launch.Kernel``: imported here, the one place that makes one."""
    from .. import _launch
    return _launch.Kernel(launcher, name, args, handle, entry)


# NVRTC's options: C++17 for `if constexpr`; IEEE arithmetic (subnormals kept, division and
# square root correctly rounded: NVRTC's defaults, stated). Contraction into fused
# multiply-adds stays on: CUDA's own math functions are written for it (with it off, erfc
# and pow in float64 lose ulps). Never fast math.
OPTIONS = ("--std=c++17", "--ftz=false", "--prec-div=true", "--prec-sqrt=true")

OPENING = Opening("cuda", Runtime,
                   not_installed="CuPy is not installed ({}); on a machine with an NVIDIA GPU install the "
                                 "'cuda' extra: pip install 'stagegrad[cuda]'",
                   failed="the GPU could not be opened")
runtime, is_available, unavailable_reason = OPENING.runtime, OPENING.is_available, OPENING.unavailable_reason
