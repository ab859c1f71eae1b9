// Design: layer norm over contiguous float32 rows, one block per row (rows.cuh). The
// forward takes the row's mean, then its variance from a second pass over x - mean (no
// cancellation), both summed in double as the CPU stages sum them in float64, and writes
// (x - mean) / sqrt(var + eps), scaled and shifted, with each row's mean and 1/std for the
// backward. The backward writes each row's input gradient from those statistics:
//   gx = rstd (w g - mean(w g) - xhat mean(w g xhat)),  xhat = (x - mean) rstd.
// The weight's and bias's gradients are sums down the columns, left to the reductions.
// Parameters `p` (int64): [rows, cols, has weight, has bias].
#include "common.cuh"
#include "math.cuh"
#include "rows.cuh"

__device__ __forceinline__ float weight_of(const Params& p, const float* w, i64 c) {
  return p[2] ? w[c] : 1.0f;
}

extern "C" __global__ void layer_norm_forward(const Params p, float* __restrict__ out,
                                              float* __restrict__ mean, float* __restrict__ rstd,
                                              const float* __restrict__ x, const float* __restrict__ w,
                                              const float* __restrict__ b, double eps) {
  const i64 rows = p[0], cols = p[1];
  const int t = threadIdx.x;
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * cols;
    double s = 0.0;
    each_of_row(xr, cols, [&](i64, float v) { s += (double)v; });
    const float mu = (float)(block_sum(s) / (double)cols);
    double ss = 0.0;
    each_of_row(xr, cols, [&](i64, float v) {
      const double d = (double)(v - mu);
      ss += d * d;
    });
    const float k = (float)(1.0 / sqrt(block_sum(ss) / (double)cols + eps));
    if (t == 0) {
      mean[r] = mu;
      rstd[r] = k;
    }
    each_of_row(xr, cols, [&](i64 c, float xv) {
      float v = (xv - mu) * k * weight_of(p, w, c);
      if (p[3]) v += b[c];
      out[r * cols + c] = v;
    });
  }
}

extern "C" __global__ void layer_norm_backward(const Params p, float* __restrict__ gx,
                                               const float* __restrict__ mean,
                                               const float* __restrict__ rstd,
                                               const float* __restrict__ x, const float* __restrict__ g,
                                               const float* __restrict__ w) {
  const i64 rows = p[0], cols = p[1];
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const float mu = mean[r], k = rstd[r];
    const float* xr = x + r * cols;
    const float* gr = g + r * cols;
    double a = 0.0, bsum = 0.0;
    each_of_row(xr, cols, [&](i64 c, float xv) {
      const float wg = weight_of(p, w, c) * gr[c];
      a += (double)wg;
      bsum += (double)wg * (double)((xv - mu) * k);
    });
    const float ma = (float)(block_sum(a) / (double)cols);
    const float mb = (float)(block_sum(bsum) / (double)cols);
    each_of_row(xr, cols, [&](i64 c, float xv) {
      const float xhat = (xv - mu) * k;
      gx[r * cols + c] = k * (weight_of(p, w, c) * gr[c] - ma - xhat * mb);
    });
  }
}
