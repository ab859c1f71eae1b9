from stage2_cython._types cimport DTypeCode


cdef class Storage:
    """Memory shared by every view of it, with the version counter: an aligned block from
    the pool, or foreign memory a DLPack import wraps."""
    cdef char* ptr  # never NULL; 64-byte aligned unless the memory is foreign
    cdef Py_ssize_t nbytes  # what was asked for
    cdef int klass  # the pool's size class of the block; FOREIGN for memory it does not own
    cdef readonly Py_ssize_t length  # elements
    cdef readonly int code  # the element type (DTypeCode), for the buffer protocol
    cdef Py_ssize_t stride  # bytes between elements: the buffer protocol points at it
    cdef public Py_ssize_t version  # in-place writes so far, through any view
    cdef object owner  # what keeps foreign memory alive (DLPack import); None for pool blocks


cdef enum:
    FOREIGN = -1  # the klass of a Storage over memory that someone else frees


cdef Storage new_storage(Py_ssize_t n, int code)
cdef Storage foreign_storage(char* ptr, Py_ssize_t n, int code, object owner)
cdef void describe_elements(Py_buffer* view, char* buf, Py_ssize_t nbytes, int code, int flags, int ndim,
                            Py_ssize_t* shape, Py_ssize_t* strides, void* internal) noexcept
