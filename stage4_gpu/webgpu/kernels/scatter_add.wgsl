// Design: scatter-add as a gather, so it needs no atomics and adds in the CPU's order.
// One thread per output element walks the index along `axis` at its own other
// coordinates and adds every source value whose index names its position along `axis`.
// Cost: output size times the index's length along `axis`.
//
// Types filled in: T the element type, I the index type.
// Parameters `p`: [n, ndim, out shape..., index shape..., index offset, index strides...,
//                  src offset, src strides..., axis].

@group(0) @binding(0) var<storage, read_write> out: array<{T}>;
@group(0) @binding(1) var<storage, read> idx: array<{I}>;
@group(0) @binding(2) var<storage, read> src: array<{T}>;
@group(0) @binding(3) var<storage, read> p: array<i32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = i32(g.x + g.y * nw.x * 256u);
  if (i >= p[0]) { return; }
  let nd = p[1];
  let axis = p[4 + 4 * nd];
  var rem = i;
  var io = p[2 + 2 * nd];
  var so = p[3 + 3 * nd];
  var want = 0;
  var inside = true;
  for (var d = nd - 1; d >= 0; d--) {
    let c = rem % p[2 + d];
    rem /= p[2 + d];
    if (d == axis) {
      want = c;
    } else {
      inside = inside && c < p[2 + nd + d];
      io += c * p[3 + 2 * nd + d];
      so += c * p[4 + 3 * nd + d];
    }
  }
  var acc = {T}(0);
  if (inside) {
    for (var j = 0; j < p[2 + nd + axis]; j++) {
      if (i32(idx[io + j * p[3 + 2 * nd + axis]]) == want) {
        acc += src[so + j * p[4 + 3 * nd + axis]];
      }
    }
  }
  out[i] = acc;
}
