// 3x3 stride-1 convolution by Winograd's minimal filtering F(2x2, 3x3): forward, input gradient
// and weight gradient.
//
// Design:
//   An output tile of 2 x 2 pixels is, per output channel o,
//       Y = A^T [ sum_c U[o][c] (.) V[c] ] A,   U = G g G^T (the 3x3 filter),  V = B^T d B
//   where d is the 4 x 4 input patch under the tile, (.) the elementwise product of 4 x 4 matrices
//   and A, B, G fixed matrices of 0, +-1 and +-1/2 (Lavin and Gray, 2015). Per tile and channel
//   pair that is 16 multiplies instead of the direct 36. Over P tiles the sum over c is, for each
//   of the 16 positions xi of the transformed tile, one GEMM on the GEMM's micro-kernel:
//       M[xi] (O x P) = U[xi] (O x C) @ V[xi] (C x P)
//   so 2.25x fewer multiply-adds than any direct convolution, plus transforms (a few additions per
//   element) on either side. U is packed once per call (`prepacked_a`).
//
//   The input gradient of a stride-1 convolution is the convolution of g by the flipped filters
//   with C and O swapped, padded by 2 - p (conv.hpp): the same routine. The weight gradient is the
//   adjoint of each step: dM = A dY A^T per tile, dU[xi] = dM[xi] @ V[xi]^T summed over the tiles
//   (one accumulating GEMM per chunk and xi), dW = G^T dU G.
//
//   Tiles, numbered over the whole batch (image, tile row, tile column), are taken `chunk` at a
//   time so that a chunk's V and M (16 x (C + O) x chunk elements) stay in L2; threads take whole
//   chunks and run single-threaded GEMMs on them (each thread its own dU, summed at the end).
//
//   Accuracy: the transforms add and halve, and each output is still a sum of C * 16 products,
//   so the error stays within a small multiple of the direct sum's: common_tests bound it against
//   a float64 reference by the sum of |x| |w| over each output's taps.
#pragma once

#include <algorithm>
#include <cstdint>

#include "gemm.hpp"
#include "kernels.h"
#include "teams.hpp"

namespace sg3 {

// Where the routine's tiles come from: n images of c channels of h x w, padded by p on every side
// (0 <= p <= 2), giving oh x ow outputs in th x tw tiles of 2 x 2.
struct winograd_geometry {
    int64_t n, c, h, w, o, p, oh, ow, th, tw;

