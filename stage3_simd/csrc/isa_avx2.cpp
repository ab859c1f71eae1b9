// AVX2 with FMA (Haswell, Zen and later), compiled with -mavx2 -mfma.
#include "table.hpp"

SG3_ISA_MODULE(avx2, xsimd::fma3<xsimd::avx2>)
