"""Storage: 64-byte-aligned memory with a version counter, and the pool behind it.

A block is allocated with ``posix_memalign`` (64 bytes: a cache line, and the widest
vector register a later stage will load) and rounded up to a *size class*: multiples of
64 bytes up to 1 KiB, then eight classes per power of two (at most 12.5% slack). When a
Storage dies its block goes on the free list of its class instead of back to ``free``,
and the next storage of that class reuses it.

The free lists are intrusive (a free block's first word points to the next one) and
every pool function runs with the GIL held and calls no Python code, so each one is
atomic with respect to other threads: a Storage dying in another thread, or inside a
garbage collection, cannot interleave with an allocation. A block goes back to the pool
only from ``__dealloc__``, when no Buffer and no exported buffer (NumPy array,
memoryview, DLPack capsule) can reach it any more.

A Storage may also wrap *foreign* memory (``foreign_storage``: a DLPack import). Its
``klass`` is ``FOREIGN``, so its block never reaches the pool or ``free``: dropping its
``owner`` when the storage dies is what hands the memory back to its producer.
"""
cimport cython
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.buffer cimport PyBUF_FORMAT, PyBUF_ND, PyBUF_STRIDES
from libc.stdint cimport uintptr_t
from libc.stdlib cimport free
from libc.string cimport memcpy

cdef extern from "stdlib.h" nogil:
    int posix_memalign(void** memptr, size_t alignment, size_t size)

cdef extern from *:
    """
    #include <sys/mman.h>
    #ifdef MADV_HUGEPAGE
    static void sg_advise_huge(void* p, size_t n) { madvise(p, n, MADV_HUGEPAGE); }
    #else
    static void sg_advise_huge(void* p, size_t n) { (void)p; (void)n; }
    #endif
    """
    # Blocks of 2 MiB and more are aligned to 2 MiB and offered huge pages (where the OS
    # has them, on request: Linux's "madvise" mode): a loop streaming megabytes then
    # misses the TLB once per 2 MiB instead of once per 4 KiB.
    void sg_advise_huge(void* p, size_t n) nogil

from stage2_cython._types cimport (BFLOAT16, BOOL, FLOAT16, FLOAT32, FLOAT64, INT8, INT16, INT32, INT64,
                                   PY_SSIZE_T_MAX, UINT8, itemsize_of)

cdef extern from *:
    """
    #ifdef __SANITIZE_ADDRESS__
    #define SG_EXACT_BLOCKS 1
    #else
    #define SG_EXACT_BLOCKS 0
    #endif
    """
    # Under AddressSanitizer every block is its exact size and never pooled, so that a
    # read or write one element past a tensor is reported (a size class would hide it).
    const bint SG_EXACT_BLOCKS

cdef enum:
    HUGE = 2 * 1024 * 1024  # a huge page
    ALIGN = 64
    NCLASSES = 16 + 38 * 8  # blocks up to 2**48 bytes

# ---------------------------------------------------------------- size classes


