"""The launch of one CUDA kernel, from compiled code: the cuda device's whole per-launch
cost on the host after the Python layers have chosen the kernel and laid out its
parameters.

A ``Kernel`` holds a compiled function's handle (a ``CUfunction``), the entry it is
launched through and the kind of each of its arguments (``cuda/kernels.py``'s words).
``Kernel.launch`` converts each argument to its C type into a buffer on the C stack
(pointers and scalars in 8-byte slots, the ``params`` words, the ``hyper`` floats and the
``tensors`` list in common.cuh's fixed-size ``Params``, ``Hyper`` and ``TensorList``
structs) and calls the entry with
``cuLaunchKernel``'s signature and arguments. The entry is the CUDA driver's own
``cuLaunchKernel`` on a GPU (``_cuda_driver.launch_entry()``) and the host emulation's
function of the same signature under ``tools/cuda_on_host``, so the emulation runs this
same path. Everything travels by value: the driver copies the argument bytes into the
launch it queues, so no parameter array lives on the device.

A ``Launcher`` is what one runtime's launches share: the stream, the count of launches
(``launches``) and the mode: ``"driver"`` calls the entry, ``"null"`` counts the launch
and runs nothing, so the host's cost of the cuda device is measurable on any machine.
Not bound to any stage's frontend: it takes Python numbers, sequences and addresses.
"""
from cpython.number cimport PyNumber_Index
from libc.stdint cimport int64_t, uintptr_t
from libc.string cimport memset

cdef enum:
    PARAMS_MAX = 64  # common.cuh's PARAMS_MAX: the words of struct Params
    HYPER_MAX = 12  # common.cuh's HYPER_MAX: the floats of struct Hyper
    LIST_MAX = 48  # common.cuh's LIST_MAX, LIST_BUFFERS, LIST_CONSTANTS: struct TensorList
    LIST_BUFFERS = 5
    LIST_CONSTANTS = 2
    MAX_ARGS = 16  # arguments of one kernel (the most any kernel takes is 9)
    MAX_BLOCKS = 1 << 20  # blocks of a 1-D launch; the kernels loop (grid-stride) past it

# the argument kinds, by kernels.py's names
cdef enum Kind:
    PTR, I64, F64, F32, I32, PARAMS, HYPER, TENSORS
KINDS = {"ptr": PTR, "i64": I64, "f64": F64, "f32": F32, "i32": I32, "params": PARAMS,
         "hyper": HYPER, "tensors": TENSORS}
LIMITS = {"params": PARAMS_MAX, "hyper": HYPER_MAX, "blocks": MAX_BLOCKS, "tensors": LIST_MAX,
          "buffers": LIST_BUFFERS, "constants": LIST_CONSTANTS}
STRUCTS = ("params", "hyper", "tensors")  # the kinds a kernel takes at most once

# common.cuh's TensorList, byte for byte: one entry per tensor, then the count
cdef struct ListEntry:
    void* buf[LIST_BUFFERS]
    int64_t n
    int64_t end
    float c[LIST_CONSTANTS]

cdef struct TensorList:
    ListEntry t[LIST_MAX]
    int64_t count

# one argument's bytes, whatever its scalar type
cdef union Slot:
    void* ptr
    int64_t i64
    double f64
    float f32
    int i32

# cuLaunchKernel's signature, with the handles as the pointers they are
ctypedef int (*launch_entry)(void* f, unsigned int gx, unsigned int gy, unsigned int gz,
                             unsigned int bx, unsigned int by, unsigned int bz,
                             unsigned int shared_bytes, void* stream, void** params,
                             void** extra) noexcept nogil

# the driver's codes a failed launch most often returns (cuda.h's CUresult names)
_ERRORS = {1: "CUDA_ERROR_INVALID_VALUE", 2: "CUDA_ERROR_OUT_OF_MEMORY",
           3: "CUDA_ERROR_NOT_INITIALIZED", 201: "CUDA_ERROR_INVALID_CONTEXT",
           400: "CUDA_ERROR_INVALID_HANDLE", 700: "CUDA_ERROR_ILLEGAL_ADDRESS",
           701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", 702: "CUDA_ERROR_LAUNCH_TIMEOUT",
           710: "CUDA_ERROR_ASSERT", 719: "CUDA_ERROR_LAUNCH_FAILED"}


INVALID_CONTEXT = 201  # CUDA_ERROR_INVALID_CONTEXT: no context is current on this thread


