/**
 * @file perf_stats.h
 * Measurement of one run: a timestamp per iteration, kept as the time
 * since the previous one, from which the typical (percentile), average and
 * maximum latency come; bandwidth and message rate from the total time.
 * Also the once-a-second report of a long run: the progress line on
 * stderr, and the record of each one-second interval from which the
 * output prints upstream ucx_perftest's periodic rows (perf_upstream.h).
 *
 * The sampling call is inline and costs one clock read, one compare and
 * one store, so it disturbs what it measures as little as the clock allows.
 * Single-threaded: one perf_stats_t per measuring thread.
 */
#ifndef PERF_STATS_H_
#define PERF_STATS_H_

#include "perftest.h"
#include "perf_time.h"

/** At most this many samples are kept; longer runs keep every 2^k-th one. */
#define PERF_STATS_MAX_SAMPLES  (4u << 20)

/**
 * The typical latency of one report interval comes from at most this many
 * of its latest samples: selecting among them took ~50 us (2-core VM, -O2),
 * among the 4M samples a second of am_lat can keep ~70 ms, a stall once a
 * second in the middle of the run.
 */
#define PERF_STATS_INTERVAL_SAMPLES 4096

/**
 * The state at the end of one report interval, counted from the start of
 * the measured iterations. Times are per iteration (a whole round trip for
 * ping-pong: the output halves them, as it does the result).
 */
typedef struct perf_interval {
    uint64_t iters;    /**< iterations done when the interval ended */
    double   elapsed;  /**< seconds from the start to the end of the interval */
    double   typical;  /**< seconds: the percentile of the interval's latest samples */
} perf_interval_t;

/**
 * The initiator's report of a run: the progress line on stderr and the
 * record of its intervals. Owned by the session (one per test case, reused
 * after perf_progress_cleanup()); the driver's perf_stats_t fills it.
 */
typedef struct perf_progress {
    int             enabled;   /**< progress line; 0 for CSV/JSON/final-only output */
    int             record;    /**< keep intervals[] (for table output) */
    int             is_tty;    /**< rewrite one line with \r instead of adding lines */
    char            label[64]; /**< "am_lat 8 B" */
    uint64_t        total;     /**< iterations expected */
    size_t          msg_size;
    unsigned        msgs_per_iter; /**< perf_test_msgs_per_iter(): 2 halves latencies */
    double          percentile; /**< rank of an interval's typical latency (-R) */
    uint64_t        start;     /**< tick of the first measured iteration */
    int             printed;   /**< characters of the line on screen (to clear) */
    perf_interval_t *intervals; /**< one per report, in order (malloc'ed) */
    unsigned        num_intervals;
    unsigned        max_intervals; /**< allocated entries of intervals[] */
} perf_progress_t;

/** Samples of one run. */
typedef struct perf_stats {
    uint64_t        *samples;     /**< ticks between consecutive iterations */
    size_t          capacity;
    size_t          count;
    uint64_t        stride_mask;  /**< sample i is kept when (i & mask) == 0 */
    uint64_t        n;            /**< iterations recorded */
    uint64_t        start;        /**< tick when measuring began */
    uint64_t        prev;         /**< tick of the last iteration */
    uint64_t        max;          /**< longest iteration, over all of them */
    uint64_t        next_report;  /**< tick at which the next report is due */
    size_t          interval_first; /**< samples[] index where the interval began */
    perf_progress_t *progress;    /**< NULL: no report (neither line nor record) */
} perf_stats_t;

/**
 * Prepare for @a iters iterations (allocates the sample array).
 * @a progress may be NULL.
 */
ucs_status_t perf_stats_init(perf_stats_t *st, uint64_t iters, perf_progress_t *progress);

/** Free the sample array. */
void perf_stats_cleanup(perf_stats_t *st);

/** Free the intervals of @a progress and forget them (it may be reused). */
void perf_progress_cleanup(perf_progress_t *progress);

/**
 * Slow path of perf_stats_sample(), once a second: record the interval
 * that ended at @a now, print the progress line.
 */
void perf_stats_report_progress(perf_stats_t *st, uint64_t now);

/** Mark the start of the measured iterations. */
static inline void perf_stats_start(perf_stats_t *st)
{
    st->start = st->prev = perf_time_now();
    if (st->progress != NULL) {
        st->progress->start         = st->start;
        st->progress->num_intervals = 0;
        st->next_report             = st->start + perf_time_from_sec(1.0);
    } else {
        st->next_report             = UINT64_MAX;
    }
}

/** Record the end of one iteration. */
static inline void perf_stats_sample(perf_stats_t *st)
{
    uint64_t now   = perf_time_now();
    uint64_t delta = now - st->prev;

    st->prev = now;
    if (delta > st->max) {
        st->max = delta;
    }
    if (((st->n & st->stride_mask) == 0) && (st->count < st->capacity)) {
        st->samples[st->count++] = delta;
    }
    ++st->n;
    if (now >= st->next_report) {
        perf_stats_report_progress(st, now);
    }
}

/**
 * Compute @a result from the samples. @a end is the tick at which the run
 * finished (after the final acknowledgement of a stream, which is not an
 * iteration of its own). @a msgs_per_iter (perf_test_msgs_per_iter()) of 2
 * halves latencies (one way of a round trip; one message of each direction
 * of a bidirectional stream) and counts two messages per iteration for the
 * message rate and bandwidth.
 * Clears the progress line. Reorders the samples.
 */
void perf_stats_finish(perf_stats_t *st, uint64_t end, unsigned msgs_per_iter,
                       const perf_params_t *params, perf_result_t *result);

/**
 * Value at percentile @a pct (0 < pct <= 100) of @a count samples
 * (partially reorders them). 0 when count is 0.
 */
uint64_t perf_stats_percentile(uint64_t *samples, size_t count, double pct);

#endif
