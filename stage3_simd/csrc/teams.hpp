// Independent items split among an OpenMP team.
#pragma once

#include <algorithm>
#include <cstdint>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace sg3 {

// The most threads a team asked for nthreads can have: no more than the cores, and one inside a
// parallel region or without OpenMP. Kernels size their per-thread buffers by it.
inline int team_size(int nthreads) {
#ifdef _OPENMP
    return omp_in_parallel() ? 1 : std::min(std::max(nthreads, 1), omp_get_num_procs());
#else
    (void)nthreads;
    return 1;
#endif
}

// fn(item, thread) for items 0 .. count - 1, in contiguous ranges, one per thread of a team of up
// to team_size(nthreads) threads, and no more than there are items. Returns the number of threads
// that ran, so that per-thread partial results can be summed.
template <class Fn>
int over_items(int64_t count, int nthreads, Fn fn) {
    const int team = static_cast<int>(std::min<int64_t>(team_size(nthreads), std::max<int64_t>(count, 1)));
    if (team <= 1) {
        for (int64_t i = 0; i < count; ++i) fn(i, 0);
        return 1;
    }
    int ran = 1;
#ifdef _OPENMP
#pragma omp parallel num_threads(team)
    {
        const int tid = omp_get_thread_num(), size = omp_get_num_threads();
        if (tid == 0) ran = size;
        for (int64_t i = count * tid / size; i < count * (tid + 1) / size; ++i) fn(i, tid);
    }
#endif
    return ran;
}

}  // namespace sg3
