// Design: scaled dot-product attention, softmax(scale * q k^T + mask) v, over n problems of
// L x E queries, S x E keys and S x Ev values (the batch and head dims flattened; with
// grouped-query attention `group` consecutive query heads share one key/value head), without
// the L x S score matrix ever reaching global memory (FlashAttention's scheme, written for
// this project's layout).
//   * Tiles. A block of THREADS threads owns a TILE x TILE tile of a product: thread t holds
//     row t / 8 and columns t % 8 + 8 j (j < PER) in registers, so a row's 8 threads read
//     distinct shared-memory banks (each tile row is padded to TILE + 1). Every product runs
//     over its inner dim TILE columns at a time through two shared tiles (`att_dot`), so no head
//     dim is too large; an accumulator as wide as a head (the output, dQ, dK, dV) is held in
//     registers CH chunks of TILE columns at a time, one pass for heads up to CH * TILE = 128
//     wide, more passes (recomputing the scores) beyond.
//   * Forward (`attention_forward`): one block per (problem, TILE query rows), walking the key
//     tiles. Online softmax: each row keeps its running maximum m and sum l in shared memory;
//     a tile with a larger maximum rescales the row's output and sum by exp(m_old - m_new)
//     before adding its own exp(s - m_new) terms; the end divides by l. It keeps each row's
//     log-sum-exp (m + log l, -inf for a row no key takes part in: a row of zeros).
//   * Backward, from lse (the probabilities recomputed tile by tile, P = exp(s - lse)) and
//     D = rowsum(dO * O): dP = dO V^T, dS = scale P (dP - D). Two kernels, so that no two
//     blocks add into one gradient (no atomics): `attention_backward_dq`, one block per
//     (problem, query tile) over the key tiles, dQ += dS K, also writing D; then
//     `attention_backward_dkdv`, one block per (key/value head, key tile) over every query
//     head of its group and every query tile, dV += P^T dO and dK += dS^T Q.
//   * Masks: causal (query i sees keys 0..i; a causal block stops at its last row's key, and
//     the dK/dV block starts at its first key's row), bool (one byte, nonzero takes part) or
//     additive (the dtype's), one L x S plane for every problem or one per problem. A NaN
//     score makes its row NaN, as the CPU's kernel.
// Parameters `p` (int64): [n, L, S, E, Ev, group, causal, mask kind (0 none, 1 bool,
// 2 additive), mask shared (1: one plane)]; the scale is the last argument.
#include "common.cuh"
#include "math.cuh"

#define ATT_TILE 32
#define ATT_THREADS 256
#define ATT_PAD (ATT_TILE + 1)
#define ATT_PER (ATT_TILE * ATT_TILE / ATT_THREADS)  // a thread's columns of a tile: 4
#define ATT_CH 4                                     // column chunks a thread accumulates per pass

struct AttShape {
  i64 n, L, S, E, Ev, group, causal, kind, shared;
};

__device__ __forceinline__ AttShape att_shape(const Params& p) {
  return AttShape{p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8]};
}

// rows r0.. (of `rows` real ones, stride ld) and columns c0..c0+TILE (of `width`) of `src`
// into the shared tile s, zeros past either end; every thread takes part
template <typename T>
__device__ __forceinline__ void att_load(T (*s)[ATT_PAD], const T* src, i64 rows, i64 ld, i64 c0, i64 width) {
  for (int x = threadIdx.x; x < ATT_TILE * ATT_TILE; x += ATT_THREADS) {
    const int r = x / ATT_TILE, c = x % ATT_TILE;
    s[r][c] = r < rows && c0 + c < width ? src[r * ld + c0 + c] : T(0);
  }
}

// acc[j] += row a (this thread's, t / 8) of A . row b_j (t % 8 + 8 j) of B, both `width`
// wide with row strides lda and ldb, TILE columns at a time through the shared tiles sa, sb
template <typename T>
__device__ void att_dot(T (&acc)[ATT_PER], const T* a, i64 a_rows, i64 lda, const T* b, i64 b_rows, i64 ldb,
                    i64 width, T (*sa)[ATT_PAD], T (*sb)[ATT_PAD]) {
  const int ra = threadIdx.x / 8, cb = threadIdx.x % 8;
  for (i64 d0 = 0; d0 < width; d0 += ATT_TILE) {
    att_load(sa, a, a_rows, lda, d0, width);
    att_load(sb, b, b_rows, ldb, d0, width);
    __syncthreads();
    for (int d = 0; d < ATT_TILE; d++) {
      const T x = sa[ra][d];
      for (int j = 0; j < ATT_PER; j++) acc[j] += x * sb[cb + 8 * j][d];
    }
    __syncthreads();
  }
}

