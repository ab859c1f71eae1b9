// What every kernel file includes (kernels.py pastes it in place of the #include line, so
// NVRTC needs no include path): the grid-stride loop, strided offsets, type traits and
// the float functions whose NaN and infinity behaviour CUDA's own leave to the caller.
// No system headers: NVRTC compiles without them.
#pragma once

// 64-bit counts and offsets everywhere: a tensor may hold more than 2^31 elements
typedef long long i64;

// the first element of this thread, and the step of a grid-stride loop over n elements
__device__ __forceinline__ i64 first_index() {
  return (i64)blockIdx.x * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ i64 grid_step() { return (i64)gridDim.x * blockDim.x; }

// the offset of row-major position i in a strided view: sizes[nd], strides[nd], offset
__device__ __forceinline__ i64 offset_of(i64 i, int nd, const i64* sizes, const i64* strides,
                                         i64 offset) {
  for (int d = nd - 1; d >= 0; d--) {
    const i64 c = i % sizes[d];
    i /= sizes[d];
    offset += c * strides[d];
  }
  return offset;
}

template <typename T> struct is_float { static constexpr bool value = false; };
template <> struct is_float<float> { static constexpr bool value = true; };
template <> struct is_float<double> { static constexpr bool value = true; };
template <typename T> struct is_bool { static constexpr bool value = false; };
template <> struct is_bool<bool> { static constexpr bool value = true; };

// the extremes of each type (no <limits> under NVRTC)
template <typename T> struct limits;
template <> struct limits<float> {
  static __device__ float lowest() { return __int_as_float(0xff800000); }  // -inf
  static __device__ float highest() { return __int_as_float(0x7f800000); }
};
template <> struct limits<double> {
  static __device__ double lowest() { return __longlong_as_double(0xfff0000000000000ULL); }
  static __device__ double highest() { return __longlong_as_double(0x7ff0000000000000ULL); }
};
template <> struct limits<int> {
  static __device__ int lowest() { return -2147483647 - 1; }
  static __device__ int highest() { return 2147483647; }
};
template <> struct limits<long long> {
  static __device__ long long lowest() { return -9223372036854775807LL - 1; }
  static __device__ long long highest() { return 9223372036854775807LL; }
};
template <> struct limits<bool> {
  static __device__ bool lowest() { return false; }
  static __device__ bool highest() { return true; }
};

// a conversion as the CPU stages make it: a float to an integer truncates, then wraps
// modulo 2**64 exactly (a double that large is a multiple of 2**11) and keeps the low bits;
// the hardware's conversion saturates instead. A non-finite value keeps the hardware's answer.
template <typename O, typename T> __device__ __forceinline__ O cast_to(T v) {
  if constexpr (is_float<T>::value && !is_float<O>::value && !is_bool<O>::value) {
    double t = trunc((double)v);
    if (!isfinite(t) || (t >= -9223372036854775808.0 && t < 9223372036854775808.0)) return (O)(long long)t;
    t = fmod(t, 18446744073709551616.0);
    if (t < 0) t += 18446744073709551616.0;
    if (t >= 9223372036854775808.0) t -= 18446744073709551616.0;
    return (O)(long long)t;
  } else {
    return (O)v;
  }
}

template <typename T> __device__ __forceinline__ bool nan_of(T v) {
  if constexpr (is_float<T>::value) return v != v;
  else return false;
}

// max and min that propagate NaN, as PyTorch's maximum, minimum, max and min do
// (fmax and fmin return the other operand instead)
template <typename T> __device__ __forceinline__ T max_nan(T a, T b) {
  if (nan_of(a)) return a;
  if (nan_of(b)) return b;
  return a > b ? a : b;
}
template <typename T> __device__ __forceinline__ T min_nan(T a, T b) {
  if (nan_of(a)) return a;
  if (nan_of(b)) return b;
  return a < b ? a : b;
}
