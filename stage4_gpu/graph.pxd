# Design: stage 3's declarations for stage 0's ``graph.py`` (``stage3_simd/graph_decls.pxi``),
# compiled for stage 4's own modules: its grad mode, its nodes, over its TensorCore.
from stage4_gpu.tensor_core cimport TensorCore

include "stage3_simd/graph_decls.pxi"
