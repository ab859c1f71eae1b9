// Design: the tensor-core ladder after hgemm.cu's first rung, float16 and bfloat16 with
// float32 accumulation (the result rounded once to the operands' type), each rung changing
// one thing from the one before:
//
//  a ldmatrix   hgemm's tiles (64 x 64 per block of 4 warps, 32 x 32 per warp, K steps of
//               16), but each warp loads its fragments with ldmatrix.x4 (and .trans for B:
//               shared B is K-major, the mma wants it N-major), four 8 x 8 matrices per
//               instruction, instead of 2-byte loads element by element.
//  b cp_async   rung a with the tiles copied global -> shared by 16-byte cp.async, a
//               3-stage pipeline (commit_group / wait_group: tile k + 2 is in flight while
//               tile k is computed) and K steps of 32. A 16-byte copy needs its 8 elements
//               inside the matrix and a 16-byte aligned source; any other chunk (an edge, or
//               K or N not a multiple of 8) is copied element by element, so any sizes work.
//  c wide       rung b with larger tiles: 128 x 128 per block of 4 warps, 64 x 64 per warp
//               (32 mma per 4 + 4 fragment loads, against 8 per 2 + 2), 4 stages of K 16
//               (the static 48 KiB of shared memory holds 4 of them).
//  d wgmma      Hopper's warpgroup MMA (sm_90a only): one warpgroup (4 warps, 128 threads)
//               per 64 x 128 tile of C, wgmma.mma_async.m64n128k16 per K step of 16, both
//               operands read by the tensor cores straight from shared memory through
//               matrix descriptors (no fragments in registers but the float32
//               accumulators). A and B are staged in the no-swizzle K-major layout of 8 x 8
//               core matrices (B transposed on the way in), K chunks of 64, one stage.
//
// Each PTX instruction sits behind a small device function: the instruction where
// __CUDA_ARCH__ >= 800, and on the host emulation (tools/cuda_on_host, whose threads are
// fibers that switch only at a barrier) code that computes the same values. ldmatrix's
// helpers take the tile's base and row stride and compute the lane's own address (the real
// path) or read the lane's own elements (the emulation); the mma's emulation meets the
// warp's fragments in memory between two barriers, so the fragments' register layout is
// what is checked there too; cp.async's is a plain copy, commit and wait no-ops. wgmma's
// emulation computes each thread's accumulators from shared memory read through the
// descriptors' own fields (wg_element): the layout and the encoding are checked there.
// What hgemm.cu's rung has too comes from mma.cuh: the mma instruction (mma_sync_16x8x16),
// C's store from the accumulators (store_c) and rung a's tile copies (copy_tile).
//
// Rungs a to c pad shared rows by 8 elements (16 bytes): the eight rows an 8 x 8 matrix load
// touches fall in different banks, and every row stays 16-byte aligned for ldmatrix and
// cp.async.
//
// Parameters `p` (int64): [n, k, m, batches]; A (batches, n, k), B (batches, k, m) and C
// (batches, n, m) contiguous. One block per tile of C, a grid-stride loop over the tiles of
// every batch.
#include "common.cuh"
#include "mma.cuh"

#define TC_PAD 8

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define TC_PTX 1
// the shared-memory address of a generic pointer (what ldmatrix and cp.async take)
__device__ __forceinline__ unsigned smem_addr(const void* p) {
  unsigned a;
  asm("{ .reg .u64 s; cvta.to.shared.u64 s, %1; cvt.u32.u64 %0, s; }" : "=r"(a) : "l"(p));
  return a;
}
#else
#define TC_PTX 0
#endif

// r: the four 8 x 8 matrices of the 16 x 16 tile at `tile` (rows ld elements apart), in
// the mma's A layout: r[0] rows 0-7, r[1] rows 8-15 (columns 0-7), r[2] and r[3] the same
// for columns 8-15; lane l holds row l / 4, columns 2 (l % 4) and + 1 of each.
template <typename T>
__device__ __forceinline__ void ldmatrix_x4(unsigned* r, const T* tile, int ld, int lane) {
#if TC_PTX
  // lanes 8j .. 8j + 7 give the row addresses of matrix j
  const T* row = tile + (lane & 15) * ld + (lane >> 4) * 8;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(row)));
