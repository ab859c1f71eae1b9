// The layout of sort.cu's and scan.cu's rows: a row runs along one axis of x; the outputs
// are contiguous with x's shape.
// Parameters `p` (int64): [rows, n (the row's length), n others, other sizes...,
//                          x offset, x other strides..., x axis stride,
//                          out other strides..., out axis stride].
#pragma once

struct Row {
  i64 x, out, x_step, out_step;  // where row r starts in x and out, and its steps
};

__device__ __forceinline__ Row row_of(const Params& p, i64 r) {
  const int no = (int)p[2];
  const i64* sizes = p + 3;
  const i64* xs = p + 4 + no;
  const i64* os = p + 5 + 2 * no;
  Row row;
  row.x = p[3 + no];
  row.out = 0;
  for (int d = no - 1; d >= 0; d--) {
    const i64 c = r % sizes[d];
    r /= sizes[d];
    row.x += c * xs[d];
    row.out += c * os[d];
  }
  row.x_step = p[4 + 2 * no];
  row.out_step = p[5 + 3 * no];
  return row;
}
