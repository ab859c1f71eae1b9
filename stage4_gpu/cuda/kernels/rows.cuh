// What the row kernels (softmax.cu, cross_entropy.cu, layer_norm.cu) share: one block of
// ROW_THREADS threads per contiguous row, and the block-wide trees they combine a row's
// partial results with. Sums are kept in double, as the CPU stages keep them in float64.
// Every thread of the block must reach each call (they hold barriers).
#pragma once

#define ROW_THREADS 256

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
