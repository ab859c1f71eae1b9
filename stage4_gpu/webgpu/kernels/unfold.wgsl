// Design: im2col, one thread per element of the (N, C*K, L) result: the thread decodes
// its image, channel, kernel offset (ki, kj) and output position (oh, ow), and reads the
// input pixel that kernel offset sees there, or zero in the padding. One spatial dim is
// the two-dim case with height 1.
//
// Type filled in: T. Parameters `p`: [n, C, H, W, kh, kw, dh, dw, ph, pw, sh, sw, OH, OW,
//                  x offset, x strides (n, c, h, w)].

@group(0) @binding(0) var<storage, read_write> out: array<{T}>;
@group(0) @binding(1) var<storage, read> x: array<{T}>;
@group(0) @binding(2) var<storage, read> p: array<i32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = i32(g.x + g.y * nw.x * 256u);
  if (i >= p[0]) { return; }
  let L = p[12] * p[13];
  let K = p[4] * p[5];
  let l = i % L;
  let row = i / L;  // (n, c, kernel offset)
  let k = row % K;
  let nc = row / K;
  let c = nc % p[1];
  let n = nc / p[1];
  let h = (l / p[13]) * p[10] - p[8] + (k / p[5]) * p[6];
  let w = (l % p[13]) * p[11] - p[9] + (k % p[5]) * p[7];
  var v = {T}(0);
  if (h >= 0 && h < p[2] && w >= 0 && w < p[3]) {
    v = x[p[14] + n * p[15] + c * p[16] + h * p[17] + w * p[18]];
  }
  out[i] = v;
}
