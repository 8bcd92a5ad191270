/**
 * @file perf_options.h
 * The command line of ucx_perftest. Letters and meanings follow upstream
 * ucx_perftest wherever both have an option (-t -s -n -w -m -c -O -W -l -o
 * -R -p -6 -f -v -I -d -x -D), so its scripts keep working; additions are
 * -L/--local (both sides from one command), -V/--validate, --csv, --json,
 * --sizes (a sweep of message sizes), --timeout and --connect-retry.
 */
#ifndef PERF_OPTIONS_H_
#define PERF_OPTIONS_H_

#include "perftest.h"

/** How this process takes part. */
typedef enum {
    PERF_MODE_SERVER,   /**< no host name: wait for a client, run its tests */
    PERF_MODE_CLIENT,   /**< host name given: connect, run, print results */
    PERF_MODE_LOCAL,    /**< -L: fork a server child, run the client here */
    PERF_MODE_LOOPBACK  /**< -l: both sides in this one process */
} perf_mode_t;

/** Output format of the results. */
typedef enum {
    PERF_FORMAT_TABLE,
    PERF_FORMAT_CSV,
    PERF_FORMAT_JSON
} perf_format_t;

/** Options given explicitly (perf_options_t::given): a server checks the
 *  client's test case against exactly these. */
enum {
    PERF_GIVEN_TEST   = 1u << 0,
    PERF_GIVEN_TL     = 1u << 1,
    PERF_GIVEN_DEV    = 1u << 2,
    PERF_GIVEN_LAYOUT = 1u << 3,
    PERF_GIVEN_MEM    = 1u << 4,
    PERF_GIVEN_SIZE   = 1u << 5,
    PERF_GIVEN_ITERS  = 1u << 6,
    PERF_GIVEN_DEVICE = 1u << 7
};

/** The parsed command line. */
typedef struct perf_options {
    perf_params_t params;       /**< template: every test case starts as a copy */
    unsigned      given;        /**< PERF_GIVEN_* */
    size_t        sizes[PERF_MAX_SIZES]; /**< --sizes: one test case per size */
    unsigned      num_sizes;    /**< 0: one test case with params.sg */
    perf_mode_t   mode;
    const char    *server_host; /**< client mode: where the server runs */
    uint16_t      port;         /**< -p */
    int           ipv6;         /**< -6 */
    perf_format_t format;
    int           final_only;   /**< -f: no header, no progress line */
    int           extra_info;   /**< -I: describe the transport chosen */
    int           cpus[PERF_MAX_CPUS]; /**< -c: client pins to cpus[0], server to cpus[1] */
    unsigned      num_cpus;
    double        connect_retry;  /**< --connect-retry: seconds to retry a refused connect */
    double        accept_timeout; /**< --accept-timeout: server waits this long (<= 0: forever) */
    int           progress;     /**< --progress: progress line even when stderr is no tty */
    int           cuda_api;     /**< --cuda-api: a perf_cuda_api_t (0: auto) */
} perf_options_t;

/** What perf_options_parse() decided. */
typedef enum {
    PERF_PARSE_RUN,   /**< run with the options */
    PERF_PARSE_EXIT,  /**< help was printed: exit with success */
    PERF_PARSE_ERROR  /**< a message and the usage were printed: exit with failure */
} perf_parse_result_t;

/**
 * Parse the command line into @a opts. On an error prints what is wrong
 * and the usage on stderr; -h prints the usage on stdout.
 */
perf_parse_result_t perf_options_parse(int argc, char **argv, perf_options_t *opts);

/** Print the usage text. */
void perf_options_usage(FILE *stream);

/**
 * Parse a size with an optional binary suffix (K, M, G; "64K" = 65536).
 * @return 0 on success, -1 if @a str is not a size.
 */
int perf_options_parse_size(const char *str, size_t *size_p);

#endif
