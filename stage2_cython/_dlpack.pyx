"""DLPack: tensors shared with NumPy, PyTorch and any other library, both ways, without a copy.

Design: DLPack is a C ABI. A producer hands out a ``PyCapsule`` named ``"dltensor"``
holding a ``DLManagedTensor``: the tensor's layout (``DLTensor``), an opaque
``manager_ctx`` and a ``deleter`` the consumer calls, exactly once, when it no longer
needs the memory. The consumer renames the capsule ``"used_dltensor"`` so it cannot be
consumed twice; a capsule dropped unconsumed calls the deleter from its destructor. The
structs below are written from the public header's layout (dlpack.h, 1.0).

Two capsule kinds exist. The legacy ``"dltensor"`` (``DLManagedTensor``) is what we
read: NumPy and PyTorch give it when asked with no ``max_version``. A consumer that
allows DLPack 1.0 (``max_version=(1, 0)`` or more: NumPy's and PyTorch's from_dlpack)
gets ``"dltensor_versioned"`` (``DLManagedTensorVersioned``, the same tensor with a
version and flags): NumPy marks an array made from a legacy capsule read-only, since
that struct cannot say the memory is writable.

- Export (``to_capsule``): one ``malloc`` holds the managed tensor, its shape and its
  strides (in elements, as DLPack wants; a view exports its own strides and points
  ``data`` at its first element). ``manager_ctx`` holds a reference to the Buffer, so
  the Storage (and its pooled block) stays alive until the deleter drops it.
- Import (``from_capsule``): the producer's memory becomes a foreign Storage
  (``_storage.foreign_storage``) whose owner is an ``_Imported`` holding the managed
  tensor; when the storage dies the owner calls the producer's deleter. Foreign memory
  never reaches the pool. Any strides, negative ones included, become a strided view:
  the storage spans the lowest to the highest element addressed.

What we do not learn on import: whether the memory is read-only (the legacy struct has
no flag; NumPy refuses to export a read-only array that way, which from_dlpack reports).
And writes made through the other library do not bump the version counter that autograd
checks.
"""
from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_IsValid, PyCapsule_New, PyCapsule_SetName
from cpython.ref cimport Py_DECREF, Py_INCREF
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, uintptr_t
from libc.stdlib cimport free, malloc

from stage2_cython._buffer cimport Buffer, c_strides, code_of, data_of, make_view, new_buffer
from stage2_cython._storage cimport foreign_storage
from stage2_cython._types cimport (BFLOAT16, BOOL, FLOAT16, FLOAT32, FLOAT64, INT8, INT16, INT32, INT64,
                                   MAXDIM, UINT8, itemsize_of)

# ---------------------------------------------------------------- the ABI (dlpack.h)

cdef enum:
    kDLCPU = 1
    kDLInt = 0
    kDLUInt = 1
    kDLFloat = 2
    kDLBfloat = 4
    kDLComplex = 5
    kDLBool = 6

ctypedef struct DLDevice:
    int32_t device_type  # a C enum: int-sized
    int32_t device_id

ctypedef struct DLDataType:
    uint8_t code
    uint8_t bits
    uint16_t lanes

ctypedef struct DLTensor:
    void* data
    DLDevice device
    int32_t ndim
    DLDataType dtype
    int64_t* shape
    int64_t* strides  # in elements; NULL means C-contiguous
    uint64_t byte_offset

ctypedef struct DLManagedTensor:
    DLTensor dl_tensor
    void* manager_ctx
    void (*deleter)(DLManagedTensor*) noexcept

ctypedef struct DLPackVersion:
    uint32_t major
    uint32_t minor

ctypedef struct DLManagedTensorVersioned:
    DLPackVersion version
    void* manager_ctx
    void (*deleter)(DLManagedTensorVersioned*) noexcept
    uint64_t flags  # bit 0: read-only, bit 1: a copy; ours are neither
    DLTensor dl_tensor

# DLPack's (code, bits) for each of our dtype codes, indexed by DTypeCode
cdef uint8_t _DL_CODE[10]
cdef uint8_t _DL_BITS[10]
_DL_CODE[<int>BOOL] = kDLBool
_DL_CODE[<int>INT8] = _DL_CODE[<int>INT16] = _DL_CODE[<int>INT32] = _DL_CODE[<int>INT64] = kDLInt
_DL_CODE[<int>UINT8] = kDLUInt
_DL_CODE[<int>FLOAT32] = _DL_CODE[<int>FLOAT64] = _DL_CODE[<int>FLOAT16] = kDLFloat
_DL_CODE[<int>BFLOAT16] = kDLBfloat
for _code in range(10):
    _DL_BITS[_code] = 8 * itemsize_of(_code)

