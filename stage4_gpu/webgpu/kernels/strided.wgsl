// The offset of row-major position i in a strided view, read from the launch's parameters:
// the view's nd sizes start at p[sizes], its nd strides at p[strides], and `offset` is where
// it starts. Every kernel that reaches an operand through its shape calls it (as the cuda
// kernels call common.cuh's offset_of); the kernel declares `p`.

fn view_offset(i: i32, nd: i32, sizes: i32, strides: i32, offset: i32) -> i32 {
  var rem = i;
  var off = offset;
  for (var d = nd - 1; d >= 0; d--) {
    let s = p[sizes + d];
    off += (rem % s) * p[strides + d];
    rem /= s;
  }
  return off;
}
