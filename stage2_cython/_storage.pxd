from stage2_cython._types cimport DTypeCode


cdef class Storage:
    """Aligned memory shared by every view of it, with the version counter."""
    cdef char* ptr  # 64-byte aligned, never NULL
    cdef Py_ssize_t nbytes  # what was asked for
    cdef int klass  # the pool's size class of the block
    cdef readonly Py_ssize_t length  # elements
    cdef readonly int code  # the element type (DTypeCode), for the buffer protocol
    cdef Py_ssize_t stride  # bytes between elements: the buffer protocol points at it
    cdef public Py_ssize_t version  # in-place writes so far, through any view


cdef Storage new_storage(Py_ssize_t n, int code)
