// 2-d convolution (groups 1) as an implicit GEMM: forward, input gradient, weight gradient.
//
// Design:
//   Activations stay NCHW; weights stay (O, C, KH, KW), which read as an (O x C*KH*KW) matrix
//   are the GEMM's A, packed once per call for every image (`filters`). With L = OH*OW output
//   pixels per image and K = C*KH*KW, for a group of images side by side (columns j = (n, l)):
//     forward       y (O x nL)      = W (O x K) @ P(x) (K x nL)
//     weight grad   gW^T (K x O)   += P(x) (K x nL) @ g^T (nL x O)
//     input grad    gx (C x nHW)    = W~ (C x O*KH*KW) @ P~(g) (O*KH*KW x nHW)     stride 1
//                   dP (K x nL)     = W^T (K x O) @ g (O x nL), added back onto gx   stride > 1, C < O
//   where P(x) is the patch matrix (im2col): column (n, oy, ox) holds the K inputs that filter
//   taps (c, ki, kj) see at that output pixel of image n. It is never stored: the GEMM packs its
//   operands one micro-panel at a time from *sources* (gemm.hpp), and the sources below gather
//   those panels straight from the images, so the patches exist only in packed blocks in cache.
//   For stride 1 the input gradient is itself a convolution (the adjoint): of g with the filters
//   flipped in space and C and O swapped (W~), padding d*(k-1) - p (a negative pad crops). For a
//   stride s > 1 that convolution would run over g with s - 1 zeros between its pixels, most of
//   its products with zeros, so the patch gradient dP is formed instead (in a per-thread buffer)
//   and added back onto the image (`add_patches`). A 1x1 stride-1 unpadded convolution is a
//   plain GEMM on the images themselves (`columns_b`, `columns_a`).
//
//   Groups: an image of few output pixels (ResNet's last stage has 4 x 4) is too narrow a GEMM
//   (the micro-kernel's NR columns would be mostly padding, and the weight gradient's k loop a
//   few steps deep), so images are taken `group_size` at a time, side by side, and the group's
//   result is copied out of a per-thread buffer.
//
//   Threads: groups are independent, so a batch is split among threads, each running whole
//   single-threaded GEMMs on its groups (no fork/join per product, and skinny products stay in
//   one core's caches); the weight gradient sums one accumulator per thread at the end. When
//   there are fewer groups than threads, the groups run one at a time on the threaded GEMM.
//
//   `// [conv rung N: ...]` and `// [end conv rung N]` (here, direct.hpp, winograd.hpp, taps.hpp)
//   mark what docs/stage3_models.md shows of each rung of `stagegrad conv-ladder`.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "gemm.hpp"
#include "kernels.h"
#include "direct.hpp"
#include "pool.hpp"
#include "taps.hpp"
#include "winograd.hpp"

namespace sg3 {

// Where a source's patches come from: images of `image` elements, `h` x `w` pixels per channel,
// looked at through a convolution's geometry, each giving `oh` rows of `ow` output pixels.
struct patch_geometry {
    int64_t image;   // elements per image
    int64_t h, w;    // the stored image
    int64_t kh, kw;  // filter taps
    int64_t oh, ow;  // output pixels
    int64_t sy, sx;  // stride
    int64_t py, px;  // padding (negative crops)
    int64_t dy, dx;  // dilation

