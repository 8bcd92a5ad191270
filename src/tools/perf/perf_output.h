/**
 * @file perf_output.h
 * Results as the user sees them: a table (default), CSV (-v, --csv: one
 * header line, then one line per test case, a fixed set of columns) or
 * JSON (--json: one document with a "results" array). Latencies are in
 * microseconds; MB/s is 2^20 bytes per second and GB/s 2^30, as upstream
 * ucx_perftest prints them. Only the client prints results.
 *
 * After the table (and after the rows of -f) come upstream ucx_perftest's
 * rows for the same runs (perf_upstream.h): collected while the runs go,
 * printed when the table is closed, so that the table stays one block.
 */
#ifndef PERF_OUTPUT_H_
#define PERF_OUTPUT_H_

#include "perf_options.h"

/** Number of CSV columns (the test script checks every line has them). */
#define PERF_OUTPUT_CSV_COLUMNS 19

/** State of one output document. */
typedef struct perf_output {
    const perf_options_t *opts;
    FILE                 *stream;
    unsigned             rows;    /**< results printed so far */
    FILE                 *upstream; /**< table: upstream's rows so far, or NULL */
    char                 *upstream_text; /**< its buffer (open_memstream) */
    size_t               upstream_len;
} perf_output_t;

/** Start the document on @a stream (CSV header line, JSON opening). */
void perf_output_begin(perf_output_t *out, const perf_options_t *opts, FILE *stream);

/**
 * Print the result of one finished run (table header before the first);
 * for the table, keep upstream's rows of it for perf_output_end().
 */
void perf_output_result(perf_output_t *out, const perf_run_t *run);

/**
 * Close the document (the table: then upstream's rows of the runs that
 * finished). @a error (NULL when all went well) is recorded in JSON
 * output, so that a script reading only stdout sees the failure.
 */
void perf_output_end(perf_output_t *out, const char *error);

#endif
