// Design: 2-D convolution (NCHW, groups 1) as implicit GEMM, a ladder of rungs each adding
// one idea to the one before (`Rung`, a kernel's second template argument). Each pass is a
// product C = A B whose operands are never formed in global memory (no unfold copy); only
// how a row, a column or a depth index maps to memory differs between them (the structs
// below):
//
//   forward       M = N OH OW (an output pixel), N = O, K = C KH KW (a tap of the filter):
//                 A = the image's tap under each output pixel, B = the filters (O, K) read
//                 transposed; the bias is added as C is stored (the epilogue).
//   input grad    the transposed convolution, M = N H W (an input pixel), N = C, K = O KH
//                 KW: A = the output gradient at the pixel a tap maps this input pixel to,
//                 zero where the tap does not land on an output (stride and dilation: the
//                 offset is not a multiple of the stride, or falls outside), B = the filters.
//   weight grad   M = O, N = C KH KW, K = N OH OW: A = the output gradient (O, N OH OW),
//                 B = the image's tap under each output pixel.
//
// Each index splits into a key once (`row`, `col`, `depth`: a Pixel, a Tap or an offset),
// and an operand element is read from a row's key and a depth's (`a`, `b`). The rungs:
//
//   DIRECT     a thread per output of C, looping over the whole depth: the direct
//              convolution, every operand read from global memory.
//   IMPLICIT   a block per 64 x 64 tile of C: it gathers 64 x 16 tiles of A and 16 x 64 of
//              B into shared memory (zero in the padding) and multiplies them there, each
//              element's keys computed from its indices (64-bit divisions per element).
//   OFFSETS    the tile's 64 row keys and 64 column keys are computed once per tile, and
//              each k-tile's 16 depth keys once, into shared tables: the gather divides no
//              more (except the input gradient's stride test, where the stride is not 1).
//   PIPELINED  two shared buffers: the next k-tile's loads are in flight (in registers)
//              while this one is multiplied, one barrier per k-tile.
//   SPLIT_K    where the tiles do not fill the GPU (the weight gradient of the early
//              layers: O x C KH KW is small, K = N OH OW large), each tile's depth is split
//              over blocks that write their partial tiles to a workspace, and a second
//              launch (phase 1) folds the parts in a fixed order: no atomics, the same bits
//              every run.
//
// float32 and float64 multiply on the CUDA cores (Simt), float16 and bfloat16 on the tensor
// cores (Mma, mma.cuh's 16 x 8 x 16), accumulating in float32 and rounding once.
// Depthwise convolution (groups == C, O = C x multiplier) has little to share between
// channels, so it is direct: one thread per output (forward) or per input pixel (input
// gradient, the taps that land), and one block per filter tap for the weight gradient,
// reducing over the batch and pixels in shared memory (again no atomics).
//
// Parameters `p` (int64): [N, C, H, W, O, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW, has_bias,
// parts, part depth, phase] (the last three: SPLIT_K's parts, each part's depth, a multiple
// of CV_K, and 0 for the parts or 1 for the fold; 1, K, 0 otherwise); every tensor
// contiguous NCHW, the filters (O, C or 1, KH, KW).
#include "common.cuh"
#include "mma.cuh"

#define CV_TILE 64
#define CV_K 16
#define CV_PAD 8
#define CV_THREADS 128
#define CV_LOADS (CV_TILE * CV_K / CV_THREADS)  // each thread's elements of an operand's tile
#define DW_THREADS 256

enum Rung { DIRECT = 0, IMPLICIT = 1, OFFSETS = 2, PIPELINED = 3, SPLIT_K = 4 };

// the convolution's sizes, from the parameters
struct Geometry {
  i64 n, c, h, w, o, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
  __device__ explicit Geometry(const Params& p)
      : n(p[0]), c(p[1]), h(p[2]), w(p[3]), o(p[4]), oh(p[5]), ow(p[6]), kh(p[7]), kw(p[8]),
        sh(p[9]), sw(p[10]), ph(p[11]), pw(p[12]), dh(p[13]), dw(p[14]) {}
};

// a pixel's key: `base` its image's offset in the tensor gathered from, (y, x) the corner of
// its window there, `at` its own offset in the output gradient (the weight gradient's A)
struct Pixel {
  i64 base, at, y, x;
};

