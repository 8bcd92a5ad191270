#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "perf_upstream.h"
#include "perf_stats.h"
#include "perf_tests.h"

#define PERF_UPSTREAM_MB (1024.0 * 1024.0)

/* Column widths of upstream's box: label, iterations, three latencies, two
 * bandwidths, two message rates. */
static const char perf_upstream_rule_top[] =
    "+--------------+--------------+------------------------------+"
    "---------------------+-----------------------+";
static const char perf_upstream_rule[] =
    "+--------------+--------------+----------+---------+---------+"
    "----------+----------+-----------+-----------+";

/* The numbers of one row; latencies in seconds per message (one way for
 * ping-pong), [0] over the interval, [1] over the whole run. */
typedef struct perf_upstream_row {
    uint64_t iters;
    double   typical;
    double   lat[2];
    double   bw[2];   /* bytes per second */
    double   rate[2]; /* messages per second */
} perf_upstream_row_t;

void perf_upstream_header(FILE *stream, int pingpong, double percentile, int final_only)
{
    char rank[16];

    snprintf(rank, sizeof(rank), "%.1f%%ile", percentile);
    fprintf(stream, "%s\n", perf_upstream_rule_top);
    fprintf(stream, "|              |              |%s|   bandwidth (MB/s)  |"
                    "  message rate (msg/s) |\n",
            pingpong ? "        latency (usec)        " :
                       "       overhead (usec)        ");
    fprintf(stream, "%s\n", perf_upstream_rule);
    fprintf(stream, "|%s| # iterations |%9s | average | overall |  average |  overall |"
                    "  average  |  overall  |\n",
            final_only ? "     Test     " : "    Stage     ", rank);
    fprintf(stream, "%s\n", perf_upstream_rule);
}

/*
 * Upstream's widths, with a space before every number even where upstream
 * has none: a number wider than its column then widens the row instead of
 * running into its neighbour, and the columns stay apart for awk.
 */
static void perf_upstream_print(FILE *stream, const char *label,
                                const perf_upstream_row_t *row)
{
    fprintf(stream, "%-10s %17llu %10.3f %9.3f %9.3f %11.2f %10.2f %11.0f %11.0f\n",
            label, (unsigned long long)row->iters, row->typical * 1e6, row->lat[0] * 1e6,
            row->lat[1] * 1e6, row->bw[0] / PERF_UPSTREAM_MB,
            row->bw[1] / PERF_UPSTREAM_MB, row->rate[0], row->rate[1]);
}

/* Bandwidth and message rate of slot @a i from its latency, the way
 * perf_stats_finish() derives the result's (0 for a run too short to time). */
static void perf_upstream_rates(perf_upstream_row_t *row, int i, size_t msg_size)
{
    row->rate[i] = (row->lat[i] > 0.0) ? 1.0 / row->lat[i] : 0.0;
    row->bw[i]   = row->rate[i] * (double)msg_size;
}

/* Seconds per message between two points of the run; 0 if none passed. */
static double perf_upstream_lat(uint64_t iters, double elapsed, double div)
{
    return (iters > 0) ? elapsed / (double)iters / div : 0.0;
}

void perf_upstream_rows(FILE *stream, const perf_run_t *run, int final_only)
{
    const perf_progress_t *p = run->progress;
    const perf_result_t *r   = &run->result;
    size_t msg_size          = run->params->msg_size;
    double div               = (double)perf_test_msgs_per_iter(run->test);
    unsigned num             = ((p != NULL) && (r->iters > 0)) ? p->num_intervals : 0;
    perf_interval_t prev     = {0, 0.0, 0.0};
    const perf_interval_t *iv;
    perf_upstream_row_t row;
    unsigned i;

    for (i = 0; i < num; ++i) {
        iv          = &p->intervals[i];
        row.iters   = iv->iters;
        row.typical = iv->typical / div;
        row.lat[0]  = perf_upstream_lat(iv->iters - prev.iters,
                                        iv->elapsed - prev.elapsed, div);
        row.lat[1]  = perf_upstream_lat(iv->iters, iv->elapsed, div);
        perf_upstream_rates(&row, 0, msg_size);
        perf_upstream_rates(&row, 1, msg_size);
        if (!final_only) {
            perf_upstream_print(stream, "[thread 0]", &row);
        }
        prev = *iv;
    }

    /* The whole-run columns are the result itself, so that they read as
     * the table's row does; the interval is what followed the last report. */
    row.iters   = r->iters;
    row.typical = r->lat_typical;
    row.lat[0]  = r->lat_avg;
    row.lat[1]  = r->lat_avg;
    row.bw[1]   = r->bandwidth;
    row.rate[1] = r->msg_rate;
    if (r->iters > prev.iters) {
        row.lat[0] = perf_upstream_lat(r->iters - prev.iters, r->elapsed - prev.elapsed,
                                       div);
    }
    perf_upstream_rates(&row, 0, msg_size);
    perf_upstream_print(stream, final_only ? "" : "Final:", &row);
}
