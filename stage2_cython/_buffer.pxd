from stage2_cython._storage cimport Storage


cdef class BufferCore:
    """What the frontend reads of any device's buffer, as C fields: a host Buffer here, a
    device's buffer in stage 4 (its compiled frontend is typed on this)."""
    cdef readonly tuple shape
    cdef readonly object dtype  # the frontend's DType, carried untouched


cdef class Buffer(BufferCore):
    """A view: shape, strides and offset (in elements) over a Storage."""
    cdef readonly Storage storage
    cdef readonly tuple strides
    cdef readonly Py_ssize_t offset
    cdef readonly int code  # its DTypeCode
    cdef readonly int ndim
    cdef readonly Py_ssize_t numel


cdef int code_of(object dtype) except -1
cdef Py_ssize_t checked_numel(tuple shape) except -1
cdef Buffer make_view(Storage storage, tuple shape, tuple strides, Py_ssize_t offset, object dtype,
                      int code)
cdef Buffer new_buffer(tuple shape, object dtype, int code)
cdef tuple c_strides(tuple shape)
cdef void read_ints(tuple t, Py_ssize_t* out) noexcept
cdef int load_operand(Buffer b, int ndim, Py_ssize_t* shape, Py_ssize_t* st) except -1
cdef char* data_of(Buffer b) noexcept nogil
cdef bint contiguous_layout(Buffer b) noexcept
cdef int copy_into(Buffer dst, Buffer src) except -1
cpdef Buffer copy(Buffer x)
cpdef Buffer expand(Buffer x, tuple shape)
