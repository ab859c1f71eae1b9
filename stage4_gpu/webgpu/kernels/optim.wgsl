// Design: one optimizer step for one parameter, one thread per element, in the order of
// operations of the composite (stage 0's optimizers) and of stage 3's fused loop, so the
// three agree to float32 rounding. Each state buffer is read and written once: the step
// costs one pass over memory where the composite costs one per operation.
//
// Filled in by fused.py: BINDINGS, the state buffers after p (0) and g (1), then the
// parameters `p` and the float32 hyperparameters `h`; UPDATE, the step for element i;
// SETUP, math.wgsl's OPAQUE zero.

{HELPERS}
@group(0) @binding(0) var<storage, read_write> param: array<f32>;
@group(0) @binding(1) var<storage, read> grad: array<f32>;
{BINDINGS}

// start + (end - start) w, or end - (end - start) (1 - w) for w >= 1/2: PyTorch's lerp
fn lerp_f(start: f32, end: f32, w: f32, w1: f32) -> f32 {
  if (w < 0.5) { return start + (end - start) * w; }
  return end - (end - start) * w1;
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = i32(gid.x + gid.y * nw.x * 256u);
  if (i >= p[0]) { return; }
  {SETUP}
  {UPDATE}
}