    winograd_geometry(int64_t n_, int64_t c_, int64_t h_, int64_t w_, int64_t o_, int64_t p_)
        : n(n_), c(c_), h(h_), w(w_), o(o_), p(p_), oh(h_ + 2 * p_ - 2), ow(w_ + 2 * p_ - 2),
          th((oh + 1) / 2), tw((ow + 1) / 2) {}
    int64_t tiles() const { return n * th * tw; }
};

// Whether Winograd computes this convolution: 3x3, stride 1, dilation 1, padding 0 to 2 (the
// input gradient's padding 2 - p must be one too), and an output.
inline bool winograd_fits(const sg3_conv& q) {
    return q.kh == 3 && q.kw == 3 && q.sh == 1 && q.sw == 1 && q.dh == 1 && q.dw == 1 && q.ph == q.pw &&
           q.ph >= 0 && q.ph <= 2 && q.oh > 0 && q.ow > 0;
}

namespace wino {

// G g: 3 filter taps to 4 (g0, (g0 + g1 + g2) / 2, (g0 - g1 + g2) / 2, g2)
template <class T>
inline void filter_1d(const T* g, int64_t step, T* u, int64_t ustep) {
    const T h = T(0.5) * (g[0] + g[2 * step]);
    u[0] = g[0], u[ustep] = h + T(0.5) * g[step], u[2 * ustep] = h - T(0.5) * g[step], u[3 * ustep] = g[2 * step];
}

// G^T u: the adjoint, 4 to 3 (u0 + (u1 + u2) / 2, (u1 - u2) / 2, (u1 + u2) / 2 + u3)
template <class T>
inline void filter_adjoint_1d(const T* u, int64_t ustep, T* g, int64_t step) {
    const T h = T(0.5) * (u[ustep] + u[2 * ustep]);
    g[0] = u[0] + h, g[step] = T(0.5) * (u[ustep] - u[2 * ustep]), g[2 * step] = h + u[3 * ustep];
}

// fn(image, tile row, first tile column, columns, j) for each run of the chunk's tiles t0 + j
// that lie in one row of tiles: the transforms below work a row at a time, along which their
// loops vectorise (and the tile's coordinates are divided out once per run, not per tile).
template <class Fn>
inline void over_tile_rows(const winograd_geometry& g, int64_t t0, int64_t cnt, Fn fn) {
    const int64_t per_image = g.th * g.tw;
    for (int64_t t = t0; t < t0 + cnt;) {
        const int64_t n = t / per_image, ty = t % per_image / g.tw, tx = t % g.tw;
        const int64_t run = std::min(g.tw - tx, t0 + cnt - t);
        fn(n, ty, tx, run, t - t0);
        t += run;
    }
}

// `len` pixels of row y of a plane from column x0, zeros off the image.
template <class T>
inline void load_line(const T* plane, int64_t h, int64_t w, int64_t y, int64_t x0, int64_t len, T* line) {
    if (y < 0 || y >= h) {
        std::fill(line, line + len, T(0));
        return;
    }
    const int64_t a = std::clamp<int64_t>(-x0, 0, len), b = std::clamp<int64_t>(w - x0, a, len);
    std::fill(line, line + a, T(0));
    std::copy(plane + y * w + x0 + a, plane + y * w + x0 + b, line + a);
    std::fill(line + b, line + len, T(0));
}

// V[xi][c][j] for the chunk's tiles t0 + j, j < cnt (row stride ld): B^T d B of each 4 x 4 patch
// d, B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]. Down the columns first, over the run's whole
// lines (4 of 2 * run + 2 pixels, in `line`, read in place: rows off the image read a line of
// zeros, columns off it are zero), then along each row at every tile's offset.
template <class T>
void input_transform(const winograd_geometry& g, const T* x, int64_t t0, int64_t cnt, T* v, int64_t ld, T* line) {
    over_tile_rows(g, t0, cnt, [&](int64_t n, int64_t ty, int64_t tx0, int64_t run, int64_t j0) {
        const int64_t len = 2 * run + 2, x0 = 2 * tx0 - g.p;
        const int64_t a = std::clamp<int64_t>(-x0, 0, len), b = std::clamp<int64_t>(g.w - x0, a, len);
        T* __restrict u = line;
        T* zeros = u + 4 * len;
        std::fill(zeros, zeros + len, T(0));
        for (int64_t c = 0; c < g.c; ++c) {
            const T* plane = x + (n * g.c + c) * g.h * g.w;
            const T* rows[4];
            for (int r = 0; r < 4; ++r) {
                const int64_t y = 2 * ty - g.p + r;
                rows[r] = y >= 0 && y < g.h ? plane + y * g.w + x0 + a : zeros;  // pixel x0 + a first
            }
            const T *__restrict r0 = rows[0], *__restrict r1 = rows[1], *__restrict r2 = rows[2],
                                                  *__restrict r3 = rows[3];
            for (int q = 0; q < 4; ++q) {
                std::fill(u + q * len, u + q * len + a, T(0));
                std::fill(u + q * len + b, u + (q + 1) * len, T(0));
            }
            T* __restrict on = u + a;
            for (int64_t k = 0; k < b - a; ++k)
                on[k] = r0[k] - r2[k], on[len + k] = r1[k] + r2[k], on[2 * len + k] = r2[k] - r1[k],
                on[3 * len + k] = r1[k] - r3[k];
            for (int r = 0; r < 4; ++r) {
                const T* __restrict a = u + r * len;
                T* __restrict out = v + (4 * r * g.c + c) * ld + j0;
                const int64_t step = g.c * ld;  // from one xi to the next
                for (int64_t i = 0; i < run; ++i) {
                    const T e0 = a[2 * i], o0 = a[2 * i + 1], e1 = a[2 * i + 2], o1 = a[2 * i + 3];
                    out[i] = e0 - e1, out[step + i] = o0 + e1, out[2 * step + i] = e1 - o0, out[3 * step + i] = o0 - o1;
                }
            }
        }
    });
}

// y's 2 x 2 tiles from M[xi][o][j] (row stride ld): A^T m A, A^T = [1 1 1 0; 0 1 -1 -1], cropped
// to the image, plus bias. `line` holds two output rows of the run (4 * run).
template <class T>
void output_transform(const winograd_geometry& g, const T* m, int64_t ld, int64_t t0, int64_t cnt, T* y,
                      const T* bias, T* line) {
    over_tile_rows(g, t0, cnt, [&](int64_t n, int64_t ty, int64_t tx0, int64_t run, int64_t j0) {
        const int64_t cols = std::min(2 * run, g.ow - 2 * tx0);
        for (int64_t o = 0; o < g.o; ++o) {
            const T b = bias ? bias[o] : T(0);
            const T* q = m + o * ld + j0;
            const int64_t step = g.o * ld;
            // straight into the image's two rows when the run's tiles fit inside it
            T* plane = y + (n * g.o + o) * g.oh * g.ow + 2 * tx0;
            const bool inside = cols == 2 * run && 2 * ty + 1 < g.oh;
            T* __restrict out0 = inside ? plane + 2 * ty * g.ow : line;
            T* __restrict out1 = inside ? plane + (2 * ty + 1) * g.ow : line + 2 * run;
            for (int64_t i = 0; i < run; ++i) {
                T r0[4], r1[4];  // A^T down each column s
                for (int s = 0; s < 4; ++s) {
                    const T m0 = q[s * step + i], m1 = q[(4 + s) * step + i], m2 = q[(8 + s) * step + i],
                            m3 = q[(12 + s) * step + i];
                    r0[s] = m0 + m1 + m2, r1[s] = m1 - m2 - m3;
                }
                out0[2 * i] = r0[0] + r0[1] + r0[2] + b, out0[2 * i + 1] = r0[1] - r0[2] - r0[3] + b;
                out1[2 * i] = r1[0] + r1[1] + r1[2] + b, out1[2 * i + 1] = r1[1] - r1[2] - r1[3] + b;
            }
            if (inside) continue;
            std::copy(out0, out0 + cols, plane + 2 * ty * g.ow);
            if (2 * ty + 1 < g.oh) std::copy(out1, out1 + cols, plane + (2 * ty + 1) * g.ow);
        }
    });
}

// dM[xi][o][j] = A e A^T for each tile's 2 x 2 output gradient e (zeros past the image's edge):
// the adjoint of output_transform. `line` holds the run's two gradient rows (4 * run + 4).
template <class T>
void output_adjoint(const winograd_geometry& g, const T* dy, int64_t t0, int64_t cnt, T* dm, int64_t ld, T* line) {
    over_tile_rows(g, t0, cnt, [&](int64_t n, int64_t ty, int64_t tx0, int64_t run, int64_t j0) {
        for (int64_t o = 0; o < g.o; ++o) {
            const T* plane = dy + (n * g.o + o) * g.oh * g.ow;
            T* e0 = line;
            T* e1 = line + 2 * run;
            load_line(plane, g.oh, g.ow, 2 * ty, 2 * tx0, 2 * run, e0);
            load_line(plane, g.oh, g.ow, 2 * ty + 1, 2 * tx0, 2 * run, e1);
            T* __restrict out = dm + o * ld + j0;
            const int64_t step = g.o * ld;
            for (int64_t i = 0; i < run; ++i) {
                // A e down each column: (e0, e0 + e1, e0 - e1, -e1); then the same along each row
                const T a0 = e0[2 * i], b0 = e0[2 * i + 1], a1 = e1[2 * i], b1 = e1[2 * i + 1];
                const T col0[4] = {a0, a0 + a1, a0 - a1, -a1}, col1[4] = {b0, b0 + b1, b0 - b1, -b1};
                for (int r = 0; r < 4; ++r) {
                    const T p = col0[r], q = col1[r];
                    out[(4 * r) * step + i] = p, out[(4 * r + 1) * step + i] = p + q;
                    out[(4 * r + 2) * step + i] = p - q, out[(4 * r + 3) * step + i] = -q;
                }
            }
        }
    });
}

// Tiles per chunk: a chunk's 16 x (C + O) columns of V and M in about 1 MiB, a whole number of
// the micro-kernel's panels, no more than the batch has.
template <class Arch, class T>
int64_t chunk_tiles(const winograd_geometry& g) {
    constexpr int64_t NR = kernel_shape<Arch, T>::nv * static_cast<int64_t>(xsimd::batch<T, Arch>::size);
    const int64_t fit = (int64_t(1) << 20) / (16 * (g.c + g.o) * int64_t(sizeof(T)));
    const int64_t chunk = std::max<int64_t>(NR, fit / NR * NR);
    return std::min(chunk, std::max<int64_t>(g.tiles(), 1));
}

// A thread's workspace: a chunk's V and M (or dM), and the input transform's 5 lines of a run's
// 2 * run + 2 pixels (the most any transform uses).
inline int64_t work_size(const winograd_geometry& g, int64_t chunk) {
    return 16 * (g.c + g.o) * chunk + 10 * (std::min(chunk, g.tw) + 1);
}

// fn(first tile, tiles, thread) over the chunks, split among up to nthreads threads. Returns the
// threads that ran.
template <class Fn>
int over_chunks(int64_t tiles, int64_t chunk, int nthreads, Fn fn) {
    return over_items((tiles + chunk - 1) / chunk, nthreads,
                      [&](int64_t q, int tid) { fn(q * chunk, std::min(chunk, tiles - q * chunk), tid); });
}

}  // namespace wino

// [conv rung 4: Winograd]
// y (n, o, oh, ow) = the 3x3 convolution of x (n, c, h, w) padded by p, by filters whose tap
// (o, c, ki, kj) is w[o * so + c * sc + ki * sk + kj * sl] (strides: the input gradient reads the
// forward's filters flipped and transposed), plus bias (o,) when not null.
template <class Arch, class T>
void winograd_conv(const winograd_geometry& g, T* y, const T* x, const T* w, int64_t so, int64_t sc, int64_t sk,
                   int64_t sl, const T* bias, int nthreads) {
    const gemm_blocking_info& bl = gemm_blocking<Arch, T>();
    constexpr int64_t MR = kernel_shape<Arch, T>::mr;
    const int64_t o_padded = (g.o + MR - 1) / MR * MR, chunk = wino::chunk_tiles<Arch, T>(g);
    const int team = team_size(nthreads);
    // every buffer from the calling thread, before any team starts (a failed allocation throws)
    T* u = thread_buffer<Arch, T, 11>().get(static_cast<std::size_t>(16 * (g.o * g.c + o_padded * g.c)));
    T* packed = u + 16 * g.o * g.c;
    const int64_t per_thread = wino::work_size(g, chunk);
    T* work = thread_buffer<Arch, T, 12>().get(static_cast<std::size_t>(team * per_thread));
    for (int64_t o = 0; o < g.o; ++o)  // U[xi][o][c] = G g G^T
        for (int64_t c = 0; c < g.c; ++c) {
            const T* f = w + o * so + c * sc;
            T gt[12], v[16];  // G g: 4 rows of 3
            for (int kj = 0; kj < 3; ++kj) wino::filter_1d(f + kj * sl, sk, gt + kj, int64_t(3));
            for (int r = 0; r < 4; ++r) wino::filter_1d(gt + 3 * r, int64_t(1), v + 4 * r, int64_t(1));
            for (int xi = 0; xi < 16; ++xi) u[(xi * g.o + o) * g.c + c] = v[xi];
        }
    prepacked_a<Arch, T> a[16];
    for (int xi = 0; xi < 16; ++xi)
        a[xi] = prepack_a<Arch, T>(bl, g.o, g.c, u + xi * g.o * g.c, g.c, 1, packed + xi * o_padded * g.c);
    wino::over_chunks(g.tiles(), chunk, team, [&](int64_t t0, int64_t cnt, int tid) {
        T* v = work + tid * per_thread;
        T* m = v + 16 * g.c * chunk;
        T* line = m + 16 * g.o * chunk;
        wino::input_transform(g, x, t0, cnt, v, chunk, line);
        for (int xi = 0; xi < 16; ++xi)
            gemm_from<Arch, T>(bl, g.o, cnt, g.c, a[xi], strided_b<Arch, T>{v + xi * g.c * chunk, chunk, 1},
                               m + xi * g.o * chunk, chunk, false, 1);
        wino::output_transform(g, m, chunk, t0, cnt, y, bias, line);
    });
}
// [end conv rung 4]

// gw (o, c, 3, 3) of the convolution above (filters not strided) from the output's gradient dy
// (n, o, oh, ow) and its input x.
template <class Arch, class T>
void winograd_weight(const winograd_geometry& g, T* gw, const T* dy, const T* x, int nthreads) {
    const gemm_blocking_info& bl = gemm_blocking<Arch, T>();
    const int64_t chunk = wino::chunk_tiles<Arch, T>(g), size = 16 * g.o * g.c;
    const int team = team_size(nthreads);
    T* du = thread_buffer<Arch, T, 11>().get(static_cast<std::size_t>(team * size));
    const int64_t per_thread = wino::work_size(g, chunk);
    T* work = thread_buffer<Arch, T, 12>().get(static_cast<std::size_t>(team * per_thread));
    std::fill(du, du + team * size, T(0));
    const int ran = wino::over_chunks(g.tiles(), chunk, team, [&](int64_t t0, int64_t cnt, int tid) {
        T* v = work + tid * per_thread;
        T* dm = v + 16 * g.c * chunk;
        T* line = dm + 16 * g.o * chunk;
        wino::input_transform(g, x, t0, cnt, v, chunk, line);
        wino::output_adjoint(g, dy, t0, cnt, dm, chunk, line);
        for (int xi = 0; xi < 16; ++xi)  // dU[xi] (O x C) += dM[xi] (O x cnt) @ V[xi]^T (cnt x C)
            gemm_from<Arch, T>(bl, g.o, g.c, cnt, strided_a<Arch, T>{dm + xi * g.o * chunk, chunk, 1},
                               strided_b<Arch, T>{v + xi * g.c * chunk, 1, chunk}, du + tid * size + xi * g.o * g.c,
                               g.c, true, 1);
    });
    for (int64_t o = 0; o < g.o; ++o)  // gw = G^T dU G, the threads' dU summed first
        for (int64_t c = 0; c < g.c; ++c) {
            T v[16], half[12];
            for (int xi = 0; xi < 16; ++xi) {
                T s = du[(xi * g.o + o) * g.c + c];
                for (int t = 1; t < ran; ++t) s += du[t * size + (xi * g.o + o) * g.c + c];
                v[xi] = s;
            }
            for (int s = 0; s < 4; ++s) wino::filter_adjoint_1d(v + s, int64_t(4), half + s, int64_t(4));  // rows
            T* f = gw + (o * g.c + c) * 9;
            for (int r = 0; r < 3; ++r) wino::filter_adjoint_1d(half + 4 * r, int64_t(1), f + 3 * r, int64_t(1));
        }
}

}  // namespace sg3
