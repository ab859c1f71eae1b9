// Design: softmax and log_softmax along rows, and their backwards, one workgroup of 64
// threads per contiguous row. A row is read in strides of 64: first its maximum (a tree
// in workgroup memory), then the sum the result divides by, kept in double-float as the
// CPU stages keep it in float64 (math.wgsl), then each element written. One launch does
// what the composite does in five (max, subtract, exp, sum, divide).
//
// Filled in by fused.py: SUM, the term a thread adds for element j (reading v = x[j] and,
// in the backward, u = y[j]); OUT, the element written, from v, u, the row maximum m and
// the sum s; NEEDS_MAX, whether the maximum is needed (the forward); SETUP, math.wgsl's
// OPAQUE zero.
// Parameters `p`: [rows, cols].

{HELPERS}
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> y: array<f32>;
@group(0) @binding(3) var<storage, read> p: array<i32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) w: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
  {SETUP}
  let row = i32(w.x + w.y * nw.x);
  let live = row < p[0];  // every thread reaches the barriers, live or not
  let cols = p[1];
  let base = row * cols;
  var m = -inf_f();
  if ({NEEDS_MAX}) {
    for (var j = i32(t); live && j < cols; j += 64) { m = max_f(m, x[base + j]); }
    m = tree_max(m, t);
  }
  var acc = vec2<f32>(0.0);
  for (var j = i32(t); live && j < cols; j += 64) {
    let v = x[base + j];
    let u = y[base + j];
    acc = sum_ff(acc, ff({SUM}));
  }
  let s = tree_sum(acc, t);
  for (var j = i32(t); live && j < cols; j += 64) {
    let v = x[base + j];
    let u = y[base + j];
    out[base + j] = {OUT};
  }
}
