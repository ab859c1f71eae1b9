// Design: the classic tiled product. A 16x16 workgroup computes a 16x16 tile of C; for
// each step along k it loads a 16x16 tile of A and one of B into workgroup memory (one
// element per thread, through the operands' strides, so a transposed operand costs
// nothing), waits at a barrier, and every thread accumulates its dot product from the
// shared tiles: each element of A and B is read from device memory k/16 times fewer
// than by one thread per output. The tiles of every matrix of the batch are numbered end
// to end and spread over the dispatch's x and y, as the elementwise kernel's threads are.
//
// Parameters `p`: [n, k, m, batch, tiles per matrix, tiles across m,
//                  a offset, a batch stride, a row stride, a col stride,
//                  b offset, b batch stride, b row stride, b col stride].

@group(0) @binding(0) var<storage, read_write> c: array<{T}>;
@group(0) @binding(1) var<storage, read> a: array<{T}>;
@group(0) @binding(2) var<storage, read> b: array<{T}>;
@group(0) @binding(3) var<storage, read> p: array<i32>;

var<workgroup> ta: array<array<{T}, 16>, 16>;
var<workgroup> tb: array<array<{T}, 16>, 16>;

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) w: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
        @builtin(local_invocation_id) l: vec3<u32>) {
  let n = p[0];
  let k = p[1];
  let m = p[2];
  let tile = i32(w.x + w.y * nw.x);
  let batch = tile / p[4];
  let live = batch < p[3];
  let within = tile % p[4];
  let row = (within / p[5]) * 16 + i32(l.y);
  let col = (within % p[5]) * 16 + i32(l.x);
  let abase = p[6] + batch * p[7];
  let bbase = p[10] + batch * p[11];
  var acc = {T}(0);
  for (var k0 = 0; k0 < k; k0 += 16) {
    let ka = k0 + i32(l.x);
    let kb = k0 + i32(l.y);
    ta[l.y][l.x] = select({T}(0), a[abase + row * p[8] + ka * p[9]], live && row < n && ka < k);
    tb[l.y][l.x] = select({T}(0), b[bbase + kb * p[12] + col * p[13]], live && kb < k && col < m);
    workgroupBarrier();
    for (var j = 0; j < 16; j++) {
      acc += ta[l.y][j] * tb[j][l.x];
    }
    workgroupBarrier();
  }
  if (live && row < n && col < m) { c[batch * n * m + row * m + col] = acc; }
}
