// Reductions over any axes (sum, prod, max, min) and arg-reductions along one axis.
//
// Design: the walk follows memory. When the innermost dim in memory (the smallest
// stride) is reduced, each output's group is reduced row by row with whole registers
// ("across": a sum of a contiguous tensor, softmax's row sums); otherwise the kept
// innermost dim is streamed and every output lane accumulates from its own column
// ("down": a bias gradient, the sum over a batch). Threads split the outputs, or, for a
// single output, its group: each thread keeps a partial and the partials are combined
// in a fixed order, so a result never depends on scheduling.
//
// Accumulation is sound for float32: rows are summed by a cascade in registers (every
// element passes through O(log n) additions, so the error grows like log n, as in
// NumPy's pairwise sum), and partials, products and column sums accumulate in float64
// (the caller's accumulator). max and min propagate NaN. argmax and argmin
// return the first extreme, or the first NaN, as PyTorch does.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels.h"
#include "loops.hpp"
#include "simd.hpp"

namespace sg3 {

// ------------------------------------------------------------------ one row, "across"

// Sum of n contiguous elements in registers, cascaded: blocks (leaves) of 8 registers x
// 16 steps are summed, and leaf sums are combined like the digits of a binary counter
// (two partials of 2^k leaves merge into one of 2^(k+1)). So every element passes
// through O(log n) additions, as in pairwise summation, but the loop never recurses and
// never drains the pipeline between leaves.
template <class A, class T>
double sum_contiguous(const T* x, int64_t n) {
    using B = vec<T, A>;
    constexpr int64_t W = B::size, LEAF = 8 * W * 16;
    B level[64];
    uint64_t count = 0;
    int64_t i = 0;
    auto leaf = [&](int64_t len) {  // 8 independent chains over len (a multiple of 8W) elements
        B r[8] = {B(0), B(0), B(0), B(0), B(0), B(0), B(0), B(0)};
        for (int64_t k = 0; k < len; k += 8 * W)
            for (int j = 0; j < 8; ++j) r[j] += B::load_unaligned(x + i + k + j * W);
        i += len;
        return ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    };
    while (i + LEAF <= n) {
        B s = leaf(LEAF);
        int lv = 0;
        for (uint64_t c = count; c & 1; c >>= 1, ++lv) s = level[lv] + s;  // carry
        level[lv] = s;
        ++count;
    }
    B total = leaf((n - i) / (8 * W) * (8 * W));
    for (; i + W <= n; i += W) total += B::load_unaligned(x + i);
    if (i < n) total += load_part<B>(x + i, n - i, 1);  // the last partial register, zero-filled
    int lv = 0;
    for (uint64_t c = count; c; c >>= 1, ++lv)
        if (c & 1) total = level[lv] + total;
    return xsimd::hadd(total);
}

template <class A, class T>
double sum_row(const T* x, int64_t n, int64_t s) {
    if (s == 1) return sum_contiguous<A, T>(x, n);
    using B = vec<T, A>;
    constexpr int64_t W = B::size;
    B acc(0);
    int64_t i = 0;
    for (; i + W <= n; i += W) acc += load_part<B>(x + i * s, W, s);
    double total = xsimd::hadd(acc);
    for (; i < n; ++i) total += x[i * s];
    return total;
}

template <class T>
double prod_row(const T* x, int64_t n, int64_t s) {
    double p = 1.0;
    for (int64_t i = 0; i < n; ++i) p *= x[i * s];
    return p;
}

// the larger (is_max) or smaller of a and b, a NaN on either side winning
template <class V>
inline V pick(const V& a, const V& b, bool is_max) {
    if constexpr (std::is_floating_point<V>::value) {
        if (b != b || (is_max ? b > a : b < a)) return b;
        return a;
    } else {
        return xsimd::select(isnan(b) | (is_max ? b > a : b < a), b, a);
    }
}

// max (or min) of n elements s apart, NaN if any is NaN: four registers of running
// extremes and one of "seen a NaN", so no compare waits on the one before
template <class A, class T, bool MAX>
T extreme_row(const T* x, int64_t n, int64_t s) {
    using B = vec<T, A>;
    constexpr int64_t W = B::size;
    const T init = MAX ? -INFINITY : INFINITY;
    B acc[4] = {B(init), B(init), B(init), B(init)};
    auto nan = B(0) != B(0);
    int64_t i = 0;
    auto take = [&](int j, const B& v) {
        acc[j] = MAX ? xsimd::max(acc[j], v) : xsimd::min(acc[j], v);
        nan = nan | isnan(v);
    };
    if (s == 1) {
        for (; i + 4 * W <= n; i += 4 * W)
            for (int j = 0; j < 4; ++j) take(j, B::load_unaligned(x + i + j * W));
        for (; i + W <= n; i += W) take(0, B::load_unaligned(x + i));
    } else {
        for (; i + W <= n; i += W) take(0, load_part<B>(x + i * s, W, s));
    }
    if (xsimd::any(nan)) return NAN;
    const B m = MAX ? xsimd::max(xsimd::max(acc[0], acc[1]), xsimd::max(acc[2], acc[3]))
                    : xsimd::min(xsimd::min(acc[0], acc[1]), xsimd::min(acc[2], acc[3]));
    alignas(64) T lanes[W];
    m.store_aligned(lanes);
    T best = init;
    for (int64_t j = 0; j < W; ++j) best = pick(best, lanes[j], MAX);
    for (; i < n; ++i) best = pick(best, x[i * s], MAX);
    return best;
}

// ------------------------------------------------------------------ helpers

struct Dim {
    int64_t size, sx, sa;
};

// dims of more than one element, ordered as memory is laid out (largest x stride first)
inline std::vector<Dim> memory_order(const sg3_operands& o) {
    std::vector<Dim> dims;
    for (int d = 0; d < o.ndim; ++d)
        if (o.shape[d] != 1) dims.push_back({o.shape[d], o.strides[1][d], o.strides[0][d]});
    std::stable_sort(dims.begin(), dims.end(),
                     [](const Dim& a, const Dim& b) { return std::llabs(a.sx) > std::llabs(b.sx); });
    return dims;
}

inline Loop loop_of(const std::vector<Dim>& dims, char* acc, int64_t acc_item, char* x, int64_t x_item) {
    sg3_operands o;
    o.nops = 2;
    o.ndim = static_cast<int>(dims.size());
    o.data[0] = acc;
    o.data[1] = x;
    for (int d = 0; d < o.ndim; ++d) {
        o.shape[d] = dims[d].size;
        o.strides[0][d] = dims[d].sa;
        o.strides[1][d] = dims[d].sx;
    }
    const int64_t item[2] = {acc_item, x_item};
    return make_loop(o, item);
}

// ------------------------------------------------------------------ sum, prod, max, min

template <class A, class T, class Acc>
struct Reducer {
    int op;
    Acc identity() const {
        return op == SG3_SUM ? Acc(0) : op == SG3_PROD ? Acc(1) : op == SG3_MAX ? Acc(-INFINITY) : Acc(INFINITY);
    }
    Acc combine(Acc a, Acc b) const {
        return op == SG3_SUM ? a + b : op == SG3_PROD ? a * b : pick(a, b, op == SG3_MAX);
    }
    Acc row(const T* x, int64_t n, int64_t s) const {
        if (op == SG3_SUM) return Acc(sum_row<A, T>(x, n, s));
        if (op == SG3_PROD) return Acc(prod_row(x, n, s));
        return Acc(op == SG3_MAX ? extreme_row<A, T, true>(x, n, s) : extreme_row<A, T, false>(x, n, s));
    }
    // acc[i] op= x[i] down a row of n kept outputs
    void down(Acc* acc, int64_t sa, const T* x, int64_t sx, int64_t n) const {
        if (op == SG3_SUM) {
            for (int64_t i = 0; i < n; ++i) acc[i * sa] += x[i * sx];
        } else if (op == SG3_PROD) {
            for (int64_t i = 0; i < n; ++i) acc[i * sa] *= x[i * sx];
        } else {
            const bool is_max = op == SG3_MAX;
            for (int64_t i = 0; i < n; ++i) acc[i * sa] = pick(acc[i * sa], Acc(x[i * sx]), is_max);
        }
    }
};

// Reduce rows [r0, r1) of the group ``R`` (operand 1 is x) that starts at x, to one value
template <class Red, class T>
auto reduce_group(const Red& red, const Loop& R, char* x, int64_t r0, int64_t r1) {
    auto total = red.identity();
    char* base[2] = {R.base[0], x};
    auto fn = [&](char** p, int64_t n) {
        total = red.combine(total, red.row(reinterpret_cast<const T*>(p[1]), n, R.ist[1]));
    };
    walk_rows(R, r0, r1, fn, base);
    return total;
}

template <class A, class T, class Acc>
int reduce_values(int op, const sg3_operands& o, int nthreads) {
    const Reducer<A, T, Acc> red{op};
    std::vector<Dim> dims = memory_order(o);
    if (dims.empty()) {  // one element
        Acc* acc = reinterpret_cast<Acc*>(o.data[0]);
        *acc = red.combine(*acc, Acc(*reinterpret_cast<const T*>(o.data[1])));
        return SG3_OK;
    }
    int64_t total = 1;
    for (const Dim& d : dims) total *= d.size;
    const int64_t cost = op == SG3_PROD ? 4 : 1;
    if (dims.back().sa != 0) {
        // "down": stream memory, each thread owning a slice of the innermost kept dim
        const Loop L = loop_of(dims, o.data[0], sizeof(Acc), o.data[1], sizeof(T));
        const int nt = static_cast<int>(std::min<int64_t>(nthreads, std::min<int64_t>(total * cost / kParallelWork, L.inner / 64)));
        auto slice = [&](int64_t lo, int64_t hi) {
            char* base[2] = {L.base[0] + lo * L.ist[0] * sizeof(Acc), L.base[1] + lo * L.ist[1] * sizeof(T)};
            auto fn = [&](char** p, int64_t n) {
                red.down(reinterpret_cast<Acc*>(p[0]), L.ist[0], reinterpret_cast<const T*>(p[1]), L.ist[1], n);
            };
            walk_rows(L, 0, L.rows, fn, base, hi - lo);
        };
        if (nt <= 1) {
            slice(0, L.inner);
        } else {
#pragma omp parallel for num_threads(nt) schedule(static)
            for (int t = 0; t < nt; ++t) slice(L.inner * t / nt, L.inner * (t + 1) / nt);
        }
        return SG3_OK;
    }
    // "across": the kept dims outside (one output each), the reduced dims inside
    std::vector<Dim> kept, reduced;
    for (const Dim& d : dims) (d.sa != 0 ? kept : reduced).push_back(d);
    const Loop R = loop_of(reduced, o.data[0], sizeof(Acc), o.data[1], sizeof(T));
    sg3_operands ko;  // the kept dims: output offsets and group starts
    ko.nops = 2;
    ko.ndim = static_cast<int>(kept.size());
    ko.data[0] = o.data[0];
    ko.data[1] = o.data[1];
    for (int d = 0; d < ko.ndim; ++d) {
        ko.shape[d] = kept[d].size;
        ko.strides[0][d] = kept[d].sa;
        ko.strides[1][d] = kept[d].sx;
    }
    const int64_t item[2] = {sizeof(Acc), sizeof(T)};
    const Loop K = make_loop(ko, item);  // no kept dims: a single output
    const int64_t outputs = K.rows * K.inner;
    const int nt = static_cast<int>(std::min<int64_t>(nthreads, total * cost / kParallelWork));
    auto one_output = [&](char** p, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
            Acc* acc = reinterpret_cast<Acc*>(p[0] + i * K.ist[0] * sizeof(Acc));
            char* x = p[1] + i * K.ist[1] * sizeof(T);
            *acc = red.combine(*acc, R.rows == 1 ? red.row(reinterpret_cast<const T*>(x), R.inner, R.ist[1])
                                                 : reduce_group<decltype(red), T>(red, R, x, 0, R.rows));
        }
    };
    if (nt <= 1 || (outputs == 1 && R.rows * R.inner < 2 * kParallelWork)) {
        walk_rows(K, 0, K.rows, one_output);
    } else if (outputs >= nt) {
        for_rows(K, R.rows * R.inner * cost, nt, one_output);
    } else if (R.rows >= nt) {  // one output, many rows: a partial per thread
        std::vector<Acc> partial(nt, red.identity());
#pragma omp parallel for num_threads(nt) schedule(static)
        for (int t = 0; t < nt; ++t) partial[t] = reduce_group<decltype(red), T>(red, R, o.data[1], R.rows * t / nt, R.rows * (t + 1) / nt);
        Acc* acc = reinterpret_cast<Acc*>(o.data[0]);
        for (int t = 0; t < nt; ++t) *acc = red.combine(*acc, partial[t]);
    } else {  // one output, one long row: a chunk of it per thread
        std::vector<Acc> partial(nt, red.identity());
        const T* x = reinterpret_cast<const T*>(o.data[1]);
        const int64_t n = R.inner, s = R.ist[1];
#pragma omp parallel for num_threads(nt) schedule(static)
        for (int t = 0; t < nt; ++t) {
            const int64_t lo = n * t / nt, hi = n * (t + 1) / nt;
            partial[t] = red.row(x + lo * s, hi - lo, s);
        }
        Acc* acc = reinterpret_cast<Acc*>(o.data[0]);
        for (int t = 0; t < nt; ++t) *acc = red.combine(*acc, partial[t]);
    }
    return SG3_OK;
}

