// Design: softmax and log_softmax along contiguous rows, and their backwards, one block
// per row (rows.cuh). A row is read in strides of the block (16-byte packs where it allows): first its maximum, then the
// sum the result divides by (in double), then each element written. One launch does what
// the composite does in five (max, subtract, exp, sum, divide).
//   MODE 0 softmax       y = e^(x - m) / s,        s = sum e^(x - m)
//   MODE 1 log_softmax   y = (x - m) - log s
//   MODE 2 softmax back  gx = y (g - s),           s = sum g y     (x holds g)
//   MODE 3 log_softmax back  gx = g - e^y s,       s = sum g
// Parameters `p` (int64): [rows, cols].
#include "common.cuh"
#include "math.cuh"
#include "rows.cuh"

template <typename T, int MODE>
__global__ void softmax(const Params p, T* __restrict__ out, const T* __restrict__ x,
                        const T* __restrict__ y) {
  const i64 rows = p[0], cols = p[1];
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    const T* yr = y + r * cols;
    T* o = out + r * cols;
    T m = limits<T>::lowest();
    if (MODE < 2) {
      each_of_row(xr, cols, [&](i64, T v) { m = max_nan(m, v); });
      m = block_max(m);
    }
    double acc = 0.0;
    each_of_row(xr, cols, [&](i64 j, T v) {
      if (MODE < 2) acc += (double)m_exp(v - m);
      else if (MODE == 2) acc += (double)(v * yr[j]);
      else acc += (double)v;
    });
    const double s = block_sum(acc);
    each_of_row(xr, cols, [&](i64 j, T v) {
      if (MODE == 0) o[j] = (T)((double)m_exp(v - m) / s);
      else if (MODE == 1) o[j] = (v - m) - (T)log(s);
      else if (MODE == 2) o[j] = yr[j] * (v - (T)s);
      else o[j] = v - m_exp(yr[j]) * (T)s;
    });
  }
}
