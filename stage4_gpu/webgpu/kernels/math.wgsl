// Design: the float32 functions of the elementwise kernels, written here rather than
// taken from WGSL's builtins, whose accuracy the specification leaves loose (exp within
// 3 + 2|x| ulp, log within 2^-21 absolute near 1) and which drivers implement loosely
// (Mesa's lavapipe flushes subnormals in log and tanh, and sin(1e30) comes back as -1).
// Each is held by the conformance suite to the ulp bounds of the CPU stages, and gives
// their NaN, infinity and signed-zero results.
//
// The tools, all in float32:
// - double-float ("ff") values, vec2(hi, lo) with hi + lo the value to about 2^-44: the
//   error-free sum and product (the product splits each factor into 12-bit halves by
//   masking its bits, so every partial product is exact; no fused multiply-add needed).
//   `keep` hides a value from the shader compiler behind an OR with a zero it cannot see
//   (OPAQUE, set from a kernel parameter): Mesa simplifies (a + b) - a to b, which would
//   turn every rounding error computed here into 0;
// - exp: x = n ln2 + r (ln2 in three parts, so n times the first is exact), e^r by its
//   Taylor series with the first terms in ff, 2^n applied in two steps so that a result
//   near the overflow or in the subnormal range is rounded once;
// - log: x = 2^k m with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(s), s = (m - 1)/(m + 1)
//   in ff, and the series of atanh; pow, log1p, log2 and log10 build on this ff log;
// - sin and cos: the argument reduced modulo pi/2 exactly (Payne and Hanek), by an integer
//   product of its mantissa with 96 bits of 2/pi chosen by its exponent, then the Taylor
//   series around 0;
// - erf and erfc: a polynomial of erf(x)/x in x^2 near 0, and erfc(x) = exp(-x^2) g(x)
//   beyond, with g = e^(x^2) erfc(x) smooth, fitted piecewise.
// Constants are written as the float32 values they round to; inf and NaN are made from
// their bits, as WGSL rejects them as literals.

var<private> OPAQUE: u32;

fn nan_f() -> f32 { return bitcast<f32>(0x7fc00000u); }
fn inf_f() -> f32 { return bitcast<f32>(0x7f800000u); }
fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn is_inf(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u; }
fn is_finite(x: f32) -> bool { return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u; }
fn copysign_f(a: f32, b: f32) -> f32 {
  return bitcast<f32>((bitcast<u32>(a) & 0x7fffffffu) | (bitcast<u32>(b) & 0x80000000u));
}
fn sign_f(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  return select(select(0.0, 1.0, x > 0.0), -1.0, x < 0.0);
}
// 2^k for a whole k of the normal range
fn pow2i(k: f32) -> f32 { return bitcast<f32>(u32(i32(k) + 127) << 23u); }
// v * 2^n in two steps, each factor normal: one rounding even for a subnormal result
fn ldexp_f(v: f32, n: f32) -> f32 {
  let n1 = trunc(n * 0.5);
  return v * pow2i(n1) * pow2i(n - n1);
}

// ---------------------------------------------------------------- double-float

fn keep(x: f32) -> f32 { return bitcast<f32>(bitcast<u32>(x) | OPAQUE); }
fn ff(x: f32) -> vec2<f32> { return vec2<f32>(x, 0.0); }
fn ff_f(a: vec2<f32>) -> f32 { return a.x + a.y; }
fn two_sum(a: f32, b: f32) -> vec2<f32> {
  let s = keep(a + b);
  let bb = keep(s - a);
  return vec2<f32>(s, (a - (s - bb)) + (b - bb));
}
fn fast_two_sum(a: f32, b: f32) -> vec2<f32> {  // |a| >= |b|
  let s = keep(a + b);
  return vec2<f32>(s, b - (s - a));
}
fn hi12(x: f32) -> f32 { return bitcast<f32>(bitcast<u32>(x) & 0xfffff000u); }
fn two_prod(a: f32, b: f32) -> vec2<f32> {
  let p = keep(a * b);
  let ah = hi12(a);
  let al = a - ah;
  let bh = hi12(b);
  let bl = b - bh;
  return vec2<f32>(p, ((ah * bh - p) + ah * bl + al * bh) + al * bl);
}
fn ff_add(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  let s = two_sum(a.x, b.x);
  return fast_two_sum(s.x, s.y + a.y + b.y);
}
// a + b for a running sum: ff_add, with infinities and NaN passed on as they are
fn sum_ff(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  let s = two_sum(a.x, b.x);
  if (!is_finite(s.x)) { return ff(s.x); }
  return fast_two_sum(s.x, s.y + a.y + b.y);
}
fn ff_mul(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  let p = two_prod(a.x, b.x);
  return fast_two_sum(p.x, p.y + a.x * b.y + a.y * b.x);
}
fn ff_mul_f(a: vec2<f32>, b: f32) -> vec2<f32> {
  let p = two_prod(a.x, b);
  return fast_two_sum(p.x, p.y + a.y * b);
}
fn ff_div(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  let q = a.x / b.x;
  let p = two_prod(q, b.x);
  let r = (((a.x - p.x) - p.y) + a.y) - q * b.y;
  return fast_two_sum(q, r / b.x);
}

