// Design: the batched matmul of any element type over strided operands (the float32
// contiguous case goes to sgemm_ladder.cu instead, see matmul.py): one block of 16 x 16
// threads per 16 x 16 tile of C, the tiles of A and B it needs staged through shared
// memory 16 columns of the inner dim at a time, each thread one element of C (a
// grid-stride loop over tiles, batches included). Integer products wrap, as on the CPU.
//
// Parameters `p` (int64): [n, k, m, batches, a offset, a batch stride, a row stride,
//                          a col stride, b offset, b batch stride, b row stride, b col stride].
// C is contiguous (batches, n, m).
#include "common.cuh"
#include "math.cuh"

#define MM_TILE 16

template <typename T>
__global__ void matmul(const Params p, T* __restrict__ out, const T* __restrict__ a,
                       const T* __restrict__ b) {
  __shared__ T as[MM_TILE][MM_TILE];
  __shared__ T bs[MM_TILE][MM_TILE + 1];  // +1: no bank conflicts reading down a column
  const i64 n = p[0], k = p[1], m = p[2], batches = p[3];
  const i64 tiles_n = (n + MM_TILE - 1) / MM_TILE, tiles_m = (m + MM_TILE - 1) / MM_TILE;
  const int ty = threadIdx.x / MM_TILE, tx = threadIdx.x % MM_TILE;
  for (i64 tile = blockIdx.x; tile < batches * tiles_n * tiles_m; tile += gridDim.x) {
    const i64 batch = tile / (tiles_n * tiles_m), rest = tile % (tiles_n * tiles_m);
    const i64 row = (rest / tiles_m) * MM_TILE + ty, col = (rest % tiles_m) * MM_TILE + tx;
    const T* ab = a + p[4] + batch * p[5];
    const T* bb = b + p[8] + batch * p[9];
    typename acc_of<T>::type acc = 0;  // float for the 2-byte floats
    for (i64 k0 = 0; k0 < k; k0 += MM_TILE) {
      as[ty][tx] = (row < n && k0 + tx < k) ? ab[row * p[6] + (k0 + tx) * p[7]] : T(0);
      bs[ty][tx] = (k0 + ty < k && col < m) ? bb[(k0 + ty) * p[10] + col * p[11]] : T(0);
      __syncthreads();
      for (int kk = 0; kk < MM_TILE; kk++) {
        acc = Add::f(acc, Mul::f<typename acc_of<T>::type>(as[ty][kk], bs[kk][tx]));
      }
      __syncthreads();
    }
    if (row < n && col < m) out[(batch * n + row) * m + col] = T(acc);
  }
}
