// Design: 2-D convolution (NCHW, groups 1) as implicit GEMM: each pass is a product C = A B
// whose operands are never formed in global memory (no unfold copy); a block gathers a
// 64 x 16 tile of A and a 16 x 64 tile of B from the image, the filters or the output's
// gradient straight into shared memory, zero where a tap falls in the padding, and computes
// one 64 x 64 tile of C (a grid-stride loop over tiles). The three passes differ only in
// how an (row, depth) or (depth, column) index maps to memory (the structs below):
//
//   forward       M = N OH OW (an output pixel), N = O, K = C KH KW (a tap of the filter):
//                 A = the image's tap under each output pixel, B = the filters (O, K) read
//                 transposed; the bias is added as C is stored (the epilogue).
//   input grad    the transposed convolution, M = N H W (an input pixel), N = C, K = O KH
//                 KW: A = the output gradient at the pixel a tap maps this input pixel to,
//                 zero where the tap does not land on an output (stride and dilation: the
//                 offset is not a multiple of the stride, or falls outside), B = the filters.
//   weight grad   M = O, N = C KH KW, K = N OH OW: A = the output gradient (O, N OH OW),
//                 B = the image's tap under each output pixel. The whole reduction over the
//                 batch and the pixels runs inside the block owning an output tile, so no
//                 atomics and the same bits every run.
//
// float32 and float64 run on the CUDA cores: 128 threads, each 4 x 8 outputs of the tile
// (rows t % 16 + 16 i, columns t / 16 + 8 j, so neighbouring threads read neighbouring
// shared words and store neighbouring pixels), accumulating in the operands' type.
// float16 and bfloat16 run on the tensor cores as hgemm.cu does: 4 warps of 32 x 32, each
// 2 x 4 products of 16 x 8 x 16 (mma.cuh), accumulating in float32 and rounding once.
// Depthwise convolution (groups == C, O = C x multiplier) has little to share between
// channels, so it is direct: one thread per output (forward) or per input pixel (input
// gradient, the taps that land), and one block per filter tap for the weight gradient,
// reducing over the batch and pixels in shared memory (again no atomics).
//
// Parameters `p` (int64): [N, C, H, W, O, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW, has_bias];
// every tensor contiguous NCHW, the filters (O, C or 1, KH, KW).
#include "common.cuh"
#include "mma.cuh"

#define CV_TILE 64
#define CV_K 16
#define CV_PAD 8
#define CV_THREADS 128
#define DW_THREADS 256

// the convolution's sizes, from the parameters
struct Geometry {
  i64 n, c, h, w, o, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
  __device__ explicit Geometry(const Params& p)
      : n(p[0]), c(p[1]), h(p[2]), w(p[3]), o(p[4]), oh(p[5]), ow(p[6]), kh(p[7]), kw(p[8]),
        sh(p[9]), sw(p[10]), ph(p[11]), pw(p[12]), dh(p[13]), dw(p[14]) {}
};

// x[n, c, iy, ix] for the tap (i, j) of output pixel (oy, ox), or zero in the padding
template <typename T>
__device__ __forceinline__ T tap(const Geometry& g, const T* x, i64 n, i64 c, i64 oy, i64 ox, i64 i,
                                 i64 j) {
  const i64 iy = oy * g.sh - g.ph + i * g.dh, ix = ox * g.sw - g.pw + j * g.dw;
  return (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w) ? x[((n * g.c + c) * g.h + iy) * g.w + ix] : T(0.0f);
}

// g[n, o, oy, ox] for the output pixel the tap (i, j) of input pixel (y, x) lands on, or
// zero where it lands between outputs (stride) or outside them
template <typename T>
__device__ __forceinline__ T landing(const Geometry& g, const T* go, i64 n, i64 o, i64 y, i64 x, i64 i,
                                     i64 j) {
  const i64 ty = y + g.ph - i * g.dh, tx = x + g.pw - j * g.dw;
  if (ty < 0 || tx < 0 || ty % g.sh || tx % g.sw) return T(0.0f);
  const i64 oy = ty / g.sh, ox = tx / g.sw;
  return (oy < g.oh && ox < g.ow) ? go[((n * g.o + o) * g.oh + oy) * g.ow + ox] : T(0.0f);
}

// ---------------------------------------------------------------- the three products
// Each gives its sizes (M, N, K), a(m, k), b(k, n), store(m, n, value), and which way its
// operands lie contiguous in memory (A_ALONG_K, B_ALONG_K: the tile loads walk that way).