// acc[j] += row a of the shared tile w . column b_j of rows r0.. of `src` (columns c0.., of
// `width`, row stride ld), loaded through the shared tile sb: a probability or score tile
// times values, queries, keys or output gradients
template <typename T>
__device__ void att_times(T (&acc)[ATT_PER], T (*w)[ATT_PAD], const T* src, i64 rows, i64 ld, i64 c0, i64 width,
                      T (*sb)[ATT_PAD]) {
  const int ra = threadIdx.x / 8, cb = threadIdx.x % 8;
  att_load(sb, src, rows, ld, c0, width);
  __syncthreads();
  for (int c = 0; c < ATT_TILE; c++) {
    const T x = w[ra][c];
    for (int j = 0; j < ATT_PER; j++) acc[j] += x * sb[c][cb + 8 * j];
  }
  __syncthreads();
}

// the scaled, masked score of query i and key j of problem `problem` from the raw product s:
// -inf where the key does not take part (or lies past the ends)
template <typename T>
__device__ __forceinline__ T att_score(const AttShape& a, T s, i64 problem, i64 i, i64 j, const unsigned char* mask,
                                       T scale) {
  if (i >= a.L || j >= a.S || (a.causal && j > i)) return limits<T>::lowest();
  s *= scale;
  if (a.kind) {
    const i64 at = (a.shared ? 0 : problem * a.L * a.S) + i * a.S + j;
    if (a.kind == 1) return mask[at] ? s : limits<T>::lowest();
    s += reinterpret_cast<const T*>(mask)[at];
  }
  return s;
}

// exp(x - shift), 0 for a key that takes no part or a row with none
template <typename T> __device__ __forceinline__ T att_exp(T x, T shift) {
  return x == limits<T>::lowest() || shift == limits<T>::lowest() ? T(0) : m_exp(x - shift);
}

// a thread's accumulators of one pass over a head (CH chunks of TILE columns), zeroed
template <typename T> __device__ __forceinline__ void att_clear(T (&acc)[ATT_CH][ATT_PER]) {
  for (int c = 0; c < ATT_CH; c++)
    for (int j = 0; j < ATT_PER; j++) acc[c][j] = T(0);
}

// a thread's accumulators of the pass from column e0 into its row `dst` (`width` columns)
template <typename T>
__device__ __forceinline__ void att_store(T* dst, const T (&acc)[ATT_CH][ATT_PER], i64 e0, i64 width) {
  const int cb = threadIdx.x % 8;
  for (int c = 0; c < ATT_CH; c++)
    for (int j = 0; j < ATT_PER; j++) {
      const i64 col = e0 + c * ATT_TILE + cb + 8 * j;
      if (col < width) dst[col] = acc[c][j];
    }
}

template <typename T>
__global__ void attention_forward(const Params p, T* __restrict__ out, T* __restrict__ lse,
                                  const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                                  const unsigned char* __restrict__ mask, const double scale_) {
  __shared__ T sa[ATT_TILE][ATT_PAD], sb[ATT_TILE][ATT_PAD], sp[ATT_TILE][ATT_PAD];
  __shared__ T sm[ATT_TILE], sl[ATT_TILE], sc[ATT_TILE];
  const AttShape a = att_shape(p);
  const T scale = (T)scale_;
  const int t = threadIdx.x, ra = t / 8, cb = t % 8;
  const i64 tiles = (a.L + ATT_TILE - 1) / ATT_TILE;
  for (i64 b = blockIdx.x; b < a.n * tiles; b += gridDim.x) {
    const i64 problem = b / tiles, i0 = b % tiles * ATT_TILE, rows = a.L - i0;
    const T* qn = q + (problem * a.L + i0) * a.E;
    const T* kn = k + problem / a.group * a.S * a.E;
    const T* vn = v + problem / a.group * a.S * a.Ev;
    const i64 keys = a.causal && i0 + ATT_TILE < a.S ? i0 + ATT_TILE : a.S;
    // passes over the output's columns, CH tiles wide each (one unless Ev > 128)
    for (i64 e0 = 0; e0 == 0 || e0 < a.Ev; e0 += ATT_CH * ATT_TILE) {
      T acc[ATT_CH][ATT_PER];
      att_clear(acc);
      if (t < ATT_TILE) {
        sm[t] = limits<T>::lowest();
        sl[t] = T(0);
      }
      __syncthreads();
      for (i64 j0 = 0; j0 < keys; j0 += ATT_TILE) {
        T s[ATT_PER] = {};
        att_dot(s, qn, rows, a.E, kn + j0 * a.E, a.S - j0, a.E, a.E, sa, sb);  // Q K^T
        for (int j = 0; j < ATT_PER; j++)
          sp[ra][cb + 8 * j] = att_score(a, s[j], problem, i0 + ra, j0 + cb + 8 * j, mask, scale);
        __syncthreads();
        if (t < ATT_TILE) {  // the row's online softmax: new maximum, rescale, exponentials
          const T old = sm[t];
          T top = old;
          for (int c = 0; c < ATT_TILE; c++) top = max_nan(top, sp[t][c]);
          T sum = T(0);
          for (int c = 0; c < ATT_TILE; c++) {
            const T e = att_exp(sp[t][c], top);
            sp[t][c] = e;
            sum += e;
          }
          const T rescale = old == top ? T(1) : m_exp(old - top);  // 0 while nothing was kept
          sc[t] = rescale;
          sl[t] = sl[t] * rescale + sum;
          sm[t] = top;
        }
        __syncthreads();
        for (int c = 0; c < ATT_CH; c++) {
          const i64 col = e0 + c * ATT_TILE;
          if (col >= a.Ev) break;  // the same for every thread
          for (int j = 0; j < ATT_PER; j++) acc[c][j] *= sc[ra];
          att_times(acc[c], sp, vn + j0 * a.Ev, a.S - j0, a.Ev, col, a.Ev, sb);  // O += P V
        }
      }
      const i64 i = i0 + ra;
      const T l = sl[ra], inv = l > T(0) ? T(1) / l : T(0);  // no key: a row of zeros
      if (i < a.L) {
        for (int c = 0; c < ATT_CH; c++)
          for (int j = 0; j < ATT_PER; j++) acc[c][j] *= inv;
        att_store(out + (problem * a.L + i) * a.Ev, acc, e0, a.Ev);
        if (e0 == 0 && cb == 0)
          lse[problem * a.L + i] = l > T(0) || l != l ? sm[ra] + m_log(l) : limits<T>::lowest();
      }
      __syncthreads();  // the row state is reset by the next pass or block
    }
  }
}

