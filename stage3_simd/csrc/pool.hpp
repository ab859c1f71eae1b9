// 2-d pooling straight from the image: max (with the argmax it saves for the backward) and
// average, forward and backward.
//
// Design: a plane (one channel of one image) is pooled on its own, so planes are split among
// threads and nothing is shared. Each output row walks the window's taps; for a tap, the
// output pixels whose input falls on the image form one contiguous range (computed once per
// tap, no test per pixel), and with stride 1 that range reads the input row contiguously, which
// the compiler vectorises. Padding never wins a max (the frontend keeps at least one real
// pixel in every window) and counts toward an average as PyTorch's rule says (`avg_count`).
// Backward passes scatter into the input plane: max through the saved flat index (h * W + w),
// average spreading each gradient over its window. (Every function is a template over the
// ISA, A, though only the compiler's vectorisation uses it: see gemm_arch.hpp's ODR note.)
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <xsimd/xsimd.hpp>

#include "kernels.h"
#include "loops.hpp"

namespace sg3 {

// fn(plane) for every plane, split among threads when the whole is worth it
template <class Fn>
void over_planes(int64_t planes, int64_t per_plane, int nthreads, Fn fn) {
    const int nt = static_cast<int>(std::min<int64_t>({nthreads, planes, planes * per_plane / kParallelWork}));
    if (nt <= 1) {
        for (int64_t i = 0; i < planes; ++i) fn(i);
        return;
    }
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t i = 0; i < planes; ++i) fn(i);
}

// The output pixels [o0, o1) of a row whose input o*s - p + tap falls in [0, n).
inline void tap_range(int64_t n, int64_t out, int64_t s, int64_t p, int64_t tap, int64_t& o0, int64_t& o1) {
    const int64_t off = tap - p;  // input = o * s + off
    o0 = off >= 0 ? 0 : (-off + s - 1) / s;
    o1 = off < n ? std::min(out, (n - 1 - off) / s + 1) : 0;
    if (o1 < o0) o1 = o0;
}

// How many values an average window along one axis divides by (PyTorch's rule: padding
// counts when include_pad, the ceil-mode overhang past the padding never does).
inline int64_t avg_count(int64_t o, int64_t n, int64_t k, int64_t s, int64_t p, bool include_pad) {
    const int64_t start = o * s - p, end = std::min(start + k, n + p);
    if (include_pad) return end - start;
    return std::max<int64_t>(std::min(end, n) - std::max<int64_t>(start, 0), 1);
}

// Whether every window lies inside the image (no padding, no ceil-mode overhang): then each
// output pixel can run through its taps in registers, with no bounds to check.
inline bool windows_inside(const sg3_pool& q) {
    return q.ph == 0 && q.pw == 0 && (q.oh - 1) * q.sh + (q.kh - 1) * q.dh < q.h &&
           (q.ow - 1) * q.sw + (q.kw - 1) * q.dw < q.w;
}

// The first maximum wins, and every NaN takes over (the last NaN of the window wins), as in
// PyTorch's kernels. Bitwise, not short-circuit, so that it compiles to selects, not branches
// that random data mispredicts.
template <class T>
inline bool takes_over(T v, T best) {
    return (v > best) | (v != v);
}

