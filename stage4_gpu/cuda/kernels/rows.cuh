// What the row kernels (softmax.cu, cross_entropy.cu, layer_norm.cu) share: one block of
// ROW_THREADS threads per contiguous row, and the block-wide trees they combine a row's
// partial results with. Sums are kept in double, as the CPU stages keep them in float64.
// Every thread of the block must reach each call (they hold barriers).
//
// On a GPU each warp first folds its 32 values through register shuffles (five steps, no
// shared memory, no barrier), then one warp folds the eight warps' results: two barriers
// where the shared-memory tree takes nine. The host emulation has no warps to shuffle
// within: it takes the tree, which folds the same values (in another order, so a sum may
// differ in its last bits, as between any two GPUs' reductions).
#pragma once

#define ROW_THREADS 256

// fn(j, row[j]) for each element j of a row of `cols` that this thread takes: read in
// 16-byte packs where the row allows (cols a multiple of the pack, the row aligned; a whole
// tensor of such rows then has every row aligned), else one element at a time
template <typename T, typename Fn>
__device__ __forceinline__ void each_of_row(const T* row, i64 cols, Fn fn) {
  constexpr int V = 16 / sizeof(T);
  if (cols % V == 0 && is_aligned<T, V>(row)) {
    for (i64 q = threadIdx.x; q < cols / V; q += ROW_THREADS) {
      const Pack<T, V> v = load_pack<T, V>(row, q);
      for (int k = 0; k < V; k++) fn(q * V + k, v.v[k]);
    }
  } else {
    for (i64 j = threadIdx.x; j < cols; j += ROW_THREADS) fn(j, row[j]);
  }
}

#ifdef __CUDA_ARCH__
#define ROW_WARPS (ROW_THREADS / 32)
// the fold of v over the block by `op`, shuffles within each warp, then across the warps
template <typename T, typename Op> __device__ T block_fold(T v, Op op) {
  __shared__ T partial[ROW_WARPS];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int d = 16; d > 0; d >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, d));
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = partial[lane < ROW_WARPS ? lane : 0];
  for (int d = ROW_WARPS / 2; d > 0; d >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, d));
  v = __shfl_sync(0xffffffffu, v, 0);  // lanes 0..7 folded the warps' results: theirs to all
  __syncthreads();  // partial is reused by the next call
  return v;
}
template <typename T> __device__ T block_max(T v) {
  return block_fold(v, [](T a, T b) { return max_nan(a, b); });
}
__device__ double block_sum(double v) {
  return block_fold(v, [](double a, double b) { return a + b; });
}
#else
template <typename T> __device__ T block_max(T v) {
  __shared__ T s[ROW_THREADS];
  const int t = threadIdx.x;
  s[t] = v;
  __syncthreads();
  for (int half = ROW_THREADS / 2; half > 0; half >>= 1) {
    if (t < half) s[t] = max_nan(s[t], s[t + half]);
    __syncthreads();
  }
  const T r = s[0];
  __syncthreads();  // s is reused by the next call
  return r;
}

__device__ double block_sum(double v) {
  __shared__ double s[ROW_THREADS];
  const int t = threadIdx.x;
  s[t] = v;
  __syncthreads();
  for (int half = ROW_THREADS / 2; half > 0; half >>= 1) {
    if (t < half) s[t] += s[t + half];
    __syncthreads();
  }
  const double r = s[0];
  __syncthreads();
  return r;
}
#endif