// dQ, and D = rowsum(dO * O) of every row into `dsum` for the dK/dV kernel
template <typename T>
__global__ void attention_backward_dq(const Params p, T* __restrict__ dq, T* __restrict__ dsum,
                                      const T* __restrict__ g, const T* __restrict__ q, const T* __restrict__ k,
                                      const T* __restrict__ v, const T* __restrict__ out,
                                      const T* __restrict__ lse, const unsigned char* __restrict__ mask,
                                      const double scale_) {
  __shared__ T sa[ATT_TILE][ATT_PAD], sb[ATT_TILE][ATT_PAD], sds[ATT_TILE][ATT_PAD];
  __shared__ T slse[ATT_TILE], sd[ATT_TILE];
  const AttShape a = att_shape(p);
  const T scale = (T)scale_;
  const int t = threadIdx.x, ra = t / 8, cb = t % 8;
  const i64 tiles = (a.L + ATT_TILE - 1) / ATT_TILE;
  for (i64 b = blockIdx.x; b < a.n * tiles; b += gridDim.x) {
    const i64 problem = b / tiles, i0 = b % tiles * ATT_TILE, rows = a.L - i0, at = problem * a.L + i0;
    const T* kn = k + problem / a.group * a.S * a.E;
    const T* vn = v + problem / a.group * a.S * a.Ev;
    const T* gn = g + at * a.Ev;
    const i64 keys = a.causal && i0 + ATT_TILE < a.S ? i0 + ATT_TILE : a.S;
    // D: each row's 8 threads sum a stride of it, then one adds their parts
    T part = T(0);
    if (ra < rows)
      for (i64 e = cb; e < a.Ev; e += 8) part += gn[ra * a.Ev + e] * out[(at + ra) * a.Ev + e];
    sa[ra][cb] = part;
    __syncthreads();
    if (t < ATT_TILE) {
      T d = T(0);
      for (int c = 0; c < 8; c++) d += sa[t][c];
      sd[t] = d;
      slse[t] = t < rows ? lse[at + t] : limits<T>::lowest();
      if (t < rows) dsum[at + t] = d;
    }
    __syncthreads();
    for (i64 e0 = 0; e0 < a.E; e0 += ATT_CH * ATT_TILE) {
      T acc[ATT_CH][ATT_PER];
      att_clear(acc);
      for (i64 j0 = 0; j0 < keys; j0 += ATT_TILE) {
        T s[ATT_PER] = {}, dp[ATT_PER] = {};
        att_dot(s, q + at * a.E, rows, a.E, kn + j0 * a.E, a.S - j0, a.E, a.E, sa, sb);       // Q K^T
        att_dot(dp, gn, rows, a.Ev, vn + j0 * a.Ev, a.S - j0, a.Ev, a.Ev, sa, sb);            // dO V^T
        for (int j = 0; j < ATT_PER; j++) {
          const T x = att_score(a, s[j], problem, i0 + ra, j0 + cb + 8 * j, mask, scale);
          sds[ra][cb + 8 * j] = att_exp(x, slse[ra]) * (dp[j] - sd[ra]) * scale;
        }
        __syncthreads();
        for (int c = 0; c < ATT_CH; c++) {
          const i64 col = e0 + c * ATT_TILE;
          if (col >= a.E) break;
          att_times(acc[c], sds, kn + j0 * a.E, a.S - j0, a.E, col, a.E, sb);  // dQ += dS K
        }
      }
      if (i0 + ra < a.L) att_store(dq + (at + ra) * a.E, acc, e0, a.E);
    }
    __syncthreads();  // sd and slse are rewritten by the next block
  }
}

