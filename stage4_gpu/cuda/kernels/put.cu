// Design: `put` (dst.flat[index[i]] = src[i], or combined) in one thread, in order.
// Repeated indices then behave exactly as on the CPU (the last write wins, or every value
// is combined in turn), which no parallel scatter without atomics on floats can promise.
// The index and source arrive contiguous; dst is any view. An index value out of range is
// skipped and reported in `err` (common.cuh's report_error).
//
// Parameters `p` (int64): [n, dst nd, dst shape..., dst offset, dst strides...].
#include "common.cuh"

struct Store { template <typename T> static __device__ T f(T a, T b) { return b; } };
struct Accumulate {
  template <typename T> static __device__ T f(T a, T b) {
    if constexpr (is_bool<T>::value) return a || b; else return a + b;
  }
};
struct Multiply {
  template <typename T> static __device__ T f(T a, T b) {
    if constexpr (is_bool<T>::value) return a && b; else return a * b;
  }
};
// NaN wins amax and amin, and stays, as on the CPU
struct Amax {
  template <typename T> static __device__ T f(T a, T b) { return (b > a || nan_of(b)) ? b : a; }
};
struct Amin {
  template <typename T> static __device__ T f(T a, T b) { return (b < a || nan_of(b)) ? b : a; }
};

template <typename T, typename I, typename Op>
__global__ void put(const Params p, T* __restrict__ dst, const I* __restrict__ index,
                    const T* __restrict__ src, i64* __restrict__ err) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  const i64 n = p[0];
  const int nd = (int)p[1];
  i64 numel = 1;
  for (int d = 0; d < nd; d++) numel *= p[2 + d];
  for (i64 i = 0; i < n; i++) {
    const i64 j = (i64)index[i];
    if (j < 0 || j >= numel) {
      report_error(err, CHECK_PUT, j, numel, -1);
      continue;
    }
    const i64 off = offset_of(j, nd, p + 2, p + 3 + nd, p[2 + nd]);
    dst[off] = Op::f(dst[off], src[i]);
  }
}
