// Independent items split among an OpenMP team.
#pragma once

#include <algorithm>
#include <cstdint>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace sg3 {

// fn(item, thread) for items 0 .. count - 1, in contiguous ranges, one per thread of a team of up
// to nthreads (no more than there are items or cores; one inside a parallel region). Returns the
// number of threads that ran, so that per-thread partial results can be summed.
template <class Fn>
int over_items(int64_t count, int nthreads, Fn fn) {
    int team = static_cast<int>(std::min<int64_t>(std::max(nthreads, 1), std::max<int64_t>(count, 1)));
#ifdef _OPENMP
    if (omp_in_parallel()) team = 1;
    team = std::min(team, omp_get_num_procs());
#else
    team = 1;
#endif
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