    int64_t pixels() const { return oh * ow; }
};

// Fill `len` slots of a packed panel, slot t at dst[t * step], with the image row `line` seen
// from column x0 + t*sx (zeros off the image).
template <class T>
inline void gather_run(T* dst, int64_t step, int64_t len, const T* line, int64_t x0, const patch_geometry& g) {
    // the slots whose pixel is on the image are [t0, t1)
    const int64_t t0 = std::clamp<int64_t>(x0 >= 0 ? 0 : (-x0 + g.sx - 1) / g.sx, 0, len);
    const int64_t t1 = std::clamp<int64_t>(x0 < g.w ? (g.w - x0 + g.sx - 1) / g.sx : 0, t0, len);
    if (step == 1 && g.sx == 1) {  // a row of a B panel: plain copies, which vectorise
        std::fill(dst, dst + t0, T(0));
        std::copy(line + x0 + t0, line + x0 + t1, dst + t0);
        std::fill(dst + t1, dst + len, T(0));
        return;
    }
    for (int64_t t = 0; t < t0; ++t) dst[t * step] = T(0);
    for (int64_t t = t0; t < t1; ++t) dst[t * step] = line[x0 + t * g.sx];
    for (int64_t t = t1; t < len; ++t) dst[t * step] = T(0);
}

// Tap p = (c, ki, kj) at output pixel (oy, ox) of an image's plane stack x, into `len` slots.
template <class T>
inline void gather_tap(T* dst, int64_t step, int64_t len, const T* x, const patch_geometry& g, int64_t c, int64_t ki,
                       int64_t kj, int64_t oy, int64_t ox) {
    const int64_t iy = oy * g.sy - g.py + ki * g.dy;
    if (iy >= 0 && iy < g.h)
        gather_run(dst, step, len, x + (c * g.h + iy) * g.w, ox * g.sx - g.px + kj * g.dx, g);
    else
        for (int64_t t = 0; t < len; ++t) dst[t * step] = T(0);
}

// Output rows narrower than this are gathered through a pixel_lookup: with a few pixels per
// row, copying row runs would cost a call per few elements.
constexpr int64_t kLongRow = 16;

// Output pixels first .. first + count looked up once (where each one's window starts in x,
// and that origin's row and column), so that a tap's values are one pass over them: the
// value at origin + tap offset, or 0 off the image. In a thread-local, grow-only table.
struct pixel_lookup {
    int64_t count = 0;
    int64_t *at = nullptr, *row = nullptr, *col = nullptr;

    pixel_lookup() = default;
    pixel_lookup(const patch_geometry& g, int64_t first, int64_t n) : count(n) {
        thread_local std::vector<int64_t> table;
        if (int64_t(table.size()) < 3 * n) table.resize(static_cast<std::size_t>(3 * n));
        at = table.data(), row = at + n, col = at + 2 * n;
        const int64_t L = g.pixels();
        for (int64_t p = 0; p < n; ++p) {
            const int64_t q = first + p, img = q / L, oy = q % L / g.ow, ox = q % g.ow;
            row[p] = oy * g.sy - g.py, col[p] = ox * g.sx - g.px;
            at[p] = img * g.image + row[p] * g.w + col[p];
        }
    }

    // tap t (ki, kj) of channel c at every pixel, into dst[p * step]
    template <class T>
    void gather(const T* x, const patch_geometry& g, int64_t c, int64_t t, T* dst, int64_t step) const {
        const int64_t dy = t / g.kw * g.dy, dx = t % g.kw * g.dx;
        const T* base = x + c * g.h * g.w + dy * g.w + dx;
        for (int64_t p = 0; p < count; ++p) {
            const bool on = uint64_t(row[p] + dy) < uint64_t(g.h) && uint64_t(col[p] + dx) < uint64_t(g.w);
            dst[p * step] = on ? base[at[p]] : T(0);
        }
    }
};

// [conv rung 2: implicit GEMM]
// B = P(x): element (p, j) is tap p = (c, ki, kj) at output pixel j = (n, oy, ox).
template <class Arch, class T>
struct patches_b {
    static constexpr bool packed = false;
    static constexpr int NR = kernel_shape<Arch, T>::nv * static_cast<int>(xsimd::batch<T, Arch>::size);
    const T* x;
    patch_geometry g;

    void pack(int64_t kc, int64_t nc, int64_t p0, int64_t j0, T* dst) const {
        for (int64_t jr = 0; jr < nc; jr += NR) panel(kc, std::min<int64_t>(NR, nc - jr), p0, j0 + jr, dst + jr * kc);
    }

    // One micro-panel: `lanes` output pixels from j, taps p0 .. p0 + kc, at dst[p * NR + lane].
    void panel(int64_t kc, int64_t lanes, int64_t p0, int64_t j, T* dst) const {
        if (g.ow < kLongRow) {
            pixel_lookup lk(g, j, lanes);
            const int64_t taps = g.kh * g.kw;
            for (int64_t p = 0; p < kc; ++p) {
                lk.gather(x, g, (p0 + p) / taps, (p0 + p) % taps, dst + p * NR, 1);
                std::fill(dst + p * NR + lanes, dst + p * NR + NR, T(0));
            }
            return;
        }
        struct run { int64_t r0, len, n, oy, ox; };  // lanes that share an output row
        run runs[NR];
        int nruns = 0;
        const int64_t L = g.pixels();
        for (int64_t r = 0; r < lanes; ++nruns) {
            const int64_t at = j + r, n = at / L, oy = at % L / g.ow, ox = at % g.ow;
            runs[nruns] = {r, std::min(lanes - r, g.ow - ox), n, oy, ox};
            r += runs[nruns].len;
        }
        const int64_t taps = g.kh * g.kw;
        int64_t c = p0 / taps, ki = p0 % taps / g.kw, kj = p0 % g.kw;
        for (int64_t p = 0; p < kc; ++p) {
            T* row = dst + p * NR;
            for (int q = 0; q < nruns; ++q) {
                const run& u = runs[q];
                gather_tap(row + u.r0, 1, u.len, x + u.n * g.image, g, c, ki, kj, u.oy, u.ox);
            }
            std::fill(row + lanes, row + NR, T(0));
            if (++kj == g.kw) {  // the next tap
                kj = 0;
                if (++ki == g.kh) ki = 0, ++c;
            }
        }
    }
};
// [end conv rung 2]

// A = P(x): element (i, p) is tap i = (c, ki, kj) at output pixel p = (n, oy, ox). Each tap's
// row is written MR apart, within one small micro-panel.
template <class Arch, class T>
struct patches_a {
    static constexpr int MR = kernel_shape<Arch, T>::mr;
    const T* x;
    patch_geometry g;

