// Design: im2col, one thread per element of the (N, C*K, L) result: the thread decodes
// its image, channel, kernel offset (ki, kj) and output position (oh, ow), and reads the
// input pixel that kernel offset sees there, or zero in the padding. One spatial dim is
// the two-dim case with height 1.
//
// Parameters `p` (int64): [n, C, H, W, kh, kw, dh, dw, ph, pw, sh, sw, OH, OW,
//                          x offset, x strides (n, c, h, w)].
#include "common.cuh"

template <typename T>
__global__ void unfold(const Params p, T* __restrict__ out, const T* __restrict__ x) {
  const i64 total = p[0], L = p[12] * p[13], K = p[4] * p[5];
  for (i64 i = first_index(); i < total; i += grid_step()) {
    const i64 l = i % L, row = i / L;  // row: (n, c, kernel offset)
    const i64 k = row % K, nc = row / K;
    const i64 c = nc % p[1], n = nc / p[1];
    const i64 h = (l / p[13]) * p[10] - p[8] + (k / p[5]) * p[6];
    const i64 w = (l % p[13]) * p[11] - p[9] + (k % p[5]) * p[7];
    T v = T(0);
    if (h >= 0 && h < p[2] && w >= 0 && w < p[3])
      v = x[p[14] + n * p[15] + c * p[16] + h * p[17] + w * p[18]];
    out[i] = v;
  }
}