// dK and dV of each key/value head: its blocks take every query head of its group, so each
// gradient element has one writer
template <typename T>
__global__ void attention_backward_dkdv(const Params p, T* __restrict__ dk, T* __restrict__ dv,
                                        const T* __restrict__ g, const T* __restrict__ q, const T* __restrict__ k,
                                        const T* __restrict__ v, const T* __restrict__ lse,
                                        const T* __restrict__ dsum, const unsigned char* __restrict__ mask,
                                        const double scale_) {
  __shared__ T sa[ATT_TILE][ATT_PAD], sb[ATT_TILE][ATT_PAD], sp[ATT_TILE][ATT_PAD], sds[ATT_TILE][ATT_PAD];
  __shared__ T slse[ATT_TILE], sd[ATT_TILE];
  const AttShape a = att_shape(p);
  const T scale = (T)scale_;
  const int t = threadIdx.x, ra = t / 8, cb = t % 8;
  const i64 heads = a.n / a.group, tiles = (a.S + ATT_TILE - 1) / ATT_TILE;
  const i64 widest = a.E > a.Ev ? a.E : a.Ev;
  for (i64 b = blockIdx.x; b < heads * tiles; b += gridDim.x) {
    const i64 head = b / tiles, j0 = b % tiles * ATT_TILE, keys = a.S - j0;
    const T* kt = k + (head * a.S + j0) * a.E;
    const T* vt = v + (head * a.S + j0) * a.Ev;
    // a causal key tile is seen from its first key's row on (rows and keys tile alike)
    const i64 first = a.causal ? j0 : 0;
    for (i64 e0 = 0; e0 < widest; e0 += ATT_CH * ATT_TILE) {
      T gk[ATT_CH][ATT_PER], gv[ATT_CH][ATT_PER];
      att_clear(gk);
      att_clear(gv);
      for (i64 problem = head * a.group; problem < (head + 1) * a.group; problem++) {
        for (i64 i0 = first; i0 < a.L; i0 += ATT_TILE) {
          const i64 rows = a.L - i0, at = problem * a.L + i0;
          const T* qt = q + at * a.E;
          const T* gt = g + at * a.Ev;
          if (t < ATT_TILE) {
            slse[t] = t < rows ? lse[at + t] : limits<T>::lowest();
            sd[t] = t < rows ? dsum[at + t] : T(0);
          }
          // here a thread's row is a key (ra) and its columns queries (cb + 8 j)
          T s[ATT_PER] = {}, dp[ATT_PER] = {};
          att_dot(s, kt, keys, a.E, qt, rows, a.E, a.E, sa, sb);       // (Q K^T)^T
          att_dot(dp, vt, keys, a.Ev, gt, rows, a.Ev, a.Ev, sa, sb);   // (dO V^T)^T
          __syncthreads();  // slse and sd written (the products may have had no columns)
          for (int j = 0; j < ATT_PER; j++) {
            const int r = cb + 8 * j;
            const T x = att_score(a, s[j], problem, i0 + r, j0 + ra, mask, scale);
            const T pr = att_exp(x, slse[r]);
            sp[ra][r] = pr;
            sds[ra][r] = pr * (dp[j] - sd[r]) * scale;
          }
          __syncthreads();
          for (int c = 0; c < ATT_CH; c++) {
            const i64 col = e0 + c * ATT_TILE;
            if (col < a.Ev) att_times(gv[c], sp, gt, rows, a.Ev, col, a.Ev, sb);   // dV += P^T dO
            if (col < a.E) att_times(gk[c], sds, qt, rows, a.E, col, a.E, sb);     // dK += dS^T Q
          }
        }
      }
      if (ra < keys) {
        att_store(dk + (head * a.S + j0 + ra) * a.E, gk, e0, a.E);
        att_store(dv + (head * a.S + j0 + ra) * a.Ev, gv, e0, a.Ev);
      }
    }
  }
}
