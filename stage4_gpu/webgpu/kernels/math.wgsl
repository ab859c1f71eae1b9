// Design: the float32 functions WGSL lacks, or defines loosely, written to the IEEE
// results the CPU stages give: NaN and infinities in and out where WGSL leaves them
// undefined (log of a negative, pow of a negative base, max with a NaN), and erf/erfc,
// which WGSL does not have. Constants are built from their bits: WGSL may fold a
// literal inf or NaN at compile time and rejects both.

fn nan_f() -> f32 { return bitcast<f32>(0x7fc00000u); }
fn inf_f() -> f32 { return bitcast<f32>(0x7f800000u); }
fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn is_inf(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u; }
fn is_finite(x: f32) -> bool { return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u; }
fn copysign_f(a: f32, b: f32) -> f32 {
  return bitcast<f32>((bitcast<u32>(a) & 0x7fffffffu) | (bitcast<u32>(b) & 0x80000000u));
}

fn log_f(x: f32) -> f32 {
  if (is_nan(x) || x < 0.0) { return nan_f(); }
  if (x == 0.0) { return -inf_f(); }
  return log(x);
}
fn log2_f(x: f32) -> f32 { if (x > 0.0 && is_finite(x)) { return log2(x); } return log_f(x); }
fn log10_f(x: f32) -> f32 { return log2_f(x) * 0.30102999566398120; }
fn sqrt_f(x: f32) -> f32 { if (x < 0.0) { return nan_f(); } return sqrt(x); }
fn rsqrt_f(x: f32) -> f32 {
  if (x == 0.0) { return copysign_f(inf_f(), x); }
  return 1.0 / sqrt_f(x);
}
fn exp_f(x: f32) -> f32 {
  if (x > 88.8) { return inf_f(); }
  if (x < -104.0) { return 0.0; }
  return exp(x);
}
fn exp2_f(x: f32) -> f32 { if (x >= 128.0) { return inf_f(); } if (x < -150.0) { return 0.0; } return exp2(x); }
fn trig_ok(x: f32) -> bool { return is_finite(x); }
fn sin_f(x: f32) -> f32 { if (!trig_ok(x)) { return nan_f(); } return sin(x); }
fn cos_f(x: f32) -> f32 { if (!trig_ok(x)) { return nan_f(); } return cos(x); }
fn tan_f(x: f32) -> f32 { if (!trig_ok(x)) { return nan_f(); } return tan(x); }
fn tanh_f(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  if (abs(x) > 10.0) { return copysign_f(1.0, x); }
  return tanh(x);
}
fn sigmoid_f(x: f32) -> f32 {
  if (x >= 0.0) { return 1.0 / (1.0 + exp_f(-x)); }
  let z = exp_f(x);
  return z / (1.0 + z);
}
fn sign_f(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  return select(select(0.0, 1.0, x > 0.0), -1.0, x < 0.0);
}
// atan for x >= 0: reduced to |z| <= tan(pi/8) around 0, pi/4 or pi/2, then an odd
// polynomial (a few ulps; the drivers' own asin/acos/atan may be off by 1e-4)
fn atan_pos(x: f32) -> f32 {
  var y = 0.0;
  var z = x;
  if (x > 2.414213562373095) {
    y = 1.5707963267948966;
    z = -1.0 / x;
  } else if (x > 0.4142135623730950) {
    y = 0.7853981633974483;
    z = (x - 1.0) / (x + 1.0);
  }
  let w = z * z;
  return y + ((((0.0805374449538 * w - 0.138776856032) * w + 0.199777106478) * w - 0.333329491539) * w * z + z);
}
fn atan_f(x: f32) -> f32 { if (is_nan(x)) { return x; } return copysign_f(atan_pos(abs(x)), x); }
fn asin_f(x: f32) -> f32 {
  if (abs(x) > 1.0 || is_nan(x)) { return nan_f(); }
  return atan_f(x / sqrt((1.0 - x) * (1.0 + x)));
}
fn acos_f(x: f32) -> f32 {
  if (abs(x) > 1.0 || is_nan(x)) { return nan_f(); }
  return 2.0 * atan_pos(sqrt((1.0 - x) / (1.0 + x)));
}
fn acosh_f(x: f32) -> f32 {
  if (x < 1.0 || is_nan(x)) { return nan_f(); }
  if (is_inf(x)) { return x; }
  return acosh(x);
}
fn asinh_f(x: f32) -> f32 { if (!is_finite(x)) { return x; } return asinh(x); }
fn atanh_f(x: f32) -> f32 {
  if (abs(x) > 1.0 || is_nan(x)) { return nan_f(); }
  if (abs(x) == 1.0) { return copysign_f(inf_f(), x); }
  return atanh(x);
}
fn sinh_f(x: f32) -> f32 {
  if (abs(x) > 89.0) { return copysign_f(inf_f(), x); }
  if (abs(x) < 0.5) { return x + x * x * x / 6.0 + x * x * x * x * x / 120.0; }
  return sinh(x);
}
fn cosh_f(x: f32) -> f32 { if (abs(x) > 89.0) { return inf_f(); } return cosh(x); }
fn log1p_f(x: f32) -> f32 {
  if (x == -1.0) { return -inf_f(); }
  if (x < -1.0 || is_nan(x)) { return nan_f(); }
  if (is_inf(x)) { return x; }
  let u = 1.0 + x;
  if (u == 1.0) { return x; }
  return log(u) * x / (u - 1.0);  // corrects the rounding of 1 + x
}
fn expm1_f(x: f32) -> f32 {
  if (x > 88.8) { return inf_f(); }
  if (x < -20.0) { return -1.0; }
  if (abs(x) < 1e-5) { return x + 0.5 * x * x; }
  let u = exp(x);
  if (u == 1.0) { return x; }
  return (u - 1.0) * x / log(u);
}
fn recip_f(x: f32) -> f32 { if (x == 0.0) { return copysign_f(inf_f(), x); } return 1.0 / x; }
fn div_f(a: f32, b: f32) -> f32 {
  if (b == 0.0) {
    if (a == 0.0 || is_nan(a)) { return nan_f(); }
    return copysign_f(inf_f(), a) * copysign_f(1.0, b);
  }
  return a / b;
}

