// Design: float16 and bfloat16 products on the tensor cores, accumulating in float32, as
// PyTorch's do (the result rounded once to the operands' type). One block of 4 warps per
// 64 x 64 tile of C (a grid-stride loop over tiles, batches included); the block stages
// 64 x 16 of A and 16 x 64 of B in shared memory at a time, zero-padded at the edges so
// that any sizes work, and each warp computes a 32 x 32 quarter as 2 x 4 tensor-core
// products of 16 x 8 x 16 (PTX's mma.sync.m16n8k16, sm_80 and later; mma.cuh's
// mma_16x8x16 writes out its fragments' register layout). Shared rows are padded by 8
// elements so that the eight rows a fragment load touches fall in different banks.
//
// Parameters `p` (int64): [n, k, m, batches]; A (batches, n, k), B (batches, k, m) and C
// (batches, n, m) contiguous.
#include "common.cuh"
#include "mma.cuh"

#define HG_TILE 64
#define HG_K 16
#define HG_PAD 8
#define HG_THREADS 128

template <typename T>
__global__ void hgemm(const Params p, T* __restrict__ out, const T* __restrict__ a,
                      const T* __restrict__ b) {
  __shared__ T as[HG_TILE][HG_K + HG_PAD];
  __shared__ T bs[HG_K][HG_TILE + HG_PAD];
  const i64 n = p[0], k = p[1], m = p[2], batches = p[3];
  const i64 tiles_n = (n + HG_TILE - 1) / HG_TILE, tiles_m = (m + HG_TILE - 1) / HG_TILE;
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const int wr = (warp >> 1) * 32, wc = (warp & 1) * 32;  // this warp's quarter of the tile
  for (i64 tile = blockIdx.x; tile < batches * tiles_n * tiles_m; tile += gridDim.x) {
    const i64 batch = tile / (tiles_n * tiles_m), rest = tile % (tiles_n * tiles_m);
    const i64 row0 = (rest / tiles_m) * HG_TILE, col0 = (rest % tiles_m) * HG_TILE;
    const T* ab = a + batch * n * k;
    const T* bb = b + batch * k * m;
    float acc[2][4][4] = {};
    for (i64 k0 = 0; k0 < k; k0 += HG_K) {
      copy_tile<HG_TILE, HG_K, HG_THREADS>(as[0], HG_K + HG_PAD, ab, row0, n, k0, k);
      copy_tile<HG_K, HG_TILE, HG_THREADS>(bs[0], HG_TILE + HG_PAD, bb, k0, k, col0, m);
      __syncthreads();
      for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++)
          mma_16x8x16(acc[i][j], &as[wr + 16 * i][0], HG_K + HG_PAD, &bs[0][wc + 8 * j], HG_TILE + HG_PAD, lane);
      __syncthreads();
    }
    store_c<T, 2, 4>(out + batch * n * m, acc, row0 + wr, col0 + wc, n, m, lane);
  }
}
