// Design: one optimizer step for every float32 parameter of a group in one launch
// (multi-tensor apply, as PyTorch's foreach and fused paths): the tensors' addresses, sizes
// and own constants arrive by value in `l` (common.cuh's TensorList; for_each_listed maps
// blocks to chunks of tensors), one thread per element of a chunk. Each element follows the
// order of operations of the composite (stage 0's optimizers) and of stage 3's fused loop,
// so the three agree to float32 rounding. Each state buffer is read and written once: the
// step costs one pass over memory where the composite costs one per operation. The group's
// float32 hyperparameters arrive by value in `h` (common.cuh's Hyper; fused.py lists
// them), its choices in `p` after p[0], the elements of a chunk. A tensor's buffers in `l`:
// 0 the parameter, 1 its gradient, then the rule's states (null where absent, never read).
// The arguments are __grid_constant__: the element loop is a lambda that refers to them and
// a tensor's entry is picked at run time, which without it would copy them to each
// thread's local memory; with it they are read in place, from the parameter space.
#include "common.cuh"

// start + (end - start) w, or end - (end - start) (1 - w) for w >= 1/2: PyTorch's lerp
__device__ __forceinline__ float lerp_f(float start, float end, float w, float w1) {
  if (w < 0.5f) return start + (end - start) * w;
  return end - (end - start) * w1;
}

// p: [chunk, amsgrad, maximize, decay (0 none, 1 L2, 2 decoupled)]
// h: [1 - beta1, beta1, beta2, 1 - beta2, eps, 1 - lr wd, wd]
// states: m, v, vmax;  each tensor's c: [sqrt(1 - beta2^t), lr / (1 - beta1^t)]
extern "C" __global__ void adam_step(__grid_constant__ const Params p, __grid_constant__ const Hyper h,
                                     __grid_constant__ const TensorList l) {
  for_each_listed(l, p[0], [&](const ListEntry& e, i64 i) {
    float *param = e.buf[0], *m = e.buf[2], *v = e.buf[3], *vmax = e.buf[4];
    float g = e.buf[1][i], pv = param[i];
    if (p[2]) g = -g;
    if (p[3] == 2) pv = pv * h[5];
    else if (p[3] == 1) g = g + pv * h[6];
    const float mv = lerp_f(m[i], g, h[0], h[1]);
    float vv = v[i] * h[2];
    vv = vv + g * g * h[3];
    float second = vv;
    if (p[1]) {
      second = max_nan(vmax[i], vv);  // NaN propagates, as the composite's maximum
      vmax[i] = second;
    }
    const float denom = sqrtf(second) / e.c[0] + h[4];
    param[i] = pv + mv / denom * -e.c[1];
    m[i] = mv;
    v[i] = vv;
  });
}

// p: [chunk, has momentum buffer, maximize, has weight decay, nesterov, has dampening]
// h: [lr, wd, momentum, 1 - dampening];  states: buf;  each tensor's c: [1 if its buffer
// starts this step (it becomes the gradient), else 0]
extern "C" __global__ void sgd_step(__grid_constant__ const Params p, __grid_constant__ const Hyper h,
                                    __grid_constant__ const TensorList l) {
  for_each_listed(l, p[0], [&](const ListEntry& e, i64 i) {
    float *param = e.buf[0], *buf = e.buf[2];
    float g = e.buf[1][i];
    const float pv = param[i];
    if (p[2]) g = -g;
    if (p[3]) g = g + pv * h[1];
    if (p[1]) {
      float b = g;
      if (e.c[0] == 0.0f) {
        b = buf[i] * h[2];
        b = p[5] ? b + g * h[3] : b + g;
      }
      buf[i] = b;
      g = p[4] ? g + b * h[2] : b;
    }
    param[i] = pv + g * -h[0];
  });
}

// p: [chunk, centered, has momentum, maximize, has weight decay]
// h: [lr, wd, alpha, 1 - alpha, 1 - alpha (lerp weight), alpha, eps, momentum]
// states: square average, gradient average (centered), momentum buffer
extern "C" __global__ void rmsprop_step(__grid_constant__ const Params p, __grid_constant__ const Hyper h,
                                        __grid_constant__ const TensorList l) {
  for_each_listed(l, p[0], [&](const ListEntry& e, i64 i) {
    float *param = e.buf[0], *sq = e.buf[2], *gavg = e.buf[3], *buf = e.buf[4];
    float g = e.buf[1][i];
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
  });
}
