// Design: one recurrent layer and direction (RNN tanh or relu, LSTM with or without a
// projection, GRU) over packed rows, its whole time loop in ONE launch of ONE block, and its
// backpropagation through time in one more. The semantics are stage 3's
// (stage3_simd/csrc/recurrent.hpp): gi holds every row's input projection with its bias
// (rows x G, G = gates * H, PyTorch's gate order), step t has sizes[t] rows (non-increasing,
// so only the first rows of the state advance), and the running state h (batch x P, P the
// projection's width or H) and c (batch x H, the LSTM's) start as the initial state and end as
// the final one. The GRU's new gate is tanh(x_n + r * (W_hn h + b_hn)).
//
// A step depends on the one before, and a grid has no barrier the host emulation could run
// (it runs blocks one after another: a grid-wide wait would never return), so the block's
// threads loop over the steps together, parted by __syncthreads: each phase of a step is a
// loop of the block's threads over the elements it writes, each thread owning its elements
// (no atomics). The forward's phases: [copy h to hprev, and pre = h @ W_hh^T], [the cell,
// elementwise: h, c, out and what the backward needs], and with a projection
// [h = (o tanh c) @ W_hr^T]. W_hh is read from global memory (L2-resident after the first
// step); the state stays in global memory too, which the barrier makes visible block-wide,
// so no size limit comes from shared memory. The backward's phases per step, in the opposite
// order: with a projection [gproj = gh + gout] and [dhc = gproj @ W_hr], then [the cell
// backward: ggi (and the GRU's hidden gradient gp)], then [gh = gp @ W_hh (+ the GRU's own
// share)]. The weights' and bias's gradients are one product over every step's rows, left to
// the device layer's matmul and reduce (gpu/fused.py), which use the whole GPU.
//
// Limits: one block (cuda/fused.py's RECURRENT_THREADS threads) does batch x G x P
// multiply-adds a step, so a large layer is bound by one SM. A faster version needs several blocks in step: a
// persistent kernel whose blocks each own a slice of W_hh's rows (kept in their shared memory
// or registers) and meet at a grid-wide barrier every step (cooperative launch,
// grid.sync()), which the emulation cannot run; or, as cuDNN's, a GEMM per step launched
// from the host or a CUDA graph.
//
// Parameters `p` (int64): [mode (0 RNN_TANH, 1 RNN_RELU, 2 LSTM, 3 GRU), reverse, steps,
// rows (the sum of sizes), H, P, has bias, has projection].
#include "common.cuh"
#include "math.cuh"

#define MODE_RNN_TANH 0
#define MODE_RNN_RELU 1
#define MODE_LSTM 2
#define MODE_GRU 3

__device__ __forceinline__ i64 gates_of(i64 mode) {
  return mode == MODE_LSTM ? 4 : mode == MODE_GRU ? 3 : 1;
}

// the elements saved per row for the backward, as stage 3's recurrent_saved: LSTM i f g o,
// tanh(c'), c and, with a projection, o tanh(c'); GRU r, z, n and W_hn h + b_hn; RNN h'
__device__ __forceinline__ i64 saved_of(i64 mode, i64 H, bool proj) {
  return mode == MODE_LSTM ? (proj ? 7 : 6) * H : mode == MODE_GRU ? 4 * H : H;
}

// One element j of one row of a step, forward: x the row's input projection, p its hidden
// projection (no bias yet), b the hidden bias or null, h and c the row's state (read, then
// written), out its output row, sv what the backward needs.
template <typename T>
__device__ void cell_forward(i64 mode, i64 H, bool proj, i64 j, const T* x, const T* p, const T* b, T* h, T* c,
                             T* out, T* sv) {
  auto hidden = [&](i64 k) { return b ? p[k * H + j] + b[k * H + j] : p[k * H + j]; };
  auto in = [&](i64 k) { return x[k * H + j]; };
  T hn;
  if (mode == MODE_LSTM) {
    const T i = Sigmoid::f(in(0) + hidden(0)), f = Sigmoid::f(in(1) + hidden(1));
    const T g = Tanh::f(in(2) + hidden(2)), o = Sigmoid::f(in(3) + hidden(3));
    const T cp = c[j], cn = f * cp + i * g, t = Tanh::f(cn);
    hn = o * t;
    sv[j] = i, sv[H + j] = f, sv[2 * H + j] = g, sv[3 * H + j] = o, sv[4 * H + j] = t, sv[5 * H + j] = cp;
    c[j] = cn;
    if (proj) {  // the projection's phase writes h and out
      sv[6 * H + j] = hn;
      return;
    }
  } else if (mode == MODE_GRU) {
    const T r = Sigmoid::f(in(0) + hidden(0)), z = Sigmoid::f(in(1) + hidden(1)), hn_part = hidden(2);
    const T nn = Tanh::f(in(2) + r * hn_part);
    hn = nn + z * (h[j] - nn);
    sv[j] = r, sv[H + j] = z, sv[2 * H + j] = nn, sv[3 * H + j] = hn_part;
  } else {
    const T v = in(0) + hidden(0);
    hn = mode == MODE_RNN_TANH ? Tanh::f(v) : Relu::f(v);
    sv[j] = hn;
  }
  h[j] = hn;
  out[j] = hn;
}