cdef dict _TYPE_NAMES = {kDLInt: "int", kDLUInt: "uint", kDLFloat: "float", kDLBfloat: "bfloat",
                         kDLComplex: "complex"}
cdef dict _DEVICE_NAMES = {2: "CUDA", 3: "CUDA host", 4: "OpenCL", 7: "Vulkan", 8: "Metal",
                           9: "VPI", 10: "ROCm", 13: "CUDA managed", 14: "oneAPI"}


# ---------------------------------------------------------------- export

cdef void _release_export(DLManagedTensor* m) noexcept with gil:
    # the consumer is done: drop the Buffer (and with it, maybe, the storage)
    Py_DECREF(<object>m.manager_ctx)
    free(m)


cdef void _release_versioned(DLManagedTensorVersioned* m) noexcept with gil:
    Py_DECREF(<object>m.manager_ctx)
    free(m)


cdef void _capsule_gone(object capsule) noexcept:
    # a capsule dropped before anyone consumed it still owns its tensor
    cdef DLManagedTensor* m
    cdef DLManagedTensorVersioned* v
    if PyCapsule_IsValid(capsule, b"dltensor"):
        m = <DLManagedTensor*>PyCapsule_GetPointer(capsule, b"dltensor")
        if m.deleter != NULL:
            m.deleter(m)
    elif PyCapsule_IsValid(capsule, b"dltensor_versioned"):
        v = <DLManagedTensorVersioned*>PyCapsule_GetPointer(capsule, b"dltensor_versioned")
        if v.deleter != NULL:
            v.deleter(v)


cdef void _describe(DLTensor* t, Buffer b, int64_t* dims) noexcept:
    """Fill ``t`` with ``b``'s layout; ``dims`` has room for its shape and strides."""
    cdef int i, n = b.ndim
    for i in range(n):
        dims[i] = <Py_ssize_t>b.shape[i]
        dims[n + i] = <Py_ssize_t>b.strides[i]
    t.data = data_of(b)  # the view's first element, so byte_offset stays 0
    t.device.device_type = kDLCPU
    t.device.device_id = 0
    t.ndim = n
    t.dtype.code = _DL_CODE[b.code]
    t.dtype.bits = _DL_BITS[b.code]
    t.dtype.lanes = 1
    t.shape = dims
    t.strides = dims + n
    t.byte_offset = 0


def to_capsule(Buffer b, bint versioned):
    """A capsule over ``b``'s elements in place: the view's shape, its strides (in
    elements) and its first element; ``"dltensor_versioned"`` (DLPack 1.0) when
    ``versioned``, else the legacy ``"dltensor"``. ``b`` stays alive until the consumer
    calls the deleter (or the capsule is dropped unconsumed)."""
    cdef size_t dims = 2 * b.ndim * sizeof(int64_t)  # shape and strides, after the struct
    cdef DLManagedTensor* m = NULL
    cdef DLManagedTensorVersioned* v = NULL
    if versioned:
        v = <DLManagedTensorVersioned*>malloc(sizeof(DLManagedTensorVersioned) + dims)
        if v == NULL:
            raise MemoryError()
        v.version.major, v.version.minor = 1, 0
        v.manager_ctx = <void*>b
        v.deleter = _release_versioned
        v.flags = 0
        _describe(&v.dl_tensor, b, <int64_t*>(v + 1))
    else:
        m = <DLManagedTensor*>malloc(sizeof(DLManagedTensor) + dims)
        if m == NULL:
            raise MemoryError()
        m.manager_ctx = <void*>b
        m.deleter = _release_export
        _describe(&m.dl_tensor, b, <int64_t*>(m + 1))
    try:
        capsule = (PyCapsule_New(v, b"dltensor_versioned", _capsule_gone) if versioned
                   else PyCapsule_New(m, b"dltensor", _capsule_gone))
    except BaseException:
        free(v if versioned else <void*>m)
        raise
    Py_INCREF(b)  # only now: from here the capsule (or its consumer) owns this reference
    return capsule


# ---------------------------------------------------------------- import

