/**
 * @file perftest.h
 * Types shared by every part of ucx_perftest: the parameters of one test
 * case (what the client sends to the server), the result of a run, and the
 * run context a test driver receives.
 *
 * How the parts fit:
 *   perf_options.c  command line -> perf_options_t (a template of test cases)
 *   perf_session.c  client / server / local / loopback flow; one perf_run_t
 *                   per test case
 *   perf_oob.c      out-of-band TCP (or socketpair) exchange
 *   perf_wire.c     byte encoding of what crosses the out-of-band channel
 *   perf_tests.c    the registry of tests and of API drivers (uct, ucp)
 *   perf_uct*.c     the UCT driver (active messages, put, get)
 *   perf_memory.c   memory kinds (host now; the CUDA allocators later)
 *   perf_stats.c    samples, percentiles, progress line
 *   perf_output.c   table, CSV and JSON output
 */
#ifndef PERFTEST_H_
#define PERFTEST_H_

#include <ucs/type/status.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PERF_PROGRAM_NAME   "ucx_perftest"
#define PERF_NAME_MAX       32     /**< test, transport, device, memory names */
#define PERF_MAX_SG         16     /**< scatter-gather elements of one message (-s) */
#define PERF_MAX_SIZES      64     /**< message sizes of one sweep (--sizes) */
#define PERF_MAX_CPUS       64     /**< entries of -c */
#define PERF_DEFAULT_PORT   13337  /**< same default as upstream ucx_perftest */
#define PERF_ERROR_MAX      256    /**< length of a user-facing error message */

struct perf_oob;
struct perf_progress;
struct perf_test_desc;
struct perf_mem_kind;

/** How the sender hands data to the transport (-D). */
typedef enum {
    PERF_LAYOUT_AUTO,  /**< short if it fits, else bcopy if it fits, else zcopy */
    PERF_LAYOUT_SHORT, /**< inline in the send call */
    PERF_LAYOUT_BCOPY, /**< packed into a transport buffer by a callback */
    PERF_LAYOUT_ZCOPY, /**< from the registered user buffer, no copy */
    PERF_LAYOUT_LAST
} perf_layout_t;

/** Names of perf_layout_t values, as -D accepts them. */
extern const char *perf_layout_names[];

/** Flags of perf_params_t::flags. */
enum {
    PERF_FLAG_VALIDATE    = 1u << 0, /**< check every received byte (-V) */
    PERF_FLAG_NO_RESP_PROGRESS = 1u << 1 /**< one-sided tests: responder does not progress (-o) */
};

/** Which side of the memory pair a buffer belongs to (-m send,recv). */
enum {
    PERF_SIDE_SEND = 0, /**< the initiator (client) */
    PERF_SIDE_RECV = 1, /**< the responder (server) */
    PERF_SIDE_LAST
};

/**
 * One test case. The client fills it from its command line and sends it to
 * the server, whose own options only restrict what it accepts: the client's
 * copy is authoritative (perf_session.c).
 */
typedef struct perf_params {
    char          test_name[PERF_NAME_MAX];
    char          tl_name[PERF_NAME_MAX];   /**< UCT transport (-x) */
    char          dev_name[PERF_NAME_MAX];  /**< UCT device (-d); "" = first device */
    char          mem_kind[PERF_SIDE_LAST][PERF_NAME_MAX]; /**< -m send,recv */
    uint32_t      device[PERF_SIDE_LAST];   /**< GPU of each side's buffers (-a) */
    perf_layout_t layout;                   /**< -D */
    unsigned      sg_count;                 /**< elements of sg[] */
    size_t        sg[PERF_MAX_SG];          /**< scatter-gather sizes (-s) */
    size_t        msg_size;                 /**< sum of sg[]: bytes per message */
    uint64_t      iters;                    /**< measured iterations (-n) */
    uint64_t      warmup;                   /**< untimed iterations before them (-w) */
    unsigned      window;                   /**< am_bw flow-control window (-W), 0 = none */
    unsigned      outstanding;              /**< max unfinished zcopy sends (-O), 0 = no limit */
    unsigned      am_header;                /**< ucp_am tests: user header bytes (-H) */
    unsigned      flags;                    /**< PERF_FLAG_* */
    double        percentile;               /**< rank of the "typical" latency (-R) */
    double        timeout;                  /**< seconds a single wait may last */
} perf_params_t;

/**
 * What a measured run produced (filled on the initiator). Latencies are in
 * seconds: half a round trip for ping-pong tests, the time between two
 * sends (the sender's overhead) for stream tests.
 */
typedef struct perf_result {
    uint64_t      iters;
    double        elapsed;       /**< seconds of the measured iterations */
    double        lat_typical;   /**< percentile params->percentile of the samples */
    double        lat_avg;
    double        lat_max;
    double        bandwidth;     /**< bytes per second */
    double        msg_rate;      /**< messages per second */
    perf_layout_t layout;        /**< the layout actually used (AUTO resolved) */
    char          transport[2 * PERF_NAME_MAX]; /**< "tl/dev" that carried the data */
    char          info[512];     /**< the driver's description of the path (-I) */
    char          proto[2 * PERF_NAME_MAX]; /**< "protocol/transport" libucp chose, or "-" */
    double        raw_bandwidth; /**< GPU rows: the raw-copy reference in bytes/s; 0: none */
} perf_result_t;

/** Which side(s) of a test this process plays. */
typedef enum {
    PERF_ROLE_INITIATOR = 1, /**< sends, measures: the client */
    PERF_ROLE_RESPONDER = 2, /**< receives, replies: the server */
    PERF_ROLE_BOTH      = 3  /**< both in one process (loopback, -l) */
} perf_role_t;

/**
 * Everything a driver needs to run one test case, and where it reports.
 * Owned by the session; the driver fills @a result and, on failure,
 * @a error (a message for the user, also sent to the peer).
 */
typedef struct perf_run {
    const perf_params_t          *params;
    const struct perf_test_desc  *test;
    const struct perf_mem_kind   *mem[PERF_SIDE_LAST];
    perf_role_t                  role;
    struct perf_oob              *oob;      /**< NULL when role is PERF_ROLE_BOTH */
    struct perf_progress         *progress; /**< initiator's progress line, may be NULL */
    perf_result_t                result;
    char                         error[PERF_ERROR_MAX];
} perf_run_t;

/**
 * Print "ucx_perftest: <message>" on stderr. The one place the tool's
 * messages take their shape.
 */
void perf_print_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/** snprintf into @a run's error unless an earlier error is already there. */
void perf_run_set_error(perf_run_t *run, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
