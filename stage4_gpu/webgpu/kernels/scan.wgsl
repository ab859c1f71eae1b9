// Design: a running sum, product, logsumexp, maximum or minimum along an axis, one thread
// per row, in order: the row's dependency chain is the whole computation, and rows are
// many wherever scans are used (cumulative sums over a batch). Maximum and minimum also
// write the position of the running extreme: the latest of equal values, and a NaN once
// seen stays, as PyTorch's cummax does.
//
// Type filled in: T; STEP folds v (at position j) into acc (and best, for max and min);
// SETUP, where math.wgsl is in HELPERS, its OPAQUE zero.
// Parameters `p`: along.wgsl's, with rows in place of elements.

{HELPERS}
@group(0) @binding(0) var<storage, read_write> vals: array<{T}>;
@group(0) @binding(1) var<storage, read_write> order: array<i64>;
@group(0) @binding(2) var<storage, read> x: array<{T}>;
@group(0) @binding(3) var<storage, read> p: array<i32>;
#include "along.wgsl"

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let r = i32(g.x + g.y * nw.x * 256u);
  if (r >= p[0]) { return; }
  {SETUP}
  let n = p[1];
  let row = row_of(r);
  var acc = x[row.x];
  var best = 0;
  var c = vec2<f32>(f32(acc), 0.0);  // a float32 sum's running value in double-float
  for (var j = 0; j < n; j++) {
    let v = x[row.x + j * row.x_step];
    if (j > 0) { {STEP} }
    vals[row.out + j * row.out_step] = acc;
    order[row.out + j * row.out_step] = i64(best);
  }
}