// erfc(x) for x >= 0 from a rational approximation (relative error below 1.2e-7)
fn erfc_pos(x: f32) -> f32 {
  let t = 1.0 / (1.0 + 0.5 * x);
  let poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806
      + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  return t * exp(-x * x + poly);
}
fn erf_f(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  let a = abs(x);
  if (a < 0.5) {  // the series: 1 - erfc would cancel here
    let x2 = x * x;
    return 1.1283791670955126 * x * (1.0 - x2 * (0.33333333333 - x2 * (0.1 - x2 * (0.0238095238 - x2 * 0.0046296296))));
  }
  if (a > 4.0) { return copysign_f(1.0, x); }
  return copysign_f(1.0 - erfc_pos(a), x);
}
fn erfc_f(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  if (x < 0.5) { return 1.0 - erf_f(x); }
  if (x > 10.0) { return 0.0; }
  return erfc_pos(x);
}
fn gelu_f(x: f32) -> f32 { if (is_nan(x)) { return x; } return 0.5 * x * erfc_f(-x * 0.7071067811865476); }

fn max_f(a: f32, b: f32) -> f32 { if (is_nan(a) || a > b) { return a; } if (is_nan(b)) { return b; } return b; }
fn min_f(a: f32, b: f32) -> f32 { if (is_nan(a) || a < b) { return a; } if (is_nan(b)) { return b; } return b; }