class LaunchError(RuntimeError):
    """A launch the driver refused: ``code``, its CUresult (named in the message where known)."""

    def __init__(self, message, code):
        super().__init__(message)
        self.code = code


cdef class Launcher:
    """What every launch of one runtime shares: the stream (an address), the mode
    (``"driver"`` or ``"null"``) and ``launches``, the count of launches so far (a null
    launch counts: it stands for one)."""
    cdef void* stream
    cdef bint null
    cdef public long long launches

    def __init__(self, stream, mode="driver"):
        self.stream = <void*><uintptr_t>stream
        self.mode = mode
        self.launches = 0

    @property
    def mode(self):
        """``"driver"``: each launch calls its kernel's entry; ``"null"``: it is counted,
        nothing runs (the device's memory is left as it was)."""
        return "null" if self.null else "driver"

    @mode.setter
    def mode(self, value):
        if value not in ("driver", "null"):
            raise ValueError(f"cuda: the launch mode is 'driver' or 'null', not {value!r}")
        self.null = value == "null"


cdef class Kernel:
    """One compiled kernel: ``handle`` (its CUfunction, an address), ``entry`` (the
    address of the function with cuLaunchKernel's signature that launches it; 0 for a
    kernel only ever launched in null mode), ``kinds`` (each argument's kind) and
    ``name`` (what errors say)."""
    cdef Launcher owner
    cdef void* handle
    cdef launch_entry entry
    cdef int nargs
    cdef int kinds[MAX_ARGS]
    cdef readonly str name

    def __init__(self, Launcher owner not None, str name, kinds, handle, entry):
        if len(kinds) > MAX_ARGS:
            raise ValueError(f"cuda: {name} takes {len(kinds)} arguments, over {MAX_ARGS}")
        if any(list(kinds).count(k) > 1 for k in STRUCTS):
            raise ValueError(f"cuda: {name}: at most one params, one hyper and one tensors argument")
        self.owner, self.name, self.nargs = owner, name, len(kinds)
        for i, k in enumerate(kinds):
            self.kinds[i] = KINDS[k]
        self.handle = <void*><uintptr_t>handle
        self.entry = <launch_entry><void*><uintptr_t>entry
        if self.entry == NULL and not owner.null:
            raise ValueError(f"cuda: {name} has no launch entry")

    def launch(self, blocks, threads, args):
        """Queue the kernel over ``blocks`` blocks (at most MAX_BLOCKS: the kernels loop
        past it; none when 0) of ``threads`` threads with ``args`` (a list or tuple)."""
        cdef long long b = blocks
        if b <= 0:
            return
        _launch(self, <unsigned int>(b if b < MAX_BLOCKS else MAX_BLOCKS), 1, 1, threads, 1, 1, args)

    def launch_grid(self, grid, block, args):
        """Queue the kernel over the ``grid`` and ``block`` tuples (1 to 3 numbers each)."""
        g, t = tuple(grid) + (1,) * (3 - len(grid)), tuple(block) + (1,) * (3 - len(block))
        _launch(self, g[0], g[1], g[2], t[0], t[1], t[2], args)


