// Design: `put` (x.flat[index[i]] = src[i], or combined) in one thread, in order. Repeated
// indices then behave exactly as on the CPU (the last write wins, or every value is
// combined in turn), which no parallel scatter without atomics on floats can promise.
// The index and source arrive contiguous; dst is any view.
//
// Types filled in: T the element type, I the index type, COMBINE(a, b).
// Parameters `p`: [n, dst ndim, dst shape..., dst offset, dst strides...].

@group(0) @binding(0) var<storage, read_write> dst: array<{T}>;
@group(0) @binding(1) var<storage, read> idx: array<{I}>;
@group(0) @binding(2) var<storage, read> src: array<{T}>;
@group(0) @binding(3) var<storage, read> p: array<i32>;
#include "strided.wgsl"

@compute @workgroup_size(1)
fn main() {
  let nd = p[1];
  for (var i = 0; i < p[0]; i++) {
    let off = view_offset(i32(idx[i]), nd, 2, 3 + nd, p[2 + nd]);
    let a = dst[off];
    let b = src[i];
    dst[off] = {COMBINE};
  }
}
