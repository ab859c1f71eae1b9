// Design: one kernel for every strided elementwise operation: a unary or binary op, a
// cast, `where`, and the strided copy that materialises a view. One thread per output
// element: it turns its linear index into the offset of each operand through the shape
// and that operand's strides (a broadcast dimension has stride 0), so no operand is ever
// made contiguous first. The host merges dimensions that are contiguous in every operand
// before the launch; where one is left (contiguous operands, a broadcast scalar) the
// kernel is built with `at_flat`, one multiply per operand instead of a division loop.
//
// Filled in by elementwise.py (the names in braces below): the bindings, `out` at 0 and
// the inputs x1, x2, ... after it; the loads of the inputs into v1, v2, ...; and the
// expression that computes the output element from them; AT, `at` or `at_flat`; SETUP,
// where math.wgsl is included, its OPAQUE zero, from a count the compiler cannot know.
// Parameters `p`: [n, ndim, shape..., then for out and each input: offset, strides...];
// the host passes a zero-dim shape as one dimension of size 1.

{BINDINGS}
#include "strided.wgsl"

fn at_flat(i: i32, k: i32) -> i32 {
  let base = 3 + k * 2;
  return p[base] + i * p[base + 1];
}

fn at(i: i32, k: i32) -> i32 {
  let nd = p[1];
  let base = 2 + nd + k * (nd + 1);
  return view_offset(i, nd, 2, base + 1, p[base]);
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = i32(g.x + g.y * nw.x * 256u);
  if (i >= p[0]) { return; }
  {SETUP}
  {LOADS}
  out[{AT}(i, 0)] = {EXPR};
}