// 2x2 windows, stride 2, inside the image: a plane's L outputs a vector at a time (the scalar
// loop, whose NaN tests keep the compiler from vectorising it, ran at a fifteenth of an
// elementwise pass's speed; rows are too short to vectorise one at a time: 14 outputs at 28 x 28).
// `corner[l]` is output l's window's first input; the four taps are gathered from it. Each row's
// pair is decided first, then the rows: the scan order, so the first maximum still wins. The
// winner's offset in the window (0, 1, w, w + 1) is computed in T (exact: image widths are far
// below 2^24) and added to the corner as the int64 index.
template <class A, class T>
void max_pool_2x2_plane(const T* __restrict x, const xsimd::as_integer_t<T>* corner, int64_t L, int64_t w,
                        T* __restrict y, int64_t* __restrict index) {
    using B = xsimd::batch<T, A>;
    using I = xsimd::batch<xsimd::as_integer_t<T>, A>;
    constexpr int64_t N = B::size;
    alignas(64) T off[N];
    // as takes_over; xsimd's != is an ordered compare (false for NaN): isnan says it
    auto takes = [](B v, B best) { return (v > best) | xsimd::isnan(v); };
    const B wide(static_cast<T>(w)), one(T(1)), zero(T(0));
    int64_t l = 0;
    for (; l + N <= L; l += N) {
        const I at = I::load_unaligned(corner + l);
        const B a = B::gather(x, at), b = B::gather(x + 1, at), c = B::gather(x + w, at), d = B::gather(x + w + 1, at);
        const auto tb = takes(b, a), td = takes(d, c);
        const B top = xsimd::select(tb, b, a), bottom = xsimd::select(td, d, c);
        const auto tv = takes(bottom, top);
        xsimd::select(tv, bottom, top).store_unaligned(y + l);
        xsimd::select(tv, xsimd::select(td, wide + one, wide), xsimd::select(tb, one, zero)).store_aligned(off);
        for (int64_t k = 0; k < N; ++k) index[l + k] = int64_t(corner[l + k]) + static_cast<int64_t>(off[k]);
    }
    for (; l < L; ++l) {
        const int64_t at = corner[l];
        const T a = x[at], b = x[at + 1], c = x[at + w], d = x[at + w + 1];
        const bool tb = takes_over(b, a), td = takes_over(d, c);
        const T top = tb ? b : a, bottom = td ? d : c;
        const bool tv = takes_over(bottom, top);
        y[l] = tv ? bottom : top;
        index[l] = at + (tv ? w + td : int64_t(tb));
    }
}

template <class A, class T>
void max_pool2d(const sg3_pool& q, T* y, int64_t* index, const T* x, int nthreads) {
    const int64_t L = q.oh * q.ow, HW = q.h * q.w;
    const bool pairs = q.kh == 2 && q.kw == 2 && q.sh == 2 && q.sw == 2 && q.dh == 1 && q.dw == 1;
    if (pairs && windows_inside(q) && HW < (int64_t(1) << 24)) {
        std::vector<xsimd::as_integer_t<T>> corner(static_cast<std::size_t>(L));
        for (int64_t l = 0; l < L; ++l)
            corner[l] = static_cast<xsimd::as_integer_t<T>>(2 * (l / q.ow) * q.w + 2 * (l % q.ow));
        over_planes(q.planes, L * 4, nthreads, [&](int64_t i) {
            max_pool_2x2_plane<A>(x + i * HW, corner.data(), L, q.w, y + i * L, index + i * L);
        });
        return;
    }
    if (windows_inside(q)) {  // the common case (2x2 stride 2, ...): each pixel's taps in registers
        over_planes(q.planes, L * q.kh * q.kw, nthreads, [&](int64_t i) {
            const T* xp = x + i * HW;
            for (int64_t oy = 0; oy < q.oh; ++oy)
                for (int64_t ox = 0; ox < q.ow; ++ox) {
                    const int64_t first = oy * q.sh * q.w + ox * q.sw;
                    T best = xp[first];
                    int64_t at = first;
                    for (int64_t ki = 0; ki < q.kh; ++ki)
                        for (int64_t kj = 0; kj < q.kw; ++kj) {
                            const int64_t t = first + ki * q.dh * q.w + kj * q.dw;
                            const bool take = takes_over(xp[t], best);
                            best = take ? xp[t] : best;
                            at = take ? t : at;
                        }
                    y[i * L + oy * q.ow + ox] = best;
                    index[i * L + oy * q.ow + ox] = at;
                }
        });
        return;
    }
    over_planes(q.planes, L * q.kh * q.kw, nthreads, [&](int64_t i) {
        const T* xp = x + i * HW;
        T* yp = y + i * L;
        int64_t* ip = index + i * L;
        std::fill(ip, ip + L, int64_t(-1));
        for (int64_t oy = 0; oy < q.oh; ++oy) {
            T* yr = yp + oy * q.ow;
            int64_t* ir = ip + oy * q.ow;
            for (int64_t ki = 0; ki < q.kh; ++ki) {
                const int64_t iy = oy * q.sh - q.ph + ki * q.dh;
                if (iy < 0 || iy >= q.h) continue;
                for (int64_t kj = 0; kj < q.kw; ++kj) {
                    int64_t o0, o1;
                    tap_range(q.w, q.ow, q.sw, q.pw, kj * q.dw, o0, o1);
                    const int64_t base = iy * q.w + kj * q.dw - q.pw;
                    for (int64_t ox = o0; ox < o1; ++ox) {
                        const int64_t at = base + ox * q.sw;
                        const T v = xp[at], best = yr[ox];
                        const bool take = (ir[ox] < 0) | takes_over(v, best);
                        yr[ox] = take ? v : best;
                        ir[ox] = take ? at : ir[ox];
                    }
                }
            }
        }
    });
}

