# Design: a device buffer's view fields as C fields (``_strided.pyx``), read by compiled
# code without an attribute lookup.
from stage2_cython._buffer cimport BufferCore


cdef class StridedCore(BufferCore):
    cdef readonly object storage
    cdef readonly tuple strides
    cdef readonly Py_ssize_t offset
    cdef readonly Py_ssize_t numel
    cdef object __weakref__

    cdef void set_view(self, object storage, tuple shape, tuple strides, Py_ssize_t offset,
                       object dtype) noexcept


cpdef tuple contiguous_strides(shape)
