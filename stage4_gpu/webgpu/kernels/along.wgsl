// The layout of sort.wgsl's and scan.wgsl's rows (as the cuda kernels' along.cuh): a row runs
// along one axis of x; the outputs are contiguous with x's shape. The kernel declares `p`:
// [elements or rows, n (the row's length), other ndim m, other shape..., x offset,
//  x other strides..., x axis stride, out other strides..., out axis stride].

struct Row {
  x: i32,  // where the row starts in x and in the outputs, and their steps along it
  out: i32,
  x_step: i32,
  out_step: i32,
}

fn row_of(r: i32) -> Row {
  let m = p[2];
  var rem = r;
  var row = Row(p[3 + m], 0, p[4 + 2 * m], p[5 + 3 * m]);
  for (var d = m - 1; d >= 0; d--) {
    let c = rem % p[3 + d];
    rem /= p[3 + d];
    row.x += c * p[4 + m + d];
    row.out += c * p[5 + 2 * m + d];
  }
  return row;
}
