// Design: cross-entropy of rows of float32 logits against class indices, one block per row
// (rows.cuh), as softmax.cu reads a row: its maximum, then in double the sum of
// exponentials and, with label smoothing, the weighted sum of the logits and of the
// weights. It writes each row's loss and weight (for a mean) and the probabilities the
// backward reuses, as stage 3's fused kernel does:
//   loss = (1 - s) w_t (lse - x_t) + s / C (lse W - sum_c w_c x_c),  lse = log sum_c e^x_c.
// A target outside [0, cols) (ignore_index aside) is reported in `err` (common.cuh's
// report_error; a kernel cannot raise) and its row counts nothing. The host passes weights
// of 1 where there are none.
// Parameters `p` (int64): [rows, cols]; then ignore_index, smoothing as arguments.
#include "common.cuh"
#include "math.cuh"
#include "rows.cuh"

template <typename I>
__global__ void cross_entropy(const Params p, float* __restrict__ loss, float* __restrict__ wrow,
                              float* __restrict__ probs, const float* __restrict__ x,
                              const I* __restrict__ target, const float* __restrict__ weight,
                              i64* __restrict__ err, i64 ignore_index, double smoothing) {
  const i64 rows = p[0], cols = p[1];
  const int t = threadIdx.x;
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * cols;
    float m = limits<float>::lowest();
    each_of_row(xr, cols, [&](i64, float v) { m = max_nan(m, v); });
    m = block_max(m);
    double e = 0.0, wx = 0.0, ws = 0.0;
    each_of_row(xr, cols, [&](i64 j, float v) {
      e += (double)expf(v - m);
      wx += (double)weight[j] * (double)v;
      ws += (double)weight[j];
    });
    const double s = block_sum(e);
    wx = block_sum(wx);
    ws = block_sum(ws);
    float* pr = probs + r * cols;
    each_of_row(xr, cols, [&](i64 j, float v) { pr[j] = (float)((double)expf(v - m) / s); });
    if (t != 0) continue;
    const i64 c = (i64)target[r];
    if (c == ignore_index || c < 0 || c >= cols) {
      if (c != ignore_index) report_error(err, CHECK_CROSS_ENTROPY, c, cols, -1);
      loss[r] = 0.0f;
      wrow[r] = 0.0f;
      continue;
    }
    const double lse = (double)m + log(s);
    const double wt = (double)weight[c];
    double l = (1.0 - smoothing) * wt * (lse - (double)xr[c]);
    if (smoothing != 0.0) l += smoothing / (double)cols * (lse * ws - wx);
    loss[r] = (float)l;
    wrow[r] = (float)wt;
  }
}
