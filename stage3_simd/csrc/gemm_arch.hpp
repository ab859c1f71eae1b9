// Per-ISA traits of the GEMM: the micro-kernel's register-block shape, the multiply-add it uses,
// and the 64-byte aligned scratch buffers it packs into.
//
// Design:
//   Everything else in the GEMM is one template over the xsimd architecture `Arch` and the
//   element type `T`; this header holds the only things that differ per ISA.
//   * kernel_shape<Arch, T>: the micro-kernel keeps an MR x NR block of C in registers, as MR
//     rows of NV SIMD vectors (NR = NV * lanes). Per step of k it loads NV vectors of B and
//     broadcasts MR scalars of A, so it needs MR*NV accumulators + NV B registers (+1 or 2
//     scratch): the shape is chosen to fill the register file without spilling.
//   * madd(a, b, c) = a * b + c: fused where the ISA has FMA. xsimd 8.1 has no AVX-512 fma
//     kernel (its generic fallback is `x * y + z`, which -ffp-contract=off keeps unfused), so
//     the AVX-512 overloads call the intrinsic. SSE2 has no FMA: mul then add.
//   * aligned_buffer: grow-only, 64-byte aligned storage. Kept thread_local by the callers so
//     a training loop that calls gemm repeatedly allocates nothing after the first call; it
//     keeps the largest workspace asked for (at most KC x NC + threads x MC x KC elements,
//     a few MiB) until the thread exits, which frees it.
//
//   ODR note: every ISA is compiled in its own translation unit from the same templates. An
//   inline function that is not a template over Arch would be emitted in each unit with that
//   unit's flags and the linker would keep just one copy (possibly the AVX-512 one, which would
//   crash on an SSE2 machine). So every function with loops over data is a template over Arch;
//   the only exceptions are a few constexpr integer helpers (ceil_div and the like).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

#include <xsimd/xsimd.hpp>

namespace sg3 {

// ---- micro-kernel shape ---------------------------------------------------------------------

// Baseline (SSE2, 16 xmm): 4 rows x 2 vectors = 8 accumulators + 2 B + broadcast + product
// temporary (no FMA, so a*b needs its own register before the add).
template <class Arch, class T>
struct kernel_shape {
    static constexpr int mr = 4;
    static constexpr int nv = 2;
};

#if XSIMD_WITH_FMA3_AVX2
// AVX2 + FMA (16 ymm): 6 x 2 vectors = 12 accumulators + 2 B + 1 broadcast = 15 registers.
template <class T>
struct kernel_shape<xsimd::fma3<xsimd::avx2>, T> {
    static constexpr int mr = 6;
    static constexpr int nv = 2;
};
#endif

#if XSIMD_WITH_AVX512BW
// AVX-512 (32 zmm): 6 x 4 vectors = 24 accumulators + 4 B + 1 broadcast = 29 registers.
// On Zen 4 every shape tried, 14 x 2 to 6 x 4, runs the bare kernel at peak; 6 x 4 measured
// 3-7% faster in the whole GEMM (256..2048), likely because its block of C has 6 rows, not 14:
// when ldc is a multiple of 4 KiB all rows of the block map to the same L1 sets, and 14 rows
// overflow the 8 ways. It also streams the least A per FMA (6 broadcasts per 24 FMAs).
template <class T>
struct kernel_shape<xsimd::avx512bw, T> {
    static constexpr int mr = 6;
    static constexpr int nv = 4;
};
#endif

// ---- multiply-add ---------------------------------------------------------------------------

// xsimd::fma is fused on FMA3 and `a * b + c` (mul, then add) on SSE2.
template <class T, class Arch>
inline xsimd::batch<T, Arch> madd(xsimd::batch<T, Arch> const& a, xsimd::batch<T, Arch> const& b,
                                  xsimd::batch<T, Arch> const& c) noexcept {
    return xsimd::fma(a, b, c);
}

#if XSIMD_WITH_AVX512BW
// Non-template overloads win over the template above; only AVX-512 units can see them.
inline xsimd::batch<float, xsimd::avx512bw> madd(xsimd::batch<float, xsimd::avx512bw> const& a,
                                                 xsimd::batch<float, xsimd::avx512bw> const& b,
                                                 xsimd::batch<float, xsimd::avx512bw> const& c) noexcept {
    return _mm512_fmadd_ps(a, b, c);
}
inline xsimd::batch<double, xsimd::avx512bw> madd(xsimd::batch<double, xsimd::avx512bw> const& a,
                                                  xsimd::batch<double, xsimd::avx512bw> const& b,
                                                  xsimd::batch<double, xsimd::avx512bw> const& c) noexcept {
    return _mm512_fmadd_pd(a, b, c);
}
#endif

// ---- aligned scratch ------------------------------------------------------------------------

constexpr std::size_t buffer_alignment = 64;  // a cache line, and a full zmm register

// Grow-only buffer. Contents are not preserved when it grows (callers repack every time).
template <class Arch, class T>
class aligned_buffer {
public:
    aligned_buffer() = default;
    aligned_buffer(const aligned_buffer&) = delete;
    aligned_buffer& operator=(const aligned_buffer&) = delete;
    ~aligned_buffer() { release(); }

    // Pointer to at least `count` elements (at least one, so never null).
    T* get(std::size_t count) {
        if (count == 0) count = 1;
        if (count > capacity_) {
            release();
            // a whole number of cache lines, as aligned_alloc requires
            const std::size_t bytes = (count * sizeof(T) + buffer_alignment - 1) / buffer_alignment * buffer_alignment;
            data_ = static_cast<T*>(std::aligned_alloc(buffer_alignment, bytes));
            if (!data_) throw std::bad_alloc();
            capacity_ = count;
        }
        return data_;
    }

private:
    void release() {
        std::free(data_);
        data_ = nullptr;
        capacity_ = 0;
    }
    T* data_ = nullptr;
    std::size_t capacity_ = 0;
};

// One buffer per (thread, ISA, element type, role). Role 0 is sg3::gemm's workspace; the
// ladder's rung 3 uses roles 1 and 2; the convolutions (conv.hpp) 3 to 6; the recurrent
// layers (recurrent.hpp) 7 to 9; attention (attention.hpp) 10; Winograd (winograd.hpp) 11 and
// 12; the direct convolution (direct.hpp) 13 and 14; the convolution by taps (taps.hpp) 15.
// The bfloat16 tile GEMM's (amx.hpp) are roles 0 and 1 of its own element type.
template <class Arch, class T, int Role>
inline aligned_buffer<Arch, T>& thread_buffer() {
    thread_local aligned_buffer<Arch, T> buffer;
    return buffer;
}

}  // namespace sg3
