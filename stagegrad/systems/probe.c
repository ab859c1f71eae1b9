/* The kernels `stagegrad systems` compiles under several sets of flags (see systems.py).
 *
 * Design: plain C loops, the kind a compiler's flags decide the speed of, each called
 * `reps` times from one C call so that Python's call overhead does not count; and probes
 * whose answers IEEE 754 fixes, so a build that breaks them shows it. Every function is
 * exported with C linkage for ctypes.
 */
#include <math.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define HAVE_MXCSR 1
#else
#define HAVE_MXCSR 0
#endif

/* c = a + b, reps times */
void add_reps(const float* a, const float* b, float* c, long n, long reps) {
    for (long r = 0; r < reps; ++r) {
        for (long i = 0; i < n; ++i) c[i] = a[i] + b[i];
        __asm__ volatile("" : : "r"(c) : "memory");  /* c is read, a and b may change: no rep is skipped */
    }
}

/* the sum of a in order (IEEE forbids reordering it: only -ffast-math lets the compiler
 * split it over vector lanes), reps times; the last sum */
float sum_reps(const float* a, long n, long reps) {
    float s = 0;
    for (long r = 0; r < reps; ++r) {
        __asm__ volatile("" : : "r"(a) : "memory");  /* a may have changed: sum it again */
        s = 0;
        for (long i = 0; i < n; ++i) s += a[i];
    }
    return s;
}

/* y = x * f + x * f (reps times): on subnormal x every product and sum is subnormal */
void scale_reps(const float* x, float* y, long n, float f, long reps) {
    for (long r = 0; r < reps; ++r) {
        for (long i = 0; i < n; ++i) y[i] = x[i] * f + x[i] * f;
        __asm__ volatile("" : : "r"(y) : "memory");
    }
}

/* IEEE probes: each answer is fixed by the standard */
int probe_isnan(float x) { return isnan(x); }
int probe_isinf(float x) { return isinf(x); }
float probe_plus_zero(float x) { return x + 0.0f; }  /* -0.0 + 0.0 is +0.0 */
float probe_tiny(float x) { return x * 0.5f; }       /* a subnormal stays nonzero */

/* the SSE control register's flush-to-zero (bit 15) and denormals-are-zero (bit 6) bits:
 * -1 where the CPU has no such register */
int get_ftz_daz(void) {
#if HAVE_MXCSR
    return (int)(_mm_getcsr() & 0x8040u);
#else
    return -1;
#endif
}

void set_ftz_daz(int on) {
#if HAVE_MXCSR
    const unsigned int csr = _mm_getcsr();
    _mm_setcsr(on ? (csr | 0x8040u) : (csr & ~0x8040u));
#else
    (void)on;
#endif
}
