// What every kernel file includes (kernels.py pastes it in place of the #include line, so
// NVRTC needs no include path): the grid-stride loop, strided offsets, type traits and
// the float functions whose NaN and infinity behaviour CUDA's own leave to the caller.
// No system headers: NVRTC compiles without them.
#pragma once

// 64-bit counts and offsets everywhere: a tensor may hold more than 2^31 elements
typedef long long i64;

// ---------------------------------------------------------------- launch arguments
// Every argument travels in the launch itself, by value: the driver copies the argument
// bytes into the launch it queues, so a launch needs no array on the device and no copy
// before it. A kernel's sizes, strides and offsets arrive as `Params p`, whose words each
// kernel file lays out (its "Parameters `p`" comment) and reads as p[i] or p + i, as from
// an array. The struct has one fixed size whatever the kernel, so the launcher
// (stage4_gpu/_launch.pyx, PARAMS_MAX there) packs every kernel's the same way: 64 words
// (512 bytes, far under CUDA's 4 KiB of parameters) hold an elementwise `where` over 11
// dimensions that do not merge (6 + 5 dims words), and a launch that needs more is refused
// on the host. `Hyper`: an optimizer step's float32 constants (optim.cu), also by value.
#define PARAMS_MAX 64
struct Params {
  i64 v[PARAMS_MAX];
  __device__ __forceinline__ i64 operator[](int i) const { return v[i]; }
  __device__ __forceinline__ const i64* operator+(int i) const { return v + i; }
};
#define HYPER_MAX 12
struct Hyper {
  float v[HYPER_MAX];
  __device__ __forceinline__ float operator[](int i) const { return v[i]; }
};

// ---------------------------------------------------------------- device-side checks
// A kernel that meets a value it must refuse (an index out of range, a class target outside
// the classes) does not read past a tensor and cannot raise: it records the failure in the
// runtime's four error words `err` (cuda/runtime.py reads them at its next synchronization
// and raises there, as PyTorch's device-side asserts surface). err[0]: the check's code
// (CHECK_* below, runtime.py's CHECKS; 0 while none failed), err[1]: the bad value,
// err[2]: the bound it broke, err[3]: the axis (-1 for none). The first failure wins: a
// compare-and-swap on the code, and only its winner writes the rest.
#define CHECK_GATHER 1
#define CHECK_TAKE 2
#define CHECK_SCATTER_ADD 3
#define CHECK_PUT 4
#define CHECK_CROSS_ENTROPY 5
__device__ __forceinline__ void report_error(i64* err, int code, i64 value, i64 bound, i64 axis) {
  if (atomicCAS((unsigned long long*)err, 0ULL, (unsigned long long)code) == 0ULL) {
    err[1] = value;
    err[2] = bound;
    err[3] = axis;
  }
}
// `TensorList`: the float32 tensors one launch of a multi-tensor kernel walks (optim.cu:
// every parameter of an optimizer's group in one launch), by value like the rest, so no
// array of pointers lives on the device. Each tensor's entry holds its buffers' addresses
// (the parameter, its gradient, its states; null where a rule has none), its element
// count, `end` (the blocks of tensors 0..t: a prefix sum, so a block finds its tensor,
// see optim.cu's for_each_listed) and its own float32 constants (Adam's bias corrections
// from its own step count). 64 bytes an entry: 48 entries, Params and Hyper take 3,640 of the 4 KiB a
// launch carries. A group of more tensors is launched once per 48 (cuda/fused.py).
#define LIST_MAX 48
#define LIST_BUFFERS 5
#define LIST_CONSTANTS 2
struct ListEntry {
  float* buf[LIST_BUFFERS];
  i64 n;
  i64 end;
  float c[LIST_CONSTANTS];
};
struct TensorList {
  ListEntry t[LIST_MAX];
  i64 count;
};
static_assert(sizeof(Params) + sizeof(Hyper) + sizeof(TensorList) <= 4096,
              "a multi-tensor launch's arguments must fit CUDA's 4 KiB of kernel parameters");