// ------------------------------------------------------------------ argmax, argmin

// index of the first extreme (or first NaN) of n elements s apart
template <class T>
int64_t arg_row(const T* x, int64_t n, int64_t s, bool is_max) {
    T best = x[0];
    int64_t at = 0;
    for (int64_t i = 1; i < n && best == best; ++i) {
        const T v = x[i * s];
        if (v != v || (is_max ? v > best : v < best)) {
            best = v;
            at = i;
        }
    }
    return at;
}

// Down n columns (contiguous in x and out) at once: per lane the best value and its
// index, the index kept in a register of T (exact below 2**24 for float32)
template <class A, class T>
void arg_down(int64_t* out, const T* x, int64_t len, int64_t step, int64_t n, bool is_max) {
    using B = vec<T, A>;
    constexpr int64_t W = B::size;
    int64_t j = 0;
    if (len < (int64_t(1) << (sizeof(T) == 4 ? 24 : 53))) {
        for (; j + W <= n; j += W) {
            B best = B::load_unaligned(x + j), at(0);
            for (int64_t i = 1; i < len; ++i) {
                const B v = B::load_unaligned(x + i * step + j);
                const auto take = (isnan(v) & ~isnan(best)) | (is_max ? v > best : v < best);
                best = xsimd::select(take, v, best);
                at = xsimd::select(take, B(T(i)), at);
            }
            alignas(64) T idx[W];
            at.store_aligned(idx);
            for (int64_t k = 0; k < W; ++k) out[j + k] = static_cast<int64_t>(idx[k]);
        }
    }
    for (; j < n; ++j) out[j] = arg_row(x + j, len, step, is_max);
}

