// 2-d convolution (groups 1) as an implicit GEMM: forward, input gradient, weight gradient.
//
// Design:
//   Activations stay NCHW; weights stay (O, C, KH, KW), which read as an (O x C*KH*KW) matrix
//   are already the GEMM's A. Per image, with L = OH*OW output pixels and K = C*KH*KW:
//     forward       y_i (O x L)   = W (O x K) @ P(x_i) (K x L)
//     weight grad   gW^T (K x O) += P(x_i) (K x L) @ g_i^T (L x O)
//     input grad    gx_i (C x HW) = W~ (C x O*KH*KW) @ P~(g_i) (O*KH*KW x HW)
//   where P(x) is the patch matrix (im2col): column (oy, ox) holds the K inputs filter tap
//   (c, ki, kj) sees at that output pixel. It is never stored: the GEMM packs its operands one
//   micro-panel at a time from *sources* (gemm.hpp), and the sources below gather those panels
//   straight from the image, so the patches exist only in the packed blocks in L2. The input gradient is itself a convolution (the adjoint): of g with the filters
//   flipped in space and with C and O swapped (W~), padding d*(k-1) - p (negative pads
//   crop), and, for a stride s > 1, with s - 1 zeros between g's pixels (`uy`, `ux`: the
//   zeros are never stored, the gather skips them). For a stride s > 1 three in four of
//   those products would be with zeros, so there each image's patch gradient W^T @ g_i is
//   formed in a per-thread buffer and added back onto the image (`add_patches`). A 1x1
//   stride-1 unpadded convolution is a plain GEMM on the image itself (`pointwise`).
//
//   Threads: images are independent, so a batch is split among threads, each running whole
//   single-threaded GEMMs on its images (no fork/join per product, and the GEMM's small,
//   skinny products stay on one core's caches); the weight gradient sums one accumulator per
//   thread at the end. A batch smaller than the team runs one image at a time on the
//   threaded GEMM instead.
#pragma once

#include <algorithm>
#include <cstdint>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "gemm.hpp"
#include "kernels.h"
#include "pool.hpp"

namespace sg3 {

// Where a source's patches come from: an image of `h` x `w` pixels per channel, looked at
// through a convolution's geometry, producing rows of `ow` output pixels.
struct patch_geometry {
    int64_t h, w;    // the stored image
    int64_t kh, kw;  // filter taps
    int64_t ow;      // output pixels per row
    int64_t sy, sx;  // stride
    int64_t py, px;  // padding (negative crops)
    int64_t dy, dx;  // dilation
};

// Fill `len` slots of a packed row, slot t at dst[t * step], with the image row `line` seen
// from virtual column x0 + t*sx (zeros off the image).
template <class T>
inline void gather_run(T* dst, int64_t step, int64_t len, const T* line, int64_t x0, const patch_geometry& g) {
    if (g.sx == 1) {  // contiguous: zeros, a copy, zeros
        const int64_t t0 = std::clamp<int64_t>(-x0, 0, len), t1 = std::clamp<int64_t>(g.w - x0, t0, len);
        if (step == 1) {  // a packed row of B: plain copies, which vectorise
            std::fill(dst, dst + t0, T(0));
            std::copy(line + x0 + t0, line + x0 + t1, dst + t0);
            std::fill(dst + t1, dst + len, T(0));
            return;
        }
        for (int64_t t = 0; t < t0; ++t) dst[t * step] = T(0);
        for (int64_t t = t0; t < t1; ++t) dst[t * step] = line[x0 + t];
        for (int64_t t = t1; t < len; ++t) dst[t * step] = T(0);
        return;
    }
    // strided: the slots whose pixel is on the image are [t0, t1)
    const int64_t t0 = std::clamp<int64_t>(x0 >= 0 ? 0 : (-x0 + g.sx - 1) / g.sx, 0, len);
    const int64_t t1 = std::clamp<int64_t>(x0 < g.w ? (g.w - x0 + g.sx - 1) / g.sx : 0, t0, len);
    for (int64_t t = 0; t < t0; ++t) dst[t * step] = T(0);
    for (int64_t t = t0; t < t1; ++t) dst[t * step] = line[x0 + t * g.sx];
    for (int64_t t = t1; t < len; ++t) dst[t * step] = T(0);
}

// B = P(x): element (p, j) is tap p = (c, ki, kj) at output pixel j = (oy, ox).
template <class Arch, class T>
struct patches_b {
    static constexpr int NR = kernel_shape<Arch, T>::nv * static_cast<int>(xsimd::batch<T, Arch>::size);
    const T* x;
    patch_geometry g;

