// Cache-blocking parameters MC, KC, NC, derived at run time from the machine's cache sizes.
//
// Design:
//   The five loops around the micro-kernel (see gemm.hpp) cut the problem into blocks that stay
//   resident in one level of the cache hierarchy while they are reused:
//     KC  (L2, with L1 as a stream buffer): a packed kc x NR micro-panel of B is reused by
//               every MR-row micro-panel of A in turn (the ir loop). Textbook BLIS keeps it in
//               L1; here it only has to stay in L2, streamed through L1 (by the prefetcher)
//               at ~12 bytes per cycle, which lets kc be deep, and kc also sets how often the
//               kernel reloads its C block (once per kc steps).
//     MC  (L2): a packed mc x kc block of A is reused for every NR-column panel of B, so it
//               stays in this core's L2 alongside the B micro-panel.
//     NC  (L3): a packed kc x nc block of B is reused for every mc block of A, so it stays
//               in L3 (shared by the cores, which all read the same B block).
//   The sizes come from sysfs (/sys/devices/system/cpu/cpu0/cache/index*/), then sysconf, then
//   fallbacks typical of a recent x86 core. Each block takes only a fraction of its cache: the
//   rest holds the operands streaming through it, and set-associativity makes a completely
//   full cache evict what it should keep. The fractions were tuned on Zen 4 (1 MiB L2); the
//   L1 size is reported for the docs but no block is sized to it.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "gemm_arch.hpp"

namespace sg3 {

struct gemm_blocking_info {
    int mr, nr;                          // micro-kernel register block (rows of A, columns of B)
    std::int64_t mc, kc, nc;             // cache blocks, multiples of mr / (any) / nr
    std::int64_t l1d, l2, l3;            // cache sizes in bytes they were derived from
    std::int64_t min_parallel_work;      // smaller m*n*k run on one thread (waking a team costs
                                         // a few microseconds)
};

namespace detail {

// Size in bytes of the data or unified cache at `level` (1, 2, 3) of cpu0, or 0 if unknown.
template <class Arch>
std::int64_t sysfs_cache_size(int level) {
    for (int index = 0; index < 8; ++index) {
        char path[96];
        auto read_line = [&](const char* file, char* out, int size) {
            std::snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/%s", index, file);
            std::FILE* f = std::fopen(path, "r");
            if (!f) return false;
            bool ok = std::fgets(out, size, f) != nullptr;
            std::fclose(f);
            return ok;
        };
        char text[64];
        if (!read_line("level", text, sizeof text)) continue;
        if (std::atoi(text) != level) continue;
        if (!read_line("type", text, sizeof text) || std::strncmp(text, "Instruction", 11) == 0) continue;
        if (!read_line("size", text, sizeof text)) continue;
        char* end = nullptr;
        long long value = std::strtoll(text, &end, 10);
        if (end && (*end == 'K' || *end == 'k')) value <<= 10;
        else if (end && (*end == 'M' || *end == 'm')) value <<= 20;
        return value > 0 ? value : 0;
    }
    return 0;
}

template <class Arch>
std::int64_t cache_size(int level) {
    std::int64_t size = sysfs_cache_size<Arch>(level);
    if (size > 0) return size;
#if defined(_SC_LEVEL1_DCACHE_SIZE)
    long value = sysconf(level == 1 ? _SC_LEVEL1_DCACHE_SIZE
                         : level == 2 ? _SC_LEVEL2_CACHE_SIZE : _SC_LEVEL3_CACHE_SIZE);
    if (value > 0) return value;
#endif
    return level == 1 ? (32 << 10) : level == 2 ? (512 << 10) : (8 << 20);
}

// Round `value` down to a multiple of `step`, but never below one step.
inline constexpr std::int64_t round_down_to(std::int64_t value, std::int64_t step) {
    return value < step ? step : value / step * step;
}

template <class Arch, class T>
gemm_blocking_info compute_blocking() {
    using shape = kernel_shape<Arch, T>;
    const int mr = shape::mr;
    const int nr = shape::nv * static_cast<int>(xsimd::batch<T, Arch>::size);
    gemm_blocking_info b{};
    b.mr = mr;
    b.nr = nr;
    // Sanity-clamp what the OS reports (virtual machines report odd values).
    b.l1d = std::clamp<std::int64_t>(cache_size<Arch>(1), 16 << 10, 256 << 10);
    b.l2 = std::clamp<std::int64_t>(cache_size<Arch>(2), 128 << 10, 8 << 20);
    b.l3 = std::clamp<std::int64_t>(cache_size<Arch>(3), 0, 256 << 20);
    const std::int64_t sz = sizeof(T);
    // KC: deep, so that the kernel's C update (an MR x NR load + store every kc steps) costs
    // little, but the kc x NR micro-panel of B, reused by each micro-kernel call of the ir loop,
    // must stay in L2 next to the A block: it gets 1/8 of L2. Capped at 512 (deeper measured no
    // better overall). The textbook rule, that panel within L1, gives kc = 64..128 on Zen 4 and
    // measured 3-10% slower: its L2 streams the ~12 bytes per cycle the kernel needs easily.
    b.kc = std::clamp<std::int64_t>(round_down_to(b.l2 / 8 / (nr * sz), 16), 64, 512);
    // MC: the mc x kc block of A, reused by every jr step, takes half of L2.
    b.mc = std::clamp<std::int64_t>(round_down_to(b.l2 / 2 / (b.kc * sz), mr), mr, 4096);
    // NC: the kc x nc block of B, shared by all threads, takes half of L3 (no L3: 4 L2s).
    const std::int64_t l3 = b.l3 > 0 ? b.l3 : 4 * b.l2;
    b.nc = std::clamp<std::int64_t>(round_down_to(l3 / 2 / (b.kc * sz), nr), nr, 16384);
    b.min_parallel_work = std::int64_t(64) * 64 * 64;
    return b;
}

}  // namespace detail

// The blocking this build uses for (Arch, T); computed once per process.
template <class Arch, class T>
const gemm_blocking_info& gemm_blocking() {
    static const gemm_blocking_info info = detail::compute_blocking<Arch, T>();
    return info;
}

}  // namespace sg3
