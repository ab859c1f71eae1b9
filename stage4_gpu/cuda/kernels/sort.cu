// Design: a stable sort of each row along one axis (NaN largest), values and int64
// positions. The order is total: (value, position) pairs, the position breaking ties,
// so stability needs no merge.
// `sort_bitonic`: one block per row of at most 2048 elements, the row loaded into shared
// memory padded to a power of two with pairs that sort last, then a bitonic network
// (log^2 n barrier-separated compare-exchange steps). `sort_rank`: longer rows, one thread
// per element counting the elements that sort before it (its rank: n per element, simple
// and obviously right; slow for very long rows).
#include "common.cuh"
#include "along.cuh"

#define SORT_MAX 2048
#define SORT_THREADS 1024

// whether (a, ia) sorts before (b, ib): ascending NaN last, descending NaN first, ties by
// position
template <typename T, bool DESC>
__device__ __forceinline__ bool before(T a, i64 ia, T b, i64 ib) {
  if (ia < 0 || ib < 0) return ib < 0 && ia >= 0;  // padding (-1) sorts last
  const bool na = nan_of(a), nb = nan_of(b);
  if (na || nb) {
    if (na && nb) return ia < ib;
    return DESC ? na : nb;
  }
  if (a == b) return ia < ib;
  return DESC ? a > b : a < b;
}

template <typename T, bool DESC>
__global__ void sort_bitonic(const Params p, T* __restrict__ vals, i64* __restrict__ idx,
                             const T* __restrict__ x) {
  __shared__ T key[SORT_MAX];
  __shared__ i64 pos[SORT_MAX];
  const i64 rows = p[0], n = p[1];
  int size = 1;
  while (size < n) size <<= 1;
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const Row row = row_of(p, r);
    for (int j = threadIdx.x; j < size; j += blockDim.x) {
      key[j] = j < n ? x[row.x + j * row.x_step] : T(0);
      pos[j] = j < n ? j : -1;
    }
    __syncthreads();
    for (int k = 2; k <= size; k <<= 1) {
      for (int s = k >> 1; s > 0; s >>= 1) {
        for (int j = threadIdx.x; j < size; j += blockDim.x) {
          const int partner = j ^ s;
          if (partner > j) {
            const bool up = (j & k) == 0;  // this run sorts ascending in the network
            const bool swap = up ? before<T, DESC>(key[partner], pos[partner], key[j], pos[j])
                                 : before<T, DESC>(key[j], pos[j], key[partner], pos[partner]);
            if (swap) {
              const T tk = key[j]; key[j] = key[partner]; key[partner] = tk;
              const i64 tp = pos[j]; pos[j] = pos[partner]; pos[partner] = tp;
            }
          }
        }
        __syncthreads();
      }
    }
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
      vals[row.out + j * row.out_step] = key[j];
      idx[row.out + j * row.out_step] = pos[j];
    }
    __syncthreads();  // the shared arrays are reused by the next row
  }
}

template <typename T, bool DESC>
__global__ void sort_rank(const Params p, T* __restrict__ vals, i64* __restrict__ idx,
                          const T* __restrict__ x) {
  const i64 rows = p[0], n = p[1];
  for (i64 e = first_index(); e < rows * n; e += grid_step()) {
    const i64 r = e / n, j = e % n;
    const Row row = row_of(p, r);
    const T v = x[row.x + j * row.x_step];
    i64 rank = 0;
    for (i64 k = 0; k < n; k++)
      rank += before<T, DESC>(x[row.x + k * row.x_step], k, v, j) ? 1 : 0;
    vals[row.out + rank * row.out_step] = v;
    idx[row.out + rank * row.out_step] = j;
  }
}
