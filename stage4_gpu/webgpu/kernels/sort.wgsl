// Design: a stable sort of every row along an axis by ranking: one thread per element
// counts the elements of its row that come before it (a smaller key, or an equal key at
// a smaller position; NaN after every number, as PyTorch orders it) and writes its value
// and its position at that rank. n threads doing n comparisons each: quadratic in the
// row's length, but with no passes, barriers or scratch memory, and exactly the CPU's
// order, ties included.
//
// Type filled in: T; BEFORE(a, b) whether key a comes before key b, ties aside.
// Parameters `p`: [elements, row length, other ndim m, other shape..., x offset,
//                  x other strides..., x axis stride, out other strides..., out axis stride].

{HELPERS}
@group(0) @binding(0) var<storage, read_write> vals: array<{T}>;
@group(0) @binding(1) var<storage, read_write> order: array<i64>;
@group(0) @binding(2) var<storage, read> x: array<{T}>;
@group(0) @binding(3) var<storage, read> p: array<i32>;

fn equal(a: {T}, b: {T}) -> bool { return {EQUAL}; }
fn before(a: {T}, b: {T}) -> bool { return {BEFORE}; }

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = i32(g.x + g.y * nw.x * 256u);
  if (i >= p[0]) { return; }
  {SETUP}
  let n = p[1];
  let m = p[2];
  let j = i % n;
  var r = i / n;
  var xo = p[3 + m];
  var oo = 0;
  for (var d = m - 1; d >= 0; d--) {
    let c = r % p[3 + d];
    r /= p[3 + d];
    xo += c * p[4 + m + d];
    oo += c * p[5 + 2 * m + d];
  }
  let xs = p[4 + 2 * m];
  let v = x[xo + j * xs];
  var rank = 0;
  for (var k = 0; k < n; k++) {
    let u = x[xo + k * xs];
    if (before(u, v) || (k < j && equal(u, v))) { rank++; }
  }
  let at = oo + rank * p[5 + 3 * m];
  vals[at] = v;
  order[at] = i64(j);
}