// the first element of this thread, and the step of a grid-stride loop over n elements
__device__ __forceinline__ i64 first_index() {
  return (i64)blockIdx.x * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ i64 grid_step() { return (i64)gridDim.x * blockDim.x; }

// ---------------------------------------------------------------- 16-byte vectors
// V elements of T moved as one load or store (ld.global.v4 and the like): a bandwidth-bound
// kernel needs the fewest, widest memory instructions to reach the memory's speed. A pack
// is at most 16 bytes (the widest access), so V is 16 over the larger of the two types a
// kernel reads and writes; its address must be a multiple of its size (is_aligned).
template <typename T, int V> struct alignas(sizeof(T) * V) Pack { T v[V]; };
template <typename O, typename T> __device__ constexpr int pack_width() {
  return 16 / (sizeof(O) > sizeof(T) ? sizeof(O) : sizeof(T));
}
template <typename T, int V> __device__ __forceinline__ bool is_aligned(const T* p) {
  return ((unsigned long long)p) % (sizeof(T) * V) == 0;
}
template <typename T, int V> __device__ __forceinline__ Pack<T, V> load_pack(const T* p, i64 i) {
  return reinterpret_cast<const Pack<T, V>*>(p)[i];
}
template <typename T, int V> __device__ __forceinline__ void store_pack(T* p, i64 i, const Pack<T, V>& v) {
  reinterpret_cast<Pack<T, V>*>(p)[i] = v;
}
template <typename T, int V> __device__ __forceinline__ Pack<T, V> splat(T x) {
  Pack<T, V> r;
  for (int j = 0; j < V; j++) r.v[j] = x;
  return r;
}

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

// ---------------------------------------------------------------- 2-byte floats
// float16 and bfloat16 are stored as their bits and computed in float32, as PyTorch does:
// each converts to float implicitly and from any number (rounding to nearest even), so
// the kernels' templates take them as they take float. On the GPU the conversions are
// PTX's cvt (subnormals kept: no -ftz); the host emulation uses the compiler's _Float16.
#ifdef __CUDA_ARCH__
__device__ __forceinline__ float half_bits_to_float(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ unsigned short float_to_half_bits(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
#else
__device__ __forceinline__ float half_bits_to_float(unsigned short h) {
  _Float16 v;
  __builtin_memcpy(&v, &h, 2);
  return (float)v;
}
__device__ __forceinline__ unsigned short float_to_half_bits(float f) {
  _Float16 v = (_Float16)f;
  unsigned short h;
  __builtin_memcpy(&h, &v, 2);
  return h;
}
#endif
// bfloat16 is float32's top half: widening is a shift; narrowing rounds to nearest even
// and keeps a NaN quiet (0x7fc0 and its sign, as PyTorch)
__device__ __forceinline__ float bf16_bits_to_float(unsigned short b) {
  return __uint_as_float((unsigned)b << 16);
}
__device__ __forceinline__ unsigned short float_to_bf16_bits(float f) {
  const unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

#define TWO_BYTE_FLOAT(NAME, TO_FLOAT, FROM_FLOAT)                                              \
  struct NAME {                                                                                 \
    unsigned short bits;                                                                        \
    NAME() = default; /* trivial: __shared__ arrays of it need no constructor */                \
    template <typename S> __device__ NAME(S v) : bits(FROM_FLOAT((float)v)) {}                  \
    static __device__ NAME of_bits(unsigned short b) { NAME r; r.bits = b; return r; }          \
    __device__ operator float() const { return TO_FLOAT(bits); }                                \
    __device__ NAME& operator+=(float v) { return *this = NAME((float)*this + v); }             \
    __device__ NAME& operator-=(float v) { return *this = NAME((float)*this - v); }             \
    __device__ NAME& operator*=(float v) { return *this = NAME((float)*this * v); }             \
    __device__ NAME& operator/=(float v) { return *this = NAME((float)*this / v); }             \
  };
TWO_BYTE_FLOAT(half_t, half_bits_to_float, float_to_half_bits)
TWO_BYTE_FLOAT(bf16_t, bf16_bits_to_float, float_to_bf16_bits)

// what a product or a sum of T accumulates in: float for the 2-byte floats, T otherwise
template <typename T> struct acc_of { typedef T type; };
template <> struct acc_of<half_t> { typedef float type; };
template <> struct acc_of<bf16_t> { typedef float type; };

template <typename T> struct is_float { static constexpr bool value = false; };
template <> struct is_float<float> { static constexpr bool value = true; };
template <> struct is_float<double> { static constexpr bool value = true; };
template <> struct is_float<half_t> { static constexpr bool value = true; };
template <> struct is_float<bf16_t> { static constexpr bool value = true; };
template <typename T> struct is_half { static constexpr bool value = false; };
template <> struct is_half<half_t> { static constexpr bool value = true; };
template <typename T> struct is_bool { static constexpr bool value = false; };
template <> struct is_bool<bool> { static constexpr bool value = true; };
// uint8, the one unsigned dtype: no value is negative (a divisor of 255 is not -1)
template <typename T> struct is_unsigned { static constexpr bool value = false; };
template <> struct is_unsigned<unsigned char> { static constexpr bool value = true; };

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
template <> struct limits<half_t> {
  static __device__ half_t lowest() { return half_t::of_bits(0xfc00); }  // -inf
  static __device__ half_t highest() { return half_t::of_bits(0x7c00); }
};
template <> struct limits<bf16_t> {
  static __device__ bf16_t lowest() { return bf16_t::of_bits(0xff80); }
  static __device__ bf16_t highest() { return bf16_t::of_bits(0x7f80); }
};
// the 1- and 2-byte integers (uint8, int8, int16) are C's char and short: a byte-sized
// element needs no packing in CUDA's memory, and their arithmetic, promoted to int, is
// narrowed back on every store, which wraps as the CPU stages do
template <> struct limits<unsigned char> {
  static __device__ unsigned char lowest() { return 0; }
  static __device__ unsigned char highest() { return 255; }
};
template <> struct limits<signed char> {
  static __device__ signed char lowest() { return -128; }
  static __device__ signed char highest() { return 127; }
};
template <> struct limits<short> {
  static __device__ short lowest() { return -32768; }
  static __device__ short highest() { return 32767; }
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

// v < 0, never a comparison of an unsigned value with zero (which NVRTC warns of, and the
// suite compiles with warnings as errors)
template <typename T> __device__ __forceinline__ bool negative(T v) {
  if constexpr (is_unsigned<T>::value) return false; else return v < T(0);
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
