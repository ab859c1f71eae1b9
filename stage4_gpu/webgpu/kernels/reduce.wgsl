// Design: one workgroup per output element, a tree inside it. Each of the 64 threads
// walks the reduced elements with a stride of 64 (through the input's strides, so a
// transposed or broadcast input is read in place), keeping a running value; the 64
// partial values then meet in workgroup memory in six halving steps. Arg-reductions
// carry the position beside the value and keep the first on ties, as the CPU does.
//
// Filled in by reduce.py (the names in braces below): T the input type, A the
// accumulator type, O the output type, INIT the identity, LOAD the read of element j as
// an accumulator value, STEP how a thread folds it in, MERGE how two partials meet, and
// RESULT the output; SETUP, where math.wgsl is in HELPERS, its OPAQUE zero. A float32
// sum is kept in double-float (math.wgsl): each thread adds 1/64 of the elements in turn,
// and in float32 alone a million-element sum would lose four digits.
// Parameters `p`: [outputs, inner, kept ndim, reduced ndim, offset, kept shape...,
// kept strides..., reduced shape..., reduced strides...].

{HELPERS}
@group(0) @binding(0) var<storage, read_write> out: array<{O}>;
@group(0) @binding(1) var<storage, read> x: array<{T}>;
@group(0) @binding(2) var<storage, read> p: array<i32>;
#include "strided.wgsl"

var<workgroup> vals: array<{A}, 64>;
var<workgroup> idx: array<i32, 64>;

// the offset from `base` of kept (or reduced) position i: its shape at p[shape_at], its
// strides right after
fn offset_of(i: i32, ndim: i32, shape_at: i32) -> i32 {
  return view_offset(i, ndim, shape_at, shape_at + ndim, 0);
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) w: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
  let o = i32(w.x + w.y * nw.x);
  let live = o < p[0];  // every thread reaches the barriers, live or not
  {SETUP}
  let nk = p[2];
  let nr = p[3];
  var base = p[4];
  if (live) { base += offset_of(o, nk, 5); }
  var acc: {A} = {INIT};
  var best = -1;
  for (var j = i32(t); live && j < p[1]; j += 64) {
    let v = {LOAD};
    {STEP}
  }
  vals[t] = acc;
  idx[t] = best;
  for (var half = 32u; half > 0u; half >>= 1u) {
    workgroupBarrier();
    if (t < half) {
      let a = vals[t];
      let b = vals[t + half];
      {MERGE}
    }
  }
  if (t == 0u && live) { out[o] = {RESULT}; }
}