// a filter tap's key: `off` its channel's offset in the tensor gathered from, (dy, dx) its
// place in the window, `w` its offset among the filters
struct Tap {
  i64 off, w, dy, dx;
};

// x at the tap t of the pixel p's window, or zero in the padding
template <typename T>
__device__ __forceinline__ T gather(const Geometry& g, const T* x, const Pixel& p, const Tap& t) {
  const i64 iy = p.y + t.dy, ix = p.x + t.dx;
  return (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w) ? x[p.base + t.off + iy * g.w + ix] : T(0.0f);
}

// the key of output pixel m (N OH OW of them) in an image of `channels` channels
__device__ __forceinline__ Pixel output_pixel(const Geometry& g, i64 m, i64 channels) {
  const i64 pix = g.oh * g.ow, n = m / pix, p = m % pix;
  return {n * channels * g.h * g.w, n * g.o * pix + p, (p / g.ow) * g.sh - g.ph, (p % g.ow) * g.sw - g.pw};
}

// the key of tap (i, j) of a channel at `off`, with `filter` its offset among the filters
__device__ __forceinline__ Tap window_tap(const Geometry& g, i64 off, i64 i, i64 j, i64 filter = 0) {
  return {off, filter, i * g.dh, j * g.dw};
}

// the key of tap k (C KH KW, or O KH KW, of them) in a plane of `plane` elements
__device__ __forceinline__ Tap filter_tap(const Geometry& g, i64 k, i64 plane, i64 filter) {
  const i64 taps = g.kh * g.kw, r = k % taps;
  return window_tap(g, (k / taps) * plane, r / g.kw, r % g.kw, filter);
}

// ---------------------------------------------------------------- the three products
// Each gives its sizes (M, N, K), the keys of a row, a column and a depth (`Row`, `Col`,
// `Depth`), a(row, depth), b(depth, col), store(m, n, value), and which way its operands lie
// contiguous in memory (A_ALONG_K, B_ALONG_K: the tile loads walk that way).

template <typename T>
struct Forward {
  Geometry g;
  T* y;
  const T *x, *w, *bias;
  typedef Pixel Row;
  typedef i64 Col;
  typedef Tap Depth;
  static constexpr bool A_ALONG_K = false, B_ALONG_K = true;
  __device__ i64 M() const { return g.n * g.oh * g.ow; }
  __device__ i64 N() const { return g.o; }
  __device__ i64 K() const { return g.c * g.kh * g.kw; }
  __device__ Pixel row(i64 m) const { return output_pixel(g, m, g.c); }
  __device__ i64 col(i64 o) const { return o * K(); }
  __device__ Tap depth(i64 k) const { return filter_tap(g, k, g.h * g.w, k); }
  __device__ T a(const Pixel& p, const Tap& t) const { return gather(g, x, p, t); }
  __device__ T b(const Tap& t, i64 col) const { return w[col + t.w]; }
  template <typename A>
  __device__ void store(i64 m, i64 o, A v) const {
    const i64 pix = g.oh * g.ow, n = m / pix, p = m % pix;
    y[(n * g.o + o) * pix + p] = T(bias ? v + (A)bias[o] : v);
  }
};

template <typename T>
struct InputGrad {
  Geometry g;
  T* gx;
  const T *go, *w;
  typedef Pixel Row;
  typedef i64 Col;
  typedef Tap Depth;
  static constexpr bool A_ALONG_K = false, B_ALONG_K = false;
  __device__ i64 M() const { return g.n * g.h * g.w; }
  __device__ i64 N() const { return g.c; }
  __device__ i64 K() const { return g.o * g.kh * g.kw; }
  // input pixel m: (y, x) shifted by the padding, so that a tap's output is (y - dy, x - dx) / stride
  __device__ Pixel row(i64 m) const {
    const i64 pix = g.h * g.w, n = m / pix, p = m % pix;
    return {n * g.o * g.oh * g.ow, 0, p / g.w + g.ph, p % g.w + g.pw};
  }
  __device__ i64 col(i64 c) const { return c * g.kh * g.kw; }
  __device__ Tap depth(i64 k) const {
    const i64 taps = g.kh * g.kw;
    return filter_tap(g, k, g.oh * g.ow, (k / taps) * g.c * taps + k % taps);
  }
  __device__ T a(const Pixel& p, const Tap& t) const {
    i64 ty = p.y - t.dy, tx = p.x - t.dx;
    if (ty < 0 || tx < 0) return T(0.0f);
    if (g.sh > 1 || g.sw > 1) {
      if (ty % g.sh || tx % g.sw) return T(0.0f);
      ty /= g.sh, tx /= g.sw;
    }
    return (ty < g.oh && tx < g.ow) ? go[p.base + t.off + ty * g.ow + tx] : T(0.0f);
  }
  __device__ T b(const Tap& t, i64 col) const { return w[t.w + col]; }
  template <typename A>
  __device__ void store(i64 m, i64 c, A v) const {
    const i64 pix = g.h * g.w, n = m / pix;
    gx[(n * g.c + c) * pix + m % pix] = T(v);
  }
};