// ---------------------------------------------------------------- exp and log

const LN2_HI = 0.693115234375;  // 12 significant bits: n * LN2_HI is exact
const LN2_MID = 3.194618329871446e-05;
const LN2_LO = 1.6465949697480609e-12;
const LOG2E = 1.4426950216293335;

// e^x = m * 2^n, m in ff: the reduction and the series
struct Exp { m: vec2<f32>, n: f32 }
fn exp_ff(x: vec2<f32>) -> Exp {
  let n = round(x.x * LOG2E);
  let a = two_sum(x.x - n * LN2_HI, -n * LN2_MID);
  let r = fast_two_sum(a.x, a.y + (x.y - n * LN2_LO));
  let h = r.x;
  let tail = h * h * h * (0.16666667 + h * (0.041666668 + h * (0.008333334 + h * (0.0013888889
      + h * (0.0001984127 + h * (2.4801588e-05 + h * 2.7557319e-06))))));
  let sq = ff_mul(r, r);
  let s1 = two_sum(1.0, h);
  let s2 = two_sum(s1.x, 0.5 * sq.x);
  return Exp(fast_two_sum(s2.x, s1.y + s2.y + r.y + 0.5 * sq.y + tail), n);
}
fn exp_of(x: vec2<f32>) -> f32 {
  if (x.x > 89.0) { return inf_f(); }
  if (x.x < -104.0) { return 0.0; }
  let e = exp_ff(x);
  return ldexp_f(ff_f(e.m), e.n);
}
// m 2^n in ff, for an n of the normal range
fn ff_of(e: Exp) -> vec2<f32> { return e.m * pow2i(e.n); }
fn exp_f(x: f32) -> f32 { if (is_nan(x)) { return x; } return exp_of(ff(x)); }
fn exp2_f(x: f32) -> f32 {
  if (!is_finite(x)) { return select(x, 0.0, x < 0.0); }
  return exp_of(ff_mul(vec2<f32>(0.6931471824645996, -1.9046542121259336e-09), ff(x)));
}

