// Design: col2im (unfold's adjoint) as a gather, so it needs no atomics: one thread per
// output pixel (n, c, h, w) sums the column entries of every kernel offset (ki, kj) whose
// window position lands on it, in the CPU's order (kernel offsets row-major).
//
// Type filled in: T. Parameters `p`: [n, C, H, W, kh, kw, dh, dw, ph, pw, sh, sw, OH, OW,
//                  cols offset, cols strides (n, c*k, l)].

@group(0) @binding(0) var<storage, read_write> out: array<{T}>;
@group(0) @binding(1) var<storage, read> cols: array<{T}>;
@group(0) @binding(2) var<storage, read> p: array<i32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = i32(g.x + g.y * nw.x * 256u);
  if (i >= p[0]) { return; }
  let w = i % p[3];
  let h = (i / p[3]) % p[2];
  let nc = i / (p[2] * p[3]);
  let c = nc % p[1];
  let n = nc / p[1];
  let K = p[4] * p[5];
  var acc = {T}(0);
  for (var ki = 0; ki < p[4]; ki++) {
    let th = h + p[8] - ki * p[6];
    if (th < 0 || th % p[10] != 0 || th / p[10] >= p[12]) { continue; }
    for (var kj = 0; kj < p[5]; kj++) {
      let tw = w + p[9] - kj * p[7];
      if (tw < 0 || tw % p[11] != 0 || tw / p[11] >= p[13]) { continue; }
      let l = (th / p[10]) * p[13] + tw / p[11];
      acc += cols[p[14] + n * p[15] + (c * K + ki * p[5] + kj) * p[16] + l * p[17]];
    }
  }
  out[i] = acc;
}
