// Design: the strided elementwise kernels, one thread per output element in a grid-stride
// loop, each thread turning its row-major position into an offset in every operand
// through the operand's own strides (a broadcast dim has stride 0). The operation is a
// template argument (a struct of math.cuh), the element types are template arguments:
// elementwise.py names each instantiation it launches, NVRTC compiles just those.
// `unary` with Identity is the cast and the strided copy under every movement primitive.
//
// Parameters `p` (int64): [n, nd, sizes[nd], then per operand (output first):
//                          offset, strides[nd]].
#include "common.cuh"
#include "math.cuh"

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