// ln x in ff, for a finite x > 0 (subnormals included)
fn log_ff(x: f32) -> vec2<f32> {
  var ix = bitcast<u32>(x);
  var k = 0;
  if (ix < 0x00800000u) {  // subnormal: normalise the integer mantissa
    let s = countLeadingZeros(ix) - 8u;
    ix = ((ix << s) & 0x007fffffu) | 0x00800000u;
    k = -i32(s);
  }
  k += i32(ix >> 23u) - 127;
  var m = bitcast<f32>((ix & 0x007fffffu) | 0x3f800000u);
  if (m > 1.4142135) { m *= 0.5; k += 1; }
  let f = m - 1.0;
  let d = two_sum(m, 1.0);
  let sh = f / d.x;
  let p = two_prod(sh, d.x);
  let sl = (((f - p.x) - p.y) - sh * d.y) / d.x;
  let z = sh * sh;
  let tail = sh * z * (0.6666667 + z * (0.4 + z * (0.2857143 + z * (0.22222222 + z * 0.18181819))));
  let kf = f32(k);
  let a = two_sum(kf * LN2_HI, 2.0 * sh);
  return fast_two_sum(a.x, a.y + (2.0 * sl + tail + kf * LN2_MID + kf * LN2_LO));
}
fn log_special(x: f32) -> f32 {  // the result where x is not finite and positive
  if (x == 0.0) { return -inf_f(); }
  if (x < 0.0 || is_nan(x)) { return nan_f(); }
  return x;
}
fn log_ok(x: f32) -> bool { return x > 0.0 && is_finite(x); }
fn log_f(x: f32) -> f32 { if (!log_ok(x)) { return log_special(x); } return ff_f(log_ff(x)); }
fn log2_f(x: f32) -> f32 {
  if (!log_ok(x)) { return log_special(x); }
  return ff_f(ff_mul(log_ff(x), vec2<f32>(LOG2E, 1.925963033500011e-08)));
}
fn log10_f(x: f32) -> f32 {
  if (!log_ok(x)) { return log_special(x); }
  return ff_f(ff_mul(log_ff(x), vec2<f32>(0.4342944920063019, -1.0103049952192578e-08)));
}
// log(1 + x) = log(u) + log(1 + e / u), where u + e = 1 + x exactly
fn log1p_f(x: f32) -> f32 {
  if (x == -1.0) { return -inf_f(); }
  if (x < -1.0 || is_nan(x)) { return nan_f(); }
  if (is_inf(x) || abs(x) < 1e-30) { return x; }
  let u = two_sum(1.0, x);
  let t = u.y / u.x;
  return ff_f(ff_add(log_ff(u.x), ff(t - 0.5 * t * t)));
}
fn expm1_f(x: f32) -> f32 {
  if (is_nan(x) || x == 0.0) { return x; }
  if (x < -18.0) { return -1.0; }
  if (abs(x) < 0.34) {  // the series: exp(x) - 1 would cancel here
    return x + x * x * (0.5 + x * (0.16666667 + x * (0.041666668 + x * (0.008333334
        + x * (0.0013888889 + x * (0.0001984127 + x * (2.4801588e-05 + x * 2.7557319e-06)))))));
  }
  if (x > 89.0) { return inf_f(); }
  let e = exp_ff(ff(x));
  if (e.n > 30.0) { return ldexp_f(ff_f(e.m), e.n); }  // the 1 is below half an ulp
  return ff_f(ff_add(ff_of(e), ff(-1.0)));
}
fn tanh_f(x: f32) -> f32 {
  if (is_nan(x) || abs(x) < 0.000244140625) { return x; }
  if (abs(x) > 9.1) { return copysign_f(1.0, x); }
  let a = abs(x);
  if (a < 0.0625) {
    let z = x * x;
    return x - x * z * (0.33333334 - z * (0.13333334 - z * (0.053968254 - z * 0.021869488)));
  }
  let e = exp_ff(ff(2.0 * a));
  let v = ff_of(e);
  return copysign_f(ff_f(ff_div(ff_add(v, ff(-1.0)), ff_add(v, ff(1.0)))), x);
}
// sigmoid(x) as m 2^n
fn sigmoid_ff(x: f32) -> Exp {
  if (x < -80.0) { return exp_ff(ff(x)); }  // e^x / (1 + e^x) with e^x below 2^-115
  let e = exp_ff(ff(-abs(x)));
  let v = ff_of(e);
  return Exp(ff_div(select(v, ff(1.0), x >= 0.0), ff_add(ff(1.0), v)), 0.0);
}
fn sigmoid_f(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  if (x > 18.0) { return 1.0; }
  if (x < -104.0) { return 0.0; }
  let s = sigmoid_ff(x);
  return ldexp_f(ff_f(s.m), s.n);
}
fn silu_f(x: f32) -> f32 {
  if (is_nan(x) || x > 18.0 || x == 0.0) { return x; }
  if (x < -104.0) { return select(-0.0, nan_f(), is_inf(x)); }  // -inf * 0, as the CPU's
  let s = sigmoid_ff(x);
  return ldexp_f(ff_f(ff_mul_f(s.m, x)), s.n);
}
fn sinh_f(x: f32) -> f32 {
  if (!is_finite(x) || abs(x) < 0.000244140625) { return x; }
  let a = abs(x);
  if (a < 0.34) {
    let z = x * x;
    return x + x * z * (0.16666667 + z * (0.008333334 + z * (0.0001984127 + z * 2.7557319e-06)));
  }
  if (a > 17.0) {  // e^-a is below half an ulp: e^a / 2, reduced without overflow
    return copysign_f(exp_of(ff_add(ff(a), vec2<f32>(-0.6931471824645996, 1.9046542121259336e-09))), x);
  }
  let e = exp_ff(ff(a));
  let v = ff_of(e);
  return copysign_f(0.5 * ff_f(ff_add(v, ff_div(ff(-1.0), v))), x);
}
fn cosh_f(x: f32) -> f32 {
  if (!is_finite(x)) { return abs(x); }
  let a = abs(x);
  if (a > 17.0) { return exp_of(ff_add(ff(a), vec2<f32>(-0.6931471824645996, 1.9046542121259336e-09))); }
  let e = exp_ff(ff(a));
  let v = ff_of(e);
  return 0.5 * ff_f(ff_add(v, ff_div(ff(1.0), v)));
}
fn asinh_f(x: f32) -> f32 {
  let a = abs(x);
  if (!is_finite(x) || a < 0.000244140625) { return x; }
  if (a > 4096.0) { return copysign_f(ff_f(ff_add(log_ff(a), vec2<f32>(0.6931471824645996, -1.9046542121259336e-09))), x); }
  return copysign_f(log1p_f(a + a * a / (1.0 + sqrt(1.0 + a * a))), x);
}
fn acosh_f(x: f32) -> f32 {
  if (x < 1.0 || is_nan(x)) { return nan_f(); }
  if (is_inf(x)) { return x; }
  if (x > 4096.0) { return ff_f(ff_add(log_ff(x), vec2<f32>(0.6931471824645996, -1.9046542121259336e-09))); }
  let t = x - 1.0;
  return log1p_f(t + sqrt(2.0 * t + t * t));
}
fn atanh_f(x: f32) -> f32 {
  let a = abs(x);
  if (a > 1.0 || is_nan(x)) { return nan_f(); }
  if (a == 1.0) { return copysign_f(inf_f(), x); }
  if (a < 0.000244140625) { return x; }
  return copysign_f(0.5 * log1p_f(2.0 * a / (1.0 - a)), x);
}