template <class A, class T>
void max_pool2d_backward(const sg3_pool& q, T* gx, const T* g, const int64_t* index, int nthreads) {
    const int64_t L = q.oh * q.ow, HW = q.h * q.w;
    over_planes(q.planes, L + HW, nthreads, [&](int64_t i) {
        T* gp = gx + i * HW;
        std::fill(gp, gp + HW, T(0));
        for (int64_t l = 0; l < L; ++l) gp[index[i * L + l]] += g[i * L + l];
    });
}

// Average pooling (dilation 1); divisor != 0 overrides the window counts.
template <class A, class T>
void avg_pool2d(const sg3_pool& q, T* y, const T* x, bool include_pad, double divisor, int nthreads) {
    const int64_t L = q.oh * q.ow, HW = q.h * q.w;
    over_planes(q.planes, L * q.kh * q.kw, nthreads, [&](int64_t i) {
        const T* xp = x + i * HW;
        T* yp = y + i * L;
        std::fill(yp, yp + L, T(0));
        for (int64_t oy = 0; oy < q.oh; ++oy) {
            T* yr = yp + oy * q.ow;
            for (int64_t ki = 0; ki < q.kh; ++ki) {
                const int64_t iy = oy * q.sh - q.ph + ki;
                if (iy < 0 || iy >= q.h) continue;
                for (int64_t kj = 0; kj < q.kw; ++kj) {
                    int64_t o0, o1;
                    tap_range(q.w, q.ow, q.sw, q.pw, kj, o0, o1);
                    const T* xr = xp + iy * q.w + kj - q.pw;
                    for (int64_t ox = o0; ox < o1; ++ox) yr[ox] += xr[ox * q.sw];
                }
            }
            const int64_t cy = avg_count(oy, q.h, q.kh, q.sh, q.ph, include_pad);
            for (int64_t ox = 0; ox < q.ow; ++ox)
                yr[ox] /= divisor != 0 ? T(divisor) : T(cy * avg_count(ox, q.w, q.kw, q.sw, q.pw, include_pad));
        }
    });
}

template <class A, class T>
void avg_pool2d_backward(const sg3_pool& q, T* gx, const T* g, bool include_pad, double divisor, int nthreads) {
    const int64_t L = q.oh * q.ow, HW = q.h * q.w;
    over_planes(q.planes, L * q.kh * q.kw + HW, nthreads, [&](int64_t i) {
        T* gp = gx + i * HW;
        std::fill(gp, gp + HW, T(0));
        for (int64_t oy = 0; oy < q.oh; ++oy) {
            const T* gr = g + i * L + oy * q.ow;
            const int64_t cy = avg_count(oy, q.h, q.kh, q.sh, q.ph, include_pad);
            for (int64_t ki = 0; ki < q.kh; ++ki) {
                const int64_t iy = oy * q.sh - q.ph + ki;
                if (iy < 0 || iy >= q.h) continue;
                for (int64_t kj = 0; kj < q.kw; ++kj) {
                    int64_t o0, o1;
                    tap_range(q.w, q.ow, q.sw, q.pw, kj, o0, o1);
                    T* xr = gp + iy * q.w + kj - q.pw;
                    for (int64_t ox = o0; ox < o1; ++ox)
                        xr[ox * q.sw] += gr[ox] / (divisor != 0 ? T(divisor)
                                                               : T(cy * avg_count(ox, q.w, q.kw, q.sw, q.pw, include_pad)));
                }
            }
        }
    });
}

}  // namespace sg3