cdef int _launch(Kernel k, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                 unsigned int by, unsigned int bz, object args) except -1:
    """Convert ``args`` by ``k``'s kinds, then count and (unless null) call the entry."""
    cdef Slot slots[MAX_ARGS]  # a pointer's or a scalar's bytes, each in its own slot
    cdef int64_t words[PARAMS_MAX]
    cdef float hyper[HYPER_MAX]
    cdef TensorList tensors
    cdef void* ptrs[MAX_ARGS]  # kernelParams: where each argument's bytes are
    cdef Py_ssize_t i, j, n
    cdef int kind, rc
    if len(args) != k.nargs:
        raise TypeError(f"cuda: {k.name} takes {k.nargs} arguments, got {len(args)}")
    for i in range(k.nargs):
        a = args[i]
        kind = k.kinds[i]
        ptrs[i] = &slots[i]
        if kind == PTR:
            slots[i].ptr = <void*>_address(a, k, i)
        elif kind == I64:
            slots[i].i64 = _int(a)
        elif kind == F64:
            slots[i].f64 = a
        elif kind == F32:
            slots[i].f32 = a
        elif kind == I32:
            slots[i].i32 = <int>_int(a)
        elif kind == PARAMS:
            n = len(a)
            if n > PARAMS_MAX:
                raise ValueError(f"cuda: {k.name} needs {n} parameter words, over the {PARAMS_MAX} a "
                                 f"launch carries (too many dimensions that do not merge)")
            for j in range(n):
                words[j] = _int(a[j])
            memset(&words[n], 0, (PARAMS_MAX - n) * sizeof(int64_t))
            ptrs[i] = words
        elif kind == HYPER:
            n = len(a)
            if n > HYPER_MAX:
                raise ValueError(f"cuda: {k.name} takes at most {HYPER_MAX} hyperparameters, got {n}")
            for j in range(n):
                hyper[j] = a[j]
            memset(&hyper[n], 0, (HYPER_MAX - n) * sizeof(float))
            ptrs[i] = hyper
        else:
            _pack_tensors(a, &tensors, k, i)
            ptrs[i] = &tensors
    if k.owner.null:
        k.owner.launches += 1
        return 0
    rc = k.entry(k.handle, gx, gy, gz, bx, by, bz, 0, k.owner.stream, ptrs, NULL)
    if rc != 0:
        raise LaunchError(f"cuda: launching {k.name} (grid {(gx, gy, gz)}, block {(bx, by, bz)}) "
                          f"failed: {_ERRORS.get(rc, 'CUresult')} ({rc})", rc)
    k.owner.launches += 1
    return 0


cdef int _pack_tensors(object rows, TensorList* out, Kernel k, Py_ssize_t i) except -1:
    """Lay out ``rows``, argument ``i`` (one ``(elements, end, addresses, constants)`` per
    tensor: ``end`` the blocks of tensors 0..t, ``addresses`` its buffers', ``constants``
    its own float32 values) as common.cuh's TensorList. Refused, before anything is queued:
    no tensor or more than LIST_MAX, a row of another shape, rows of different lengths (a
    kernel reads the same buffers of every tensor), more addresses or constants than an
    entry holds, a negative count, ends that decrease (the kernel's walk needs them
    ascending)."""
    cdef Py_ssize_t count = len(rows), t, j, nb = 0, nc = 0
    cdef int64_t last = 0
    cdef ListEntry* e
    if not 0 < count <= LIST_MAX:
        raise ValueError(f"cuda: {k.name} takes 1 to {LIST_MAX} tensors a launch, got {count}")
    memset(out, 0, sizeof(TensorList))
    out.count = count
    for t in range(count):
        row = rows[t]
        if len(row) != 4:
            raise ValueError(f"cuda: {k.name}: tensor {t} is (elements, end, addresses, constants), "
                             f"not {len(row)} items")
        addresses, constants = row[2], row[3]
        if t == 0:
            nb, nc = len(addresses), len(constants)
            if nb > LIST_BUFFERS or nc > LIST_CONSTANTS:
                raise ValueError(f"cuda: {k.name}: a tensor has at most {LIST_BUFFERS} buffers and "
                                 f"{LIST_CONSTANTS} constants, got {nb} and {nc}")
        elif len(addresses) != nb or len(constants) != nc:
            raise ValueError(f"cuda: {k.name}: tensor {t} has {len(addresses)} buffers and "
                             f"{len(constants)} constants, tensor 0 {nb} and {nc}")
        e = &out.t[t]
        e.n, e.end = _int(row[0]), _int(row[1])
        if e.n < 0 or e.end < last:
            raise ValueError(f"cuda: {k.name}: tensor {t} has {e.n} elements and ends at block {e.end} "
                             f"(counts are not negative, ends do not decrease: {last} before)")
        last = e.end
        for j in range(nb):
            e.buf[j] = <void*>_address(addresses[j], k, i)
        for j in range(nc):
            e.c[j] = constants[j]
    return 0


cdef inline int64_t _int(object v) except? -1:
    """An integer argument's value: an int, or what ``__index__`` makes of another object (a
    NumPy integer); a float is refused, not truncated."""
    if type(v) is not int:
        v = PyNumber_Index(v)
    return v


cdef uintptr_t _address(object a, Kernel k, Py_ssize_t i) except? 0:
    """A pointer argument's device address: an int, or a device array's (``.data.ptr``)."""
    if type(a) is int:
        return a
    try:
        return a.data.ptr
    except AttributeError:
        raise TypeError(f"cuda: {k.name}: argument {i} is a pointer: a device address or a "
                        f"device array, not {type(a).__name__}") from None
