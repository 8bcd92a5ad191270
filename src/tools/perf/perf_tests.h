/**
 * @file perf_tests.h
 * The registry of tests and of the drivers that run them. A test is data
 * (name, API, traffic pattern, operation); a driver is the code of one API
 * (uct now, ucp with issue 9). Adding a test of an existing pattern is one
 * table row; adding an API is one driver, with no change to the session,
 * output or option code.
 */
#ifndef PERF_TESTS_H_
#define PERF_TESTS_H_

#include "perftest.h"

/** The library layer a test exercises. */
typedef enum {
    PERF_API_UCT,
    PERF_API_UCP,
    PERF_API_LAST
} perf_api_t;

/** How messages flow. */
typedef enum {
    PERF_PATTERN_PINGPONG, /**< one message each way per iteration: latency */
    PERF_PATTERN_STREAM    /**< a stream from initiator to responder: bandwidth */
} perf_pattern_t;

/** The operation that moves the data. */
typedef enum {
    PERF_OP_AM,       /**< active message */
    PERF_OP_PUT,      /**< one-sided write into the responder's buffer */
    PERF_OP_GET,      /**< one-sided read from the responder's buffer */
    PERF_OP_TAG,      /**< tag-matched send/receive (ucp) */
    PERF_OP_TAG_SYNC, /**< synchronous tag send (ucp) */
    PERF_OP_STREAM    /**< ordered bytes of the stream API (ucp) */
} perf_op_t;

/** Flags of perf_test_desc_t::flags. */
enum {
    PERF_TEST_FLAG_ONE_SIDED = 1u << 0, /**< needs the peer's buffer address and rkey */
    PERF_TEST_FLAG_NO_SHORT  = 1u << 1, /**< -D short is not meaningful (get) */
    /** A stream in both directions at once: each side sends as many
     *  messages as the other; bandwidth and rate count both directions. */
    PERF_TEST_FLAG_BIDIR     = 1u << 2
};

/** One test of the registry. Static data; never freed. */
typedef struct perf_test_desc {
    const char     *name;        /**< what -t accepts */
    const char     *alias;       /**< upstream's other name, or NULL */
    const char     *description; /**< one line for -h and the header */
    perf_api_t     api;
    perf_pattern_t pattern;
    perf_op_t      op;
    unsigned       flags;        /**< PERF_TEST_FLAG_* */
} perf_test_desc_t;

/** The code that runs tests of one API. Static; never freed. */
typedef struct perf_driver {
    perf_api_t api;
    const char *name;            /**< "uct", "ucp" */
    const char *description;     /**< "transport layer", for the header */

    /**
     * Why this build cannot run tests of this API, or NULL when it can.
     * Cheap and side-effect free: the server calls it to refuse a test
     * before any setup.
     */
    const char *(*unavailable)(void);

    /**
     * Run one test case as run->role: set up, wire up with the peer over
     * run->oob (or in this process for PERF_ROLE_BOTH), run warm-up and
     * measured iterations, tear down. The initiator fills run->result.
     * On failure returns an error status with run->error set; both sides
     * learn of a failure on either side through the out-of-band channel,
     * so neither waits for a peer that gave up.
     */
    ucs_status_t (*run)(perf_run_t *run);

    /**
     * Whether the transport @a params names works only inside one process
     * (UCT "self"), so that -L must run both sides here as -l does.
     * May be NULL: never.
     */
    int (*single_process)(const perf_params_t *params);
} perf_driver_t;

/** Look a test up by name or alias; NULL if there is none. */
const perf_test_desc_t *perf_test_find(const char *name);

/** The driver of @a api (never NULL for a valid api). */
const perf_driver_t *perf_driver_get(perf_api_t api);

/**
 * Messages one iteration moves: 2 for a ping-pong (latency is half the
 * round trip) and for a bidirectional stream (bandwidth is the sum of both
 * directions, as osu_bibw reports it), else 1.
 */
unsigned perf_test_msgs_per_iter(const perf_test_desc_t *test);

/** Name of an operation ("am", "put", ...), for messages. */
const char *perf_op_name(perf_op_t op);

/** Print one line per test (name and description) for -h. */
void perf_tests_print_list(FILE *stream);

/** The UCT driver (perf_uct.c). */
extern const perf_driver_t perf_uct_driver;

/** The UCP driver (perf_ucp.c). */
extern const perf_driver_t perf_ucp_driver;

#endif