template <typename T>
struct WeightGrad {
  Geometry g;
  T* gw;
  const T *go, *x;
  typedef i64 Row;
  typedef Tap Col;
  typedef Pixel Depth;
  static constexpr bool A_ALONG_K = true, B_ALONG_K = true;
  __device__ i64 M() const { return g.o; }
  __device__ i64 N() const { return g.c * g.kh * g.kw; }
  __device__ i64 K() const { return g.n * g.oh * g.ow; }
  __device__ i64 row(i64 o) const { return o * g.oh * g.ow; }
  __device__ Tap col(i64 q) const { return filter_tap(g, q, g.h * g.w, q); }
  __device__ Pixel depth(i64 k) const { return output_pixel(g, k, g.c); }
  __device__ T a(i64 row, const Pixel& p) const { return go[p.at + row]; }
  __device__ T b(const Pixel& p, const Tap& t) const { return gather(g, x, p, t); }
  template <typename A>
  __device__ void store(i64 o, i64 q, A v) const { gw[o * N() + q] = T(v); }
};

// ---------------------------------------------------------------- the multiplying cores
// Each holds one thread's accumulators of a block's 64 x 64 tile: where an operand element
// lies in shared memory (ai, bi), `multiply` (one 16-deep k-tile) and `each` (this thread's
// outputs, tile-relative).

// float32 and float64 on the CUDA cores: 4 x 8 outputs per thread, rows t % 16 + 16 i and
// columns t / 16 + 8 j, so neighbouring threads read neighbouring shared words and store
// neighbouring pixels; accumulating in the operands' type
template <typename T>
struct Simt {
  typedef T Acc;
  static constexpr int A_WORDS = CV_K * (CV_TILE + 1), B_WORDS = CV_K * (CV_TILE + 1);
  // + 1: a column walk (A_ALONG_K) hits 32 banks
  __device__ static int ai(int r, int k) { return k * (CV_TILE + 1) + r; }
  __device__ static int bi(int k, int c) { return k * (CV_TILE + 1) + c; }
  T acc[4][8];
  __device__ void clear() {
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 8; j++) acc[i][j] = T(0);
  }
  __device__ void multiply(const T* as, const T* bs) {
    const int tm = threadIdx.x % 16, tn = threadIdx.x / 16;
    for (int k = 0; k < CV_K; k++) {
      T ra[4], rb[8];
      for (int i = 0; i < 4; i++) ra[i] = as[ai(tm + 16 * i, k)];
      for (int j = 0; j < 8; j++) rb[j] = bs[bi(k, tn + 8 * j)];
      for (int i = 0; i < 4; i++)
        for (int j = 0; j < 8; j++) acc[i][j] += ra[i] * rb[j];
    }
  }
  template <typename F>
  __device__ void each(F f) const {
    const int tm = threadIdx.x % 16, tn = threadIdx.x / 16;
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 8; j++) f(tm + 16 * i, tn + 8 * j, acc[i][j]);
  }
};

