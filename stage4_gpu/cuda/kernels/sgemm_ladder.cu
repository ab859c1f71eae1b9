// Design: the GPU GEMM ladder, C = A B in float32 for row-major A (M x K), B (K x N) and
// C (M x N), one tier per kernel, each changing one thing from the tier before. Every
// kernel takes (M, N, K, A, B, C) and a batch in blockIdx.z (A, B and C contiguous per
// batch); every load and store is bounds-checked, so any M, N, K works, except where a
// tier's note says what the host checks first. Launch shapes are in ladder.py.
//
//  1 naive        one thread per C element; consecutive threads walk down a column of C,
//                 so a warp reads 32 rows of A and writes 32 rows of C: uncoalesced.
//  2 coalesced    the same work, consecutive threads along a row of C: a warp reads one
//                 row of B and writes one row of C in single transactions.
//  3 shared       32 x 32 tiles of A and B staged in shared memory: each global element is
//                 read once per tile instead of once per output.
//  4 blocktile_1d each thread computes 8 outputs down a column (a 64 x 64 block tile): one
//                 shared-memory read of B serves 8 multiply-adds.
//  5 blocktile_2d each thread an 8 x 8 square of outputs (128 x 128 block tile) from
//                 registers: 16 shared reads per 64 multiply-adds.
//  6 vectorized   tier 5 with 128-bit (float4) global loads and stores, and the A tile
//                 stored transposed so a thread's column of A is contiguous in shared
//                 memory. Needs K and N multiples of 4 and 16-byte aligned A, B, C.
//  7 warptile     tier 6 organised by warps: each warp owns a 64 x 32 tile of C and walks
//                 it in two 32 x 32 sub-tiles, so a warp's shared-memory reads fall in
//                 few rows (fewer bank conflicts) and its registers are reused across
//                 the sub-tiles. Same requirements as tier 6.
//  8 double_buffer  tier 7 with two shared buffers per operand: the loads of the next K tile
//                 are issued into registers before the current tile is computed, and stored
//                 into the other buffer after it, so global-memory latency overlaps the
//                 multiply-adds and one barrier per tile suffices.
//  9 swizzled     tier 8 with the transposed A tile stored swizzled: row k of it is XORed
//                 by ((k / 4) % 4) * 8, so the four k rows a warp's scattered stores touch
//                 fall in different banks (tier 8's stores were 4-way conflicted); reads
//                 of 8 consecutive m stay contiguous, since the XOR leaves the low 3 bits.
// 10 autotuned    tier 9 as a template over the tile sizes (BM, BN, BK, WM, WN, TM, TN);
//                 a few configurations are instantiated and ladder.py picks one per shape
//                 class by timing each once on the GPU.
//
// Tiers 8-10 follow Simon Boehm's worklog "How to Optimize a CUDA Matmul Kernel for
// cuBLAS-like Performance" (https://siboehm.com/articles/22/CUDA-MMM): his double
// buffering, bank-conflict and autotuning kernels, written here in this file's terms.

typedef long long i64;

// a float4 from four floats (make_float4 is a runtime-header function NVRTC may lack)
__device__ __forceinline__ float4 f4(float x, float y, float z, float w) {
  float4 v;
  v.x = x;
  v.y = y;
  v.z = z;
  v.w = w;
  return v;
}

#define BATCH_OFFSETS                                             \
  const i64 z = blockIdx.z;                                       \
  A += z * M * K;                                                 \
  B += z * K * N;                                                 \
  C += z * M * N;

// row `row` of A times column `col` of B, one product after another: tiers 1 and 2's work
// for each element of C
__device__ __forceinline__ float row_times_col(const float* A, const float* B, i64 N, i64 K, i64 row, i64 col) {
  float acc = 0.0f;
  for (i64 k = 0; k < K; k++) acc += A[row * K + k] * B[k * N + col];
  return acc;
}

// the float4 at p[i], or zeros where it lies outside the matrix (tiers 6 on: a float4 at a
// column that is a multiple of 4 is wholly inside or wholly out)
__device__ __forceinline__ float4 load4(const float* p, i64 i, bool inside) {
  return inside ? *reinterpret_cast<const float4*>(&p[i]) : f4(0.0f, 0.0f, 0.0f, 0.0f);
}

// v, A's elements (m, k) .. (m, k + 3), into the transposed tile: as[k * bm + m] and on
__device__ __forceinline__ void store_transposed(float* as, int bm, int m, int k, float4 v) {
  as[(k + 0) * bm + m] = v.x;
  as[(k + 1) * bm + m] = v.y;
  as[(k + 2) * bm + m] = v.z;
  as[(k + 3) * bm + m] = v.w;
}