    void pack(int64_t kc, int64_t nc, int64_t p0, int64_t j0, T* dst) const {
        for (int64_t jr = 0; jr < nc; jr += NR) panel(kc, std::min<int64_t>(NR, nc - jr), p0, j0 + jr, dst + jr * kc);
    }

    // One micro-panel: `lanes` output pixels from j, taps p0 .. p0 + kc, at dst[p * NR + lane].
    void panel(int64_t kc, int64_t lanes, int64_t p0, int64_t j, T* dst) const {
        struct run { int64_t r0, len, oy, ox; };  // lanes that share an output row
        run runs[NR];
        int nruns = 0;
        for (int64_t r = 0, oy = j / g.ow, ox = j % g.ow; r < lanes; r += runs[nruns++].len, ++oy, ox = 0)
            runs[nruns] = {r, std::min(lanes - r, g.ow - ox), oy, ox};
        const int64_t taps = g.kh * g.kw;
        int64_t c = p0 / taps, ki = p0 % taps / g.kw, kj = p0 % g.kw;
        for (int64_t p = 0; p < kc; ++p) {
            T* row = dst + p * NR;
            const T* plane = x + c * g.h * g.w;
            for (int q = 0; q < nruns; ++q) {
                const run& u = runs[q];
                const int64_t iy = u.oy * g.sy - g.py + ki * g.dy;
                if (iy >= 0 && iy < g.h)
                    gather_run(row + u.r0, 1, u.len, plane + iy * g.w, u.ox * g.sx - g.px + kj * g.dx, g);
                else
                    std::fill(row + u.r0, row + u.r0 + u.len, T(0));
            }
            std::fill(row + lanes, row + NR, T(0));
            if (++kj == g.kw) {  // the next tap
                kj = 0;
                if (++ki == g.kh) ki = 0, ++c;
            }
        }
    }
};

// A = P(x): element (i, p) is tap i = (c, ki, kj) at output pixel p = (oy, ox). Each tap's
// pixels are read along the image's rows and written MR apart, within one small micro-panel.
template <class Arch, class T>
struct patches_a {
    static constexpr int MR = kernel_shape<Arch, T>::mr;
    const T* x;
    patch_geometry g;

    const T* panels(int64_t mc, int64_t kc, int64_t i0, int64_t p0, T* dst) const {
        for (int64_t ir = 0; ir < mc; ir += MR) panel(std::min<int64_t>(MR, mc - ir), kc, i0 + ir, p0, dst + ir * kc);
        return dst;
    }

    void panel(int64_t rows, int64_t kc, int64_t tap0, int64_t p0, T* dst) const {
        const int64_t taps = g.kh * g.kw;
        for (int64_t r = 0; r < rows; ++r) {
            const int64_t tap = tap0 + r, c = tap / taps, ki = tap % taps / g.kw, kj = tap % g.kw;
            const T* plane = x + c * g.h * g.w;
            // output pixels p0 .. p0 + kc, a row of the output at a time
            for (int64_t p = 0, oy = p0 / g.ow, ox = p0 % g.ow; p < kc; ++oy, ox = 0) {
                const int64_t len = std::min(kc - p, g.ow - ox);
                const int64_t iy = oy * g.sy - g.py + ki * g.dy;
                T* out = dst + p * MR + r;
                if (iy >= 0 && iy < g.h)
                    gather_run(out, MR, len, plane + iy * g.w, ox * g.sx - g.px + kj * g.dx, g);
                else
                    for (int64_t t = 0; t < len; ++t) out[t * MR] = T(0);
                p += len;
            }
        }
        for (int64_t p = 0; p < kc; ++p) std::fill(dst + p * MR + rows, dst + p * MR + MR, T(0));
    }
};

// Add the columns of a patch matrix (K x L, as P(x) lays them out) back onto the image they
// came from (zeroed first): the adjoint of P, for the input gradient of a strided convolution.
template <class T>
void add_patches(const patch_geometry& g, int64_t channels, int64_t oh, const T* cols, T* image) {
    const int64_t L = oh * g.ow;
    std::fill(image, image + channels * g.h * g.w, T(0));
    for (int64_t c = 0; c < channels; ++c)
        for (int64_t ki = 0; ki < g.kh; ++ki)
            for (int64_t kj = 0; kj < g.kw; ++kj) {
                const T* row = cols + ((c * g.kh + ki) * g.kw + kj) * L;
                int64_t o0, o1;
                tap_range(g.w, g.ow, g.sx, g.px, kj * g.dx, o0, o1);
                for (int64_t oy = 0; oy < oh; ++oy) {
                    const int64_t iy = oy * g.sy - g.py + ki * g.dy;
                    if (iy < 0 || iy >= g.h) continue;
                    T* line = image + (c * g.h + iy) * g.w + kj * g.dx - g.px;
                    for (int64_t ox = o0; ox < o1; ++ox) line[ox * g.sx] += row[oy * g.ow + ox];
                }
            }
}

// The filters as the GEMM's A (m x k through strides), packed once for every image, in the
// calling thread's buffer (before any team starts, so a failed allocation reaches the caller).
template <class Arch, class T>
prepacked_a<Arch, T> filters(const gemm_blocking_info& bl, int64_t m, int64_t k, const T* w, int64_t rs, int64_t cs) {
    const int64_t mr = kernel_shape<Arch, T>::mr, m_padded = (m + mr - 1) / mr * mr;
    T* dst = thread_buffer<Arch, T, 5>().get(static_cast<std::size_t>(m_padded * k));
    return prepack_a<Arch, T>(bl, m, k, w, rs, cs, dst);
}

inline bool conv_pointwise(const sg3_conv& q) {
    return q.kh == 1 && q.kw == 1 && q.sh == 1 && q.sw == 1 && q.ph == 0 && q.pw == 0;
}

// Threads for a batch of n images of `work` multiply-adds each: the whole team when every
// thread gets an image and the batch is worth waking it, else 1 (the GEMM threads instead).
template <class Arch, class T>
int image_threads(int64_t n, double work, int nthreads) {
#ifdef _OPENMP
    if (omp_in_parallel()) return 1;
    nthreads = std::min(nthreads, omp_get_num_procs());
#endif
    if (n < 2 || n * work < double(gemm_blocking<Arch, T>().min_parallel_work)) return 1;
    return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(nthreads, n)));
}