#else
  for (int j = 0; j < 4; j++) {
    const T* e = tile + ((j & 1) * 8 + (lane >> 2)) * ld + (j >> 1) * 8 + 2 * (lane & 3);
    r[j] = pack2(e[0].bits, e[1].bits);
  }
#endif
}

// the same four matrices transposed: for a K x N tile of B (16 x 16, rows ld apart), r[0]
// and r[1] are the mma's B fragment of columns 0-7 (K 0-7, then 8-15), r[2] and r[3] of
// columns 8-15; lane l holds column l / 4, rows 2 (l % 4) and + 1 of each.
template <typename T>
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned* r, const T* tile, int ld, int lane) {
#if TC_PTX
  const T* row = tile + (lane & 15) * ld + (lane >> 4) * 8;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(row)));
#else
  for (int j = 0; j < 4; j++) {
    const T* e = tile + ((j & 1) * 8 + 2 * (lane & 3)) * ld + (j >> 1) * 8 + (lane >> 2);
    r[j] = pack2(e[0].bits, e[ld].bits);
  }
#endif
}

// c (the lane's four accumulators of a 16 x 8 tile: rows l / 4 and + 8, columns 2 (l % 4)
// and + 1) += A B, from the fragments a (ldmatrix_x4's) and b (two of ldmatrix_x4_trans's)
// rather than from shared memory as mma.cuh's mma_16x8x16
template <typename T>
__device__ __forceinline__ void mma_16x8x16(float* c, const unsigned* a, const unsigned* b, int lane) {
#if TC_PTX
  mma_sync_16x8x16<T>(c, a, b);  // mma.cuh's
#else
  // the warp's fragments meet in memory: every thread of the block calls this together, and
  // the barriers order the writes before the reads, and the reads before the next writes
  static unsigned frags[32][32][6];  // [warp][lane][a0-a3, b0, b1]
  unsigned(*w)[6] = frags[threadIdx.x >> 5];
  for (int i = 0; i < 4; i++) w[lane][i] = a[i];
  w[lane][4] = b[0];
  w[lane][5] = b[1];
  __syncthreads();
  auto element = [](unsigned reg, int high) { return (float)T::of_bits((unsigned short)(reg >> (16 * high))); };
  const int g = lane >> 2, q = 2 * (lane & 3);
  for (int e = 0; e < 4; e++) {
    const int r = g + (e >= 2 ? 8 : 0), col = q + (e & 1);
    float s = 0.0f;
    for (int kk = 0; kk < 16; kk++) {
      // A[r][kk] is held by lane (r % 8) * 4 + (kk % 8) / 2, in a0-a3 by (r >= 8) + 2 (kk >= 8)
      const float x = element(w[(r & 7) * 4 + ((kk & 7) >> 1)][(r >> 3) + 2 * (kk >> 3)], kk & 1);
      // B[kk][col] by lane col * 4 + (kk % 8) / 2, in b0 or b1 by kk >= 8
      const float y = element(w[col * 4 + ((kk & 7) >> 1)][4 + (kk >> 3)], kk & 1);
      s += x * y;
    }
    c[e] += s;
  }
  __syncthreads();
#endif
}

// 16 bytes global -> shared, asynchronously (the source 16-byte aligned)
__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
#if TC_PTX
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" : : "r"(smem_addr(dst)), "l"(src));
#else
  for (int i = 0; i < 16; i++) static_cast<char*>(dst)[i] = static_cast<const char*>(src)[i];
#endif
}

// the cp.async copies issued since the last commit, as one group
__device__ __forceinline__ void cp_async_commit() {
#if TC_PTX
  asm volatile("cp.async.commit_group;");
#endif
}

// wait until at most N committed groups are still in flight
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if TC_PTX
  asm volatile("cp.async.wait_group %0;" : : "n"(N));
#endif
}

// the 8 elements of row `row`, columns col .. col + 7, of a rows x cols matrix (rows ld
// apart) into dst, zeros outside it: one 16-byte cp.async where all 8 are inside and the
// source is aligned, else element by element
template <typename T>
__device__ __forceinline__ void copy_chunk(T* dst, const T* base, i64 row, i64 rows, i64 col, i64 cols) {
  const T* src = base + row * cols + col;
  if (row < rows && col + 8 <= cols && ((unsigned long long)src & 15) == 0) {
    cp_async16(dst, src);
    return;
  }
  for (int e = 0; e < 8; e++) dst[e] = (row < rows && col + e < cols) ? src[e] : T(0.0f);
}