// ---------------------------------------------------------------- sin, cos, tan

// bits of 2/pi after the binary point, most significant first
var<private> TWO_OVER_PI: array<u32, 7> = array<u32, 7>(0xa2f9836eu, 0x4e441529u, 0xfc2757d1u,
    0xf534ddc0u, 0xdb629599u, 0x3c439041u, 0xfe5163abu);

fn mul_wide(a: u32, b: u32) -> vec2<u32> {  // a * b as (low word, high word)
  let a0 = a & 0xffffu;
  let a1 = a >> 16u;
  let b0 = b & 0xffffu;
  let b1 = b >> 16u;
  let p00 = a0 * b0;
  let p01 = a0 * b1;
  let p10 = a1 * b0;
  let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  return vec2<u32>((p00 & 0xffffu) | (mid << 16u), a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}
fn word_of_2_over_pi(i: u32, sh: u32) -> u32 {  // 32 bits from bit 32 i + sh
  if (sh == 0u) { return TWO_OVER_PI[i]; }
  return (TWO_OVER_PI[i] << sh) | (TWO_OVER_PI[i + 1u] >> (32u - sh));
}
// |x| (finite, > pi/4) as q pi/2 + r, |r| <= pi/4, r in ff
struct Reduced { r: vec2<f32>, q: u32 }
fn reduce_pio2(a: f32) -> Reduced {
  let ia = bitcast<u32>(a);
  let e = i32(ia >> 23u) - 150;  // a = m 2^e, m an integer of 24 bits
  let m = (ia & 0x007fffffu) | 0x00800000u;
  // the bits of 2/pi that matter start at bit e - 1: bit i adds m 2^(e - i), a multiple
  // of 4 (a whole turn) for i < e - 1
  let s = max(1, e - 1);
  let i = u32(s - 1) / 32u;
  let sh = u32(s - 1) % 32u;
  let lo = mul_wide(m, word_of_2_over_pi(i + 2u, sh));
  let mid = mul_wide(m, word_of_2_over_pi(i + 1u, sh));
  let top = mul_wide(m, word_of_2_over_pi(i, sh));
  var p1 = mid.x + lo.y;
  let t2 = top.x + mid.y;
  var p2 = t2 + select(0u, 1u, p1 < mid.x);
  var p3 = top.y + select(0u, 1u, t2 < top.x) + select(0u, 1u, p2 < t2);
  // the binary point is at bit s + 95 - e of p3:p2:p1:lo.x; move it to between p3 and p2
  let l = 1 + e - s;
  if (l > 0) {
    let k = u32(l);
    p3 = (p3 << k) | (p2 >> (32u - k));
    p2 = (p2 << k) | (p1 >> (32u - k));
    p1 = (p1 << k) | (lo.x >> (32u - k));
  } else if (l < 0) {
    let k = u32(-l);
    p1 = (p1 >> k) | (p2 << (32u - k));
    p2 = (p2 >> k) | (p3 << (32u - k));
    p3 = p3 >> k;
  }
  var q = p3 & 3u;
  var neg = false;
  if ((p2 & 0x80000000u) != 0u) {  // a fraction of 1/2 or more: round the quotient up
    q = (q + 1u) & 3u;
    neg = true;
    p2 = ~p2;
    p1 = ~p1 + 1u;
    if (p1 == 0u) { p2 += 1u; }
  }
  var z = 0u;
  if (p2 == 0u) { z = 32u; p2 = p1; p1 = 0u; }
  let c = countLeadingZeros(p2);
  if (c > 0u) { p2 = (p2 << c) | (p1 >> (32u - c)); p1 = p1 << c; }
  let scale = pow2i(-24.0 - f32(z + c));
  let fh = f32(p2 >> 8u) * scale;
  let fl = f32(((p2 & 0xffu) << 16u) | (p1 >> 16u)) * scale * 5.9604645e-08;
  let r = ff_add(two_prod(fh, 1.5707963705062866), ff(fh * -4.371138828673793e-08 + fl * 1.5707963705062866));
  return Reduced(select(r, -r, neg), q);
}
fn reduce_trig(x: f32) -> Reduced {
  if (abs(x) <= 0.7853982) { return Reduced(ff(abs(x)), 0u); }
  return reduce_pio2(abs(x));
}
fn sin_ff(r: vec2<f32>) -> f32 {
  let h = r.x;
  let z = h * h;
  return h + (r.y + h * z * (-0.16666667 + z * (0.008333334 + z * (-0.0001984127 + z * (2.7557319e-06
      + z * -2.5052108e-08)))));
}
fn cos_ff(r: vec2<f32>) -> f32 {
  let h = r.x;
  let z = h * h;
  let hz = 0.5 * z;
  let w = 1.0 - hz;
  return w + (((1.0 - w) - hz) + (z * z * (0.041666668 + z * (-0.0013888889 + z * (2.4801588e-05
      + z * (-2.7557319e-07 + z * 2.0876756e-09)))) - h * r.y));
}
fn sin_f(x: f32) -> f32 {
  if (!is_finite(x)) { return nan_f(); }
  if (abs(x) < 0.000244140625) { return x; }
  let t = reduce_trig(x);
  var v = select(sin_ff(t.r), cos_ff(t.r), (t.q & 1u) == 1u);
  if (t.q >= 2u) { v = -v; }
  return copysign_f(1.0, x) * v;
}
fn cos_f(x: f32) -> f32 {
  if (!is_finite(x)) { return nan_f(); }
  let t = reduce_trig(x);
  var v = select(cos_ff(t.r), sin_ff(t.r), (t.q & 1u) == 1u);
  if (t.q == 1u || t.q == 2u) { v = -v; }
  return v;
}
fn tan_f(x: f32) -> f32 {
  if (!is_finite(x)) { return nan_f(); }
  if (abs(x) < 0.000244140625) { return x; }
  let t = reduce_trig(x);
  let s = sin_ff(t.r);
  let c = cos_ff(t.r);
  return copysign_f(1.0, x) * select(s / c, -c / s, (t.q & 1u) == 1u);
}

// ---------------------------------------------------------------- the others

fn sqrt_f(x: f32) -> f32 { if (x < 0.0) { return nan_f(); } return sqrt(x); }
fn rsqrt_f(x: f32) -> f32 {
  if (x == 0.0) { return copysign_f(inf_f(), x); }
  return 1.0 / sqrt_f(x);
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

fn recip_f(x: f32) -> f32 { if (x == 0.0) { return copysign_f(inf_f(), x); } return 1.0 / x; }
fn div_f(a: f32, b: f32) -> f32 {
  if (b == 0.0) {
    if (a == 0.0 || is_nan(a)) { return nan_f(); }
    return copysign_f(inf_f(), a) * copysign_f(1.0, b);
  }
  return a / b;
}

// ---------------------------------------------------------------- erf, erfc, gelu

// g(z) = e^(z^2) erfc(z) for 0 <= z < 10, in ff: a polynomial in z - c on each of four
// pieces, fitted to within 2e-9; its last step and the rounding of z - c are kept in ff
fn erfcx_ff(z: vec2<f32>) -> vec2<f32> {
  var c = 7.5;
  if (z.x < 1.0) { c = 0.5; } else if (z.x < 2.5) { c = 1.75; } else if (z.x < 5.0) { c = 3.75; }
  let w = two_sum(z.x, -c);
  let u = w.x;
  var c0: vec2<f32>;  // the first two coefficients in ff: rounded, they alone cost an ulp
  var c1: vec2<f32>;
  var q: f32;
  if (z.x < 1.0) {
    c0 = vec2<f32>(0.6156903505325317, -6.351384307379249e-09);
    c1 = vec2<f32>(-0.5126888155937195, -1.0298024655241989e-08);
    q = 0.359345942735672 + u * (-0.2220103144645691 + u * (0.12417013943195343
        + u * (-0.06397631764411926 + u * (0.030731702223420143 + u * (-0.013828197494149208
        + u * (0.005919662304222584 + u * (-0.0026708811055868864 + u * 0.0010438684839755297)))))));
  } else if (z.x < 2.5) {
    c0 = vec2<f32>(0.284972220659256, 1.4067932596617538e-08);
    c1 = vec2<f32>(-0.1309763491153717, 2.1277428707833224e-09);
    q = 0.05576363205909729 + u * (-0.022259939461946487 + u * (0.00840428750962019
        + u * (-0.003021571785211563 + u * (0.0010394544806331396 + u * (-0.00034098883043043315
        + u * (0.00010861270857276395 + u * (-3.841084617306478e-05 + u * 1.1529944458743557e-05)))))));
  } else if (z.x < 5.0) {
    c0 = vec2<f32>(0.14558972418308258, -2.9198923279238898e-09);
    c1 = vec2<f32>(-0.03645625710487366, -4.1204081813184246e-10);
    q = 0.008878756314516068 + u * (-0.0021072831004858017
        + u * (0.00048821771633811295 + u * (-0.00011057794472435489 + u * (2.4529714210075326e-05
        + u * (-5.3303997447073925e-06 + u * (1.1182029311385122e-06 + u * (-2.3350577293967945e-07
        + u * (5.8726193685743056e-08 + u * -1.1993584791980538e-08))))))));  } else {
    c0 = vec2<f32>(0.07457369565963745, -2.5960298355443e-09);
    c1 = vec2<f32>(-0.009773771278560162, 1.520953224476429e-10);
    q = 0.0012704094406217337 + u * (-0.00016380046145059168
        + u * (2.0953490093233995e-05 + u * (-2.6595967028697487e-06 + u * (3.3504744578749523e-07
        + u * (-4.1996976563041244e-08 + u * (5.217748899610797e-09 + u * (-6.15696604810978e-10
        + u * (7.482241909384513e-11 + u * (-1.2778293180526479e-11 + u * 1.5730754372722533e-12)))))))));  }
  let t = ff_add(c1, two_prod(u, q));
  return ff_add(c0, ff_add(ff_mul_f(t, u), ff((w.y + z.y) * c1.x)));
}
// erfc(z) for 0 <= z < 10 (z in ff) as m 2^n
fn erfc_exp(z: vec2<f32>) -> Exp {
  let sq = ff_mul(z, z);
  let e = exp_ff(-sq);
  return Exp(ff_mul(e.m, erfcx_ff(z)), e.n);
}
fn erf_f(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  let a = abs(x);
  if (a < 0.84) {  // erf(x)/x, a polynomial in x^2 (1 - erfc would cancel here)
    let u = x * x;
    return x * (1.128379225730896 + u * (-0.37612637877464294 + u * (0.11283761262893677
        + u * (-0.02686339057981968 + u * (0.005211967509239912 + u * (-0.000828017306048423
        + u * 9.016189142130315e-05))))));
  }
  if (a >= 4.0) { return copysign_f(1.0, x); }  // erfc(4) is below half an ulp of 1
  let e = erfc_exp(ff(a));
  return copysign_f(ff_f(ff_add(ff(1.0), -ff_of(e))), x);
}
fn erfc_f(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  if (x < -4.0) { return 2.0; }
  if (x >= 10.1) { return 0.0; }
  let e = erfc_exp(ff(abs(x)));
  if (x >= 0.0) { return ldexp_f(ff_f(e.m), e.n); }
  return ff_f(ff_add(ff(2.0), -ff_of(e)));
}
// x Phi(x) = x erfc(-x / sqrt 2) / 2, with x / sqrt 2 kept in ff: the rounding of the
// quotient alone would move e^(-x^2/2) by x^2 ulps
fn gelu_f(x: f32) -> f32 {
  if (is_nan(x) || x > 5.7 || x == 0.0) { return x; }  // erfc(-4) is 2 to float32 precision
  if (x < -14.2) { return select(copysign_f(0.0, x), nan_f(), is_inf(x)); }
  let z = ff_mul_f(vec2<f32>(0.7071067690849304, 1.2101617485882343e-08), abs(x));
  let e = erfc_exp(z);
  if (x < 0.0) { return ldexp_f(0.5 * ff_f(ff_mul_f(e.m, x)), e.n); }
  return 0.5 * ff_f(ff_mul_f(ff_add(ff(2.0), -ff_of(e)), x));
}

fn max_f(a: f32, b: f32) -> f32 { if (is_nan(a) || a > b) { return a; } if (is_nan(b)) { return b; } return b; }
fn min_f(a: f32, b: f32) -> f32 { if (is_nan(a) || a < b) { return a; } if (is_nan(b)) { return b; } return b; }

// exact, as C's fmod: the remainder of the integer mantissas by shift and subtract,
// one bit of the exponent difference at a time
fn fmod_f(a: f32, b: f32) -> f32 {
  if (b == 0.0 || !is_finite(a) || is_nan(b)) { return nan_f(); }
  let ia = bitcast<u32>(a) & 0x7fffffffu;
  let ib = bitcast<u32>(b) & 0x7fffffffu;
  if (ia < ib) { return a; }
  let ea = max(i32(ia >> 23u), 1);
  let eb = max(i32(ib >> 23u), 1);
  var ra = (ia & 0x007fffffu) | select(0u, 0x00800000u, ia >= 0x00800000u);
  let mb = (ib & 0x007fffffu) | select(0u, 0x00800000u, ib >= 0x00800000u);
  for (var k = ea - eb; k > 0; k--) {
    if (ra >= mb) { ra -= mb; }
    ra <<= 1u;
  }
  if (ra >= mb) { ra -= mb; }
  // ra 2^(eb - 150): as a float, ra is exact; the scaling is exact unless subnormal
  return copysign_f(ldexp_f(f32(ra), f32(eb - 150)), a);
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
// a^b = e^(b ln a), the product in ff so that a result near 1e38 keeps its last bits
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
  if (a < 0.0 && !is_int_f(b)) { return nan_f(); }
  let r = exp_of(ff_mul_f(log_ff(abs(a)), b));
  return select(r, -r, a < 0.0 && is_odd_f(b));
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
// trunc(x) modulo 2^64 as (low word, high word), two's complement, for a cast to an
// integer: the CPU stages wrap an out-of-range value, where WGSL's conversions saturate.
// |x| = m 2^e with the 24-bit integer m, so the words are m shifted (x finite; a cast
// refuses NaN and infinity first)
fn trunc_words_f(x: f32) -> vec2<u32> {
  let bits = bitcast<u32>(x);
  let e = i32((bits >> 23u) & 0xffu) - 150;
  let m = (bits & 0x7fffffu) | 0x800000u;
  var w = vec2<u32>(0u, 0u);  // |x| < 1, or a multiple of 2^64
  if (e >= -23 && e <= 0) { w = vec2<u32>(m >> u32(-e), 0u); }
  if (e >= 1 && e <= 31) { w = vec2<u32>(m << u32(e), m >> u32(32 - e)); }
  if (e >= 32 && e <= 63) { w = vec2<u32>(0u, m << u32(e - 32)); }
  if (x < 0.0) { w = vec2<u32>(0u - w.x, ~w.y + select(0u, 1u, w.x == 0u)); }
  return w;
}
fn wrap_i32_f(x: f32) -> i32 { return bitcast<i32>(trunc_words_f(x).x); }
