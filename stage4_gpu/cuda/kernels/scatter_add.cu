// Design: scatter-add as a gather, so it needs no atomics and adds in the CPU's order
// (float atomics would make the sum's rounding depend on timing). One thread per output
// element walks the index along `axis` at its own other coordinates and adds every
// source value whose index names its position along `axis`. Cost: output size times the
// index's length along `axis`. An index value out of range lands nowhere and is reported
// in `err` (common.cuh's report_error).
//
// Parameters `p` (int64): [n, nd, out shape[nd], index shape[nd], index offset,
//                          index strides[nd], src offset, src strides[nd], axis].
#include "common.cuh"

template <typename T, typename I>
__global__ void scatter_add(const Params p, T* __restrict__ out, const I* __restrict__ index,
                            const T* __restrict__ src, i64* __restrict__ err) {
  const i64 n = p[0];
  const int nd = (int)p[1];
  const int axis = (int)p[4 + 4 * nd];
  for (i64 i = first_index(); i < n; i += grid_step()) {
    i64 rem = i, io = p[2 + 2 * nd], so = p[3 + 3 * nd], want = 0;
    bool inside = true;
    for (int d = nd - 1; d >= 0; d--) {
      const i64 c = rem % p[2 + d];
      rem /= p[2 + d];
      if (d == axis) {
        want = c;
      } else {
        inside = inside && c < p[2 + nd + d];
        io += c * p[3 + 2 * nd + d];
        so += c * p[4 + 3 * nd + d];
      }
    }
    T acc = T(0);
    if (inside) {
      for (i64 j = 0; j < p[2 + nd + axis]; j++) {
        const i64 v = (i64)index[io + j * p[3 + 2 * nd + axis]];
        if (v == want) {
          if constexpr (is_bool<T>::value) acc = acc || src[so + j * p[4 + 3 * nd + axis]];
          else acc += src[so + j * p[4 + 3 * nd + axis]];
        } else if (v < 0 || v >= p[2 + axis]) {
          report_error(err, CHECK_SCATTER_ADD, v, p[2 + axis], axis);
        }
      }
    }
    out[i] = acc;
  }
}
