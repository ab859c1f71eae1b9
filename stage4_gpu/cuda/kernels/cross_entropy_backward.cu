// Design: the gradient of cross_entropy.cu's loss, one thread per logit:
//   scale_r ((1 - s) w_t (p_rc - [c = t]) + s / C (W p_rc - w_c)),  W = sum_c w_c,
// and 0 on an ignored row, and on a row whose target is out of range (the forward has
// reported it: this kernel only keeps from reading past the weights).
// Parameters `p` (int64): [rows, cols]; then ignore_index, smoothing as arguments.
#include "common.cuh"

template <typename I>
__global__ void cross_entropy_backward(const Params p, float* __restrict__ gx,
                                       const float* __restrict__ probs, const I* __restrict__ target,
                                       const float* __restrict__ weight, const float* __restrict__ scale,
                                       const float* __restrict__ wsum, i64 ignore_index,
                                       double smoothing) {
  const i64 rows = p[0], cols = p[1];
  const float sm = (float)smoothing;
  for (i64 i = first_index(); i < rows * cols; i += grid_step()) {
    const i64 r = i / cols, c = i % cols;
    const i64 tc = (i64)target[r];
    if (tc == ignore_index || tc < 0 || tc >= cols) {
      gx[i] = 0.0f;
      continue;
    }
    const float s = scale[r], wt = weight[tc];
    const float a = s * (1.0f - sm) * wt + s * sm / (float)cols * wsum[0];
    float v = a * probs[i] - s * sm / (float)cols * weight[c];
    if (c == tc) v -= s * (1.0f - sm) * wt;
    gx[i] = v;
  }
}
