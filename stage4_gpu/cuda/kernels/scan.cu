// Design: cumulative sum, product, max, min and logsumexp along one axis, one thread per
// row walking it in order (a scan's running value is sequential; rows are the
// parallelism), exactly the CPU's order of operations. A float32 sum runs in double and
// rounds each output, as the CPU stages keep it; max and min also write the position of
// the running extreme (the later one on a tie, NaN sticking), as PyTorch's cummax does.
#include "common.cuh"
#include "math.cuh"
#include "along.cuh"

struct CumSum { template <typename A> static __device__ A step(A acc, A v) { return acc + v; } };
struct CumProd { template <typename A> static __device__ A step(A acc, A v) { return acc * v; } };
struct LogCumSumExp {
  template <typename A> static __device__ A step(A acc, A v) {
    const A hi = max_nan(acc, v), lo = min_nan(acc, v);
    if (nan_of(hi)) return hi;
    if (lo == limits<A>::lowest()) return hi;  // also -inf with -inf
    if (hi == limits<A>::highest()) return hi;
    return hi + m_log1p(m_exp(lo - hi));
  }
};
struct CumMax { static constexpr bool max = true; };
struct CumMin { static constexpr bool max = false; };

// A: the accumulator (double for a float32 sum, else T)
template <typename T, typename A, typename Op>
__global__ void scan(const Params p, T* __restrict__ vals, i64* __restrict__ idx,
                     const T* __restrict__ x) {
  const i64 rows = p[0], n = p[1];
  for (i64 r = first_index(); r < rows; r += grid_step()) {
    const Row row = row_of(p, r);
    A acc = (A)x[row.x];
    vals[row.out] = (T)acc;
    for (i64 j = 1; j < n; j++) {
      acc = Op::step(acc, (A)x[row.x + j * row.x_step]);
      vals[row.out + j * row.out_step] = (T)acc;
    }
  }
}

template <typename T, typename Op>
__global__ void scan_extreme(const Params p, T* __restrict__ vals, i64* __restrict__ idx,
                             const T* __restrict__ x) {
  const i64 rows = p[0], n = p[1];
  for (i64 r = first_index(); r < rows; r += grid_step()) {
    const Row row = row_of(p, r);
    T acc = x[row.x];
    i64 best = 0;
    for (i64 j = 0; j < n; j++) {
      const T v = x[row.x + j * row.x_step];
      const bool take = Op::max ? v >= acc : v <= acc;
      if (nan_of(v) || (!nan_of(acc) && take)) { acc = v; best = j; }
      vals[row.out + j * row.out_step] = acc;
      idx[row.out + j * row.out_step] = best;
    }
  }
}