// one K step of 16 for a warp's WM x WN tile: A's fragments from at (the warp's rows, lda
// apart), B's from bt (the warp's columns, ldb apart)
template <typename T, int MI, int NI>
__device__ __forceinline__ void warp_k16(float (*acc)[NI][4], const T* at, int lda, const T* bt, int ldb,
                                         int lane) {
  unsigned fa[MI][4], fb[NI][2];
  for (int i = 0; i < MI; i++) ldmatrix_x4(fa[i], at + 16 * i * lda, lda, lane);
  for (int j = 0; j < NI; j += 2) {
    unsigned r[4];
    ldmatrix_x4_trans(r, bt + 8 * j, ldb, lane);
    fb[j][0] = r[0];
    fb[j][1] = r[1];
    fb[j + 1][0] = r[2];
    fb[j + 1][1] = r[3];
  }
  for (int i = 0; i < MI; i++)
    for (int j = 0; j < NI; j++) mma_16x8x16<T>(acc[i][j], fa[i], fb[j], lane);
}

// ---------------------------------------------------------------- a ldmatrix
// 128 threads per block (4 warps, 2 x 2, each 32 x 32 of a 64 x 64 tile)
template <typename T>
__global__ void hgemm_ldmatrix(const Params p, T* __restrict__ out, const T* __restrict__ a,
                               const T* __restrict__ b) {
  constexpr int TILE = 64, BK = 16, LDA = BK + TC_PAD, LDB = TILE + TC_PAD, THREADS = 128;
  __shared__ __align__(16) T as[TILE * LDA];
  __shared__ __align__(16) T bs[BK * LDB];
  const i64 n = p[0], k = p[1], m = p[2], batches = p[3];
  const i64 tiles_n = (n + TILE - 1) / TILE, tiles_m = (m + TILE - 1) / TILE;
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const int wr = (warp >> 1) * 32, wc = (warp & 1) * 32;
  for (i64 tile = blockIdx.x; tile < batches * tiles_n * tiles_m; tile += gridDim.x) {
    const i64 batch = tile / (tiles_n * tiles_m), rest = tile % (tiles_n * tiles_m);
    const i64 row0 = (rest / tiles_m) * TILE, col0 = (rest % tiles_m) * TILE;
    const T* ab = a + batch * n * k;
    const T* bb = b + batch * k * m;
    float acc[2][4][4] = {};
    for (i64 k0 = 0; k0 < k; k0 += BK) {
      copy_tile<TILE, BK, THREADS>(as, LDA, ab, row0, n, k0, k);
      copy_tile<BK, TILE, THREADS>(bs, LDB, bb, k0, k, col0, m);
      __syncthreads();
      warp_k16<T, 2, 4>(acc, &as[wr * LDA], LDA, &bs[wc], LDB, lane);
      __syncthreads();
    }
    store_c<T, 2, 4>(out + batch * n * m, acc, row0 + wr, col0 + wc, n, m, lane);
  }
}