template <typename T>
struct Forward {
  Geometry g;
  T* y;
  const T *x, *w, *bias;
  static constexpr bool A_ALONG_K = false, B_ALONG_K = true;
  __device__ i64 M() const { return g.n * g.oh * g.ow; }
  __device__ i64 N() const { return g.o; }
  __device__ i64 K() const { return g.c * g.kh * g.kw; }
  __device__ T a(i64 m, i64 k) const {
    const i64 pix = g.oh * g.ow, n = m / pix, p = m % pix, taps = g.kh * g.kw, r = k % taps;
    return tap(g, x, n, k / taps, p / g.ow, p % g.ow, r / g.kw, r % g.kw);
  }
  __device__ T b(i64 k, i64 o) const { return w[o * K() + k]; }
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
  static constexpr bool A_ALONG_K = false, B_ALONG_K = false;
  __device__ i64 M() const { return g.n * g.h * g.w; }
  __device__ i64 N() const { return g.c; }
  __device__ i64 K() const { return g.o * g.kh * g.kw; }
  __device__ T a(i64 m, i64 k) const {
    const i64 pix = g.h * g.w, n = m / pix, p = m % pix, taps = g.kh * g.kw, r = k % taps;
    return landing(g, go, n, k / taps, p / g.w, p % g.w, r / g.kw, r % g.kw);
  }
  __device__ T b(i64 k, i64 c) const {
    const i64 taps = g.kh * g.kw;
    return w[((k / taps) * g.c + c) * taps + k % taps];
  }
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
  static constexpr bool A_ALONG_K = true, B_ALONG_K = true;
  __device__ i64 M() const { return g.o; }
  __device__ i64 N() const { return g.c * g.kh * g.kw; }
  __device__ i64 K() const { return g.n * g.oh * g.ow; }
  __device__ T a(i64 o, i64 k) const {
    const i64 pix = g.oh * g.ow;
    return go[((k / pix) * g.o + o) * pix + k % pix];
  }
  __device__ T b(i64 k, i64 q) const {
    const i64 pix = g.oh * g.ow, p = k % pix, taps = g.kh * g.kw, r = q % taps;
    return tap(g, x, k / pix, q / taps, p / g.ow, p % g.ow, r / g.kw, r % g.kw);
  }
  template <typename A>
  __device__ void store(i64 o, i64 q, A v) const { gw[o * N() + q] = T(v); }
};

// ---------------------------------------------------------------- the tile loops

// the tile of A (rows m0.., depths k0..) and of B (depths k0.., columns n0..) into shared
// memory as U, element (r, k) of A at sa(r, k) and (k, c) of B at sb(k, c); zero past the edges
template <typename U, typename P, typename SA, typename SB>
__device__ __forceinline__ void load_tiles(const P& pb, i64 m0, i64 n0, i64 k0, i64 M, i64 N, i64 K, SA sa,
                                           SB sb) {
  for (int e = (int)threadIdx.x; e < CV_TILE * CV_K; e += CV_THREADS) {
    // consecutive threads walk the way the operand is contiguous in memory (coalesced)
    int r = e % CV_TILE, k = e / CV_TILE;
    if constexpr (P::A_ALONG_K) r = e / CV_K, k = e % CV_K;
    sa(r, k) = (m0 + r < M && k0 + k < K) ? U(pb.a(m0 + r, k0 + k)) : U(0.0f);
    int c = e % CV_TILE, kb = e / CV_TILE;
    if constexpr (P::B_ALONG_K) c = e / CV_K, kb = e % CV_K;
    sb(kb, c) = (k0 + kb < K && n0 + c < N) ? U(pb.b(k0 + kb, n0 + c)) : U(0.0f);
  }
}

// float32 and float64 on the CUDA cores: 4 x 8 outputs per thread
template <typename T, typename P>
__device__ void gemm_simt(const P& pb) {
  __shared__ T as[CV_K][CV_TILE + 1];  // + 1: a column walk (A_ALONG_K) hits 32 banks
  __shared__ T bs[CV_K][CV_TILE + 1];
  const i64 M = pb.M(), N = pb.N(), K = pb.K();
  const i64 tiles_m = (M + CV_TILE - 1) / CV_TILE, tiles_n = (N + CV_TILE - 1) / CV_TILE;
  const int tm = threadIdx.x % 16, tn = threadIdx.x / 16;
  for (i64 tile = blockIdx.x; tile < tiles_m * tiles_n; tile += gridDim.x) {
    const i64 m0 = (tile / tiles_n) * CV_TILE, n0 = (tile % tiles_n) * CV_TILE;
    T acc[4][8];
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 8; j++) acc[i][j] = T(0);
    for (i64 k0 = 0; k0 < K; k0 += CV_K) {
      load_tiles<T>(pb, m0, n0, k0, M, N, K, [&](int r, int k) -> T& { return as[k][r]; },
                    [&](int k, int c) -> T& { return bs[k][c]; });
      __syncthreads();
      for (int k = 0; k < CV_K; k++) {
        T ra[4], rb[8];
        for (int i = 0; i < 4; i++) ra[i] = as[k][tm + 16 * i];
        for (int j = 0; j < 8; j++) rb[j] = bs[k][tn + 8 * j];
        for (int i = 0; i < 4; i++)
          for (int j = 0; j < 8; j++) acc[i][j] += ra[i] * rb[j];
      }
      __syncthreads();
    }
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 8; j++) {
        const i64 m = m0 + tm + 16 * i, n = n0 + tn + 8 * j;
        if (m < M && n < N) pb.store(m, n, acc[i][j]);
      }
  }
}

