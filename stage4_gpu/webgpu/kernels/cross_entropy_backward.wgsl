// Design: the gradient of cross_entropy.wgsl's loss, one thread per logit:
//   scale_r ((1 - s) w_t (p_rc - [c = t]) + s / C (W p_rc - w_c)),  W = sum_c w_c,
// and 0 on an ignored row. Filled in: I, the target type.
// Parameters `p`: [rows, cols, ignore_index, smoothing as float32 bits].

@group(0) @binding(0) var<storage, read_write> gx: array<f32>;
@group(0) @binding(1) var<storage, read> probs: array<f32>;
@group(0) @binding(2) var<storage, read> tgt: array<{I}>;
@group(0) @binding(3) var<storage, read> weight: array<f32>;
@group(0) @binding(4) var<storage, read> scale: array<f32>;
@group(0) @binding(5) var<storage, read> wsum: array<f32>;
@group(0) @binding(6) var<storage, read> p: array<i32>;

fn class_weight(c: i32) -> f32 { return weight[c]; }

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = i32(g.x + g.y * nw.x * 256u);
  let cols = p[1];
  if (i >= p[0] * cols) { return; }
  let r = i / cols;
  let c = i % cols;
  let tc = i32(tgt[r]);
  if (tc == p[2]) { gx[i] = 0.0; return; }
  let sm = bitcast<f32>(p[3]);
  let s = scale[r];
  let wt = class_weight(tc);
  let a = s * (1.0 - sm) * wt + s * sm / f32(cols) * wsum[0];
  var v = a * probs[i] - s * sm / f32(cols) * class_weight(c);
  if (c == tc) { v -= s * (1.0 - sm) * wt; }
  gx[i] = v;
}