// float16 and bfloat16 on the tensor cores: each warp a 32 x 32 quarter of the tile, 2 x 4
// products of 16 x 8 x 16 (mma.cuh), accumulating in float32
template <typename T>
struct Mma {
  typedef float Acc;
  static constexpr int A_WORDS = CV_TILE * (CV_K + CV_PAD), B_WORDS = CV_K * (CV_TILE + CV_PAD);
  __device__ static int ai(int r, int k) { return r * (CV_K + CV_PAD) + k; }
  __device__ static int bi(int k, int c) { return k * (CV_TILE + CV_PAD) + c; }
  float acc[2][4][4];
  __device__ void clear() {
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 4; j++)
        for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;
  }
  __device__ static int warp_row() { return ((threadIdx.x >> 5) >> 1) * 32; }
  __device__ static int warp_col() { return ((threadIdx.x >> 5) & 1) * 32; }
  __device__ void multiply(const T* as, const T* bs) {
    const int lane = threadIdx.x & 31;
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 4; j++)
        mma_16x8x16(acc[i][j], as + ai(warp_row() + 16 * i, 0), CV_K + CV_PAD, bs + bi(0, warp_col() + 8 * j),
                    CV_TILE + CV_PAD, lane);
  }
  template <typename F>
  __device__ void each(F f) const {
    mma_each<2, 4>(acc, threadIdx.x & 31, [&](int r, int c, float v) { f(warp_row() + r, warp_col() + c, v); });
  }
};

template <typename T> struct core_of { typedef Simt<T> type; };
template <> struct core_of<half_t> { typedef Mma<half_t> type; };
template <> struct core_of<bf16_t> { typedef Mma<bf16_t> type; };
template <typename T> using acc_t = typename core_of<T>::type::Acc;

// ---------------------------------------------------------------- the rungs

// element e of an operand's 64 x 16 tile as (row or column, depth): consecutive threads walk
// the way the operand is contiguous in memory (coalesced)
template <bool ALONG_K>
__device__ __forceinline__ void place(int e, int& r, int& k) {
  if constexpr (ALONG_K) r = e / CV_K, k = e % CV_K;
  else r = e % CV_TILE, k = e / CV_TILE;
}

// DIRECT: a thread per output, the whole depth in a loop
template <typename T, typename P>
__device__ void direct(const P& pb) {
  const i64 M = pb.M(), N = pb.N(), K = pb.K();
  for (i64 e = first_index(); e < M * N; e += grid_step()) {
    const i64 m = e % M, n = e / M;  // neighbouring threads: neighbouring rows (pixels)
    const typename P::Row row = pb.row(m);
    const typename P::Col col = pb.col(n);
    acc_t<T> s = 0;
    for (i64 k = 0; k < K; k++) {
      const typename P::Depth d = pb.depth(k);
      s += (acc_t<T>)pb.a(row, d) * (acc_t<T>)pb.b(d, col);
    }
    pb.store(m, n, s);
  }
}

