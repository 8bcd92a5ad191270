/**
 * @file perf_time.h
 * The benchmark clock. Every timed loop reads it once or twice per
 * iteration, so it must cost far less than the ~100 ns operations being
 * measured: on x86-64 with an invariant TSC it is rdtsc (about 20 ns in a
 * KVM guest, against about 35 ns for clock_gettime), calibrated once
 * against CLOCK_MONOTONIC; elsewhere it is clock_gettime(CLOCK_MONOTONIC).
 */
#ifndef PERF_TIME_H_
#define PERF_TIME_H_

#include <stdint.h>
#include <time.h>

#if defined(__x86_64__)
#  include <x86intrin.h>
#endif

/** Ticks per second of perf_time_now(); set by perf_time_init(). */
extern double perf_time_ticks_per_sec;

/** Whether perf_time_now() reads the TSC (1) or clock_gettime (0). */
extern int perf_time_use_tsc;

/**
 * Choose the clock and calibrate it (about 20 ms when the TSC is used).
 * Call once, before any measurement; not thread safe.
 */
void perf_time_init(void);

/** Nanoseconds of CLOCK_MONOTONIC (for deadlines, not for samples). */
static inline uint64_t perf_time_mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/** Current time in ticks (1 / perf_time_ticks_per_sec seconds). Thread safe. */
static inline uint64_t perf_time_now(void)
{
#if defined(__x86_64__)
    if (perf_time_use_tsc) {
        return __rdtsc();
    }
#endif
    return perf_time_mono_ns();
}

/** Convert a tick count to seconds. */
static inline double perf_time_to_sec(uint64_t ticks)
{
    return (double)ticks / perf_time_ticks_per_sec;
}

/** Convert seconds to ticks (rounded down). */
static inline uint64_t perf_time_from_sec(double sec)
{
    return (uint64_t)(sec * perf_time_ticks_per_sec);
}

#endif
