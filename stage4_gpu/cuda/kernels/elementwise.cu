// Design: the strided elementwise kernels, one thread per output element in a grid-stride
// loop, each thread turning its row-major position into an offset in every operand
// through the operand's own strides (a broadcast dim has stride 0). The operation is a
// template argument (a struct of math.cuh or op_table.cuh), the element types are template arguments:
// elementwise.py names each instantiation it launches, NVRTC compiles just those.
// `unary` with Identity is the cast and the strided copy under every movement primitive.
//
// The case a training step makes most, operands laid out one after another (one merged
// dimension, each operand's stride 1, or 0 for a broadcast value), takes a branch of its
// own in the same kernel, so it costs no instantiation more: no index division, and where
// every strided operand is 16-byte aligned, 16-byte vector loads and stores (common.cuh's
// Pack: four float32 at a time), the way a bandwidth-bound kernel reaches the memory's
// speed. The host sizes the grid to what the GPU holds at once (Runtime.grid), and the
// threads stride over it.
//
// Parameters `p` (int64): [n, nd, sizes[nd], then per operand (output first):
//                          offset, strides[nd]].
#include "common.cuh"
#include "math.cuh"
// the op table's float functions: a header with no file, which kernels.py writes from the table
#include "op_table.cuh"

// whether the K operands of p run along one dimension with stride 1 or 0 each, the
// output's 1 (then operand k starts at p[3 + 2k], strided by p[4 + 2k])
template <int K>
__device__ __forceinline__ bool one_run(const Params& p) {
  if (p[1] != 1 || p[4] != 1) return false;
  for (int k = 1; k < K; k++)
    if (p[4 + 2 * k] != 0 && p[4 + 2 * k] != 1) return false;
  return true;
}

// out[i] = f(x[i] or x[0], ...) over one run of n, vectorized where the strided operands
// allow: `f(j, args...)` computes element j of the pack from each input's element
template <typename O, typename T, typename Fn, int K>
__device__ __forceinline__ void run_1d(i64 n, O* __restrict__ out, const T* const (&in)[K],
                                       const i64 (&stride)[K], Fn f) {
  constexpr int V = pack_width<O, T>();
  bool aligned = is_aligned<O, V>(out);
  for (int k = 0; k < K; k++) aligned = aligned && (stride[k] == 0 || is_aligned<T, V>(in[k]));
  i64 start = 0;
  if (aligned) {
    const i64 packs = n / V;
    for (i64 i = first_index(); i < packs; i += grid_step()) {
      Pack<T, V> x[K];
      for (int k = 0; k < K; k++) x[k] = stride[k] ? load_pack<T, V>(in[k], i) : splat<T, V>(in[k][0]);
      Pack<O, V> r;
      for (int j = 0; j < V; j++) {
        T v[K];
        for (int k = 0; k < K; k++) v[k] = x[k].v[j];
        r.v[j] = f(v);
      }
      store_pack<O, V>(out, i, r);
    }
    start = packs * V;
  }
  for (i64 i = start + first_index(); i < n; i += grid_step()) {
    T v[K];
    for (int k = 0; k < K; k++) v[k] = in[k][i * stride[k]];
    out[i] = f(v);
  }
}

// the offsets of position i in K operands whose layouts follow sizes in p
template <int K>
__device__ __forceinline__ void offsets(const Params& p, i64 i, i64 (&off)[K]) {
  const int nd = (int)p[1];
  const i64* sizes = p + 2;
  for (int k = 0; k < K; k++) off[k] = p[2 + nd + k * (nd + 1)];
  for (int d = nd - 1; d >= 0; d--) {
    const i64 c = i % sizes[d];
    i /= sizes[d];
    for (int k = 0; k < K; k++) off[k] += c * p[2 + nd + k * (nd + 1) + 1 + d];
  }
}

template <typename O, typename T, typename Op>
__global__ void unary(const Params p, O* __restrict__ out, const T* __restrict__ x) {
  const i64 n = p[0];
  if (one_run<2>(p)) {
    const T* in[1] = {x + p[5]};
    const i64 stride[1] = {p[6]};
    run_1d<O, T>(n, out + p[3], in, stride, [](const T (&v)[1]) { return cast_to<O>(Op::f(v[0])); });
    return;
  }
  for (i64 i = first_index(); i < n; i += grid_step()) {
    i64 off[2];
    offsets<2>(p, i, off);
    out[off[0]] = cast_to<O>(Op::f(x[off[1]]));
  }
}

template <typename O, typename T, typename Op>
__global__ void binary(const Params p, O* __restrict__ out, const T* __restrict__ a,
                       const T* __restrict__ b) {
  const i64 n = p[0];
  if (one_run<3>(p)) {
    const T* in[2] = {a + p[5], b + p[7]};
    const i64 stride[2] = {p[6], p[8]};
    run_1d<O, T>(n, out + p[3], in, stride, [](const T (&v)[2]) { return cast_to<O>(Op::f(v[0], v[1])); });
    return;
  }
  for (i64 i = first_index(); i < n; i += grid_step()) {
    i64 off[3];
    offsets<3>(p, i, off);
    out[off[0]] = cast_to<O>(Op::f(a[off[1]], b[off[2]]));
  }
}

template <typename T>
__global__ void where(const Params p, T* __restrict__ out, const bool* __restrict__ cond,
                      const T* __restrict__ a, const T* __restrict__ b) {
  const i64 n = p[0];
  for (i64 i = first_index(); i < n; i += grid_step()) {
    i64 off[4];
    offsets<4>(p, i, off);
    out[off[0]] = cond[off[1]] ? a[off[2]] : b[off[3]];
  }
}

// every element of a contiguous run set to one value, which arrives as its bytes in the
// low bytes of `bits` (little-endian, as on every CUDA host): any dtype, by value
template <typename T>
__global__ void fill(T* __restrict__ out, i64 n, i64 bits) {
  T v;
  unsigned char* bytes = (unsigned char*)&v;
  for (int k = 0; k < (int)sizeof(T); k++) bytes[k] = (unsigned char)((unsigned long long)bits >> (8 * k));
  for (i64 i = first_index(); i < n; i += grid_step()) out[i] = v;
}
