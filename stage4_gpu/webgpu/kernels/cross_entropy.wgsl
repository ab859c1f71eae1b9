// Design: cross-entropy of rows of logits against class indices, one workgroup of 64
// threads per row, as softmax.wgsl reads a row: its maximum, then in double-float
// (math.wgsl) the sum of exponentials and, with label smoothing, the weighted sum of the
// logits and of the weights. It writes each row's loss and weight (for a mean) and the
// probabilities the backward reuses, as stage 3's fused kernel does:
//   loss = (1 - s) w_t (lse - x_t) + s / C (lse W - sum_c w_c x_c),  lse = log sum_c e^x_c.
// The host has checked the targets (a kernel cannot raise).
//
// Filled in by fused.py: I, the target type; SETUP, math.wgsl's OPAQUE zero. The host
// binds weights of 1 where there are none. Parameters `p`: [rows, cols, ignore_index, smoothing as float32 bits].

{HELPERS}
@group(0) @binding(0) var<storage, read_write> loss: array<f32>;
@group(0) @binding(1) var<storage, read_write> wrow: array<f32>;
@group(0) @binding(2) var<storage, read_write> probs: array<f32>;
@group(0) @binding(3) var<storage, read> x: array<f32>;
@group(0) @binding(4) var<storage, read> tgt: array<{I}>;
@group(0) @binding(5) var<storage, read> weight: array<f32>;
@group(0) @binding(6) var<storage, read> p: array<i32>;

fn class_weight(c: i32) -> f32 { return weight[c]; }

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) w: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
  {SETUP}
  let row = i32(w.x + w.y * nw.x);
  let live = row < p[0];
  let cols = p[1];
  let smoothing = bitcast<f32>(p[3]);
  let base = row * cols;
  var m = -inf_f();
  for (var j = i32(t); live && j < cols; j += 64) { m = max_f(m, x[base + j]); }
  m = tree_max(m, t);
  var e = vec2<f32>(0.0);
  var wx = vec2<f32>(0.0);
  var ws = vec2<f32>(0.0);
  for (var j = i32(t); live && j < cols; j += 64) {
    let v = x[base + j];
    e = sum_ff(e, ff(exp_f(v - m)));
    if (smoothing != 0.0) {
      wx = sum_ff(wx, two_prod(class_weight(j), v));
      ws = sum_ff(ws, ff(class_weight(j)));
    }
  }
  let s = tree_sum(e, t);
  if (smoothing != 0.0) {
    wx = tree_sum(wx, t);
    ws = tree_sum(ws, t);
  }
  let inv = 1.0 / ff_f(s);
  for (var j = i32(t); live && j < cols; j += 64) { probs[base + j] = exp_f(x[base + j] - m) * inv; }
  if (t != 0u || !live) { return; }
  let c = i32(tgt[row]);
  if (c == p[2]) {
    loss[row] = 0.0;
    wrow[row] = 0.0;
    return;
  }
  let lse = ff_add(ff(m), ff_add(log_ff(s.x), ff(s.y / s.x)));
  let wt = class_weight(c);
  let nll = ff_mul_f(ff_add(lse, ff(-x[base + c])), wt);
  var out = ff_mul_f(nll, 1.0 - smoothing);
  if (smoothing != 0.0) {
    let spread = ff_add(ff_mul(lse, ws), -wx);
    out = ff_add(out, ff_mul_f(spread, smoothing / f32(cols)));
  }
  loss[row] = ff_f(out);
  wrow[row] = wt;
}
