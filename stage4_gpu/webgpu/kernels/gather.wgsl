// Design: `take` and `gather`, one thread per output element (the output has the index's
// shape). The thread reads its index value and turns it into a position in x: for `take`
// (axis < 0) a row-major position in x, through x's shape and strides; for `gather`, the
// thread's own coordinates with the one along `axis` replaced by the index value. The
// host has checked every index value is in range.
//
// Types filled in: T the element type, I the index type.
// Parameters `p`: [n, ndim, index shape..., index offset, index strides...,
//                  x offset, x strides..., axis, x ndim, x shape..., x strides...].

@group(0) @binding(0) var<storage, read_write> out: array<{T}>;
@group(0) @binding(1) var<storage, read> x: array<{T}>;
@group(0) @binding(2) var<storage, read> idx: array<{I}>;
@group(0) @binding(3) var<storage, read> p: array<i32>;
#include "strided.wgsl"

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = i32(g.x + g.y * nw.x * 256u);
  if (i >= p[0]) { return; }
  let nd = p[1];
  let axis = p[4 + 3 * nd];
  var rem = i;
  var io = p[2 + nd];
  var xo = p[3 + 2 * nd];
  for (var d = nd - 1; d >= 0; d--) {
    let c = rem % p[2 + d];
    rem /= p[2 + d];
    io += c * p[3 + nd + d];
    if (d != axis) { xo += c * p[4 + 2 * nd + d]; }
  }
  let j = i32(idx[io]);
  if (axis >= 0) {
    out[i] = x[xo + j * p[4 + 2 * nd + axis]];
    return;
  }
  // take: j is a row-major position in x
  let xn = p[5 + 3 * nd];
  out[i] = x[view_offset(j, xn, 6 + 3 * nd, 6 + 3 * nd + xn, p[3 + 2 * nd])];
}
