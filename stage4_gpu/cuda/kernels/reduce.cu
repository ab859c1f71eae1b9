// Design: reductions over any set of axes, one block of 256 threads per output element
// (a grid-stride loop over outputs past the grid): each thread folds every 256th element
// of its output's reduced run, then the block halves a tree in shared memory. The
// accumulator A is wider than the element where that costs nothing in accuracy: a
// float32 sum adds in double, as the CPU stages do; max and min propagate NaN. The arg
// reductions carry (value, position) pairs through the same tree, the first extreme
// winning, a NaN counting as the extreme.
//
// Few outputs over long runs (a whole tensor's sum: one output) would leave all but a few
// SMs idle, so the host splits each run into `splits` parts (cuda/reduce.py): this kernel
// then writes each part's partial result in A, output o's parts at o * splits onwards, and
// a second launch of it, over those partials, folds each output's parts. A run of one
// reduced dimension (the host merges dimensions that follow one another) is read at
// base + j * stride, with no index division. A run of at most SHORT_RUN elements (a 2x2
// pooling window, a small last dimension) gets one thread, not a block of 256 that would
// leave all but a few idle: the kernel folds it alone, with no barrier, and the host sizes
// the grid in threads then (cuda/reduce.py: short).
//
// Parameters `p` (int64): [n out, inner, n kept, n reduced, offset,
//                          kept sizes, kept strides, reduced sizes, reduced strides, splits].
#include "common.cuh"

#define REDUCE_THREADS 256
#define SHORT_RUN 32

struct Sum {
  template <typename A> static __device__ A identity() { return A(0); }
  template <typename A> static __device__ A combine(A a, A b) {
    if constexpr (is_bool<A>::value) return a || b; else return a + b;
  }
};
struct Prod {
  template <typename A> static __device__ A identity() { return A(1); }
  template <typename A> static __device__ A combine(A a, A b) {
    if constexpr (is_bool<A>::value) return a && b; else return a * b;
  }
};
struct Max {
  template <typename A> static __device__ A identity() { return limits<A>::lowest(); }
  template <typename A> static __device__ A combine(A a, A b) { return max_nan(a, b); }
};
struct Min {
  template <typename A> static __device__ A identity() { return limits<A>::highest(); }
  template <typename A> static __device__ A combine(A a, A b) { return min_nan(a, b); }
};
struct Any {
  template <typename A> static __device__ A identity() { return false; }
  template <typename A> static __device__ A combine(A a, A b) { return a || b; }
};
struct All {
  template <typename A> static __device__ A identity() { return true; }
  template <typename A> static __device__ A combine(A a, A b) { return a && b; }
};

// the offset of output o's first element, and of element j of its reduced run
__device__ __forceinline__ i64 kept_offset(const Params& p, i64 o) {
  const int nk = (int)p[2];
  return offset_of(o, nk, p + 5, p + 5 + nk, p[4]);
}
__device__ __forceinline__ i64 reduced_offset(const Params& p, i64 j) {
  const int nk = (int)p[2], nr = (int)p[3];
  return offset_of(j, nr, p + 5 + 2 * nk, p + 5 + 2 * nk + nr, 0);
}

template <typename O, typename A, typename T, typename Op>
__global__ void reduce(const Params p, O* __restrict__ out, const T* __restrict__ x) {
  __shared__ A vals[REDUCE_THREADS];
  const i64 nout = p[0], inner = p[1];
  const int nk = (int)p[2], nr = (int)p[3];
  const i64 splits = p[5 + 2 * nk + 2 * nr], part = (inner + splits - 1) / splits;
  const i64 stride = nr == 1 ? p[5 + 2 * nk + 1] : 0;  // a run of one dimension's step
  const int t = threadIdx.x;
  if (inner <= SHORT_RUN) {  // a thread per output (splits is 1)
    for (i64 o = first_index(); o < nout; o += grid_step()) {
      const i64 base = kept_offset(p, o);
      A acc = Op::template identity<A>();
      for (i64 j = 0; j < inner; j++)
        acc = Op::combine(acc, (A)x[base + (nr == 1 ? j * stride : reduced_offset(p, j))]);
      out[o] = (O)acc;
    }
    return;
  }
  for (i64 o = blockIdx.x; o < nout * splits; o += gridDim.x) {
    const i64 base = kept_offset(p, o / splits);
    const i64 lo = (o % splits) * part, hi = lo + part < inner ? lo + part : inner;
    A acc = Op::template identity<A>();
    if (nr == 1) {
      for (i64 j = lo + t; j < hi; j += REDUCE_THREADS) acc = Op::combine(acc, (A)x[base + j * stride]);
    } else {
      for (i64 j = lo + t; j < hi; j += REDUCE_THREADS)
        acc = Op::combine(acc, (A)x[base + reduced_offset(p, j)]);
    }
    vals[t] = acc;
    __syncthreads();
    for (int half = REDUCE_THREADS / 2; half > 0; half >>= 1) {
      if (t < half) vals[t] = Op::combine(vals[t], vals[t + half]);
      __syncthreads();
    }
    if (t == 0) out[o] = (O)vals[0];
    __syncthreads();  // vals is reused by the next output
  }
}

struct ArgMax { template <typename T> static __device__ bool better(T a, T b) { return a > b; } };
struct ArgMin { template <typename T> static __device__ bool better(T a, T b) { return a < b; } };

// whether (a, ia) beats (b, ib): a valid position, a NaN over a number, the better value,
// then the earlier position
template <typename T, typename Op>
__device__ __forceinline__ bool wins(T a, i64 ia, T b, i64 ib) {
  if (ia < 0) return false;
  if (ib < 0) return true;
  if (nan_of(a) || nan_of(b)) return nan_of(a) && (!nan_of(b) || ia < ib);
  if (Op::better(a, b)) return true;
  return !Op::better(b, a) && ia < ib;
}

template <typename T, typename Op>
__global__ void arg_reduce(const Params p, i64* __restrict__ out, const T* __restrict__ x) {
  __shared__ T vals[REDUCE_THREADS];
  __shared__ i64 idx[REDUCE_THREADS];
  const i64 nout = p[0], inner = p[1];
  const int t = threadIdx.x;
  if (inner <= SHORT_RUN) {  // a thread per output, as reduce's
    for (i64 o = first_index(); o < nout; o += grid_step()) {
      const i64 base = kept_offset(p, o);
      T best = T(0);
      i64 at = -1;
      for (i64 j = 0; j < inner; j++) {
        const T v = x[base + reduced_offset(p, j)];
        if (wins<T, Op>(v, j, best, at)) { best = v; at = j; }
      }
      out[o] = at;
    }
    return;
  }
  for (i64 o = blockIdx.x; o < nout; o += gridDim.x) {
    const i64 base = kept_offset(p, o);
    T best = T(0);
    i64 at = -1;
    for (i64 j = t; j < inner; j += REDUCE_THREADS) {
      const T v = x[base + reduced_offset(p, j)];
      if (wins<T, Op>(v, j, best, at)) { best = v; at = j; }
    }
    vals[t] = best;
    idx[t] = at;
    __syncthreads();
    for (int half = REDUCE_THREADS / 2; half > 0; half >>= 1) {
      if (t < half && wins<T, Op>(vals[t + half], idx[t + half], vals[t], idx[t])) {
        vals[t] = vals[t + half];
        idx[t] = idx[t + half];
      }
      __syncthreads();
    }
    if (t == 0) out[o] = idx[0];
    __syncthreads();
  }
}