    const T* panels(int64_t mc, int64_t kc, int64_t i0, int64_t p0, T* dst) const {
        const int64_t taps = g.kh * g.kw, L = g.pixels();
        const pixel_lookup lk = g.ow < kLongRow ? pixel_lookup(g, p0, kc) : pixel_lookup();
        for (int64_t ir = 0; ir < mc; ir += MR) {
            T* d = dst + ir * kc;
            const int64_t rows = std::min<int64_t>(MR, mc - ir);
            for (int64_t r = 0; r < rows; ++r) {
                const int64_t tap = i0 + ir + r, c = tap / taps;
                if (g.ow < kLongRow) {
                    lk.gather(x, g, c, tap % taps, d + r, MR);
                    continue;
                }
                for (int64_t p = 0; p < kc;) {  // a row of one image's output at a time
                    const int64_t at = p0 + p, n = at / L, oy = at % L / g.ow, ox = at % g.ow;
                    const int64_t len = std::min(kc - p, g.ow - ox);
                    gather_tap(d + p * MR + r, MR, len, x + n * g.image, g, c, tap % taps / g.kw, tap % g.kw, oy, ox);
                    p += len;
                }
            }
            for (int64_t p = 0; p < kc; ++p) std::fill(d + p * MR + rows, d + p * MR + MR, T(0));
        }
        return dst;
    }
};

// Images side by side as columns: element (p, j) is row p of column j = (n, l) at
// x[n * image + p * L + l] (B: a batch of (rows x L) images; the group's y, g or x as a matrix).
template <class Arch, class T>
struct columns_b {
    static constexpr bool packed = false;
    static constexpr int NR = kernel_shape<Arch, T>::nv * static_cast<int>(xsimd::batch<T, Arch>::size);
    const T* x;
    int64_t image, L;

    void pack(int64_t kc, int64_t nc, int64_t p0, int64_t j0, T* dst) const {
        for (int64_t jr = 0; jr < nc; jr += NR) {
            const int64_t lanes = std::min<int64_t>(NR, nc - jr);
            T* d = dst + jr * kc;
            for (int64_t p = 0; p < kc; ++p) {
                for (int64_t r = 0; r < lanes;) {  // runs of lanes within one image
                    const int64_t at = j0 + jr + r, n = at / L, l = at % L, len = std::min(lanes - r, L - l);
                    const T* src = x + n * image + (p0 + p) * L + l;
                    std::copy(src, src + len, d + p * NR + r);
                    r += len;
                }
                std::fill(d + p * NR + lanes, d + p * NR + NR, T(0));
            }
        }
    }
};

// The transpose, as A or as B: element (p, j) with p = (n, l) the pixel, at
// x[n * image + j * L + l] (the group's g^T for the weight gradient).
template <class T, int R>
void pack_pixels(int64_t kc, int64_t lanes, const T* x, int64_t image, int64_t L, int64_t p0, int64_t j, T* dst) {
    constexpr int64_t tile = 64 / sizeof(T);  // a cache line of each lane, then the next lane
    for (int64_t p = 0; p < kc;) {            // runs of pixels within one image
        const int64_t at = p0 + p, n = at / L, l = at % L, len = std::min(kc - p, L - l);
        for (int64_t t0 = 0; t0 < len; t0 += tile) {
            const int64_t t1 = std::min(len, t0 + tile);
            for (int64_t r = 0; r < lanes; ++r) {
                const T* src = x + n * image + (j + r) * L + l;
                for (int64_t t = t0; t < t1; ++t) dst[(p + t) * R + r] = src[t];
            }
        }
        for (int64_t t = 0; t < len; ++t) std::fill(dst + (p + t) * R + lanes, dst + (p + t) * R + R, T(0));
        p += len;
    }
}

template <class Arch, class T>
struct pixels_b {  // element (p = pixel, j) at x[n * image + j * L + l]
    static constexpr bool packed = false;
    static constexpr int NR = kernel_shape<Arch, T>::nv * static_cast<int>(xsimd::batch<T, Arch>::size);
    const T* x;
    int64_t image, L;