// One element j of one row of a step, backward: dh the gradient of the cell's output row
// (go, when not null, is added), gc the cell state's (in: from the steps after; out: for the
// step before). Writes the input projection's gradient gx and the hidden projection's gp (the
// same as gx but for the GRU's n gate, which may be gx itself). The GRU leaves h's own share
// of its gradient in dh; the share through W_hh is the next phase's.
template <typename T>
__device__ void cell_backward(i64 mode, i64 H, i64 j, T* gx, T* gp, T* dh_row, T* gc, const T* go, const T* sv,
                              const T* hp) {
  const T one = T(1);
  const T dh = go ? dh_row[j] + go[j] : dh_row[j];
  auto saved = [&](i64 k) { return sv[k * H + j]; };
  if (mode == MODE_LSTM) {
    const T i = saved(0), f = saved(1), g = saved(2), o = saved(3), t = saved(4);
    const T dc = gc[j] + dh * o * (one - t * t);  // through h' = o tanh(c')
    gx[j] = dc * g * i * (one - i);
    gx[H + j] = dc * saved(5) * f * (one - f);
    gx[2 * H + j] = dc * i * (one - g * g);
    gx[3 * H + j] = dh * t * o * (one - o);
    gc[j] = dc * f;
  } else if (mode == MODE_GRU) {
    const T r = saved(0), z = saved(1), nn = saved(2);
    const T dn = dh * (one - z) * (one - nn * nn), dz = dh * (hp[j] - nn) * z * (one - z);
    const T dr = dn * saved(3) * r * (one - r);
    gx[j] = dr, gx[H + j] = dz, gx[2 * H + j] = dn;
    gp[j] = dr, gp[H + j] = dz, gp[2 * H + j] = dn * r;
    dh_row[j] = dh * z;  // h' = n + z (h - n)
  } else {
    const T y = saved(0);
    gx[j] = mode == MODE_RNN_TANH ? dh * (one - y * y) : (y > T(0) ? dh : T(0));
  }
}

// the first row of step t and of the step after it in the loop's order: a direction's loop
// walks the rows forward from 0 or backward from `rows`
struct StepRows {
  i64 next;
  __device__ i64 enter(bool up, i64 n) {
    const i64 o = up ? next : next - n;
    next = up ? next + n : o;
    return o;
  }
};