template <class A, class T>
int arg_reduce(int op, const sg3_operands& o, int axis, int nthreads) {
    // operands: out (int64, stride 0 along axis), x; the walk covers every dim but axis
    const bool is_max = op == SG3_ARGMAX;
    const int64_t len = o.shape[axis], step = o.strides[1][axis];
    sg3_operands rest = o;
    rest.shape[axis] = 1;
    const int64_t item[2] = {8, sizeof(T)};
    const Loop L = make_loop(rest, item);
    const bool down = step != 1 && L.ist[0] == 1 && L.ist[1] == 1;
    for_rows(L, len, nthreads, [&L, len, step, is_max, down](char** p, int64_t n) {
        int64_t* out = reinterpret_cast<int64_t*>(p[0]);
        const T* x = reinterpret_cast<const T*>(p[1]);
        if (down) {
            arg_down<A, T>(out, x, len, step, n, is_max);
        } else {
            for (int64_t i = 0; i < n; ++i) out[i * L.ist[0]] = arg_row(x + i * L.ist[1], len, step, is_max);
        }
    });
    return SG3_OK;
}

template <class A>
int reduce(int op, int dtype, const sg3_operands* o, int axis, int nthreads) {
    const bool arg = op == SG3_ARGMAX || op == SG3_ARGMIN;
    const bool wide = op == SG3_SUM || op == SG3_PROD;  // float64 accumulators
    if (dtype == SG3_FLOAT32) {
        if (arg) return arg_reduce<A, float>(op, *o, axis, nthreads);
        return wide ? reduce_values<A, float, double>(op, *o, nthreads) : reduce_values<A, float, float>(op, *o, nthreads);
    }
    if (dtype == SG3_FLOAT64) {
        if (arg) return arg_reduce<A, double>(op, *o, axis, nthreads);
        return reduce_values<A, double, double>(op, *o, nthreads);
    }
    return SG3_EUNSUPPORTED;
}

}  // namespace sg3