    void pack(int64_t kc, int64_t nc, int64_t p0, int64_t j0, T* dst) const {
        for (int64_t jr = 0; jr < nc; jr += NR)
            pack_pixels<T, NR>(kc, std::min<int64_t>(NR, nc - jr), x, image, L, p0, j0 + jr, dst + jr * kc);
    }
};

template <class Arch, class T>
struct columns_a {  // element (i, p = pixel) at x[n * image + i * L + l]: a 1x1 convolution's images as A
    static constexpr int MR = kernel_shape<Arch, T>::mr;
    const T* x;
    int64_t image, L;

    const T* panels(int64_t mc, int64_t kc, int64_t i0, int64_t p0, T* dst) const {
        for (int64_t ir = 0; ir < mc; ir += MR)
            pack_pixels<T, MR>(kc, std::min<int64_t>(MR, mc - ir), x, image, L, p0, i0 + ir, dst + ir * kc);
        return dst;
    }
};

// dst[0, n) += src[0, n), the two not overlapping (so the loop vectorises)
template <class T>
inline void add_run(T* __restrict dst, const T* __restrict src, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
}

// Add the columns of a patch matrix (K x L, row stride ld, as P lays them out) back onto the
// image they came from (zeroed first): the adjoint of P.
template <class T>
void add_patches(const patch_geometry& g, int64_t channels, const T* cols, int64_t ld, T* image) {
    std::fill(image, image + channels * g.h * g.w, T(0));
    for (int64_t c = 0; c < channels; ++c)
        for (int64_t ki = 0; ki < g.kh; ++ki)
            for (int64_t kj = 0; kj < g.kw; ++kj) {
                const T* row = cols + ((c * g.kh + ki) * g.kw + kj) * ld;
                int64_t o0, o1;
                tap_range(g.w, g.ow, g.sx, g.px, kj * g.dx, o0, o1);
                for (int64_t oy = 0; oy < g.oh; ++oy) {
                    const int64_t iy = oy * g.sy - g.py + ki * g.dy;
                    if (iy < 0 || iy >= g.h) continue;
                    T* line = image + (c * g.h + iy) * g.w + kj * g.dx - g.px;
                    if (g.sx == 1)  // a run of the row: whole vectors (cols and image never overlap)
                        add_run(line + o0, row + oy * g.ow + o0, o1 - o0);
                    else
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

// How a batch of n images of L output pixels is cut: groups of `size` images side by side
// (at least kGroupColumns columns, so that the GEMM's panels are full), and `threads` running
// whole groups (the team when every thread gets a group and the batch is worth waking it; else
// 1, and the GEMM threads instead).
struct image_groups {
    int64_t size, count;
    int threads;
};

constexpr int64_t kGroupColumns = 256;

template <class Arch, class T>
image_groups group_images(int64_t n, int64_t L, double work_per_image, int nthreads) {
    image_groups g{};
#ifdef _OPENMP
    nthreads = omp_in_parallel() ? 1 : std::min(nthreads, omp_get_num_procs());
#endif
    // wide enough for full panels, but no wider than gives every thread a group of its own
    g.size = std::clamp<int64_t>((kGroupColumns + L - 1) / std::max<int64_t>(L, 1), 1, std::max<int64_t>(n, 1));
    if (nthreads > 1 && n >= nthreads) g.size = std::min(g.size, (n + nthreads - 1) / nthreads);
    g.count = (n + g.size - 1) / g.size;
    const bool worth = double(n) * work_per_image >= double(gemm_blocking<Arch, T>().min_parallel_work);
    g.threads = g.count >= 2 && worth ? static_cast<int>(std::min<int64_t>(nthreads, g.count)) : 1;
    return g;
}

// fn(first image, images, tid, gemm threads) for every group, the groups split among the
// threads. Returns the number of threads that ran.
template <class Fn>
int over_groups(int64_t n, const image_groups& gr, int nthreads, Fn fn) {
    auto run = [&](int64_t g0, int64_t g1, int tid, int gemm_threads) {
        for (int64_t q = g0; q < g1; ++q) fn(q * gr.size, std::min(gr.size, n - q * gr.size), tid, gemm_threads);
    };
    if (gr.threads <= 1) {
        run(0, gr.count, 0, nthreads);
        return 1;
    }
    int ran = 1;
#ifdef _OPENMP
#pragma omp parallel num_threads(gr.threads)
    {
        const int tid = omp_get_thread_num(), team = omp_get_num_threads();
        if (tid == 0) ran = team;
        run(gr.count * tid / team, gr.count * (tid + 1) / team, tid, 1);
    }
#endif
    return ran;
}

// Copy a group's result (rows x cnt*L, row-major) into cnt images of `rows` x L (+ bias per row).
template <class T>
void scatter_group(const T* src, int64_t rows, int64_t cnt, int64_t L, T* dst, const T* bias) {
    for (int64_t k = 0; k < cnt; ++k)
        for (int64_t r = 0; r < rows; ++r) {
            const T* s = src + r * cnt * L + k * L;
            T* d = dst + (k * rows + r) * L;
            const T b = bias ? bias[r] : T(0);
            for (int64_t l = 0; l < L; ++l) d[l] = s[l] + b;
        }
}

// C = A @ B for one group into out (rows x cnt*L per image set): straight into the images when
// the group is one image, else through this thread's slice of `scratch` and a copy.
template <class Arch, class T, class ASource, class BSource>
void group_product(const gemm_blocking_info& bl, int64_t rows, int64_t cnt, int64_t L, int64_t k, const ASource& a,
                   const BSource& b, T* scratch, T* out, const T* bias, int gemm_threads) {
    if (cnt == 1) {
        gemm_from<Arch, T>(bl, rows, L, k, a, b, out, L, false, gemm_threads);
        if (bias)
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t l = 0; l < L; ++l) out[r * L + l] += bias[r];
        return;
    }
    gemm_from<Arch, T>(bl, rows, cnt * L, k, a, b, scratch, cnt * L, false, gemm_threads);
    scatter_group(scratch, rows, cnt, L, out, bias);
}

template <class Arch, class T>
T* group_scratch(const image_groups& gr, int64_t per_image) {
    if (gr.size == 1) return nullptr;
    return thread_buffer<Arch, T, 6>().get(static_cast<std::size_t>(gr.threads * gr.size * per_image));
}

// [conv rung 6: the default]
// Whether Winograd runs a pass of this convolution (winograd.hpp): where it applies, when asked
// for, or by default (`weight` false: the forward and the input gradient) where it was measured
// faster (`stagegrad conv-ladder`): both channel counts at least kWinogradChannels and at least
// kWinogradTiles output tiles. With fewer channels the transforms' cost per tile is not repaid by
// the GEMMs' savings; with fewer tiles transforming the filters (16 x O x C) is. Its weight
// gradient (16 products of O x C over every tile, each with both operands read across) loses
// to the implicit GEMM's, so the default keeps that.
constexpr int64_t kWinogradChannels = 32, kWinogradTiles = 512;

inline bool use_winograd(const sg3_conv& q, bool weight = false) {
    if (q.algo == SG3_CONV_IMPLICIT || q.algo == SG3_CONV_TAPS || !winograd_fits(q)) return false;
    if (q.algo == SG3_CONV_WINOGRAD) return true;
    const int64_t tiles = q.n * ((q.oh + 1) / 2) * ((q.ow + 1) / 2);
    return !weight && q.c >= kWinogradChannels && q.o >= kWinogradChannels && tiles >= kWinogradTiles;
}

// Whether the direct convolution (direct.hpp) runs a pass of this one: where it applies (stride
// 1, dilation 1, padding below the kernel, so that the input gradient's, k - 1 - p, is one too),
// when asked for, or by default where `stagegrad conv-ladder` measured it faster than the implicit
// GEMM: few output channels (at most kDirectOut), and for the forward few input channels and a
// large kernel (5 x 5 and up: a patch gather per tap is dear, a row loaded once serves kw taps),
// for the weight gradient few taps (at most kDirectTaps: the GEMM's product would be that
// shallow and 64 columns wide for a handful of channels). The input gradient keeps the GEMM.
enum class conv_pass { forward, input, weight };
constexpr int64_t kDirectOut = 32, kDirectIn = 16, kDirectTaps = 75;

inline bool use_direct(const sg3_conv& q, conv_pass pass) {
    const bool fits = q.sh == 1 && q.sw == 1 && q.dh == 1 && q.dw == 1 && q.ph < q.kh && q.pw < q.kw && q.oh > 0 &&
                      q.ow > 0;
    if (!fits || q.algo == SG3_CONV_IMPLICIT || q.algo == SG3_CONV_WINOGRAD || q.algo == SG3_CONV_TAPS) return false;
    if (q.algo == SG3_CONV_DIRECT) return true;
    if (q.o > kDirectOut) return false;
    if (pass == conv_pass::forward) return q.c <= kDirectIn && q.kh * q.kw >= 25;
    return pass == conv_pass::weight && q.c * q.kh * q.kw <= kDirectTaps;
}

// Whether a pass runs channels last, a tap at a time (taps.hpp): where it applies (the input
// gradient as the adjoint convolution, so stride 1 with padding at most the kernel's reach), when
// asked for, or by default where `stagegrad conv-ladder` measured it faster than the implicit
// GEMM: the weight gradient where both channel counts are at least 16 (ResNet-18's 3x3 layers,
// the MNIST CNN's 16 to 32); with fewer input channels most of each vector of x' is padding.
// The forward where also the kernel has 25 taps or more (the CNN's 5x5 16 to 32: twice the
// direct convolution's speed, whose pixel vectors each tap reloads); on ResNet-18's 3x3 layers
// it was within 10% of the NCHW kernels either way. The input gradient where the plane has 64
// pixels or fewer and both channel counts are at least 16: on ResNet-18's last two stages (8x8
// and 4x4, 256 and 512 channels, batch 16) it beat the implicit GEMM by 10% and 2% on one
// thread and by 12-15% on two; on the larger planes Winograd's was faster. A 1x1 stride-1
// layer's passes are plain GEMMs.
inline bool use_taps(const sg3_conv& q, conv_pass pass) {
    bool fits = taps_fit(q) && !conv_pointwise(q) && q.kh * q.kw <= kMaxTaps;
    if (pass == conv_pass::input)
        fits = fits && q.sh == 1 && q.sw == 1 && q.dh * (q.kh - 1) >= q.ph && q.dw * (q.kw - 1) >= q.pw;
    if (!fits || (q.algo != SG3_CONV_AUTO && q.algo != SG3_CONV_TAPS)) return false;
    if (q.algo == SG3_CONV_TAPS) return true;
    if (q.c < 16 || q.o < 16) return false;
    if (pass == conv_pass::forward) return q.kh * q.kw >= 25;
    return pass == conv_pass::weight || q.h * q.w <= 64;
}
// [end conv rung 6]

inline direct_geometry direct_of(const sg3_conv& q) {
    return {q.n, q.c, q.h, q.w, q.o, q.kh, q.kw, q.ph, q.pw};
}

template <class Arch, class T>
void conv2d_forward(const sg3_conv& q, T* y, const T* x, const T* w, const T* bias, int nthreads) {
    if (use_taps(q, conv_pass::forward)) {
        taps_forward<Arch, T>(q, y, x, w, q.c * q.kh * q.kw, q.kh * q.kw, q.kw, 1, bias, nthreads);
        return;
    }
    if (use_direct(q, conv_pass::forward)) {
        direct_conv<Arch, T>(direct_of(q), y, x, w, q.c * q.kh * q.kw, q.kh * q.kw, q.kw, 1, bias, nthreads);
        return;
    }
    if (use_winograd(q)) {
        winograd_conv<Arch, T>(winograd_geometry(q.n, q.c, q.h, q.w, q.o, q.ph), y, x, w, q.c * 9, 9, 3, 1, bias,
                               nthreads);
        return;
    }
    const int64_t K = q.c * q.kh * q.kw, L = q.oh * q.ow, image = q.c * q.h * q.w;
    const gemm_blocking_info& bl = gemm_blocking<Arch, T>();
    const patch_geometry pg{image, q.h, q.w, q.kh, q.kw, q.oh, q.ow, q.sh, q.sw, q.ph, q.pw, q.dh, q.dw};
    const image_groups gr = group_images<Arch, T>(q.n, L, double(q.o) * K * L, nthreads);
    const prepacked_a<Arch, T> a = filters<Arch, T>(bl, q.o, K, w, K, 1);
    T* scratch = group_scratch<Arch, T>(gr, q.o * L);
    over_groups(q.n, gr, nthreads, [&](int64_t i, int64_t cnt, int tid, int gemm_threads) {
        T* mine = scratch ? scratch + tid * gr.size * q.o * L : nullptr;
        if (conv_pointwise(q))
            group_product<Arch, T>(bl, q.o, cnt, L, K, a, columns_b<Arch, T>{x + i * image, image, L}, mine,
                                   y + i * q.o * L, bias, gemm_threads);
        else
            group_product<Arch, T>(bl, q.o, cnt, L, K, a, patches_b<Arch, T>{x + i * image, pg}, mine, y + i * q.o * L,
                                   bias, gemm_threads);
    });
}

template <class Arch, class T>
void conv2d_backward_input(const sg3_conv& q, T* gx, const T* g, const T* w, int nthreads) {
    const int64_t HW = q.h * q.w, L = q.oh * q.ow, gimage = q.o * L, taps = q.kh * q.kw;
    const gemm_blocking_info& bl = gemm_blocking<Arch, T>();
    if (conv_pointwise(q)) {  // gx = W^T @ g
        const image_groups gr = group_images<Arch, T>(q.n, L, double(q.c) * q.o * L, nthreads);
        const prepacked_a<Arch, T> a = filters<Arch, T>(bl, q.c, q.o, w, 1, q.c);
        T* scratch = group_scratch<Arch, T>(gr, q.c * L);
        over_groups(q.n, gr, nthreads, [&](int64_t i, int64_t cnt, int tid, int gemm_threads) {
            group_product<Arch, T>(bl, q.c, cnt, L, q.o, a, columns_b<Arch, T>{g + i * gimage, gimage, L},
                                   scratch ? scratch + tid * gr.size * q.c * L : nullptr, gx + i * q.c * HW, nullptr,
                                   gemm_threads);
        });
        return;
    }
    if (use_direct(q, conv_pass::input)) {  // the adjoint convolution (below), filters read flipped
        const int64_t taps = q.kh * q.kw;
        direct_conv<Arch, T>({q.n, q.o, q.oh, q.ow, q.c, q.kh, q.kw, q.kh - 1 - q.ph, q.kw - 1 - q.pw}, gx, g,
                             w + taps - 1, taps, q.c * taps, -q.kw, -1, nullptr, nthreads);
        return;
    }
    if (use_taps(q, conv_pass::input)) {  // the adjoint convolution (below), channels last, filters read flipped
        const sg3_conv adj{q.n, q.o, q.oh, q.ow, q.c, q.kh, q.kw, q.h, q.w, 1, 1, q.dh * (q.kh - 1) - q.ph,
                           q.dw * (q.kw - 1) - q.pw, q.dh, q.dw, q.algo};
        taps_forward<Arch, T>(adj, gx, g, w + taps - 1, taps, q.c * taps, -q.kw, -1, nullptr, nthreads);
        return;
    }
    if (use_winograd(q)) {  // the adjoint convolution (below) by Winograd, filters read flipped
        winograd_conv<Arch, T>(winograd_geometry(q.n, q.o, q.oh, q.ow, q.c, 2 - q.ph), gx, g, w + 8, 9, q.c * 9, -3,
                               -1, nullptr, nthreads);
        return;
    }
    // The patch gradient dP = W^T @ g, added back onto the images: for a stride (see above), and
    // where the input has fewer channels than the output: gathering the adjoint's patches costs
    // about one load per C multiply-adds, adding dP back one per O.
    if (q.sh > 1 || q.sw > 1 || q.c < q.o) {
        const int64_t KP = q.c * taps;
        const patch_geometry pg{q.c * HW, q.h, q.w, q.kh, q.kw, q.oh, q.ow, q.sh, q.sw, q.ph, q.pw, q.dh, q.dw};
        const image_groups gr = group_images<Arch, T>(q.n, L, double(KP) * q.o * L, nthreads);
        T* cols = thread_buffer<Arch, T, 3>().get(static_cast<std::size_t>(gr.threads * gr.size * KP * L));
        const prepacked_a<Arch, T> a = filters<Arch, T>(bl, KP, q.o, w, 1, KP);
        over_groups(q.n, gr, nthreads, [&](int64_t i, int64_t cnt, int tid, int gemm_threads) {
            T* mine = cols + tid * gr.size * KP * L;
            gemm_from<Arch, T>(bl, KP, cnt * L, q.o, a, columns_b<Arch, T>{g + i * gimage, gimage, L}, mine, cnt * L,
                               false, gemm_threads);
            for (int64_t k = 0; k < cnt; ++k) add_patches(pg, q.c, mine + k * L, cnt * L, gx + (i + k) * q.c * HW);
        });
        return;
    }
    // stride 1: the convolution of g by W~[c][o][ki][kj] = W[o][c][kh-1-ki][kw-1-kj]
    const int64_t K = q.o * taps;
    T* wf = thread_buffer<Arch, T, 3>().get(static_cast<std::size_t>(q.c * K));
    for (int64_t o = 0; o < q.o; ++o)
        for (int64_t c = 0; c < q.c; ++c)
            for (int64_t t = 0; t < taps; ++t) wf[(c * q.o + o) * taps + (taps - 1 - t)] = w[(o * q.c + c) * taps + t];
    const patch_geometry pg{gimage, q.oh, q.ow, q.kh, q.kw, q.h, q.w, 1, 1, q.dh * (q.kh - 1) - q.ph,
                            q.dw * (q.kw - 1) - q.pw, q.dh, q.dw};
    const image_groups gr = group_images<Arch, T>(q.n, HW, double(q.c) * K * HW, nthreads);
    const prepacked_a<Arch, T> a = filters<Arch, T>(bl, q.c, K, wf, K, 1);
    T* scratch = group_scratch<Arch, T>(gr, q.c * HW);
    over_groups(q.n, gr, nthreads, [&](int64_t i, int64_t cnt, int tid, int gemm_threads) {
        group_product<Arch, T>(bl, q.c, cnt, HW, K, a, patches_b<Arch, T>{g + i * gimage, pg},
                               scratch ? scratch + tid * gr.size * q.c * HW : nullptr, gx + i * q.c * HW, nullptr,
                               gemm_threads);
    });
}

// gW^T (K x O) = sum over groups of P(x) (K x nL) @ g^T (nL x O): the patches are A, whose
// micro-panels are small, so gathering them costs little; each thread sums its groups into its
// own gW^T, and the threads' sums are added and transposed into gw at the end.
template <class Arch, class T>
void conv2d_backward_weight(const sg3_conv& q, T* gw, const T* g, const T* x, int nthreads) {
    if (use_direct(q, conv_pass::weight)) {
        direct_weight<Arch, T>(direct_of(q), gw, g, x, nthreads);
        return;
    }
    if (use_winograd(q, true)) {
        winograd_weight<Arch, T>(winograd_geometry(q.n, q.c, q.h, q.w, q.o, q.ph), gw, g, x, nthreads);
        return;
    }
    if (use_taps(q, conv_pass::weight)) {
        taps_weight<Arch, T>(q, gw, g, x, nthreads);
        return;
    }
    const int64_t K = q.c * q.kh * q.kw, L = q.oh * q.ow, image = q.c * q.h * q.w, size = q.o * K;
    const gemm_blocking_info& bl = gemm_blocking<Arch, T>();
    const patch_geometry pg{image, q.h, q.w, q.kh, q.kw, q.oh, q.ow, q.sh, q.sw, q.ph, q.pw, q.dh, q.dw};
    image_groups gr = group_images<Arch, T>(q.n, L, double(q.o) * K * L, nthreads);
    // no buffer per group here: each thread's images make one product, as deep as they are
    // together, so its accumulator is loaded and stored once
    gr.size = std::max<int64_t>(1, (q.n + gr.threads - 1) / gr.threads);
    gr.count = (q.n + gr.size - 1) / gr.size;
    T* partial = thread_buffer<Arch, T, 4>().get(static_cast<std::size_t>(gr.threads * size));
    std::fill(partial, partial + gr.threads * size, T(0));
    const int ran = over_groups(q.n, gr, nthreads, [&](int64_t i, int64_t cnt, int tid, int gemm_threads) {
        T* acc = partial + tid * size;
        const pixels_b<Arch, T> b{g + i * q.o * L, q.o * L, L};
        if (conv_pointwise(q))
            gemm_from<Arch, T>(bl, K, q.o, cnt * L, columns_a<Arch, T>{x + i * image, image, L}, b, acc, q.o, true,
                               gemm_threads);
        else
            gemm_from<Arch, T>(bl, K, q.o, cnt * L, patches_a<Arch, T>{x + i * image, pg}, b, acc, q.o, true,
                               gemm_threads);
    });
    constexpr int64_t tile = 16;  // transposed a tile at a time: both sides touch few cache lines
    for (int64_t o0 = 0; o0 < q.o; o0 += tile)
        for (int64_t k0 = 0; k0 < K; k0 += tile)
            for (int64_t o = o0; o < std::min(q.o, o0 + tile); ++o)
                for (int64_t k = k0; k < std::min(K, k0 + tile); ++k) {
                    T sum = partial[k * q.o + o];
                    for (int t = 1; t < ran; ++t) sum += partial[t * size + k * q.o + o];
                    gw[o * K + k] = sum;
                }
}

}  // namespace sg3