// The time loop (see Design). out, hprev: rows x P; saved: rows x saved_of; h: batch x P and
// c: batch x H, the initial state in, the final out; pre: scratch, batch x G.
template <typename T>
__global__ void recurrent_forward(const Params p, T* out, T* h, T* c, T* saved, T* hprev, T* pre,
                                  const T* __restrict__ gi, const T* __restrict__ w, const T* __restrict__ b,
                                  const T* __restrict__ w_hr, const i64* __restrict__ sizes) {
  const i64 mode = p[0], steps = p[2], H = p[4], P = p[5];
  const bool reverse = p[1] != 0, proj = p[7] != 0;
  const i64 G = gates_of(mode) * H, S = saved_of(mode, H, proj);
  if (!p[6]) b = nullptr;
  const i64 tid = threadIdx.x, nt = blockDim.x;
  StepRows at{reverse ? p[3] : 0};
  for (i64 s = 0; s < steps; s++) {
    const i64 t = reverse ? steps - 1 - s : s, n = sizes[t], o = at.enter(!reverse, n);
    // the previous state, kept for the backward, and its hidden projection
    for (i64 e = tid; e < n * P; e += nt) hprev[o * P + e] = h[e];
    for (i64 e = tid; e < n * G; e += nt) {
      const i64 r = e / G, g = e - r * G;
      const T* hr = h + r * P;
      const T* wg = w + g * P;
      T acc = T(0);
      for (i64 k = 0; k < P; k++) acc += hr[k] * wg[k];
      pre[e] = acc;
    }
    __syncthreads();
    for (i64 e = tid; e < n * H; e += nt) {
      const i64 r = e / H, j = e - r * H;
      cell_forward<T>(mode, H, proj, j, gi + (o + r) * G, pre + r * G, b, h + r * P,
                      mode == MODE_LSTM ? c + r * H : nullptr, out + (o + r) * P, saved + (o + r) * S);
    }
    __syncthreads();
    if (proj) {  // h' = (o tanh(c')) @ W_hr^T
      for (i64 e = tid; e < n * P; e += nt) {
        const i64 r = e / P, q = e - r * P;
        const T* a = saved + (o + r) * S + 6 * H;
        const T* wq = w_hr + q * H;
        T acc = T(0);
        for (i64 k = 0; k < H; k++) acc += a[k] * wq[k];
        out[(o + r) * P + q] = acc;
        h[r * P + q] = acc;
      }
      __syncthreads();
    }
  }
}

// Backpropagation through recurrent_forward, steps in the opposite order. gh: batch x P and
// gc: batch x H, the final state's gradients in, the initial state's out; gout: rows x P.
// Writes ggi (rows x G) and gp (the GRU's hidden projection's gradient, rows x G; ggi itself
// for the other modes) and, with a projection, gproj (rows x P, the projection's output
// gradient); dhc: scratch (batch x H, with a projection).
template <typename T>
__global__ void recurrent_backward(const Params p, T* ggi, T* gh, T* gc, T* gp, T* gproj, T* dhc,
                                   const T* __restrict__ gout, const T* __restrict__ saved,
                                   const T* __restrict__ hprev, const T* __restrict__ w,
                                   const T* __restrict__ w_hr, const i64* __restrict__ sizes) {
  const i64 mode = p[0], steps = p[2], H = p[4], P = p[5];
  const bool reverse = p[1] != 0, proj = p[7] != 0;
  const i64 G = gates_of(mode) * H, S = saved_of(mode, H, proj);
  const i64 tid = threadIdx.x, nt = blockDim.x;
  StepRows at{reverse ? 0 : p[3]};
  for (i64 s = 0; s < steps; s++) {
    const i64 t = reverse ? s : steps - 1 - s, n = sizes[t], o = at.enter(reverse, n);
    T* dh = gh;
    const T* go = gout + o * P;
    if (proj) {  // back through h' = (o tanh(c')) @ W_hr^T
      for (i64 e = tid; e < n * P; e += nt) gproj[o * P + e] = gh[e] + go[e];
      __syncthreads();
      for (i64 e = tid; e < n * H; e += nt) {
        const i64 r = e / H, k = e - r * H;
        const T* d = gproj + (o + r) * P;
        T acc = T(0);
        for (i64 q = 0; q < P; q++) acc += d[q] * w_hr[q * H + k];
        dhc[e] = acc;
      }
      __syncthreads();
      dh = dhc, go = nullptr;
    }
    for (i64 e = tid; e < n * H; e += nt) {
      const i64 r = e / H, j = e - r * H;
      cell_backward<T>(mode, H, j, ggi + (o + r) * G, gp + (o + r) * G, dh + r * H,
                       mode == MODE_LSTM ? gc + r * H : nullptr, go ? go + r * P : nullptr,
                       saved + (o + r) * S, hprev + (o + r) * P);
    }
    __syncthreads();
    // the previous state's gradient: gp @ W_hh, added to the GRU's own share
    for (i64 e = tid; e < n * P; e += nt) {
      const i64 r = e / P, k = e - r * P;
      const T* d = gp + (o + r) * G;
      T acc = mode == MODE_GRU ? gh[e] : T(0);
      for (i64 g = 0; g < G; g++) acc += d[g] * w[g * P + k];
      gh[e] = acc;
    }
    __syncthreads();
  }
}
