# cython: language_level=3
"""The cuda device's caching allocator, in compiled code: what a new tensor's memory costs
the host.

Design: a tensor's memory is a ``Storage``, one ``Block`` of device memory shared by every
view of it. A block is never given back to the driver when its storage dies: the
``CachingAllocator`` keeps it on a free list by size class and hands it to the next request
of that class, so a training loop that makes the same shapes every step allocates from the
driver in its first step only, and afterwards pays a dict lookup and a list pop. Sizes are
rounded up to 512 bytes (to 2 MiB past 16 MiB), the classes PyTorch's and CuPy's pools
use for small blocks, so that nearby sizes share blocks. Blocks are whole (no splitting):
the raw memory beneath comes from CuPy (``raw``: a one-dimensional uint8 array, which
owns it), whose own pool in turn keeps the driver's allocations.

Every launch and copy is queued on the device's one stream, in program order, so a block
freed on the host may go to the next request at once: whatever the next owner queues runs
after everything the last owner queued. (With more streams a block would have to wait for
an event of the stream that used it, as PyTorch's ``record_stream``.)

A CUDA graph's private pool is a ``CachingAllocator`` of its own: the memory a capture
allocates is never handed to an allocation outside it, so a replay's addresses stay the
graph's. Each storage keeps its allocator (and so the graph's pool) alive.

``Storage.array`` is a CuPy array over the storage's elements, made on first use, for what
CuPy does with it (copies, cuBLAS): launches take ``ptr`` and never need one.
"""
cimport cython
from libc.stdint cimport uintptr_t

cdef enum:
    GRAIN = 512  # bytes: the size classes' step
    LARGE = 16 << 20  # past this, the step is BIG_GRAIN
    BIG_GRAIN = 2 << 20


cpdef Py_ssize_t rounded(Py_ssize_t nbytes):
    """The size class of a request of ``nbytes``: the bytes it is given (at least one grain)."""
    cdef Py_ssize_t grain = GRAIN if nbytes <= LARGE else BIG_GRAIN
    if nbytes < 1:
        nbytes = 1
    return (nbytes + grain - 1) // grain * grain


# Blocks and storages hold nothing that refers back to them, so the cycle collector need
# not track them, and must not clear their fields: a dying storage hands its block, whole,
# to its allocator.
@cython.no_gc
cdef class Block:
    """``size`` bytes of device memory at ``ptr``, owned by ``memory`` (CuPy's array)."""
    cdef readonly object memory
    cdef readonly uintptr_t ptr
    cdef readonly Py_ssize_t size


@cython.no_gc_clear  # it and the runtime refer to each other; storages still use it as they die
cdef class CachingAllocator:
    """Device memory in blocks by size class, each block reused once its storage dies (see
    the module's design). ``raw(nbytes)`` gets new memory (a uint8 CuPy array);
    ``on_oom()``, called once when ``raw`` runs out of memory, frees what the layer beneath
    caches before ``raw`` is tried again. ``allocated_bytes`` counts the bytes of live
    storages, ``peak_bytes`` their most since ``reset_peak``, ``cached_bytes`` the free
    blocks' bytes."""
    cdef object raw, on_oom
    cdef dict free  # size class -> [Block, ...], free for reuse
    cdef readonly Py_ssize_t allocated_bytes, peak_bytes, cached_bytes

    def __init__(self, raw, on_oom=None):
        self.raw, self.on_oom = raw, on_oom
        self.free = {}

    cpdef Storage allocate(self, Py_ssize_t count, object dtype):
        """A new storage of ``count`` elements (at least one is given) of the NumPy
        ``dtype``, from a free block of its size class when there is one."""
        cdef Py_ssize_t itemsize = dtype.itemsize
        cdef Py_ssize_t size = rounded((count if count > 0 else 1) * itemsize)
        cdef list blocks = self.free.get(size)
        cdef Block block
        if blocks:
            block = blocks.pop()
            self.cached_bytes -= size
        else:
            block = self._new_block(size)
        cdef Storage s = Storage.__new__(Storage)
        s.block, s.owner, s.ptr, s.dtype = block, self, block.ptr, dtype
        s.count = count if count > 0 else 1
        self.allocated_bytes += size
        if self.allocated_bytes > self.peak_bytes:
            self.peak_bytes = self.allocated_bytes
        return s

    cdef Block _new_block(self, Py_ssize_t size):
        """A block of ``size`` bytes from ``raw``; when that fails for want of memory, once
        more after every cached block is released."""
        try:
            memory = self.raw(size)
        except MemoryError:  # CuPy's OutOfMemoryError is one
            self.release_cached()
            if self.on_oom is not None:
                self.on_oom()
            memory = self.raw(size)
        cdef Block b = Block.__new__(Block)
        b.memory, b.ptr, b.size = memory, memory.data.ptr, size
        return b

    cdef void _give_back(self, Block block) noexcept:
        """A storage died: its block waits for the next request of its size class."""
        blocks = self.free.get(block.size)
        if blocks is None:
            self.free[block.size] = [block]
        else:
            blocks.append(block)
        self.allocated_bytes -= block.size
        self.cached_bytes += block.size

    def release_cached(self):
        """Drop every free block (their memory goes back to the layer beneath); the bytes
        released."""
        released, self.cached_bytes = self.cached_bytes, 0
        self.free.clear()
        return released

    def reset_peak(self):
        """Start ``peak_bytes`` again from what is allocated now."""
        self.peak_bytes = self.allocated_bytes

    def free_blocks(self):
        """The number of blocks held for reuse."""
        return sum(len(v) for v in self.free.values())


@cython.no_gc
cdef class Storage:
    """One block of device memory holding ``count`` elements of the NumPy ``dtype``, shared
    by every view of it: ``ptr`` is the device address of its first element (what a launch
    passes), ``version`` counts in-place writes, as on the host. Its block goes back to its
    allocator when the storage dies."""
    cdef readonly Block block
    cdef readonly CachingAllocator owner
    cdef readonly uintptr_t ptr
    cdef readonly Py_ssize_t count
    cdef readonly object dtype
    cdef public long long version
    cdef object _array
    cdef object __weakref__

    @property
    def array(self):
        """A CuPy array over the ``count`` elements (made once, on first use)."""
        if self._array is None:
            nbytes = self.count * self.dtype.itemsize
            self._array = self.block.memory[:nbytes].view(self.dtype)
        return self._array

    @property
    def nbytes(self):
        """The bytes the storage's block holds (its size class)."""
        return self.block.size

    def __dealloc__(self):
        if self.owner is not None:
            self.owner._give_back(self.block)