cdef inline int class_of(Py_ssize_t nbytes) noexcept nogil:
    cdef Py_ssize_t c = nbytes if nbytes > ALIGN else ALIGN
    cdef int e
    cdef Py_ssize_t step
    if c <= 1024:
        return <int>((c + ALIGN - 1) // ALIGN - 1)
    e = 0
    while (<Py_ssize_t>1 << (e + 1)) < c:  # 2**e < c <= 2**(e+1)
        e += 1
    step = <Py_ssize_t>1 << (e - 3)
    return 16 + (e - 10) * 8 + <int>((c + step - 1) // step - 9)


cdef inline Py_ssize_t class_size(int k) noexcept nogil:
    if k < 16:
        return (k + 1) * ALIGN
    k -= 16
    cdef int e = 10 + k // 8
    return (<Py_ssize_t>(k % 8 + 9)) << (e - 3)


# ---------------------------------------------------------------- the pool

cdef void* _heads[NCLASSES]  # free list per class (zero-initialised: empty)
cdef bint _enabled = True
# Bytes the pool may hold: a fixed limit once set_limit sets one; until then (-1) twice as
# much as the program has ever had in use at once, and at least DEFAULT_LIMIT. A training step
# frees and reallocates the same blocks every step, so a pool that can hold one step's blocks
# misses nothing after the second step (a fixed 256 MiB made a large batch's step allocate
# hundreds of blocks anew, every step). Twice: each size class needs its own peak count of
# blocks, and those peaks fall at different moments of the step, so together they exceed the
# program's peak (ResNet-18's step by about 1.2 times).
cdef Py_ssize_t _limit = -1
cdef Py_ssize_t _held = 0
cdef Py_ssize_t _hits = 0, _misses = 0, _in_use = 0, _peak = 0, _high_water = 0
# a C constant: a storage freed while the interpreter shuts down (its module dict already
# cleared) must not look up a module global
cdef Py_ssize_t _DEFAULT_LIMIT = 256 * 2**20
DEFAULT_LIMIT = _DEFAULT_LIMIT


cdef inline Py_ssize_t _capacity() noexcept:
    if _limit >= 0:
        return _limit
    return 2 * _high_water if 2 * _high_water > _DEFAULT_LIMIT else _DEFAULT_LIMIT


cdef char* _take(Py_ssize_t nbytes, int* klass) except NULL:
    global _held, _hits, _misses, _in_use, _peak, _high_water
    cdef Py_ssize_t size
    if nbytes > class_size(NCLASSES - 1):  # past the largest class: no slot in the table
        raise MemoryError(f"cannot allocate {nbytes} bytes for a tensor (at most "
                          f"{class_size(NCLASSES - 1)} bytes can be asked for)")
    cdef int k = class_of(nbytes)
    cdef void* p = NULL if SG_EXACT_BLOCKS else _heads[k]
    if p != NULL:
        _heads[k] = (<void**>p)[0]
        _held -= class_size(k)
        _hits += 1
    else:
        size = (nbytes if nbytes else 1) if SG_EXACT_BLOCKS else class_size(k)
        if posix_memalign(&p, HUGE if size >= HUGE else ALIGN, size) != 0:
            raise MemoryError(f"cannot allocate {nbytes} bytes for a tensor")
        if size >= HUGE:
            sg_advise_huge(p, size)
        _misses += 1
    _in_use += nbytes
    if _in_use > _peak:
        _peak = _in_use
    if _in_use > _high_water:
        _high_water = _in_use
    klass[0] = k
    return <char*>p


cdef void _give(char* p, int k, Py_ssize_t nbytes) noexcept:
    global _held, _in_use
    cdef Py_ssize_t size = class_size(k)
    _in_use -= nbytes
    if _enabled and not SG_EXACT_BLOCKS and _held + size <= _capacity():
        (<void**>p)[0] = _heads[k]
        _heads[k] = p
        _held += size
    else:
        free(p)


cdef void _evict_to(Py_ssize_t limit) noexcept:
    """Free pooled blocks, the largest classes first, until at most ``limit`` bytes are held."""
    global _held
    cdef int k
    cdef void* p
    for k in range(NCLASSES - 1, -1, -1):
        while _held > limit and _heads[k] != NULL:
            p = _heads[k]
            _heads[k] = (<void**>p)[0]
            _held -= class_size(k)
            free(p)


def stats():
    return {"hits": _hits, "misses": _misses, "allocations": _hits + _misses,
            "bytes_in_use": _in_use, "peak_bytes_in_use": _peak, "bytes_held_by_pool": _held}


def reset_stats():
    global _hits, _misses, _peak
    _hits = _misses = 0
    _peak = _in_use


def empty_cache():
    _evict_to(0)


def set_enabled(enabled):
    global _enabled
    _enabled = bool(enabled)
    if not _enabled:
        _evict_to(0)


def set_limit(nbytes):
    global _limit
    if nbytes < 0:
        raise ValueError(f"set_pool_limit: the limit must be >= 0 bytes, got {nbytes}")
    _limit = nbytes
    _evict_to(_limit)


# ---------------------------------------------------------------- the buffer protocol

cdef char* _FORMATS[10]
_FORMATS[<int>BOOL] = b"?"
_FORMATS[<int>INT32] = b"i"
_FORMATS[<int>INT64] = b"q"
_FORMATS[<int>FLOAT32] = b"f"
_FORMATS[<int>FLOAT64] = b"d"
_FORMATS[<int>FLOAT16] = b"e"
_FORMATS[<int>BFLOAT16] = b"H"  # no format names bfloat16: its raw words (numpy() refuses it)
_FORMATS[<int>UINT8] = b"B"
_FORMATS[<int>INT8] = b"b"
_FORMATS[<int>INT16] = b"h"


cdef void describe_elements(Py_buffer* view, char* buf, Py_ssize_t nbytes, int code, int flags, int ndim,
                            Py_ssize_t* shape, Py_ssize_t* strides, void* internal) noexcept:
    """Fill ``view`` for a ``__getbuffer__`` exporting writable elements of dtype ``code`` at
    ``buf`` (``shape`` and ``strides`` in bytes, as the protocol has them), the format only
    where ``flags`` ask for it; all but ``view.obj``, which the exporter sets to itself."""
    view.buf = buf
    view.len = nbytes
    view.readonly = 0
    view.itemsize = itemsize_of(code)
    view.format = _FORMATS[code] if flags & PyBUF_FORMAT else NULL
    view.ndim = ndim
    view.shape = shape
    view.strides = strides
    view.suboffsets = NULL
    view.internal = internal


# ---------------------------------------------------------------- Storage


@cython.auto_pickle(False)  # a pointer must never be pickled: __reduce__ copies the bytes
cdef class Storage:
    """Made only by the backend (``new_storage``); its contents start undefined."""

    def __reduce__(self):
        return _rebuild, (PyBytes_FromStringAndSize(self.ptr, self.nbytes), self.code, self.version)

    def __dealloc__(self):
        # klass, not owner, tells foreign memory: a garbage collection may clear owner first
        if self.ptr != NULL and self.klass != FOREIGN:
            _give(self.ptr, self.klass, self.nbytes)

    @property
    def is_foreign(self):
        """True when the memory belongs to another library (a DLPack import)."""
        return self.klass == FOREIGN

    @property
    def address(self):
        return <uintptr_t>self.ptr

    @property
    def itemsize(self):
        return itemsize_of(self.code)

    def __len__(self):
        return self.length

    def __getbuffer__(self, Py_buffer* view, int flags):
        # one flat, C-contiguous, writable run of elements: no copy is made
        view.obj = self
        describe_elements(view, self.ptr, self.nbytes, self.code, flags, 1,
                          &self.length if flags & PyBUF_ND else NULL,
                          &self.stride if (flags & PyBUF_STRIDES) == PyBUF_STRIDES else NULL, NULL)

    def __releasebuffer__(self, Py_buffer* view):
        pass


cdef Storage new_storage(Py_ssize_t n, int code):
    if n < 0 or n > PY_SSIZE_T_MAX // itemsize_of(code):
        raise MemoryError(f"cannot allocate a tensor of {n} elements of {itemsize_of(code)} bytes")
    cdef Storage s = Storage.__new__(Storage)
    s.nbytes = n * itemsize_of(code)
    s.ptr = _take(s.nbytes, &s.klass)
    s.length = n
    s.code = code
    s.stride = itemsize_of(code)
    return s


cdef Storage foreign_storage(char* ptr, Py_ssize_t n, int code, object owner):
    """A Storage over ``n`` elements at ``ptr`` that it does not own: ``owner`` keeps them
    alive and is released (so the producer frees them) when the storage dies."""
    cdef Storage s = Storage.__new__(Storage)
    s.ptr = ptr
    s.nbytes = n * itemsize_of(code)
    s.klass = FOREIGN
    s.length = n
    s.code = code
    s.stride = itemsize_of(code)
    s.owner = owner
    return s


def _rebuild(bytes data, int code, Py_ssize_t version):
    """Unpickle (and deepcopy) a Storage: fresh memory holding a copy of ``data``."""
    cdef Storage s = new_storage(len(data) // itemsize_of(code), code)
    memcpy(s.ptr, <char*>data, s.nbytes)
    s.version = version
    return s