// IMPLICIT to SPLIT_K: a block per (tile, part of the depth), a grid-stride loop over them;
// with more than one part, the partial tiles go to `work` ([parts][M][N])
template <int R, typename T, typename P>
__device__ void tiled(const P& pb, i64 parts, i64 part_depth, acc_t<T>* work) {
  typedef typename core_of<T>::type Core;
  constexpr int BUFS = R >= PIPELINED ? 2 : 1;
  __shared__ T as[BUFS][Core::A_WORDS];
  __shared__ T bs[BUFS][Core::B_WORDS];
  __shared__ typename P::Row rows[CV_TILE];  // OFFSETS on: the tile's keys
  __shared__ typename P::Col cols[CV_TILE];
  __shared__ typename P::Depth depths[BUFS][CV_K];
  const i64 M = pb.M(), N = pb.N(), K = pb.K();
  const i64 tiles_m = (M + CV_TILE - 1) / CV_TILE, tiles_n = (N + CV_TILE - 1) / CV_TILE;
  const int t = threadIdx.x;
  for (i64 job = blockIdx.x; job < tiles_m * tiles_n * parts; job += gridDim.x) {
    const i64 tile = job / parts, part = job % parts;
    const i64 m0 = (tile / tiles_n) * CV_TILE, n0 = (tile % tiles_n) * CV_TILE;
    const i64 kb = part * part_depth, ke = K < kb + part_depth ? K : kb + part_depth;
    if constexpr (R >= OFFSETS) {
      if (t < CV_TILE && m0 + t < M) rows[t] = pb.row(m0 + t);
      if (t < CV_TILE && n0 + t < N) cols[t] = pb.col(n0 + t);
    }
    // the depth keys of the k-tile at k0 into depths[buf]
    auto keys = [&](i64 k0, int buf) {
      if (t < CV_K && k0 + t < ke) depths[buf][t] = pb.depth(k0 + t);
    };
    // this thread's elements of the k-tile at k0 (its keys in depths[buf]) into registers
    auto fetch = [&](i64 k0, int buf, T* ra, T* rb) {
      for (int j = 0; j < CV_LOADS; j++) {
        int r, k, c, kk;
        place<P::A_ALONG_K>(t + CV_THREADS * j, r, k);
        place<P::B_ALONG_K>(t + CV_THREADS * j, c, kk);
        ra[j] = T(0.0f);
        if (m0 + r < M && k0 + k < ke) {
          if constexpr (R >= OFFSETS) ra[j] = pb.a(rows[r], depths[buf][k]);
          else ra[j] = pb.a(pb.row(m0 + r), pb.depth(k0 + k));
        }
        rb[j] = T(0.0f);
        if (n0 + c < N && k0 + kk < ke) {
          if constexpr (R >= OFFSETS) rb[j] = pb.b(depths[buf][kk], cols[c]);
          else rb[j] = pb.b(pb.depth(k0 + kk), pb.col(n0 + c));
        }
      }
    };
    // ... and from registers into the shared tiles as[buf], bs[buf]
    auto put = [&](int buf, const T* ra, const T* rb) {
      for (int j = 0; j < CV_LOADS; j++) {
        int r, k, c, kk;
        place<P::A_ALONG_K>(t + CV_THREADS * j, r, k);
        place<P::B_ALONG_K>(t + CV_THREADS * j, c, kk);
        as[buf][Core::ai(r, k)] = ra[j];
        bs[buf][Core::bi(kk, c)] = rb[j];
      }
    };
    Core core;
    core.clear();
    T ra[CV_LOADS], rb[CV_LOADS];
    if constexpr (R < PIPELINED) {
      for (i64 k0 = kb; k0 < ke; k0 += CV_K) {
        if constexpr (R == OFFSETS) {
          keys(k0, 0);
          __syncthreads();
        }
        fetch(k0, 0, ra, rb);
        put(0, ra, rb);
        __syncthreads();
        core.multiply(as[0], bs[0]);
        __syncthreads();
      }
    } else {
      keys(kb, 0);
      __syncthreads();  // the tables
      fetch(kb, 0, ra, rb);
      put(0, ra, rb);
      keys(kb + CV_K, 1);
      __syncthreads();
      int cur = 0;
      for (i64 k0 = kb; k0 < ke; k0 += CV_K, cur ^= 1) {
        const bool next = k0 + CV_K < ke;
        if (next) fetch(k0 + CV_K, cur ^ 1, ra, rb);  // in flight while this k-tile multiplies
        core.multiply(as[cur], bs[cur]);
        if (next) {
          put(cur ^ 1, ra, rb);  // the buffer the last k-tile used: done with since the barrier
          keys(k0 + 2 * CV_K, cur);
        }
        __syncthreads();
      }
    }
    core.each([&](int r, int c, acc_t<T> v) {
      const i64 m = m0 + r, n = n0 + c;
      if (m < M && n < N) {
        if (parts == 1) pb.store(m, n, v);
        else work[(part * M + m) * N + n] = v;
      }
    });
  }
}

// SPLIT_K's second launch: each output the sum of its parts, in order
template <typename T, typename P>
__device__ void fold(const P& pb, i64 parts, const acc_t<T>* work) {
  const i64 M = pb.M(), N = pb.N();
  for (i64 e = first_index(); e < M * N; e += grid_step()) {
    acc_t<T> s = work[e];
    for (i64 part = 1; part < parts; part++) s += work[part * M * N + e];
    pb.store(e / N, e % N, s);
  }
}

template <int R, typename T, typename P>
__device__ __forceinline__ void run(const P& pb, const Params& p, acc_t<T>* work) {
  if constexpr (R == DIRECT) direct<T>(pb);
  else if (p[18]) fold<T>(pb, p[16], work);
  else tiled<R, T>(pb, p[16], p[17], work);
}

template <typename T, int R>
__global__ void conv2d_forward(const Params p, T* __restrict__ y, const T* __restrict__ x,
                               const T* __restrict__ w, const T* __restrict__ bias, acc_t<T>* __restrict__ work) {
  run<R, T>(Forward<T>{Geometry(p), y, x, w, p[15] ? bias : nullptr}, p, work);
}