cdef class _Imported:
    """Owns a producer's managed tensor: calls its deleter when the storage over it dies."""
    cdef DLManagedTensor* managed

    def __dealloc__(self):
        if self.managed != NULL and self.managed.deleter != NULL:
            self.managed.deleter(self.managed)


cdef str _type_name(DLDataType t):
    if t.lanes != 1:
        return f"a vector type ({t.lanes} lanes of code {t.code}, {t.bits} bits)"
    if t.code == kDLBool and t.bits == 8:
        return "bool"
    if t.code in _TYPE_NAMES:
        return f"{_TYPE_NAMES[t.code]}{t.bits}"
    return f"DLPack type code {t.code} of {t.bits} bits"


cdef DLManagedTensor* _managed(object capsule) except NULL:
    """The capsule's tensor, or a clear error for a spent or foreign capsule."""
    if PyCapsule_IsValid(capsule, b"dltensor"):
        return <DLManagedTensor*>PyCapsule_GetPointer(capsule, b"dltensor")
    if PyCapsule_IsValid(capsule, b"used_dltensor"):
        raise BufferError("from_dlpack: this DLPack capsule was already consumed (each capsule "
                          "can be imported once; ask the producer for a new one)")
    if PyCapsule_IsValid(capsule, b"dltensor_versioned"):
        raise BufferError("from_dlpack: a versioned DLPack capsule (DLPack >= 1.0) cannot be read "
                          "here; pass the array itself, whose legacy capsule is asked for")
    raise TypeError(f"from_dlpack: expected an object with __dlpack__ or a 'dltensor' capsule, "
                    f"got {type(capsule).__name__}")


def capsule_dtype_name(object capsule):
    """The name of the element type the capsule holds (``"float32"``, ``"uint8"``...), read
    before consuming it, so an unsupported one can be refused with the capsule intact."""
    return _type_name(_managed(capsule).dl_tensor.dtype)


def from_capsule(object capsule, object dtype):
    """A Buffer of ``dtype`` (the frontend's object for ``capsule_dtype_name``) over the
    capsule's memory, without a copy. The capsule is consumed; the producer's deleter runs
    when the last view of the storage dies. An empty tensor gets fresh storage (nothing to
    share) and leaves the capsule to free the producer's."""
    cdef DLManagedTensor* m = _managed(capsule)
    cdef DLTensor* t = &m.dl_tensor
    cdef int code = code_of(dtype), i
    cdef Py_ssize_t item = itemsize_of(code), n, st, lo = 0, hi = 0, numel = 1
    if t.device.device_type != kDLCPU:
        where = _DEVICE_NAMES.get(t.device.device_type, f"device type {t.device.device_type}")
        raise BufferError(f"from_dlpack: the tensor lives on {where} (device {t.device.device_id}); "
                          f"stagegrad tensors live in CPU memory: move it to the CPU first")
    if _type_name(t.dtype) != dtype.name:
        raise TypeError(f"from_dlpack: the capsule holds {_type_name(t.dtype)}, not {dtype.name}")
    if t.ndim < 0 or t.ndim > MAXDIM:
        raise BufferError(f"from_dlpack: {t.ndim} dims; tensors have at most {MAXDIM}")
    shape = tuple([t.shape[i] for i in range(t.ndim)])
    strides = (c_strides(shape) if t.strides == NULL
               else tuple([t.strides[i] for i in range(t.ndim)]))
    for i in range(t.ndim):
        n = shape[i]
        if n < 0:
            raise BufferError(f"from_dlpack: negative size in shape {list(shape)}")
        numel *= n
        st = strides[i]
        if n > 1:  # the span of elements the view addresses, lowest to highest
            if st > 0:
                hi += (n - 1) * st
            else:
                lo += (n - 1) * st
    if numel == 0:
        return new_buffer(shape, dtype, code)
    cdef char* data = <char*>t.data + t.byte_offset
    if <uintptr_t>data % item:  # every kernel loads whole elements
        raise BufferError(f"from_dlpack: the data is not aligned to its {item}-byte elements")
    owner = _Imported.__new__(_Imported)
    PyCapsule_SetName(capsule, b"used_dltensor")  # consumed: from here the owner calls the deleter
    (<_Imported>owner).managed = m
    storage = foreign_storage(data + lo * item, hi - lo + 1, code, owner)
    return make_view(storage, shape, strides, -lo, dtype, code)
