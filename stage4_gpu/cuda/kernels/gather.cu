// Design: `take` and `gather`, one thread per output element (the output has the index's
// shape). The thread reads its index value and turns it into a position in x: for `take`
// (axis < 0) a row-major position in x, through x's shape and strides; for `gather`, the
// thread's own coordinates with the one along `axis` replaced by the index value. An index
// value out of range is reported in `err` (common.cuh's report_error) and reads nothing:
// its output element is 0.
//
// Parameters `p` (int64): [n, nd, index shape[nd], index offset, index strides[nd],
//                          x offset, x strides[nd], axis, x nd, x shape..., x strides...].
#include "common.cuh"

template <typename T, typename I>
__global__ void gather(const Params p, T* __restrict__ out, const T* __restrict__ x,
                       const I* __restrict__ index, i64* __restrict__ err) {
  const i64 n = p[0];
  const int nd = (int)p[1];
  const int axis = (int)p[4 + 3 * nd];
  const int xn = (int)p[5 + 3 * nd];
  // an index value's bound: x's size along `axis`, or for `take` its element count
  i64 bound = 1;
  if (axis >= 0) bound = p[6 + 3 * nd + axis];
  else for (int d = 0; d < xn; d++) bound *= p[6 + 3 * nd + d];
  for (i64 i = first_index(); i < n; i += grid_step()) {
    i64 rem = i, io = p[2 + nd], xo = p[3 + 2 * nd];
    for (int d = nd - 1; d >= 0; d--) {
      const i64 c = rem % p[2 + d];
      rem /= p[2 + d];
      io += c * p[3 + nd + d];
      if (d != axis) xo += c * p[4 + 2 * nd + d];
    }
    const i64 j = (i64)index[io];
    if (j < 0 || j >= bound) {
      report_error(err, axis >= 0 ? CHECK_GATHER : CHECK_TAKE, j, bound, axis);
      out[i] = T(0);
    } else if (axis >= 0) {
      out[i] = x[xo + j * p[4 + 2 * nd + axis]];
    } else {  // take: j is a row-major position in x
      out[i] = x[offset_of(j, xn, p + 6 + 3 * nd, p + 6 + 3 * nd + xn, p[3 + 2 * nd])];
    }
  }
}
