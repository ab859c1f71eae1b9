# Design: the declarations that compile stage 0's ``tensor_core.py`` for stage 4, as
# stage 3's do for it, but with a tensor's buffer typed as any device's: stage 2's
# ``BufferCore``, the base of a host buffer and of a device's ``StridedBuffer``, whose shape
# and dtype are C fields, so that an operation on the cpu device costs what it does on
# stage 3.
cimport cython

from stage2_cython._buffer cimport BufferCore


cdef class TensorCore:
    cdef public BufferCore _data
    cdef public bint requires_grad
    cdef public object grad
    cdef public object grad_fn
    cdef public Py_ssize_t _output_nr
    cdef public object _accumulator
    cdef public object _view
    cdef object __weakref__


cdef type _Tensor
cdef object ops, _binary_kernel, _full, _Add, _Sub, _Mul, _Div
cdef frozenset _FLOATING


@cython.locals(t=TensorCore)
cpdef TensorCore make(BufferCore buf)
cdef bint _keeps_dtype(object dtype, str op)


@cython.locals(a=TensorCore, b=TensorCore, s=TensorCore)
cdef object binary(TensorCore self, object other, str op, object fn, bint reverse)


cdef object _run(str op, object fn, TensorCore a, TensorCore b)
cdef object _general(TensorCore self, object other, str op, object fn, bint reverse)
