// Design: one optimizer step for every float32 parameter of a group in one launch
// (multi-tensor apply, as PyTorch's foreach and fused paths): the tensors' addresses, sizes
// and own constants arrive by value in `l` (common.cuh's TensorList; for_each_listed maps
// blocks to chunks of tensors), a block's threads striding over a chunk. Each element follows the
// order of operations of the composite (stage 0's optimizers) and of stage 3's fused loop,
// so the three agree to float32 rounding. Each state buffer is read and written once: the
// step costs one pass over memory where the composite costs one per operation. The group's
// float32 hyperparameters arrive by value in `h` (common.cuh's Hyper; fused.py lists
// them), its choices in `p` after p[0], the elements of a chunk. A tensor's buffers in `l`:
// 0 the parameter, 1 its gradient, then the rule's states (null where absent, never read).
// The arguments are __grid_constant__: the element loop is a lambda that refers to them and
// a tensor's entry is picked at run time, which without it would copy them to each
// thread's local memory; with it they are read in place, from the parameter space.
//
// A step moves 4 to 7 float32 per element and computes little on them: it is bound by
// memory, so for_each_listed reads and writes a chunk 16 bytes per buffer at a time where
// every buffer of the tensor is 16-byte aligned (as the caching allocator's are), and a rule
// is written on one element's values, the loop doing every load and store.
#include "common.cuh"

// Multi-tensor apply: `step(entry, param, grad, s)` for every element of every tensor of `l`,
// with the element's parameter (written back), gradient and states s[0..2] (each written
// back where the tensor has that state; a state it lacks holds 0 and is never stored).
// Block b stands for chunk b - (the tensor's first block) of the tensor whose blocks hold b;
// the grid strides over the blocks (a grid may be smaller than the list's blocks). Blocks
// ascend, so a block's tensor is found by a scan that only moves forward. `chunk` is a
// multiple of 4, so a chunk of an aligned tensor starts aligned.
template <typename Fn>
__device__ __forceinline__ void for_each_listed(const TensorList& l, i64 chunk, Fn step) {
  const i64 blocks = l.t[l.count - 1].end;
  int t = 0;
  for (i64 b = blockIdx.x; b < blocks; b += gridDim.x) {
    while (l.t[t].end <= b) t++;
    const ListEntry& e = l.t[t];
    const i64 first = (b - (t ? l.t[t - 1].end : 0)) * chunk;
    const i64 last = first + chunk < e.n ? first + chunk : e.n;
    bool aligned = true;
    for (int k = 0; k < LIST_BUFFERS; k++) aligned = aligned && (!e.buf[k] || is_aligned<float, 4>(e.buf[k]));
    const i64 packed = aligned ? first + (last - first) / 4 * 4 : first;
    for (i64 q = first + 4 * (i64)threadIdx.x; q < packed; q += 4 * (i64)blockDim.x) {
      Pack<float, 4> v[LIST_BUFFERS];
      for (int k = 0; k < LIST_BUFFERS; k++)
        v[k] = e.buf[k] ? load_pack<float, 4>(e.buf[k] + q, 0) : splat<float, 4>(0.0f);
      for (int j = 0; j < 4; j++) {
        float s[3] = {v[2].v[j], v[3].v[j], v[4].v[j]};
        step(e, v[0].v[j], v[1].v[j], s);
        for (int k = 2; k < LIST_BUFFERS; k++) v[k].v[j] = s[k - 2];
      }
      for (int k = 0; k < LIST_BUFFERS; k++)
        if (k != 1 && e.buf[k]) store_pack<float, 4>(e.buf[k] + q, 0, v[k]);
    }
    for (i64 i = packed + threadIdx.x; i < last; i += blockDim.x) {
      float pv = e.buf[0][i], s[3];
      for (int k = 2; k < LIST_BUFFERS; k++) s[k - 2] = e.buf[k] ? e.buf[k][i] : 0.0f;
      step(e, pv, e.buf[1][i], s);
      e.buf[0][i] = pv;
      for (int k = 2; k < LIST_BUFFERS; k++)
        if (e.buf[k]) e.buf[k][i] = s[k - 2];
    }
  }
}

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
  // s: m, v, vmax
  for_each_listed(l, p[0], [&](const ListEntry& e, float& pv, float g, float (&s)[3]) {
    if (p[2]) g = -g;
    if (p[3] == 2) pv = pv * h[5];
    else if (p[3] == 1) g = g + pv * h[6];
    const float mv = lerp_f(s[0], g, h[0], h[1]);
    float vv = s[1] * h[2];
    vv = vv + g * g * h[3];
    float second = vv;
    if (p[1]) {
      second = max_nan(s[2], vv);  // NaN propagates, as the composite's maximum
      s[2] = second;
    }
    const float denom = sqrtf(second) / e.c[0] + h[4];
    pv = pv + mv / denom * -e.c[1];
    s[0] = mv;
    s[1] = vv;
  });
}

// p: [chunk, has momentum buffer, maximize, has weight decay, nesterov, has dampening]
// h: [lr, wd, momentum, 1 - dampening];  states: buf;  each tensor's c: [1 if its buffer
// starts this step (it becomes the gradient), else 0]
extern "C" __global__ void sgd_step(__grid_constant__ const Params p, __grid_constant__ const Hyper h,
                                    __grid_constant__ const TensorList l) {
  // s: the momentum buffer
  for_each_listed(l, p[0], [&](const ListEntry& e, float& pv, float g, float (&s)[3]) {
    if (p[2]) g = -g;
    if (p[3]) g = g + pv * h[1];
    if (p[1]) {
      float b = g;
      if (e.c[0] == 0.0f) {
        b = s[0] * h[2];
        b = p[5] ? b + g * h[3] : b + g;
      }
      s[0] = b;
      g = p[4] ? g + b * h[2] : b;
    }
    pv = pv + g * -h[0];
  });
}

// p: [chunk, centered, has momentum, maximize, has weight decay]
// h: [lr, wd, alpha, 1 - alpha, 1 - alpha (lerp weight), alpha, eps, momentum]
// states: square average, gradient average (centered), momentum buffer
extern "C" __global__ void rmsprop_step(__grid_constant__ const Params p, __grid_constant__ const Hyper h,
                                        __grid_constant__ const TensorList l) {
  // s: the square average, the gradient average, the momentum buffer
  for_each_listed(l, p[0], [&](const ListEntry& e, float& pv, float g, float (&s)[3]) {
    if (p[3]) g = -g;
    if (p[4]) g = g + pv * h[1];
    float sq = s[0] * h[2];
    sq = sq + g * g * h[3];
    s[0] = sq;
    float avg;
    if (p[1]) {
      const float ga = lerp_f(s[1], g, h[4], h[5]);
      s[1] = ga;
      avg = sqrtf(sq - ga * ga);
    } else {
      avg = sqrtf(sq);
    }
    avg = avg + h[6];
    if (p[2]) {
      const float b = s[2] * h[7] + g / avg;
      s[2] = b;
      pv = pv + b * -h[0];
    } else {
      pv = pv + g / avg * -h[0];
    }
  });
}
