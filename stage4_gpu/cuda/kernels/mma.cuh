// The tensor cores' 16 x 8 x 16 product (PTX's mma.sync.m16n8k16, sm_80 and later) and what
// the kernels built on it share (hgemm.cu, hgemm_ladder.cu, conv.cu): float16 or bfloat16
// operands, float32 accumulators in registers, the fragments' register layout written out as
// PTX defines it; the walk over a lane's accumulators in that layout, C's store from them,
// and the zero-padded copy of an operand's tile into shared memory. Before sm_80 and under
// the host emulation the product's same four outputs are summed in float.
#pragma once
#include "common.cuh"

#define MMA_K 16  // the product's depth

__device__ __forceinline__ unsigned pack2(unsigned short lo, unsigned short hi) {
  return (unsigned)lo | ((unsigned)hi << 16);
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define MMA_PTX(TY) \
  "mma.sync.aligned.m16n8k16.row.col.f32." TY "." TY ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
// the instruction itself: c (this lane's four accumulators) += the A fragment a (four
// registers of two elements) times the B fragment b (two)
template <typename T>
__device__ __forceinline__ void mma_sync_16x8x16(float* c, const unsigned* a, const unsigned* b) {
  if constexpr (is_half<T>::value) {
    asm volatile(MMA_PTX("f16")
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile(MMA_PTX("bf16")
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
}
#endif

// c (this lane's four accumulators of a 16 x 8 tile of C) += A (16 x 16, rows lda apart) B
// (16 x 8, rows ldb apart), both in shared memory. Lane l holds rows l/4 and l/4 + 8, and
// columns 2 (l % 4) and 2 (l % 4) + 1, of C.
template <typename T>
__device__ __forceinline__ void mma_16x8x16(float* c, const T* A, int lda, const T* B, int ldb, int lane) {
  const int g = lane >> 2, q = 2 * (lane & 3);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned a[4] = {pack2(A[g * lda + q].bits, A[g * lda + q + 1].bits),
                         pack2(A[(g + 8) * lda + q].bits, A[(g + 8) * lda + q + 1].bits),
                         pack2(A[g * lda + q + 8].bits, A[g * lda + q + 9].bits),
                         pack2(A[(g + 8) * lda + q + 8].bits, A[(g + 8) * lda + q + 9].bits)};
  const unsigned b[2] = {pack2(B[q * ldb + g].bits, B[(q + 1) * ldb + g].bits),
                         pack2(B[(q + 8) * ldb + g].bits, B[(q + 9) * ldb + g].bits)};
  mma_sync_16x8x16<T>(c, a, b);
#else  // older GPUs and the host emulation: the same four outputs, in float
  for (int e = 0; e < 4; e++) {
    const int r = g + (e >= 2 ? 8 : 0), col = q + (e & 1);
    float s = 0.0f;
    for (int kk = 0; kk < MMA_K; kk++) s += (float)A[r * lda + kk] * (float)B[kk * ldb + col];
    c[e] += s;
  }
#endif
}

// f(r, c, v) for each of the lane's accumulators v of a warp's MI x NI grid of 16 x 8 tiles
// (acc[i][j], as mma_16x8x16 leaves them), (r, c) its place in the grid
template <int MI, int NI, typename F>
__device__ __forceinline__ void mma_each(const float (*acc)[NI][4], int lane, F f) {
  const int g = lane >> 2, q = 2 * (lane & 3);
  for (int i = 0; i < MI; i++)
    for (int j = 0; j < NI; j++)
      for (int e = 0; e < 4; e++) f(16 * i + g + (e >= 2 ? 8 : 0), 8 * j + q + (e & 1), acc[i][j][e]);
}

// the lane's accumulators of a warp's MI x NI grid of 16 x 8 tiles into C (rows n, columns
// m), the grid at (r0, c0), rounded once to T
template <typename T, int MI, int NI>
__device__ __forceinline__ void store_c(T* out, const float (*acc)[NI][4], i64 r0, i64 c0, i64 n, i64 m,
                                        int lane) {
  mma_each<MI, NI>(acc, lane, [&](int r, int c, float v) {
    if (r0 + r < n && c0 + c < m) out[(r0 + r) * m + c0 + c] = T(v);
  });
}

// the ROWS x COLS block at (row, col) of a rows x cols matrix into dst (rows ld apart),
// element by element, zeros outside the matrix; consecutive threads along a row
template <int ROWS, int COLS, int THREADS, typename T>
__device__ __forceinline__ void copy_tile(T* dst, int ld, const T* src, i64 row, i64 rows, i64 col, i64 cols) {
  for (int e = threadIdx.x; e < ROWS * COLS; e += THREADS) {
    const int r = e / COLS, c = e % COLS;
    dst[r * ld + c] = (row + r < rows && col + c < cols) ? src[(row + r) * cols + col + c] : T(0.0f);
  }
}