// fn(i0, i1, tid, gemm_threads) over the images [0, n), split among nt threads (see above).
// Returns the number of threads that ran.
template <class Fn>
int over_images(int64_t n, int nt, int nthreads, Fn fn) {
    if (nt <= 1) {
        fn(int64_t(0), n, 0, nthreads);
        return 1;
    }
    int ran = 1;
#ifdef _OPENMP
#pragma omp parallel num_threads(nt)
    {
        const int tid = omp_get_thread_num(), team = omp_get_num_threads();
        if (tid == 0) ran = team;
        fn(n * tid / team, n * (tid + 1) / team, tid, 1);
    }
#endif
    return ran;
}

template <class Arch, class T>
void conv2d_forward(const sg3_conv& q, T* y, const T* x, const T* w, const T* bias, int nthreads) {
    const int64_t K = q.c * q.kh * q.kw, L = q.oh * q.ow, image = q.c * q.h * q.w;
    const gemm_blocking_info& bl = gemm_blocking<Arch, T>();
    const patch_geometry pg{q.h, q.w, q.kh, q.kw, q.ow, q.sh, q.sw, q.ph, q.pw, q.dh, q.dw};
    const int nt = image_threads<Arch, T>(q.n, double(q.o) * K * L, nthreads);
    const prepacked_a<Arch, T> a = filters<Arch, T>(bl, q.o, K, w, K, 1);
    over_images(q.n, nt, nthreads, [&](int64_t i0, int64_t i1, int, int gemm_threads) {
        for (int64_t i = i0; i < i1; ++i) {
            T* yi = y + i * q.o * L;
            if (conv_pointwise(q))
                gemm_from<Arch, T>(bl, q.o, L, K, a, strided_b<Arch, T>{x + i * image, L, 1}, yi, L, false,
                                   gemm_threads);
            else
                gemm_from<Arch, T>(bl, q.o, L, K, a, patches_b<Arch, T>{x + i * image, pg}, yi, L, false, gemm_threads);
            if (bias)
                for (int64_t o = 0; o < q.o; ++o)
                    for (int64_t l = 0; l < L; ++l) yi[o * L + l] += bias[o];
        }
    });
}