// float16 and bfloat16 on the tensor cores: each warp a 32 x 32 quarter of the tile
template <typename T, typename P>
__device__ void gemm_mma(const P& pb) {
  __shared__ T as[CV_TILE][CV_K + CV_PAD];
  __shared__ T bs[CV_K][CV_TILE + CV_PAD];
  const i64 M = pb.M(), N = pb.N(), K = pb.K();
  const i64 tiles_m = (M + CV_TILE - 1) / CV_TILE, tiles_n = (N + CV_TILE - 1) / CV_TILE;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int wr = (warp >> 1) * 32, wc = (warp & 1) * 32;
  for (i64 tile = blockIdx.x; tile < tiles_m * tiles_n; tile += gridDim.x) {
    const i64 m0 = (tile / tiles_n) * CV_TILE, n0 = (tile % tiles_n) * CV_TILE;
    float acc[2][4][4] = {};
    for (i64 k0 = 0; k0 < K; k0 += CV_K) {
      load_tiles<T>(pb, m0, n0, k0, M, N, K, [&](int r, int k) -> T& { return as[r][k]; },
                    [&](int k, int c) -> T& { return bs[k][c]; });
      __syncthreads();
      for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++)
          mma_16x8x16(acc[i][j], &as[wr + 16 * i][0], CV_K + CV_PAD, &bs[0][wc + 8 * j], CV_TILE + CV_PAD, lane);
      __syncthreads();
    }
    const int g = lane >> 2, q = 2 * (lane & 3);
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 4; j++)
        for (int e = 0; e < 4; e++) {
          const i64 r = m0 + wr + 16 * i + g + (e >= 2 ? 8 : 0), c = n0 + wc + 8 * j + q + (e & 1);
          if (r < M && c < N) pb.store(r, c, acc[i][j][e]);
        }
  }
}

template <typename T, typename P>
__device__ __forceinline__ void gemm(const P& pb) {
  if constexpr (is_float<T>::value && sizeof(T) == 2) gemm_mma<T>(pb);
  else gemm_simt<T>(pb);
}

template <typename T>
__global__ void conv2d_forward(const Params p, T* __restrict__ y, const T* __restrict__ x,
                               const T* __restrict__ w, const T* __restrict__ bias) {
  gemm<T>(Forward<T>{Geometry(p), y, x, w, p[15] ? bias : nullptr});
}

template <typename T>
__global__ void conv2d_input_grad(const Params p, T* __restrict__ gx, const T* __restrict__ go,
                                  const T* __restrict__ w) {
  gemm<T>(InputGrad<T>{Geometry(p), gx, go, w});
}

template <typename T>
__global__ void conv2d_weight_grad(const Params p, T* __restrict__ gw, const T* __restrict__ go,
                                   const T* __restrict__ x) {
  gemm<T>(WeightGrad<T>{Geometry(p), gw, go, x});
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
    const i64 ox = e % g.ow, oy = (e / g.ow) % g.oh, o = (e / (g.ow * g.oh)) % g.o, n = e / (g.ow * g.oh * g.o);
    A s = p[15] ? (A)bias[o] : A(0);
    for (i64 i = 0; i < g.kh; i++)
      for (i64 j = 0; j < g.kw; j++) s += (A)tap(g, x, n, o / mult, oy, ox, i, j) * (A)w[(o * g.kh + i) * g.kw + j];
    y[e] = T(s);
  }
}

template <typename T>
__global__ void depthwise_input_grad(const Params p, T* __restrict__ gx, const T* __restrict__ go,
                                     const T* __restrict__ w) {
  typedef typename acc_of<T>::type A;
  const Geometry g(p);
  const i64 mult = g.o / g.c, total = g.n * g.c * g.h * g.w;
  for (i64 e = first_index(); e < total; e += grid_step()) {
    const i64 x = e % g.w, y = (e / g.w) % g.h, c = (e / (g.w * g.h)) % g.c, n = e / (g.w * g.h * g.c);
    A s = A(0);
    for (i64 o = c * mult; o < (c + 1) * mult; o++)
      for (i64 i = 0; i < g.kh; i++)
        for (i64 j = 0; j < g.kw; j++)
          s += (A)landing(g, go, n, o, y, x, i, j) * (A)w[(o * g.kh + i) * g.kw + j];
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
      const i64 n = e / pix, q = e % pix;
      s += (A)go[(n * g.o + o) * pix + q] * (A)tap(g, x, n, o / mult, q / g.ow, q % g.ow, i, j);
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
