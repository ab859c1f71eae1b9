# Design: the declarations that compile stage 0's ``graph.py`` for stage 3 (Cython's
# pure-Python mode: this file augments that source, which has no twin here). Grad mode
# becomes a C thread-local, Context, Node and AccumulateGrad extension types with typed
# fields, and Function.apply and the engine's helpers C functions over stage 3's tensors.
from stage3_simd.tensor_core cimport TensorCore

include "stage3_simd/graph_decls.pxi"