// ---------------------------------------------------------------- b, c: the pipelined body
// (BM / WM) x (BN / WN) warps, each a WM x WN tile of the block's BM x BN; STAGES tiles of
// K (BK each) in shared memory, STAGES - 1 of them in flight
template <typename T, int BM, int BN, int BK, int WM, int WN, int STAGES>
__device__ __forceinline__ void tc_pipelined(const Params& p, T* __restrict__ out, const T* __restrict__ a,
                                             const T* __restrict__ b) {
  constexpr int THREADS = (BM / WM) * (BN / WN) * 32, LDA = BK + TC_PAD, LDB = BN + TC_PAD;
  constexpr int MI = WM / 16, NI = WN / 8;
  static_assert(BK % 16 == 0 && WM % 16 == 0 && WN % 16 == 0 && STAGES >= 2, "mma tiling");
  __shared__ __align__(16) T as[STAGES][BM * LDA];
  __shared__ __align__(16) T bs[STAGES][BK * LDB];
  const i64 n = p[0], k = p[1], m = p[2], batches = p[3];
  const i64 tiles_n = (n + BM - 1) / BM, tiles_m = (m + BN - 1) / BN, ktiles = (k + BK - 1) / BK;
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const int wr = (warp / (BN / WN)) * WM, wc = (warp % (BN / WN)) * WN;
  for (i64 tile = blockIdx.x; tile < batches * tiles_n * tiles_m; tile += gridDim.x) {
    const i64 batch = tile / (tiles_n * tiles_m), rest = tile % (tiles_n * tiles_m);
    const i64 row0 = (rest / tiles_m) * BM, col0 = (rest % tiles_m) * BN;
    const T* ab = a + batch * n * k;
    const T* bb = b + batch * k * m;
    // K tile kt into stage s: 8-element chunks, consecutive threads along a row
    auto issue = [&](i64 kt, int s) {
      const i64 k0 = kt * BK;
      for (int e = t; e < BM * BK / 8; e += THREADS) {
        const int r = e / (BK / 8), c = (e % (BK / 8)) * 8;
        copy_chunk(&as[s][r * LDA + c], ab, row0 + r, n, k0 + c, k);
      }
      for (int e = t; e < BK * BN / 8; e += THREADS) {
        const int r = e / (BN / 8), c = (e % (BN / 8)) * 8;
        copy_chunk(&bs[s][r * LDB + c], bb + k0 * m, (i64)r, k - k0, col0 + c, m);
      }
    };
    float acc[MI][NI][4] = {};
    for (int s = 0; s < STAGES - 1; s++) {
      if (s < ktiles) issue(s, s);
      cp_async_commit();  // a group even when empty: the wait below counts groups
    }
    for (i64 kt = 0; kt < ktiles; kt++) {
      cp_async_wait<STAGES - 2>();  // this thread's copies of tile kt have landed
      __syncthreads();              // everyone's have; and stage kt - 1 is no longer read
      if (kt + STAGES - 1 < ktiles) issue(kt + STAGES - 1, (int)((kt + STAGES - 1) % STAGES));
      cp_async_commit();
      const int s = (int)(kt % STAGES);
      for (int kk = 0; kk < BK; kk += 16)
        warp_k16<T, MI, NI>(acc, &as[s][wr * LDA + kk], LDA, &bs[s][kk * LDB + wc], LDB, lane);
    }
    cp_async_wait<0>();
    __syncthreads();  // the next tile's first copies overwrite stages still being read
    store_c<T, MI, NI>(out + batch * n * m, acc, row0 + wr, col0 + wc, n, m, lane);
  }
}

// ---------------------------------------------------------------- b cp_async
// 128 threads per block (4 warps, 2 x 2, each 32 x 32 of a 64 x 64 tile); 3 stages of K 32
template <typename T>
__global__ void hgemm_cp_async(const Params p, T* __restrict__ out, const T* __restrict__ a,
                               const T* __restrict__ b) {
  tc_pipelined<T, 64, 64, 32, 32, 32, 3>(p, out, a, b);
}

// ---------------------------------------------------------------- c wide
// 128 threads per block (4 warps, 2 x 2, each 64 x 64 of a 128 x 128 tile); 4 stages of K 16
template <typename T>
__global__ void hgemm_wide(const Params p, T* __restrict__ out, const T* __restrict__ a,
                           const T* __restrict__ b) {
  tc_pipelined<T, 128, 128, 16, 64, 64, 4>(p, out, a, b);
}

// ---------------------------------------------------------------- d wgmma
// Hopper's warpgroup MMA: the arch-specific target only (sm_90a, compute_90a), for which
// NVRTC defines __CUDA_ARCH_FEAT_SM90_ALL; every other target compiles the emulation's twins
// (the runtime launches this rung only on a capability 9.0 GPU, or on the host emulation).
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define WG_PTX 1
#else
#define WG_PTX 0
#endif

// a warpgroup's tile of C (WG_M x WG_N), its K chunk in shared memory, and the byte distances
// of the no-swizzle K-major layout (WG_LBO between core matrices adjacent in K, WG_SBO
// between those adjacent in M or N)
constexpr int WG_M = 64, WG_N = 128, WG_BK = 64;
constexpr unsigned WG_LBO = 128, WG_SBO = 256;

