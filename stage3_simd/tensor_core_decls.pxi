# The declarations of stage 0's tensor_core.py that stages 3 and 4 compile it with (each
# stage's tensor_core.pxd cimports the buffer type its tensors hold as DataBuffer, then
# includes this).
cimport cython


cdef class TensorCore:
    cdef public DataBuffer _data
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
cpdef TensorCore make(DataBuffer buf)
cdef bint _keeps_dtype(object dtype, str op)


@cython.locals(a=TensorCore, b=TensorCore, s=TensorCore)
cdef object binary(TensorCore self, object other, str op, object fn, bint reverse)


cdef object _run(str op, object fn, TensorCore a, TensorCore b)
cdef object _general(TensorCore self, object other, str op, object fn, bint reverse)
