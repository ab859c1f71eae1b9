// Design: the workgroup trees of the row kernels (softmax.wgsl, cross_entropy.wgsl,
// layer_norm.wgsl): the 64 threads' partial values meet in workgroup memory in six
// halving steps, a maximum or a double-float sum (math.wgsl). Every thread of the
// workgroup calls them, live or not, since they hold barriers.

var<workgroup> part: array<vec2<f32>, 64>;

fn tree_max(v: f32, t: u32) -> f32 {
  part[t] = vec2<f32>(v, 0.0);
  for (var h = 32u; h > 0u; h >>= 1u) {
    workgroupBarrier();
    if (t < h) { part[t].x = max_f(part[t].x, part[t + h].x); }
  }
  workgroupBarrier();
  let r = part[0].x;
  workgroupBarrier();
  return r;
}

fn tree_sum(v: vec2<f32>, t: u32) -> vec2<f32> {
  part[t] = v;
  for (var h = 32u; h > 0u; h >>= 1u) {
    workgroupBarrier();
    if (t < h) { part[t] = sum_ff(part[t], part[t + h]); }
  }
  workgroupBarrier();
  let r = part[0];
  workgroupBarrier();
  return r;
}