template <class Arch, class T>
void conv2d_backward_input(const sg3_conv& q, T* gx, const T* g, const T* w, int nthreads) {
    const int64_t L = q.h * q.w, image = q.o * q.oh * q.ow, taps = q.kh * q.kw, K = q.o * taps;
    const gemm_blocking_info& bl = gemm_blocking<Arch, T>();
    const int nt = image_threads<Arch, T>(q.n, double(q.c) * K * L, nthreads);
    if (conv_pointwise(q)) {  // gx_i = W^T @ g_i
        const prepacked_a<Arch, T> a = filters<Arch, T>(bl, q.c, q.o, w, 1, q.c);
        over_images(q.n, nt, nthreads, [&](int64_t i0, int64_t i1, int, int gemm_threads) {
            for (int64_t i = i0; i < i1; ++i)
                gemm_from<Arch, T>(bl, q.c, L, q.o, a, strided_b<Arch, T>{g + i * image, L, 1}, gx + i * q.c * L, L,
                                   false, gemm_threads);
        });
        return;
    }
    if (q.sh > 1 || q.sw > 1) {
        // Strided: the adjoint convolution would multiply mostly the zeros between g's pixels,
        // so form each image's patch gradient W^T @ g_i (in a per-thread buffer) and add it back.
        const int64_t KC = q.c * taps, LO = q.oh * q.ow;
        const patch_geometry pg{q.h, q.w, q.kh, q.kw, q.ow, q.sh, q.sw, q.ph, q.pw, q.dh, q.dw};
        T* cols = thread_buffer<Arch, T, 3>().get(static_cast<std::size_t>(std::max(nt, 1) * KC * LO));
        const prepacked_a<Arch, T> a = filters<Arch, T>(bl, KC, q.o, w, 1, KC);
        over_images(q.n, nt, nthreads, [&](int64_t i0, int64_t i1, int tid, int gemm_threads) {
            T* mine = cols + tid * KC * LO;
            for (int64_t i = i0; i < i1; ++i) {
                gemm_from<Arch, T>(bl, KC, LO, q.o, a, strided_b<Arch, T>{g + i * image, LO, 1}, mine, LO, false,
                                   gemm_threads);
                add_patches(pg, q.c, q.oh, mine, gx + i * q.c * L);
            }
        });
        return;
    }
    // W~[c][o][ki][kj] = W[o][c][kh-1-ki][kw-1-kj], on the calling thread before the team starts
    T* wf = thread_buffer<Arch, T, 3>().get(static_cast<std::size_t>(q.c * K));
    for (int64_t o = 0; o < q.o; ++o)
        for (int64_t c = 0; c < q.c; ++c)
            for (int64_t t = 0; t < taps; ++t) wf[(c * q.o + o) * taps + (taps - 1 - t)] = w[(o * q.c + c) * taps + t];
    const patch_geometry pg{q.oh, q.ow, q.kh, q.kw, q.w, 1, 1, q.dh * (q.kh - 1) - q.ph, q.dw * (q.kw - 1) - q.pw,
                            q.dh, q.dw};
    const prepacked_a<Arch, T> a = filters<Arch, T>(bl, q.c, K, wf, K, 1);
    over_images(q.n, nt, nthreads, [&](int64_t i0, int64_t i1, int, int gemm_threads) {
        for (int64_t i = i0; i < i1; ++i)
            gemm_from<Arch, T>(bl, q.c, L, K, a, patches_b<Arch, T>{g + i * image, pg}, gx + i * q.c * L, L, false,
                               gemm_threads);
    });
}

// gW^T (K x O) = sum_i P(x_i) (K x L) @ g_i^T (L x O): the patches are A, whose micro-panels
// are small, so gathering them costs little; each thread sums its images into its own gW^T,
// and the threads' sums are added and transposed into gw at the end.
template <class Arch, class T>
void conv2d_backward_weight(const sg3_conv& q, T* gw, const T* g, const T* x, int nthreads) {
    const int64_t K = q.c * q.kh * q.kw, L = q.oh * q.ow, image = q.c * q.h * q.w, size = q.o * K;
    const gemm_blocking_info& bl = gemm_blocking<Arch, T>();
    const patch_geometry pg{q.h, q.w, q.kh, q.kw, q.ow, q.sh, q.sw, q.ph, q.pw, q.dh, q.dw};
    const int nt = image_threads<Arch, T>(q.n, double(q.o) * K * L, nthreads);
    T* partial = thread_buffer<Arch, T, 4>().get(static_cast<std::size_t>(nt * size));
    const int ran = over_images(q.n, nt, nthreads, [&](int64_t i0, int64_t i1, int tid, int gemm_threads) {
        T* acc = partial + tid * size;
        if (i0 == i1) std::fill(acc, acc + size, T(0));
        for (int64_t i = i0; i < i1; ++i) {
            const strided_b<Arch, T> b{g + i * q.o * L, 1, L};
            if (conv_pointwise(q))
                gemm_from<Arch, T>(bl, K, q.o, L, strided_a<Arch, T>{x + i * image, L, 1}, b, acc, q.o, i > i0,
                                   gemm_threads);
            else
                gemm_from<Arch, T>(bl, K, q.o, L, patches_a<Arch, T>{x + i * image, pg}, b, acc, q.o, i > i0,
                                   gemm_threads);
        }
    });
    for (int64_t o = 0; o < q.o; ++o)
        for (int64_t k = 0; k < K; ++k) {
            T sum = partial[k * q.o + o];
            for (int t = 1; t < ran; ++t) sum += partial[t * size + k * q.o + o];
            gw[o * K + k] = sum;
        }
}

}  // namespace sg3