// ---------------------------------------------------------------- 1 naive
// block (16, 16); grid (ceil(M / 16), ceil(N / 16), batches)
extern "C" __global__ void sgemm_naive(i64 M, i64 N, i64 K, const float* A, const float* B, float* C) {
  BATCH_OFFSETS
  const i64 row = (i64)blockIdx.x * 16 + threadIdx.x;
  const i64 col = (i64)blockIdx.y * 16 + threadIdx.y;
  if (row >= M || col >= N) return;
  C[row * N + col] = row_times_col(A, B, N, K, row, col);
}

// ---------------------------------------------------------------- 2 coalesced
// block (16, 16); grid (ceil(N / 16), ceil(M / 16), batches)
extern "C" __global__ void sgemm_coalesced(i64 M, i64 N, i64 K, const float* A, const float* B,
                                           float* C) {
  BATCH_OFFSETS
  const i64 col = (i64)blockIdx.x * 16 + threadIdx.x;
  const i64 row = (i64)blockIdx.y * 16 + threadIdx.y;
  if (row >= M || col >= N) return;
  C[row * N + col] = row_times_col(A, B, N, K, row, col);
}

// ---------------------------------------------------------------- 3 shared
// block (32, 32); grid (ceil(N / 32), ceil(M / 32), batches)
extern "C" __global__ void sgemm_shared(i64 M, i64 N, i64 K, const float* A, const float* B, float* C) {
  BATCH_OFFSETS
  __shared__ float as[32][32];
  __shared__ float bs[32][32];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const i64 col = (i64)blockIdx.x * 32 + tx;
  const i64 row = (i64)blockIdx.y * 32 + ty;
  float acc = 0.0f;
  for (i64 k0 = 0; k0 < K; k0 += 32) {
    as[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
    bs[ty][tx] = (k0 + ty < K && col < N) ? B[(k0 + ty) * N + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < 32; k++) acc += as[ty][k] * bs[k][tx];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}

// ---------------------------------------------------------------- 4 blocktile_1d
// block 512; grid (ceil(N / 64), ceil(M / 64), batches)
extern "C" __global__ void sgemm_blocktile_1d(i64 M, i64 N, i64 K, const float* A, const float* B,
                                              float* C) {
  BATCH_OFFSETS
  const int BM = 64, BN = 64, BK = 8, TM = 8;
  __shared__ float as[BM * BK];
  __shared__ float bs[BK * BN];
  const int t = threadIdx.x;
  const int tcol = t % BN, trow = t / BN;  // this thread: rows trow*8 .. +8 of column tcol
  const i64 r0 = (i64)blockIdx.y * BM, c0 = (i64)blockIdx.x * BN;
  const int ar = t / BK, ac = t % BK, br = t / BN, bc = t % BN;  // one load each, per tile
  float acc[TM] = {0.0f};
  for (i64 k0 = 0; k0 < K; k0 += BK) {
    as[ar * BK + ac] = (r0 + ar < M && k0 + ac < K) ? A[(r0 + ar) * K + k0 + ac] : 0.0f;
    bs[br * BN + bc] = (k0 + br < K && c0 + bc < N) ? B[(k0 + br) * N + c0 + bc] : 0.0f;
    __syncthreads();
    for (int k = 0; k < BK; k++) {
      const float b = bs[k * BN + tcol];
      for (int i = 0; i < TM; i++) acc[i] += as[(trow * TM + i) * BK + k] * b;
    }
    __syncthreads();
  }
  for (int i = 0; i < TM; i++) {
    const i64 row = r0 + trow * TM + i, col = c0 + tcol;
    if (row < M && col < N) C[row * N + col] = acc[i];
  }
}

// ---------------------------------------------------------------- 5 blocktile_2d
// block 256; grid (ceil(N / 128), ceil(M / 128), batches)
extern "C" __global__ void sgemm_blocktile_2d(i64 M, i64 N, i64 K, const float* A, const float* B,
                                              float* C) {
  BATCH_OFFSETS
  const int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
  __shared__ float as[BM * BK];
  __shared__ float bs[BK * BN];
  const int t = threadIdx.x;
  const int tcol = t % (BN / TN), trow = t / (BN / TN);
  const i64 r0 = (i64)blockIdx.y * BM, c0 = (i64)blockIdx.x * BN;
  float acc[TM][TN] = {{0.0f}};
  float rm[TM], rn[TN];
  for (i64 k0 = 0; k0 < K; k0 += BK) {
    for (int s = 0; s < BM * BK / 256; s++) {  // 4 elements of each tile per thread
      const int ia = t + s * 256;
      const int ar = ia / BK, ac = ia % BK, br = ia / BN, bc = ia % BN;
      as[ia] = (r0 + ar < M && k0 + ac < K) ? A[(r0 + ar) * K + k0 + ac] : 0.0f;
      bs[ia] = (k0 + br < K && c0 + bc < N) ? B[(k0 + br) * N + c0 + bc] : 0.0f;
    }
    __syncthreads();
    for (int k = 0; k < BK; k++) {
      for (int i = 0; i < TM; i++) rm[i] = as[(trow * TM + i) * BK + k];
      for (int j = 0; j < TN; j++) rn[j] = bs[k * BN + tcol * TN + j];
      for (int i = 0; i < TM; i++)
        for (int j = 0; j < TN; j++) acc[i][j] += rm[i] * rn[j];
    }
    __syncthreads();
  }
  for (int i = 0; i < TM; i++)
    for (int j = 0; j < TN; j++) {
      const i64 row = r0 + trow * TM + i, col = c0 + tcol * TN + j;
      if (row < M && col < N) C[row * N + col] = acc[i][j];
    }
}

// ---------------------------------------------------------------- 6 vectorized
// block 256; grid (ceil(N / 128), ceil(M / 128), batches). K % 4 == 0, N % 4 == 0, aligned:
// then a float4 at a column that is a multiple of 4 is wholly inside the matrix or wholly out.
extern "C" __global__ void sgemm_vectorized(i64 M, i64 N, i64 K, const float* A, const float* B,
                                            float* C) {
  BATCH_OFFSETS
  const int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
  __shared__ __align__(16) float as[BK * BM];  // transposed: as[k * BM + m]
  __shared__ __align__(16) float bs[BK * BN];
  const int t = threadIdx.x;
  const int tcol = t % (BN / TN), trow = t / (BN / TN);
  const i64 r0 = (i64)blockIdx.y * BM, c0 = (i64)blockIdx.x * BN;
  const int ar = t / (BK / 4), ac = (t % (BK / 4)) * 4;  // one float4 of each tile per thread
  const int br = t / (BN / 4), bc = (t % (BN / 4)) * 4;
  float acc[TM][TN] = {{0.0f}};
  float rm[TM], rn[TN];
  for (i64 k0 = 0; k0 < K; k0 += BK) {
    store_transposed(as, BM, ar, ac, load4(A, (r0 + ar) * K + k0 + ac, r0 + ar < M && k0 + ac < K));
    *reinterpret_cast<float4*>(&bs[br * BN + bc]) = load4(B, (k0 + br) * N + c0 + bc, k0 + br < K && c0 + bc < N);
    __syncthreads();
    for (int k = 0; k < BK; k++) {
      for (int i = 0; i < TM; i++) rm[i] = as[k * BM + trow * TM + i];
      for (int j = 0; j < TN; j++) rn[j] = bs[k * BN + tcol * TN + j];
      for (int i = 0; i < TM; i++)
        for (int j = 0; j < TN; j++) acc[i][j] += rm[i] * rn[j];
    }
    __syncthreads();
  }
  for (int i = 0; i < TM; i++) {
    const i64 row = r0 + trow * TM + i;
    if (row >= M) continue;
    for (int j = 0; j < TN; j += 4) {
      const i64 col = c0 + tcol * TN + j;
      if (col < N)
        *reinterpret_cast<float4*>(&C[row * N + col]) =
            f4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
    }
  }
}

// ---------------------------------------------------------------- 7 warptile
// block 256 (8 warps as 2 x 4, each a 64 x 32 warp tile); grid (ceil(N / 128), ceil(M / 128),
// batches). Same requirements as tier 6. A lane's outputs in a 32 x 32 sub-tile: rows
// (lane / 8) * 8 .. +8, columns (lane % 8) * 4 .. +4; the warp walks two sub-tiles down.
extern "C" __global__ void sgemm_warptile(i64 M, i64 N, i64 K, const float* A, const float* B,
                                          float* C) {
  BATCH_OFFSETS
  const int BM = 128, BN = 128, BK = 16, WM = 64, WN = 32, SUBS = 2, TM = 8, TN = 4;
  __shared__ __align__(16) float as[BK * BM];  // transposed: as[k * BM + m]
  __shared__ __align__(16) float bs[BK * BN];
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  const int wr = (warp / (BN / WN)) * WM, wc = (warp % (BN / WN)) * WN;  // warp tile origin
  const int lr = (lane / 8) * TM, lc = (lane % 8) * TN;  // lane's origin in a sub-tile
  const i64 r0 = (i64)blockIdx.y * BM, c0 = (i64)blockIdx.x * BN;
  float acc[SUBS][TM][TN] = {{{0.0f}}};
  float rm[SUBS][TM], rn[TN];
  for (i64 k0 = 0; k0 < K; k0 += BK) {
    for (int s = 0; s < 2; s++) {  // 2 float4 of each tile per thread (128 x 16 = 512 float4)
      const int ia = t + s * 256;
      const int ar = ia / (BK / 4), ac = (ia % (BK / 4)) * 4;
      store_transposed(as, BM, ar, ac, load4(A, (r0 + ar) * K + k0 + ac, r0 + ar < M && k0 + ac < K));
      const int br = ia / (BN / 4), bc = (ia % (BN / 4)) * 4;
      *reinterpret_cast<float4*>(&bs[br * BN + bc]) = load4(B, (k0 + br) * N + c0 + bc, k0 + br < K && c0 + bc < N);
    }
    __syncthreads();
    for (int k = 0; k < BK; k++) {
      for (int s = 0; s < SUBS; s++)
        for (int i = 0; i < TM; i++) rm[s][i] = as[k * BM + wr + s * 32 + lr + i];
      for (int j = 0; j < TN; j++) rn[j] = bs[k * BN + wc + lc + j];
      for (int s = 0; s < SUBS; s++)
        for (int i = 0; i < TM; i++)
          for (int j = 0; j < TN; j++) acc[s][i][j] += rm[s][i] * rn[j];
    }
    __syncthreads();
  }
  for (int s = 0; s < SUBS; s++)
    for (int i = 0; i < TM; i++) {
      const i64 row = r0 + wr + s * 32 + lr + i, col = c0 + wc + lc;
      if (row < M && col < N)
        *reinterpret_cast<float4*>(&C[row * N + col]) =
            f4(acc[s][i][0], acc[s][i][1], acc[s][i][2], acc[s][i][3]);
    }
}

// ---------------------------------------------------------------- 8-10: the warp-tiled body
// block (BM / WM) * (BN / WN) warps, each a WM x WN warp tile walked in sub-tiles of
// (4 TM) x (8 TN), lanes 4 x 8 across a sub-tile; grid (ceil(N / BN), ceil(M / BM), batches).
// Same requirements as tier 6. SWIZZLE: tier 9's layout of the transposed A tile.
template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, bool SWIZZLE>
__device__ __forceinline__ void warptile_pipelined(i64 M, i64 N, i64 K, const float* A, const float* B,
                                                   float* C) {
  constexpr int THREADS = (BM / WM) * (BN / WN) * 32;
  constexpr int SUBM = 4 * TM, SUBN = 8 * TN, MITER = WM / SUBM, NITER = WN / SUBN;
  constexpr int LOADS_A = BM * BK / 4 / THREADS, LOADS_B = BK * BN / 4 / THREADS;
  static_assert(WM % SUBM == 0 && WN % SUBN == 0 && BM % WM == 0 && BN % WN == 0, "warp tiling");
  static_assert(LOADS_A * THREADS * 4 == BM * BK && LOADS_B * THREADS * 4 == BK * BN, "whole float4 loads");
  static_assert(!SWIZZLE || BM % 32 == 0, "the swizzle stays inside a row of the A tile");
  BATCH_OFFSETS
  __shared__ __align__(16) float as[2][BK * BM];  // transposed: as[b][k * BM + (m ^ swz(k))]
  __shared__ __align__(16) float bs[2][BK * BN];
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  const int wr = (warp / (BN / WN)) * WM, wc = (warp % (BN / WN)) * WN;
  const int lr = (lane / 8) * TM, lc = (lane % 8) * TN;
  const i64 r0 = (i64)blockIdx.y * BM, c0 = (i64)blockIdx.x * BN;
  float4 ra[LOADS_A], rb[LOADS_B];  // the next tile, in flight
  auto swz = [](int k) { return SWIZZLE ? ((k >> 2) & 3) << 3 : 0; };
  auto load = [&](i64 k0) {
    for (int s = 0; s < LOADS_A; s++) {
      const int ia = t + s * THREADS, ar = ia / (BK / 4), ac = (ia % (BK / 4)) * 4;
      ra[s] = load4(A, (r0 + ar) * K + k0 + ac, r0 + ar < M && k0 + ac < K);
    }
    for (int s = 0; s < LOADS_B; s++) {
      const int ib = t + s * THREADS, br = ib / (BN / 4), bc = (ib % (BN / 4)) * 4;
      rb[s] = load4(B, (k0 + br) * N + c0 + bc, k0 + br < K && c0 + bc < N);
    }
  };
  auto store = [&](int buf) {
    for (int s = 0; s < LOADS_A; s++) {
      const int ia = t + s * THREADS, ar = ia / (BK / 4), ac = (ia % (BK / 4)) * 4;
      as[buf][(ac + 0) * BM + (ar ^ swz(ac + 0))] = ra[s].x;
      as[buf][(ac + 1) * BM + (ar ^ swz(ac + 1))] = ra[s].y;
      as[buf][(ac + 2) * BM + (ar ^ swz(ac + 2))] = ra[s].z;
      as[buf][(ac + 3) * BM + (ar ^ swz(ac + 3))] = ra[s].w;
    }
    for (int s = 0; s < LOADS_B; s++) {
      const int ib = t + s * THREADS, br = ib / (BN / 4), bc = (ib % (BN / 4)) * 4;
      *reinterpret_cast<float4*>(&bs[buf][br * BN + bc]) = rb[s];
    }
  };
  float acc[MITER][NITER][TM][TN] = {};
  float rm[MITER][TM], rn[NITER][TN];
  load(0);
  store(0);
  __syncthreads();
  int buf = 0;
  for (i64 k0 = 0; k0 < K; k0 += BK, buf ^= 1) {
    const bool next = k0 + BK < K;
    if (next) load(k0 + BK);  // in flight while this tile is computed
    for (int k = 0; k < BK; k++) {
      for (int s = 0; s < MITER; s++)
        for (int i = 0; i < TM; i++) rm[s][i] = as[buf][k * BM + ((wr + s * SUBM + lr + i) ^ swz(k))];
      for (int s = 0; s < NITER; s++)
        for (int j = 0; j < TN; j++) rn[s][j] = bs[buf][k * BN + wc + s * SUBN + lc + j];
      for (int sm = 0; sm < MITER; sm++)
        for (int sn = 0; sn < NITER; sn++)
          for (int i = 0; i < TM; i++)
            for (int j = 0; j < TN; j++) acc[sm][sn][i][j] += rm[sm][i] * rn[sn][j];
    }
    // the other buffer was last read before the previous barrier: free to fill now
    if (next) store(buf ^ 1);
    __syncthreads();
  }
  for (int sm = 0; sm < MITER; sm++)
    for (int i = 0; i < TM; i++) {
      const i64 row = r0 + wr + sm * SUBM + lr + i;
      if (row >= M) continue;
      for (int sn = 0; sn < NITER; sn++)
        for (int j = 0; j < TN; j += 4) {
          const i64 col = c0 + wc + sn * SUBN + lc + j;
          if (col < N)
            *reinterpret_cast<float4*>(&C[row * N + col]) =
                f4(acc[sm][sn][i][j], acc[sm][sn][i][j + 1], acc[sm][sn][i][j + 2], acc[sm][sn][i][j + 3]);
        }
    }
}

// ---------------------------------------------------------------- 8 double_buffer
// block 256; grid (ceil(N / 128), ceil(M / 128), batches): tier 7's tiles
extern "C" __global__ void sgemm_double_buffer(i64 M, i64 N, i64 K, const float* A, const float* B,
                                               float* C) {
  warptile_pipelined<128, 128, 16, 64, 32, 8, 4, false>(M, N, K, A, B, C);
}

// ---------------------------------------------------------------- 9 swizzled
// block 256; grid (ceil(N / 128), ceil(M / 128), batches)
extern "C" __global__ void sgemm_swizzled(i64 M, i64 N, i64 K, const float* A, const float* B, float* C) {
  warptile_pipelined<128, 128, 16, 64, 32, 8, 4, true>(M, N, K, A, B, C);
}

// ---------------------------------------------------------------- 10 autotuned
// block (BM / WM) * (BN / WN) * 32; grid (ceil(N / BN), ceil(M / BM), batches); the
// configurations ladder.py instantiates are its CONFIGS
template <int BM, int BN, int BK, int WM, int WN, int TM, int TN>
__global__ void sgemm_autotuned(i64 M, i64 N, i64 K, const float* A, const float* B, float* C) {
  warptile_pipelined<BM, BN, BK, WM, WN, TM, TN, true>(M, N, K, A, B, C);
}
