# Design: the declarations that compile stage 0's ``tensor_core.py`` for stage 3 (Cython's
# pure-Python mode: this file augments that source, which has no twin here). TensorCore
# becomes an extension type whose fields are C slots, on stage 2's host buffers, so that
# making a tensor is an allocation and ``a + b`` reads shapes and dtypes as C fields; the
# module's helpers become C functions that the operators call with no Python call between.
cimport cython

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


cdef type _Tensor
cdef object ops, _binary_kernel, _full, _Add, _Sub, _Mul, _Div
cdef frozenset _FLOATING


@cython.locals(t=TensorCore)
cpdef TensorCore make(Buffer buf)
cdef bint _keeps_dtype(object dtype, str op)


@cython.locals(a=TensorCore, b=TensorCore, s=TensorCore)
cdef object binary(TensorCore self, object other, str op, object fn, bint reverse)


cdef object _run(str op, object fn, TensorCore a, TensorCore b)
cdef object _general(TensorCore self, object other, str op, object fn, bint reverse)
