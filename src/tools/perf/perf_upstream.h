/**
 * @file perf_upstream.h
 * Upstream ucx_perftest's result rows, printed after our table so that a
 * script written for upstream's tool reads ours: its box of column titles,
 * then per run a "[thread 0]" row for each one-second report interval and
 * a "Final:" row. With -f (final numbers only) upstream prints neither the
 * interval rows nor the "Final:" label: the row starts with the number of
 * iterations, and the box calls its first column "Test" instead of "Stage".
 *
 * Columns after the label, whitespace-separated, in upstream's order and
 * units: iterations; typical (the -R percentile), average and overall
 * latency in microseconds; average and overall bandwidth in MB/s (2^20
 * B/s); average and overall message rate in msg/s. "Average" is over the
 * report interval (for Final, the time since the last report), "overall"
 * over the whole run. The Final row's typical and overall columns are the
 * numbers of our table's row for the same run, at the same precision.
 */
#ifndef PERF_UPSTREAM_H_
#define PERF_UPSTREAM_H_

#include "perftest.h"

/**
 * Print upstream's five-line box of column titles: "latency" or
 * "overhead" after @a pingpong, the percentile @a percentile of the
 * typical column, and "Stage" or (with @a final_only) "Test" as the title
 * of the label column.
 */
void perf_upstream_header(FILE *stream, int pingpong, double percentile, int final_only);

/**
 * Print the rows of the finished @a run: its intervals (from
 * run->progress, which may be NULL or hold none) and the Final row; with
 * @a final_only only the final row, without a label.
 */
void perf_upstream_rows(FILE *stream, const perf_run_t *run, int final_only);

#endif
