from stage2_cython._buffer cimport Buffer


cdef class TensorCore:
    cdef public Buffer _data
    cdef public bint requires_grad
    cdef public object grad
    cdef public object grad_fn
    cdef public Py_ssize_t _output_nr
    cdef public object _accumulator
    cdef public object _view
    cdef object __weakref__


cdef TensorCore make(Buffer buf)