// where element (r, k) of a ROWS x WG_BK operand tile (r along M or N, k along K) lies in
// shared memory, in elements: the K steps of 16 one after another (ROWS x 16 each); in a
// step, 8 x 8 core matrices (8 rows of 16 bytes, 128 contiguous bytes), the two of a row
// group WG_LBO apart, row groups WG_SBO apart
template <int ROWS>
__device__ __forceinline__ int wg_offset(int r, int k) {
  return (k >> 4) * (ROWS * 16) + (r >> 3) * (int)(WG_SBO / 2) + ((k >> 3) & 1) * (int)(WG_LBO / 2) +
         (r & 7) * 8 + (k & 7);
}

// a shared-memory matrix descriptor of a tile laid out by wg_offset that starts `addr` bytes
// into shared memory: bits 0-13 the address, 16-29 the leading (K) byte offset, 32-45 the
// stride (M or N) byte offset, each >> 4; base offset (49-51) and swizzle (62-63) 0: none
__device__ __forceinline__ unsigned long long wg_desc(unsigned addr) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)(WG_LBO >> 4) << 16) |
         ((unsigned long long)(WG_SBO >> 4) << 32);
}

// the descriptor of `tile`, inside the block's shared array `smem`: its shared address on
// the GPU, its byte offset in smem on the emulation (which reads through smem)
template <typename T>
__device__ __forceinline__ unsigned long long wg_tile_desc(const T* smem, const T* tile) {
#if WG_PTX
  return wg_desc(smem_addr(tile));
#else
  return wg_desc((unsigned)((tile - smem) * sizeof(T)));
#endif
}

// element (r, k) of the matrix descriptor `desc` describes, decoded as the hardware does
// (the emulation's read: a wrong field or layout gives a wrong product)
template <typename T>
__device__ __forceinline__ float wg_element(const T* smem, unsigned long long desc, int r, int k) {
  const unsigned start = (unsigned)(desc & 0x3FFF) << 4, lbo = (unsigned)((desc >> 16) & 0x3FFF) << 4;
  const unsigned sbo = (unsigned)((desc >> 32) & 0x3FFF) << 4;
  return (float)smem[(start + (r >> 3) * sbo + (k >> 3) * lbo + (r & 7) * 16 + (k & 7) * 2) / sizeof(T)];
}

#define WG_D8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), \
                 "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define WG_D WG_D8(0), WG_D8(8), WG_D8(16), WG_D8(24), WG_D8(32), WG_D8(40), WG_D8(48), WG_D8(56)
#define WG_REGS "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22," \
  "%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,"    \
  "%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63"
// scale-d 1 (D += A B), A and B unscaled and not transposed (both K-major)
#define WG_MMA(TY) "{ .reg .pred p; setp.ne.b32 p, %66, 0; wgmma.mma_async.sync.aligned.m64n128k16.f32." \
  TY "." TY " {" WG_REGS "}, %64, %65, p, 1, 1, 0, 0; }"

// d (the thread's 64 accumulators of the warpgroup's 64 x 128 tile: warp w holds rows 16 w
// to 16 w + 15, and d[4 j + e] is row l / 4 (+ 8 where e >= 2), column 8 j + 2 (l % 4) +
// e % 2 of them for lane l) += A B, A 64 x 16 and B 128 x 16 (K-major: B's transpose) in
// shared memory as da and db describe. Asynchronous on the GPU: see wg_commit_and_wait.
template <typename T>
__device__ __forceinline__ void wgmma_m64n128k16(float* d, unsigned long long da, unsigned long long db,
                                                 const T* smem) {
#if WG_PTX
  if constexpr (is_half<T>::value) {
    asm volatile(WG_MMA("f16") : WG_D : "l"(da), "l"(db), "r"(1));
  } else {
    asm volatile(WG_MMA("bf16") : WG_D : "l"(da), "l"(db), "r"(1));
  }
#else
  const int lane = threadIdx.x & 31, warp = (threadIdx.x >> 5) & 3;
  for (int j = 0; j < WG_N / 8; j++)
    for (int e = 0; e < 4; e++) {
      const int r = 16 * warp + (lane >> 2) + 8 * (e >> 1), c = 8 * j + 2 * (lane & 3) + (e & 1);
      float s = 0.0f;
      for (int kk = 0; kk < 16; kk++) s += wg_element(smem, da, r, kk) * wg_element(smem, db, c, kk);
      d[4 * j + e] += s;
    }
#endif
}

