/**
 * @file cpu_set.h
 * A fixed-size set of CPU numbers, independent of glibc's cpu_set_t so that
 * its size is part of our ABI rather than the C library's.
 *
 * ucp_worker_params_t embeds one (cpu_mask), so the layout -- 1024 bits held
 * in an array of unsigned long named ucs_bits -- is fixed by upstream UCX and
 * must not change. The helpers below are header-only; none needs libucs.
 */
#ifndef UCS_TYPE_CPU_SET_H
#define UCS_TYPE_CPU_SET_H

#include <stddef.h>
#include <stdint.h>

/** One word of the set. */
typedef unsigned long int ucs_cpu_mask_t;

/** How many CPU numbers a set can hold: 0 .. UCS_CPU_SETSIZE - 1. */
#define UCS_CPU_SETSIZE   1024

/** Bits in one word of the set. */
#define UCS_NCPUBITS      (8 * sizeof(ucs_cpu_mask_t))

/** Index of the word that holds CPU @a _cpu. */
#define UCS_CPUELT(_cpu)  ((_cpu) / UCS_NCPUBITS)

/** Bit of CPU @a _cpu inside its word. */
#define UCS_CPUMASK(_cpu) ((ucs_cpu_mask_t)1 << ((_cpu) % UCS_NCPUBITS))

/** A set of CPUs; clear it with UCS_CPU_ZERO() before use. */
typedef struct {
    ucs_cpu_mask_t ucs_bits[UCS_CPU_SETSIZE / UCS_NCPUBITS];
} ucs_cpu_set_t;

/** Remove every CPU from the set @a _setp points to. */
#define UCS_CPU_ZERO(_setp) \
    do { \
        size_t _ucs_w; \
        for (_ucs_w = 0; _ucs_w < UCS_CPU_SETSIZE / UCS_NCPUBITS; ++_ucs_w) { \
            (_setp)->ucs_bits[_ucs_w] = 0; \
        } \
    } while (0)

/** Add CPU @a _cpu to the set; a number outside the set's range is ignored. */
#define UCS_CPU_SET(_cpu, _setp) \
    do { \
        size_t _ucs_cpu = (size_t)(_cpu); \
        if (_ucs_cpu < UCS_CPU_SETSIZE) { \
            (_setp)->ucs_bits[UCS_CPUELT(_ucs_cpu)] |= UCS_CPUMASK(_ucs_cpu); \
        } \
    } while (0)

/** Remove CPU @a _cpu from the set; a number outside the range is ignored. */
#define UCS_CPU_CLR(_cpu, _setp) \
    do { \
        size_t _ucs_cpu = (size_t)(_cpu); \
        if (_ucs_cpu < UCS_CPU_SETSIZE) { \
            (_setp)->ucs_bits[UCS_CPUELT(_ucs_cpu)] &= ~UCS_CPUMASK(_ucs_cpu); \
        } \
    } while (0)

/**
 * Whether @a cpu is in the set.
 *
 * @return 1 if it is, 0 if it is not or lies outside the set's range.
 */
static inline int ucs_cpu_is_set(int cpu, const ucs_cpu_set_t *cpusetp)
{
    size_t n = (size_t)cpu;

    if ((cpu < 0) || (n >= UCS_CPU_SETSIZE)) {
        return 0;
    }
    return (cpusetp->ucs_bits[UCS_CPUELT(n)] & UCS_CPUMASK(n)) != 0;
}

/**
 * The lowest CPU number in the set, or 0 when the set is empty (callers
 * that must tell "empty" from "CPU 0" check ucs_cpu_is_set(0, ...)).
 */
static inline int ucs_cpu_set_find_lcs(const ucs_cpu_set_t *cpu_mask)
{
    int cpu;

    for (cpu = 0; cpu < UCS_CPU_SETSIZE; ++cpu) {
        if (ucs_cpu_is_set(cpu, cpu_mask)) {
            return cpu;
        }
    }
    return 0;
}

#endif
