// Design: layer norm over rows, one workgroup of 64 threads per contiguous row, as
// softmax.wgsl reads a row. The forward takes the row's mean, then its variance from a
// second pass over x - mean (no cancellation), both summed in double-float as the CPU
// stages sum them in float64, and writes (x - mean) / sqrt(var + eps), scaled and shifted,
// with each row's mean and 1/std for the backward. The backward (BACKWARD true) writes
// each row's input gradient from those statistics:
//   gx = rstd (w g - mean(w g) - xhat mean(w g xhat)),  xhat = (x - mean) rstd.
// The weight's and bias's gradients are sums down the columns, left to the reductions.
//
// Filled in by fused.py: HELPERS, math.wgsl and rows.wgsl; SETUP, its OPAQUE zero; BACKWARD.
// Parameters `p`: [rows, cols, has weight, has bias, eps as float32 bits].

{HELPERS}
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@group(0) @binding(1) var<storage, read_write> mean: array<f32>;
@group(0) @binding(2) var<storage, read_write> rstd: array<f32>;
@group(0) @binding(3) var<storage, read> x: array<f32>;
@group(0) @binding(4) var<storage, read> g: array<f32>;
@group(0) @binding(5) var<storage, read> w: array<f32>;
@group(0) @binding(6) var<storage, read> b: array<f32>;
@group(0) @binding(7) var<storage, read> p: array<i32>;

fn weight(c: i32) -> f32 { return select(1.0, w[c], p[2] != 0); }

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
  {SETUP}
  let row = i32(wid.x + wid.y * nw.x);
  let live = row < p[0];
  let cols = p[1];
  let base = row * cols;
  let n = f32(cols);
  if ({BACKWARD}) {
    let mu = select(0.0, mean[row], live);
    let k = select(0.0, rstd[row], live);
    var a = vec2<f32>(0.0);
    var bs = vec2<f32>(0.0);
    for (var c = i32(t); live && c < cols; c += 64) {
      let wg = weight(c) * g[base + c];
      a = sum_ff(a, ff(wg));
      bs = sum_ff(bs, two_prod(wg, (x[base + c] - mu) * k));
    }
    let ma = ff_f(tree_sum(a, t)) / n;
    let mb = ff_f(tree_sum(bs, t)) / n;
    for (var c = i32(t); live && c < cols; c += 64) {
      let xhat = (x[base + c] - mu) * k;
      out[base + c] = k * (weight(c) * g[base + c] - ma - xhat * mb);
    }
    return;
  }
  var s = vec2<f32>(0.0);
  for (var c = i32(t); live && c < cols; c += 64) { s = sum_ff(s, ff(x[base + c])); }
  let mu = ff_f(tree_sum(s, t)) / n;
  var ss = vec2<f32>(0.0);
  for (var c = i32(t); live && c < cols; c += 64) {
    let d = x[base + c] - mu;
    ss = sum_ff(ss, two_prod(d, d));
  }
  let k = 1.0 / sqrt(ff_f(tree_sum(ss, t)) / n + bitcast<f32>(p[4]));
  if (!live) { return; }
  if (t == 0u) {
    mean[row] = mu;
    rstd[row] = k;
  }
  for (var c = i32(t); c < cols; c += 64) {
    var v = (x[base + c] - mu) * k * weight(c);
    if (p[3] != 0) { v += b[c]; }
    out[base + c] = v;
  }
}