// before the warpgroup's first wgmma: its accumulators' and shared memory's earlier accesses
// ordered before the wgmma's
__device__ __forceinline__ void wg_fence() {
#if WG_PTX
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#endif
}

// the wgmma issued since the last commit, as one group; then wait until none is in flight,
// its accumulators written (the empty asm keeps the compiler from reading them earlier)
__device__ __forceinline__ void wg_commit_and_wait(float* d) {
#if WG_PTX
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#pragma unroll
  for (int i = 0; i < WG_M * WG_N / 128; i++) asm volatile("" : "+f"(d[i])::"memory");
#endif
}

// this thread's writes to shared memory (stores, cp.async's) made visible to the async proxy
// that wgmma reads shared memory through
__device__ __forceinline__ void wg_proxy_fence() {
#if WG_PTX
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

// 128 threads per block (one warpgroup, a 64 x 128 tile of C); K chunks of 64 (4 wgmma)
template <typename T>
__global__ void hgemm_wgmma(const Params p, T* __restrict__ out, const T* __restrict__ a,
                            const T* __restrict__ b) {
  constexpr int THREADS = 128, ACC = WG_M * WG_N / THREADS;
  __shared__ __align__(128) T smem[(WG_M + WG_N) * WG_BK];
  T* as = smem;
  T* bs = smem + WG_M * WG_BK;
  const i64 n = p[0], k = p[1], m = p[2], batches = p[3];
  const i64 tiles_n = (n + WG_M - 1) / WG_M, tiles_m = (m + WG_N - 1) / WG_N;
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const T zero = T(0.0f);
  for (i64 tile = blockIdx.x; tile < batches * tiles_n * tiles_m; tile += gridDim.x) {
    const i64 batch = tile / (tiles_n * tiles_m), rest = tile % (tiles_n * tiles_m);
    const i64 row0 = (rest / tiles_m) * WG_M, col0 = (rest % tiles_m) * WG_N;
    const T* ab = a + batch * n * k;
    const T* bb = b + batch * k * m;
    float d[ACC];
#pragma unroll
    for (int i = 0; i < ACC; i++) d[i] = 0.0f;
    for (i64 k0 = 0; k0 < k; k0 += WG_BK) {
      // A: 8-element chunks of its rows, each a core matrix's row
      for (int e = t; e < WG_M * WG_BK / 8; e += THREADS) {
        const int r = e / (WG_BK / 8), c = (e % (WG_BK / 8)) * 8;
        copy_chunk(&as[wg_offset<WG_M>(r, c)], ab, row0 + r, n, k0 + c, k);
      }
      // B transposed on the way in (K-major), consecutive threads along a row of B
      for (int e = t; e < WG_BK * WG_N; e += THREADS) {
        const int kr = e / WG_N, c = e % WG_N;
        bs[wg_offset<WG_N>(c, kr)] = (k0 + kr < k && col0 + c < m) ? bb[(k0 + kr) * m + col0 + c] : zero;
      }
      cp_async_commit();
      cp_async_wait<0>();
      wg_proxy_fence();
      __syncthreads();
      wg_fence();
      for (int s = 0; s < WG_BK / 16; s++)
        wgmma_m64n128k16<T>(d, wg_tile_desc(smem, as + s * WG_M * 16), wg_tile_desc(smem, bs + s * WG_N * 16),
                            smem);
      wg_commit_and_wait(d);
      __syncthreads();  // every wgmma has read the chunk before the next overwrites it
    }
    T* c = out + batch * n * m;
#pragma unroll
    for (int j = 0; j < WG_N / 8; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const i64 r = row0 + 16 * warp + (lane >> 2) + 8 * (e >> 1), col = col0 + 8 * j + 2 * (lane & 3) + (e & 1);
        if (r < n && col < m) c[r * m + col] = T(d[4 * j + e]);
      }
  }
}
