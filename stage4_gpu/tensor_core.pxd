# Design: the declarations that compile stage 0's ``tensor_core.py`` for stage 4, as
# stage 3's do for it, but with a tensor's buffer typed as any device's: a host buffer of
# stage 2 or a device's ``StridedBuffer``. Each offers what the core reads (``shape``,
# ``dtype``, ``version``), so the same source runs on every device.

cimport cython


cdef class TensorCore:
    cdef public object _data
    cdef public bint requires_grad
    cdef public object grad
    cdef public object grad_fn
    cdef public Py_ssize_t _output_nr
    cdef public object _accumulator
    cdef public object _view
    cdef object __weakref__


cdef type _Tensor
cdef object ops, _binary_kernel, _full, _Add, _Sub, _Mul, _Div

@cython.locals(t=TensorCore)
cpdef TensorCore make(object buf)
cdef bint _keeps_dtype(object dtype, str op)
@cython.locals(a=TensorCore, b=TensorCore, s=TensorCore)
cdef object binary(TensorCore self, object other, str op, object fn, bint reverse)
cdef object _run(str op, object fn, TensorCore a, TensorCore b)
cdef object _general(TensorCore self, object other, str op, object fn, bint reverse)
