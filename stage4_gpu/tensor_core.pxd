# Design: stage 3's declarations for stage 0's ``tensor_core.py``
# (``stage3_simd/tensor_core_decls.pxi``), compiled for stage 4 with a tensor's buffer typed
# as any device's: stage 2's ``BufferCore``, the base of a host buffer and of a device's
# ``StridedBuffer``, whose shape and dtype are C fields, so that an operation on the cpu
# device costs what it does on stage 3.
from stage2_cython._buffer cimport BufferCore as DataBuffer

include "stage3_simd/tensor_core_decls.pxi"
