// Design: one optimizer step for one float32 parameter, one thread per element, in the
// order of operations of the composite (stage 0's optimizers) and of stage 3's fused loop,
// so the three agree to float32 rounding. Each state buffer is read and written once: the
// step costs one pass over memory where the composite costs one per operation. The
// float32 hyperparameters arrive by value in `h` (common.cuh's Hyper; optim.py lists
// them); a state the step does not use is passed as the parameter and never touched.
#include "common.cuh"

// start + (end - start) w, or end - (end - start) (1 - w) for w >= 1/2: PyTorch's lerp
__device__ __forceinline__ float lerp_f(float start, float end, float w, float w1) {
  if (w < 0.5f) return start + (end - start) * w;
  return end - (end - start) * w1;
}

// p: [n, amsgrad, maximize, decay (0 none, 1 L2, 2 decoupled)]
// h: [1 - beta1, beta1, beta2, 1 - beta2, eps, sqrt(1 - beta2^t), 1 - lr wd, wd, lr / (1 - beta1^t)]
extern "C" __global__ void adam_step(const Params p, const Hyper h,
                                     float* __restrict__ param, const float* __restrict__ grad,
                                     float* __restrict__ m, float* __restrict__ v, float* __restrict__ vmax) {
  const i64 n = p[0];
  for (i64 i = first_index(); i < n; i += grid_step()) {
    float g = grad[i], pv = param[i];
    if (p[2]) g = -g;
    if (p[3] == 2) pv = pv * h[6];
    else if (p[3] == 1) g = g + pv * h[7];
    const float mv = lerp_f(m[i], g, h[0], h[1]);
    float vv = v[i] * h[2];
    vv = vv + g * g * h[3];
    float second = vv;
    if (p[1]) {
      second = max_nan(vmax[i], vv);  // NaN propagates, as the composite's maximum
      vmax[i] = second;
    }
    const float denom = sqrtf(second) / h[5] + h[4];
    param[i] = pv + mv / denom * -h[8];
    m[i] = mv;
    v[i] = vv;
  }
}

// p: [n, has momentum buffer, first step of the buffer, maximize, has weight decay,
//     nesterov, has dampening];  h: [lr, wd, momentum, 1 - dampening]
extern "C" __global__ void sgd_step(const Params p, const Hyper h,
                                    float* __restrict__ param, const float* __restrict__ grad,
                                    float* __restrict__ buf) {
  const i64 n = p[0];
  for (i64 i = first_index(); i < n; i += grid_step()) {
    float g = grad[i];
    const float pv = param[i];
    if (p[3]) g = -g;
    if (p[4]) g = g + pv * h[1];
    if (p[1]) {
      float b = g;
      if (!p[2]) {
        b = buf[i] * h[2];
        b = p[6] ? b + g * h[3] : b + g;
      }
      buf[i] = b;
      g = p[5] ? g + b * h[2] : b;
    }
    param[i] = pv + g * -h[0];
  }
}

// p: [n, centered, has momentum, maximize, has weight decay]
// h: [lr, wd, alpha, 1 - alpha, 1 - alpha (lerp weight), alpha, eps, momentum]
extern "C" __global__ void rmsprop_step(const Params p, const Hyper h,
                                        float* __restrict__ param, const float* __restrict__ grad,
                                        float* __restrict__ sq, float* __restrict__ gavg,
                                        float* __restrict__ buf) {
  const i64 n = p[0];
  for (i64 i = first_index(); i < n; i += grid_step()) {
    float g = grad[i];
    const float pv = param[i];
    if (p[3]) g = -g;
    if (p[4]) g = g + pv * h[1];
    float s = sq[i] * h[2];
    s = s + g * g * h[3];
    sq[i] = s;
    float avg;
    if (p[1]) {
      const float ga = lerp_f(gavg[i], g, h[4], h[5]);
      gavg[i] = ga;
      avg = sqrtf(s - ga * ga);
    } else {
      avg = sqrtf(s);
    }
    avg = avg + h[6];
    if (p[2]) {
      const float b = buf[i] * h[7] + g / avg;
      buf[i] = b;
      param[i] = pv + b * -h[0];
    } else {
      param[i] = pv + g / avg * -h[0];
    }
  }
}
