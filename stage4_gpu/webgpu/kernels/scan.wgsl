// Design: a running sum, product, logsumexp, maximum or minimum along an axis, one thread
// per row, in order: the row's dependency chain is the whole computation, and rows are
// many wherever scans are used (cumulative sums over a batch). Maximum and minimum also
// write the position of the running extreme: the latest of equal values, and a NaN once
// seen stays, as PyTorch's cummax does.
//
// Type filled in: T; STEP folds v (at position j) into acc (and best, for max and min);
// SETUP, where math.wgsl is in HELPERS, its OPAQUE zero.
// Parameters `p`: as sort.wgsl's, with rows in place of elements.

{HELPERS}
@group(0) @binding(0) var<storage, read_write> vals: array<{T}>;
@group(0) @binding(1) var<storage, read_write> order: array<i64>;
@group(0) @binding(2) var<storage, read> x: array<{T}>;
@group(0) @binding(3) var<storage, read> p: array<i32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let row = i32(g.x + g.y * nw.x * 256u);
  if (row >= p[0]) { return; }
  {SETUP}
  let n = p[1];
  let m = p[2];
  var r = row;
  var xo = p[3 + m];
  var oo = 0;
  for (var d = m - 1; d >= 0; d--) {
    let c = r % p[3 + d];
    r /= p[3 + d];
    xo += c * p[4 + m + d];
    oo += c * p[5 + 2 * m + d];
  }
  let xs = p[4 + 2 * m];
  let os = p[5 + 3 * m];
  var acc = x[xo];
  var best = 0;
  var c = vec2<f32>(f32(acc), 0.0);  // a float32 sum's running value in double-float
  for (var j = 0; j < n; j++) {
    let v = x[xo + j * xs];
    if (j > 0) { {STEP} }
    vals[oo + j * os] = acc;
    order[oo + j * os] = i64(best);
  }
}
