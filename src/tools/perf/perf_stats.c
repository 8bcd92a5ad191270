#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "perf_stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

ucs_status_t perf_stats_init(perf_stats_t *st, uint64_t iters, perf_progress_t *progress)
{
    uint64_t stride = 1;

    memset(st, 0, sizeof(*st));
    /* Keep every stride-th sample so that the array stays bounded; a
     * power-of-two stride makes the keep test a mask, not a division. */
    while ((iters + stride - 1) / stride > PERF_STATS_MAX_SAMPLES) {
        stride *= 2;
    }
    st->stride_mask = stride - 1;
    st->capacity    = (iters + stride - 1) / stride;
    if (st->capacity == 0) {
        st->capacity = 1;
    }
    st->samples = malloc(st->capacity * sizeof(*st->samples));
    if (st->samples == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    st->progress    = ((progress != NULL) && (progress->enabled || progress->record)) ?
                          progress : NULL;
    st->next_report = UINT64_MAX;
    return UCS_OK;
}

void perf_stats_cleanup(perf_stats_t *st)
{
    free(st->samples);
    st->samples = NULL;
}

void perf_progress_cleanup(perf_progress_t *progress)
{
    free(progress->intervals);
    progress->intervals     = NULL;
    progress->num_intervals = 0;
    progress->max_intervals = 0;
}

static void perf_stats_print_progress(perf_stats_t *st, uint64_t now)
{
    perf_progress_t *p = st->progress;
    double elapsed     = perf_time_to_sec(now - p->start);
    double div         = (double)p->msgs_per_iter;
    double lat_us      = (elapsed / (double)st->n) * 1e6 / div;
    double mbs         = (double)st->n * div * (double)p->msg_size / elapsed / (1 << 20);
    int len;

    len = fprintf(stderr, "%s%s: %5.1f%% %llu/%llu iterations, %.3f us, %.2f MB/s%s",
                  p->is_tty ? "\r" : "", p->label, 100.0 * (double)st->n / (double)p->total,
                  (unsigned long long)st->n, (unsigned long long)p->total, lat_us, mbs,
                  p->is_tty ? "  " : "\n");
    fflush(stderr);
    p->printed = (len > 0) ? len : 1;
}

/*
 * Keep the interval that ended at @a now. Without memory for it the rows
 * of this and later intervals are missing; the run and its result are not
 * affected. A report at the last iteration records nothing: what remains
 * of the run is the Final row's interval.
 */
static void perf_stats_record_interval(perf_stats_t *st, uint64_t now)
{
    perf_progress_t *p = st->progress;
    size_t first       = st->interval_first;
    perf_interval_t *grown, *iv;
    unsigned max;

    if (st->n >= p->total) {
        return;
    }
    if (p->num_intervals == p->max_intervals) {
        max   = (p->max_intervals > 0) ? 2 * p->max_intervals : 16;
        grown = realloc(p->intervals, max * sizeof(*grown));
        if (grown == NULL) {
            return;
        }
        p->intervals     = grown;
        p->max_intervals = max;
    }
    if (st->count - first > PERF_STATS_INTERVAL_SAMPLES) {
        first = st->count - PERF_STATS_INTERVAL_SAMPLES;
    }
    /* Selecting in place only reorders this interval's samples; the
     * percentile of the whole run, taken at the end, is the same. */
    iv          = &p->intervals[p->num_intervals++];
    iv->iters   = st->n;
    iv->elapsed = perf_time_to_sec(now - st->start);
    iv->typical = perf_time_to_sec(perf_stats_percentile(st->samples + first,
                                                         st->count - first,
                                                         p->percentile));
    st->interval_first = st->count;
}

void perf_stats_report_progress(perf_stats_t *st, uint64_t now)
{
    if (st->progress->record) {
        perf_stats_record_interval(st, now);
    }
    if (st->progress->enabled) {
        perf_stats_print_progress(st, now);
    }
    /* The report's own time (a selection, a print) is not the transport's:
     * the next sample starts after it, so that neither the maximum nor the
     * percentile shows it. The run's total time still holds it. */
    st->prev        = perf_time_now();
    st->next_report = now + perf_time_from_sec(1.0);
}

/*
 * Quickselect with a three-way partition: the k-th smallest sample in
 * expected linear time, and no quadratic case when many samples are equal
 * (common: latencies cluster on a few tick values).
 */
static uint64_t perf_stats_select(uint64_t *a, size_t count, size_t k)
{
    ptrdiff_t lo = 0, hi = (ptrdiff_t)count - 1, target = (ptrdiff_t)k;
    ptrdiff_t lt, gt, i;
    uint64_t pivot, tmp;

    while (lo < hi) {
        pivot = a[lo + (hi - lo) / 2];
        lt    = lo;
        gt    = hi;
        i     = lo;
        /* Invariant: [lo,lt) < pivot, [lt,i) == pivot, (gt,hi] > pivot. */
        while (i <= gt) {
            if (a[i] < pivot) {
                tmp = a[lt]; a[lt] = a[i]; a[i] = tmp;
                ++lt;
                ++i;
            } else if (a[i] > pivot) {
                tmp = a[gt]; a[gt] = a[i]; a[i] = tmp;
                --gt;
            } else {
                ++i;
            }
        }
        if (target < lt) {
            hi = lt - 1;
        } else if (target > gt) {
            lo = gt + 1;
        } else {
            return pivot;
        }
    }
    return a[target];
}

uint64_t perf_stats_percentile(uint64_t *samples, size_t count, double pct)
{
    double rank;
    size_t k;

    if (count == 0) {
        return 0;
    }
    /* Nearest-rank definition: the smallest value with at least pct% of
     * the samples at or below it. */
    rank = ceil(pct / 100.0 * (double)count);
    k    = (rank < 1.0) ? 0 : (size_t)rank - 1;
    if (k >= count) {
        k = count - 1;
    }
    return perf_stats_select(samples, count, k);
}

void perf_stats_finish(perf_stats_t *st, uint64_t end, unsigned msgs_per_iter,
                       const perf_params_t *params, perf_result_t *result)
{
    double div = (double)msgs_per_iter;
    double elapsed;

    if ((st->progress != NULL) && st->progress->printed) {
        if (st->progress->is_tty) {
            fprintf(stderr, "\r%*s\r", st->progress->printed, "");
        }
        st->progress->printed = 0;
    }

    elapsed         = perf_time_to_sec(end - st->start);
    result->iters   = st->n;
    result->elapsed = elapsed;
    if ((st->n == 0) || !(elapsed > 0.0)) {
        result->lat_typical = result->lat_avg = result->lat_max = 0.0;
        result->bandwidth   = result->msg_rate = 0.0;
        return;
    }

    result->lat_avg     = elapsed / (double)st->n / div;
    result->lat_max     = perf_time_to_sec(st->max) / div;
    result->lat_typical = perf_time_to_sec(perf_stats_percentile(st->samples, st->count,
                                                                 params->percentile)) / div;
    /* Upstream's convention: a ping-pong moves one message per half round
     * trip, so its rate and bandwidth follow from the one-way latency. */
    result->msg_rate  = 1.0 / result->lat_avg;
    result->bandwidth = result->msg_rate * (double)params->msg_size;
}
