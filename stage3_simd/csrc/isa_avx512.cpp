// AVX-512 F/BW/DQ/VL (Skylake-X, Ice Lake, Zen 4 and later), compiled with -mavx512f
// -mavx512bw -mavx512dq -mavx512vl.
#include "table.hpp"

SG3_ISA_MODULE(avx512, xsimd::avx512bw)
