// NEON on 64-bit Arm (the baseline there).
#include "table.hpp"

SG3_ISA_MODULE(neon, xsimd::neon64)
