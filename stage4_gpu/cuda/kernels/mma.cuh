// The tensor cores' 16 x 8 x 16 product (PTX's mma.sync.m16n8k16, sm_80 and later), shared
// by hgemm.cu and conv.cu: float16 or bfloat16 operands from shared memory, float32
// accumulators in registers, the fragments' register layout written out as PTX defines it.
// Before sm_80 and under the host emulation the same four outputs are summed in float.
#pragma once
#include "common.cuh"

#define MMA_K 16  // the product's depth

__device__ __forceinline__ unsigned pack2(unsigned short lo, unsigned short hi) {
  return (unsigned)lo | ((unsigned)hi << 16);
}

// c (this lane's four accumulators of a 16 x 8 tile of C) += A (16 x 16, rows lda apart) B
// (16 x 8, rows ldb apart), both in shared memory. Lane l holds rows l/4 and l/4 + 8, and
// columns 2 (l % 4) and 2 (l % 4) + 1, of C.
template <typename T>
__device__ __forceinline__ void mma_16x8x16(float* c, const T* A, int lda, const T* B, int ldb, int lane) {
  const int g = lane >> 2, q = 2 * (lane & 3);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned a0 = pack2(A[g * lda + q].bits, A[g * lda + q + 1].bits);
  const unsigned a1 = pack2(A[(g + 8) * lda + q].bits, A[(g + 8) * lda + q + 1].bits);
  const unsigned a2 = pack2(A[g * lda + q + 8].bits, A[g * lda + q + 9].bits);
  const unsigned a3 = pack2(A[(g + 8) * lda + q + 8].bits, A[(g + 8) * lda + q + 9].bits);
  const unsigned b0 = pack2(B[q * ldb + g].bits, B[(q + 1) * ldb + g].bits);
  const unsigned b1 = pack2(B[(q + 8) * ldb + g].bits, B[(q + 9) * ldb + g].bits);
  if constexpr (is_half<T>::value) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                 "{%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  } else {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                 "{%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
#else  // older GPUs and the host emulation: the same four outputs, in float
  for (int e = 0; e < 4; e++) {
    const int r = g + (e >= 2 ? 8 : 0), col = q + (e & 1);
    float s = 0.0f;
    for (int kk = 0; kk < MMA_K; kk++) s += (float)A[r * lda + kk] * (float)B[kk * ldb + col];
    c[e] += s;
  }
#endif
}