template <typename T, int R>
__global__ void conv2d_input_grad(const Params p, T* __restrict__ gx, const T* __restrict__ go,
                                  const T* __restrict__ w, acc_t<T>* __restrict__ work) {
  run<R, T>(InputGrad<T>{Geometry(p), gx, go, w}, p, work);
}

template <typename T, int R>
__global__ void conv2d_weight_grad(const Params p, T* __restrict__ gw, const T* __restrict__ go,
                                   const T* __restrict__ x, acc_t<T>* __restrict__ work) {
  run<R, T>(WeightGrad<T>{Geometry(p), gw, go, x}, p, work);
}

// ---------------------------------------------------------------- depthwise (direct)
// O = C x multiplier; output channel o reads input channel o / multiplier

template <typename T>
__global__ void depthwise_forward(const Params p, T* __restrict__ y, const T* __restrict__ x,
                                  const T* __restrict__ w, const T* __restrict__ bias) {
  typedef typename acc_of<T>::type A;
  const Geometry g(p);
  const i64 mult = g.o / g.c, total = g.n * g.o * g.oh * g.ow;
  for (i64 e = first_index(); e < total; e += grid_step()) {
    const i64 pix = g.oh * g.ow, o = (e / pix) % g.o, n = e / (pix * g.o);
    const Pixel px = output_pixel(g, n * pix + e % pix, g.c);
    A s = p[15] ? (A)bias[o] : A(0);
    for (i64 i = 0; i < g.kh; i++)
      for (i64 j = 0; j < g.kw; j++)
        s += (A)gather(g, x, px, window_tap(g, (o / mult) * g.h * g.w, i, j)) * (A)w[(o * g.kh + i) * g.kw + j];
    y[e] = T(s);
  }
}

template <typename T>
__global__ void depthwise_input_grad(const Params p, T* __restrict__ gx, const T* __restrict__ go,
                                     const T* __restrict__ w) {
  typedef typename acc_of<T>::type A;
  const Geometry g(p);
  const i64 mult = g.o / g.c, total = g.n * g.c * g.h * g.w;
  const InputGrad<T> pass{g, gx, go, w};
  for (i64 e = first_index(); e < total; e += grid_step()) {
    const i64 pix = g.h * g.w, c = (e / pix) % g.c, n = e / (pix * g.c);
    const Pixel px = pass.row(n * pix + e % pix);
    A s = A(0);
    for (i64 o = c * mult; o < (c + 1) * mult; o++)
      for (i64 i = 0; i < g.kh; i++)
        for (i64 j = 0; j < g.kw; j++)
          s += (A)pass.a(px, window_tap(g, o * g.oh * g.ow, i, j)) * (A)w[(o * g.kh + i) * g.kw + j];
    gx[e] = T(s);
  }
}

// one block per filter tap (o, i, j): its threads stride over the batch and the output
// pixels, then halve a shared array of partial sums (a fixed order: the same bits each run)
template <typename T>
__global__ void depthwise_weight_grad(const Params p, T* __restrict__ gw, const T* __restrict__ go,
                                      const T* __restrict__ x) {
  typedef typename acc_of<T>::type A;
  __shared__ A part[DW_THREADS];
  const Geometry g(p);
  const i64 mult = g.o / g.c, pix = g.oh * g.ow, taps = g.kh * g.kw;
  for (i64 b = blockIdx.x; b < g.o * taps; b += gridDim.x) {
    const i64 o = b / taps, i = (b % taps) / g.kw, j = b % g.kw;
    A s = A(0);
    for (i64 e = threadIdx.x; e < g.n * pix; e += DW_THREADS) {
      const Pixel px = output_pixel(g, e, g.c);
      s += (A)go[px.at + o * pix] * (A)gather(g, x, px, window_tap(g, (o / mult) * g.h * g.w, i, j));
    }
    part[threadIdx.x] = s;
    __syncthreads();
    for (int half = DW_THREADS / 2; half > 0; half /= 2) {
      if ((int)threadIdx.x < half) part[threadIdx.x] += part[threadIdx.x + half];
      __syncthreads();
    }
    if (threadIdx.x == 0) gw[b] = T(part[0]);
    __syncthreads();  // part is refilled for the next tap
  }
}