fn fmod_f(a: f32, b: f32) -> f32 {
  if (b == 0.0 || !is_finite(a) || is_nan(b)) { return nan_f(); }
  if (is_inf(b)) { return a; }
  let r = a - b * trunc(a / b);
  if (r == 0.0) { return copysign_f(0.0, a); }
  return r;
}
fn remainder_f(a: f32, b: f32) -> f32 {
  if (b == 0.0) { return nan_f(); }
  var r = fmod_f(a, b);
  if (r != 0.0 && ((r < 0.0) != (b < 0.0))) { r += b; }
  return r;
}
// Python's floor division: the quotient whose remainder is remainder_f's
fn floordiv_f(a: f32, b: f32) -> f32 {
  if (b == 0.0) { return div_f(a, b); }
  let m = fmod_f(a, b);
  var d = (a - m) / b;
  if (m != 0.0 && ((b < 0.0) != (m < 0.0))) { d -= 1.0; }
  if (d == 0.0) { return copysign_f(0.0, a / b); }
  var f = floor(d);
  if (d - f > 0.5) { f += 1.0; }
  return f;
}
fn is_int_f(x: f32) -> bool { return is_finite(x) && trunc(x) == x; }
fn is_odd_f(x: f32) -> bool { return is_int_f(x) && abs(x) < 16777216.0 && (i32(abs(x)) & 1) == 1; }
fn pow_f(a: f32, b: f32) -> f32 {
  if (b == 0.0 || a == 1.0) { return 1.0; }
  if (is_nan(a) || is_nan(b)) { return nan_f(); }
  if (a == 0.0) {
    if (b > 0.0) { return select(0.0, a, is_odd_f(b)); }
    return select(inf_f(), copysign_f(inf_f(), a), is_odd_f(b));
  }
  if (is_inf(b)) {
    if (abs(a) == 1.0) { return 1.0; }
    return select(0.0, inf_f(), (abs(a) > 1.0) == (b > 0.0));
  }
  if (is_inf(a)) {
    let mag = select(0.0, inf_f(), b > 0.0);
    return select(mag, -mag, a < 0.0 && is_odd_f(b));
  }
  if (a < 0.0) {
    if (!is_int_f(b)) { return nan_f(); }
    let r = exp2_f(b * log2(-a));
    return select(r, -r, is_odd_f(b));
  }
  return exp2_f(b * log2(a));
}
fn hypot_f(a: f32, b: f32) -> f32 {
  if (is_inf(a) || is_inf(b)) { return inf_f(); }
  if (is_nan(a) || is_nan(b)) { return nan_f(); }
  let m = max(abs(a), abs(b));
  if (m == 0.0) { return 0.0; }
  let x = a / m;
  let y = b / m;
  return m * sqrt(x * x + y * y);
}
// atan2 with C's results on zeros and infinities (WGSL leaves atan2(0, 0) undefined)
fn atan2_f(y: f32, x: f32) -> f32 {
  let pi = 3.141592653589793;
  if (is_nan(y) || is_nan(x)) { return nan_f(); }
  let x_negative = (bitcast<u32>(x) & 0x80000000u) != 0u;
  if (y == 0.0) { return copysign_f(select(0.0, pi, x_negative), y); }
  if (is_inf(x)) {
    if (is_inf(y)) { return copysign_f(select(0.25 * pi, 0.75 * pi, x < 0.0), y); }
    return copysign_f(select(0.0, pi, x < 0.0), y);
  }
  if (x == 0.0 || is_inf(y)) { return copysign_f(0.5 * pi, y); }
  let r = atan_pos(abs(y / x));
  return copysign_f(select(r, pi - r, x < 0.0), y);
}
fn logaddexp_f(a: f32, b: f32) -> f32 {
  if (is_nan(a) || is_nan(b)) { return nan_f(); }
  let m = max(a, b);
  if (is_inf(m)) { return m; }  // exp(-inf - -inf) would be NaN; both -inf stays -inf
  return m + log1p_f(exp_f(-abs(a - b)));
}
