// Design: col2im (unfold's adjoint) as a gather, so it needs no atomics: one thread per
// output pixel (n, c, h, w) sums the column entries of every kernel offset (ki, kj) whose
// window position lands on it, in the CPU's order (kernel offsets row-major).
//
// Parameters `p` (int64): [n, C, H, W, kh, kw, dh, dw, ph, pw, sh, sw, OH, OW,
//                          cols offset, cols strides (n, c*k, l)].
#include "common.cuh"

template <typename T>
__global__ void fold(const Params p, T* __restrict__ out, const T* __restrict__ cols) {
  const i64 total = p[0], K = p[4] * p[5];
  for (i64 i = first_index(); i < total; i += grid_step()) {
    const i64 w = i % p[3], h = (i / p[3]) % p[2];
    const i64 nc = i / (p[2] * p[3]);
    const i64 c = nc % p[1], n = nc / p[1];
    T acc = T(0);
    for (i64 ki = 0; ki < p[4]; ki++) {
      const i64 th = h + p[8] - ki * p[6];
      if (th < 0 || th % p[10] != 0 || th / p[10] >= p[12]) continue;
      for (i64 kj = 0; kj < p[5]; kj++) {
        const i64 tw = w + p[9] - kj * p[7];
        if (tw < 0 || tw % p[11] != 0 || tw / p[11] >= p[13]) continue;
        const i64 l = (th / p[10]) * p[13] + tw / p[11];
        acc += cols[p[14] + n * p[15] + (c * K + ki * p[5] + kj) * p[16] + l * p[17]];
      }
    }
    out[i] = acc;
  }
}
