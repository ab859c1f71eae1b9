// SSE2, the x86-64 baseline: every x86-64 CPU runs this module.
#include "table.hpp"

SG3_ISA_MODULE(sse2, xsimd::sse2)
