/* Which SIMD paths this CPU (and its operating system) can run.
 *
 * Compiled at the baseline ISA, so it runs everywhere. A path needs the CPU's feature
 * bits (cpuid) and the OS saving the registers it uses across context switches (the
 * XCR0 bits read with xgetbv): a CPU with AVX-512 under an OS or hypervisor that does not
 * save ZMM state must not take the AVX-512 path.
 */
#ifndef SG3_CPU_H
#define SG3_CPU_H

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

typedef struct {
    int sse2, avx, fma, f16c, avx2, avx512f, avx512dq, avx512bw, avx512vl, os_ymm, os_zmm, neon;
} sg3_cpu;

static sg3_cpu sg3_detect_cpu(void) {
    sg3_cpu c = {0};
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, cx, d;
    if (__get_cpuid(1, &a, &b, &cx, &d)) {
        c.sse2 = (d >> 26) & 1;
        c.fma = (cx >> 12) & 1;
        c.avx = (cx >> 28) & 1;
        c.f16c = (cx >> 29) & 1;
        if ((cx >> 27) & 1) { /* OSXSAVE: xgetbv is allowed */
            unsigned lo, hi;
            __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
            c.os_ymm = (lo & 0x6) == 0x6;    /* SSE and AVX state */
            c.os_zmm = (lo & 0xE6) == 0xE6;  /* and opmask, ZMM_Hi256, Hi16_ZMM */
        }
    }
    if (__get_cpuid_count(7, 0, &a, &b, &cx, &d)) {
        c.avx2 = (b >> 5) & 1;
        c.avx512f = (b >> 16) & 1;
        c.avx512dq = (b >> 17) & 1;
        c.avx512bw = (b >> 30) & 1;
        c.avx512vl = (b >> 31) & 1;
    }
#elif defined(__aarch64__)
    c.neon = 1;
#endif
    return c;
}

/* the AVX2 path also converts float16 with F16C, which every AVX2 CPU has */
static int sg3_has_avx2(sg3_cpu c) { return c.avx && c.avx2 && c.fma && c.f16c && c.os_ymm; }

static int sg3_has_avx512(sg3_cpu c) {
    return sg3_has_avx2(c) && c.avx512f && c.avx512dq && c.avx512bw && c.avx512vl && c.os_zmm;
}

#endif /* SG3_CPU_H */
