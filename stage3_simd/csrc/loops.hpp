// Strided loops over several operands, split among threads.
//
// Design: an operation over strided operands is a loop over *rows*. Dims of size 1 are
// dropped and every run of dims that all operands step through as one is merged (so a
// contiguous tensor is a single row); the innermost merged dim is the row, and a row
// kernel runs over it, with SIMD where each operand's step is 1 or 0 (broadcast). Large
// work is split among OpenMP threads: by rows, or, when there are fewer rows than
// threads (a contiguous tensor), by chunks of the row. Small work never starts a
// parallel region: its cost (microseconds) would exceed the work.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels.h"

namespace sg3 {

// Below this many elements (times the op's cost per element) one thread does the work.
constexpr int64_t kParallelWork = 1 << 16;

struct Loop {
    int nops = 0;
    int ndim = 0;       // outer (row) dims, after merging
    int64_t rows = 0;   // product of the outer dims
    int64_t inner = 0;  // elements per row
    int64_t size[SG3_MAXDIM];
    int64_t st[SG3_MAXOPS][SG3_MAXDIM];  // outer strides, in elements
    int64_t ist[SG3_MAXOPS];             // inner strides
    char* base[SG3_MAXOPS];
    int64_t item[SG3_MAXOPS];            // bytes per element of each operand
};

// Merge ``o``'s dims into a Loop; ``item`` gives each operand's element size.
inline Loop make_loop(const sg3_operands& o, const int64_t* item) {
    Loop L;
    L.nops = o.nops;
    int64_t numel = 1;
    for (int d = 0; d < o.ndim; ++d) numel *= o.shape[d];
    for (int k = 0; k < o.nops; ++k) {
        L.base[k] = o.data[k];
        L.item[k] = item[k];
        L.ist[k] = 0;
    }
    if (numel == 0) return L;
    int nd = 0;
    for (int d = 0; d < o.ndim; ++d) {
        if (o.shape[d] == 1) continue;
        bool merge = nd > 0;
        for (int k = 0; merge && k < o.nops; ++k)
            merge = L.st[k][nd - 1] == o.strides[k][d] * o.shape[d];
        if (merge) {
            L.size[nd - 1] *= o.shape[d];
            for (int k = 0; k < o.nops; ++k) L.st[k][nd - 1] = o.strides[k][d];
        } else {
            L.size[nd] = o.shape[d];
            for (int k = 0; k < o.nops; ++k) L.st[k][nd] = o.strides[k][d];
            ++nd;
        }
    }
    if (nd == 0) {  // a single element
        L.inner = 1;
        L.rows = 1;
        return L;
    }
    L.inner = L.size[nd - 1];
    for (int k = 0; k < o.nops; ++k) L.ist[k] = L.st[k][nd - 1];
    L.ndim = nd - 1;
    L.rows = numel / L.inner;
    return L;
}

// Row pointers for rows [r0, r1), each handed to ``fn(ptr, n)``: n = ``inner`` elements
// (L.inner by default) from ``base`` (L.base by default), so a part of a loop needs no
// copy of it.
template <class Fn>
void walk_rows(const Loop& L, int64_t r0, int64_t r1, Fn& fn, char* const* base = nullptr,
               int64_t inner = -1) {
    int64_t idx[SG3_MAXDIM];
    char* p[SG3_MAXOPS];
    int64_t rem = r0;
    const int64_t n = inner < 0 ? L.inner : inner;
    for (int k = 0; k < L.nops; ++k) p[k] = base ? base[k] : L.base[k];
    for (int d = L.ndim - 1; d >= 0; --d) {  // unravel the first row's index
        idx[d] = rem % L.size[d];
        rem /= L.size[d];
        for (int k = 0; k < L.nops; ++k) p[k] += idx[d] * L.st[k][d] * L.item[k];
    }
    for (int64_t r = r0; r < r1; ++r) {
        fn(p, n);
        for (int d = L.ndim - 1; d >= 0; --d) {  // to the next row
            if (++idx[d] < L.size[d]) {
                for (int k = 0; k < L.nops; ++k) p[k] += L.st[k][d] * L.item[k];
                break;
            }
            idx[d] = 0;
            for (int k = 0; k < L.nops; ++k) p[k] -= (L.size[d] - 1) * L.st[k][d] * L.item[k];
        }
    }
}

// Run ``fn(ptr, n)`` over every row of L, on up to ``nthreads`` threads when the work
// (elements times ``cost``) is large enough to pay for them.
template <class Fn>
void for_rows(const Loop& L, int64_t cost, int nthreads, Fn fn) {
    const int64_t total = L.rows * L.inner;
    if (total == 0) return;
    int nt = static_cast<int>(std::min<int64_t>(nthreads, total * cost / kParallelWork));
    if (nt <= 1) {
        walk_rows(L, 0, L.rows, fn);
        return;
    }
    if (L.rows >= nt) {
#pragma omp parallel for num_threads(nt) schedule(static)
        for (int t = 0; t < nt; ++t) {
            Fn mine = fn;
            walk_rows(L, L.rows * t / nt, L.rows * (t + 1) / nt, mine);
        }
        return;
    }
    // fewer rows than threads: each row is cut into chunks (aligned to 64 elements, so
    // that chunks do not share cache lines)
    const int64_t per = nt / L.rows + 1;
    const int64_t chunks = L.rows * per;
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t c = 0; c < chunks; ++c) {
        const int64_t r = c / per, part = c % per;
        const int64_t lo = ((L.inner * part / per) + 63) / 64 * 64;
        const int64_t hi = part + 1 == per ? L.inner : ((L.inner * (part + 1) / per) + 63) / 64 * 64;
        if (lo >= std::min(hi, L.inner)) continue;
        Fn mine = fn;
        char* base[SG3_MAXOPS];
        for (int k = 0; k < L.nops; ++k) base[k] = L.base[k] + lo * L.ist[k] * L.item[k];
        walk_rows(L, r, r + 1, mine, base, std::min(hi, L.inner) - lo);
    }
}

}  // namespace sg3
