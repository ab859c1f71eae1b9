// Design: a stable sort of every row along an axis by ranking: one thread per element
// counts the elements of its row that come before it (a smaller key, or an equal key at
// a smaller position; NaN after every number, as PyTorch orders it) and writes its value
// and its position at that rank. n threads doing n comparisons each: quadratic in the
// row's length, but with no passes, barriers or scratch memory, and exactly the CPU's
// order, ties included.
//
// Type filled in: T; BEFORE(a, b) whether key a comes before key b, ties aside.
// Parameters `p`: along.wgsl's, one thread per element.

{HELPERS}
@group(0) @binding(0) var<storage, read_write> vals: array<{T}>;
@group(0) @binding(1) var<storage, read_write> order: array<i64>;
@group(0) @binding(2) var<storage, read> x: array<{T}>;
@group(0) @binding(3) var<storage, read> p: array<i32>;
#include "along.wgsl"

fn equal(a: {T}, b: {T}) -> bool { return {EQUAL}; }
fn before(a: {T}, b: {T}) -> bool { return {BEFORE}; }

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = i32(g.x + g.y * nw.x * 256u);
  if (i >= p[0]) { return; }
  {SETUP}
  let n = p[1];
  let j = i % n;
  let row = row_of(i / n);
  let v = x[row.x + j * row.x_step];
  var rank = 0;
  for (var k = 0; k < n; k++) {
    let u = x[row.x + k * row.x_step];
    if (before(u, v) || (k < j && equal(u, v))) { rank++; }
  }
  let at = row.out + rank * row.out_step;
  vals[at] = v;
  order[at] = i64(j);
}
