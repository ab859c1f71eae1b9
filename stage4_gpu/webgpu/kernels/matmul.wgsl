// Design: a tiled product with register blocking. A workgroup of 16x16 threads computes a
// 64x64 tile of C, each thread a 4x4 block of it (rows ty + 16 i, columns tx + 16 j). For
// each step of 16 along k, the 256 threads load a 64x16 tile of A and a 16x64 tile of B
// into workgroup memory (four elements each, consecutive threads on consecutive
// addresses, through the operands' strides: a transposed operand costs nothing), wait at
// a barrier, and every thread then does 16 rank-1 updates of its block from registers:
// four loads from workgroup memory feed sixteen multiply-adds, where a thread per output
// would do two loads per multiply-add. Each entry of C sums over k in order, as before.
// The tiles of every matrix of the batch are numbered end to end and spread over the
// dispatch's x and y, as the elementwise kernel's threads are.
//
// Parameters `p`: [n, k, m, batch, tiles per matrix, tiles across m,
//                  a offset, a batch stride, a row stride, a col stride,
//                  b offset, b batch stride, b row stride, b col stride].

@group(0) @binding(0) var<storage, read_write> c: array<{T}>;
@group(0) @binding(1) var<storage, read> a: array<{T}>;
@group(0) @binding(2) var<storage, read> b: array<{T}>;
@group(0) @binding(3) var<storage, read> p: array<i32>;

var<workgroup> ta: array<array<{T}, 64>, 16>;  // [k][row]
var<workgroup> tb: array<array<{T}, 64>, 16>;  // [k][column]

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
  let row0 = (within / p[5]) * 64;
  let col0 = (within % p[5]) * 64;
  let ty = i32(l.y);
  let tx = i32(l.x);
  let t = ty * 16 + tx;
  let abase = p[6] + batch * p[7];
  let bbase = p[10] + batch * p[11];
  var acc: array<{T}, 16>;
  for (var k0 = 0; k0 < k; k0 += 16) {
    for (var q = 0; q < 4; q++) {
      let e = t + 256 * q;
      let ar = row0 + e / 16;
      let ak = k0 + e % 16;
      ta[e % 16][e / 16] = select({T}(0), a[abase + ar * p[8] + ak * p[9]], live && ar < n && ak < k);
      let bk = k0 + e / 64;
      let bc = col0 + e % 64;
      tb[e / 64][e % 64] = select({T}(0), b[bbase + bk * p[12] + bc * p[13]], live && bk < k && bc < m);
    }
    workgroupBarrier();
    for (var j = 0; j < 16; j++) {
      let a0 = ta[j][ty];
      let a1 = ta[j][ty + 16];
      let a2 = ta[j][ty + 32];
      let a3 = ta[j][ty + 48];
      let b0 = tb[j][tx];
      let b1 = tb[j][tx + 16];
      let b2 = tb[j][tx + 32];
      let b3 = tb[j][tx + 48];
      acc[0] += a0 * b0; acc[1] += a0 * b1; acc[2] += a0 * b2; acc[3] += a0 * b3;
      acc[4] += a1 * b0; acc[5] += a1 * b1; acc[6] += a1 * b2; acc[7] += a1 * b3;
      acc[8] += a2 * b0; acc[9] += a2 * b1; acc[10] += a2 * b2; acc[11] += a2 * b3;
      acc[12] += a3 * b0; acc[13] += a3 * b1; acc[14] += a3 * b2; acc[15] += a3 * b3;
    }
    workgroupBarrier();
  }
  for (var i = 0; i < 4; i++) {
    let row = row0 + ty + 16 * i;
    for (var j = 0; j < 4; j++) {
      let col = col0 + tx + 16 * j;
      if (live && row < n && col < m) { c[batch * n * m + row * m + col] = acc[i * 4 + j]; }
    }
  }
}
