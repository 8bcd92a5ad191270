#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "perf_time.h"

#if defined(__x86_64__)
#  include <cpuid.h>
#endif

double perf_time_ticks_per_sec = 1e9;
int    perf_time_use_tsc       = 0;

#if defined(__x86_64__)
/*
 * The TSC is usable as a clock only when it ticks at a constant rate in
 * every power state (CPUID 0x80000007 EDX bit 8, "invariant TSC"); without
 * it two readings on different frequencies cannot be compared.
 */
static int perf_time_tsc_is_invariant(void)
{
    unsigned eax, ebx, ecx, edx;

    if (!__get_cpuid(0x80000000u, &eax, &ebx, &ecx, &edx) || (eax < 0x80000007u)) {
        return 0;
    }
    __get_cpuid(0x80000007u, &eax, &ebx, &ecx, &edx);
    return !!(edx & (1u << 8));
}

/*
 * Ticks per second: the TSC advance over a ~20 ms CLOCK_MONOTONIC window.
 * Reading both clocks back to back at each end keeps the error below 0.1%,
 * far inside the noise of any measurement this tool makes.
 */
static double perf_time_calibrate_tsc(void)
{
    uint64_t ns0, ns1, tsc0, tsc1;

    ns0  = perf_time_mono_ns();
    tsc0 = __rdtsc();
    do {
        ns1  = perf_time_mono_ns();
        tsc1 = __rdtsc();
    } while ((ns1 - ns0) < 20000000ull);

    return (double)(tsc1 - tsc0) * 1e9 / (double)(ns1 - ns0);
}
#endif

void perf_time_init(void)
{
#if defined(__x86_64__)
    if (perf_time_tsc_is_invariant()) {
        perf_time_ticks_per_sec = perf_time_calibrate_tsc();
        perf_time_use_tsc       = (perf_time_ticks_per_sec > 1e6);
        if (perf_time_use_tsc) {
            return;
        }
    }
#endif
    perf_time_use_tsc       = 0;
    perf_time_ticks_per_sec = 1e9;
}
