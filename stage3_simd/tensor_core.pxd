# Design: the declarations that compile stage 0's ``tensor_core.py`` for stage 3 (Cython's
# pure-Python mode: this file augments that source, which has no twin here). TensorCore
# becomes an extension type whose fields are C slots, on stage 2's host buffers, so that
# making a tensor is an allocation and ``a + b`` reads shapes and dtypes as C fields; the
# module's helpers become C functions that the operators call with no Python call between.
# The declarations themselves are ``tensor_core_decls.pxi``, which stage 4 shares.
from stage2_cython._buffer cimport Buffer as DataBuffer

include "stage3_simd/tensor_core_decls.pxi"
