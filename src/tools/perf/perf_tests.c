#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "perf_tests.h"

#include <string.h>

/*
 * Every test ucx_perftest knows. Names follow upstream ucx_perftest where a
 * test exists there (am_lat, am_bw, put_bw, get / get_bw, tag_lat, ...), so
 * that scripts written for it run unchanged. The UCP tests run over libucp:
 * tag, active-message and stream tests in perf_ucp.c and perf_ucp_am.c,
 * one-sided ones in perf_ucp_rma.c.
 */
static const perf_test_desc_t perf_tests[] = {
    {"am_lat", NULL, "UCT active message latency",
     PERF_API_UCT, PERF_PATTERN_PINGPONG, PERF_OP_AM, 0},
    {"am_bw", NULL, "UCT active message bandwidth / message rate",
     PERF_API_UCT, PERF_PATTERN_STREAM, PERF_OP_AM, 0},
    {"put_bw", NULL, "UCT put bandwidth / message rate",
     PERF_API_UCT, PERF_PATTERN_STREAM, PERF_OP_PUT, PERF_TEST_FLAG_ONE_SIDED},
    {"get_bw", "get", "UCT get bandwidth / message rate",
     PERF_API_UCT, PERF_PATTERN_STREAM, PERF_OP_GET,
     PERF_TEST_FLAG_ONE_SIDED | PERF_TEST_FLAG_NO_SHORT},
    {"tag_lat", NULL, "UCP tag match latency",
     PERF_API_UCP, PERF_PATTERN_PINGPONG, PERF_OP_TAG, 0},
    {"tag_bw", NULL, "UCP tag match bandwidth",
     PERF_API_UCP, PERF_PATTERN_STREAM, PERF_OP_TAG, 0},
    {"tag_sync_lat", NULL, "UCP tag sync match latency",
     PERF_API_UCP, PERF_PATTERN_PINGPONG, PERF_OP_TAG_SYNC, 0},
    {"tag_sync_bw", NULL, "UCP tag sync match bandwidth",
     PERF_API_UCP, PERF_PATTERN_STREAM, PERF_OP_TAG_SYNC, 0},
    {"ucp_am_lat", NULL, "UCP active message latency",
     PERF_API_UCP, PERF_PATTERN_PINGPONG, PERF_OP_AM, 0},
    {"ucp_am_bw", NULL, "UCP active message bandwidth / message rate",
     PERF_API_UCP, PERF_PATTERN_STREAM, PERF_OP_AM, 0},
    {"stream_lat", NULL, "UCP stream latency",
     PERF_API_UCP, PERF_PATTERN_PINGPONG, PERF_OP_STREAM, 0},
    {"stream_bw", NULL, "UCP stream bandwidth",
     PERF_API_UCP, PERF_PATTERN_STREAM, PERF_OP_STREAM, 0},
    {"tag_bibw", NULL, "UCP tag match bandwidth, both directions at once",
     PERF_API_UCP, PERF_PATTERN_STREAM, PERF_OP_TAG, PERF_TEST_FLAG_BIDIR},
    {"ucp_am_bibw", NULL, "UCP active message bandwidth, both directions at once",
     PERF_API_UCP, PERF_PATTERN_STREAM, PERF_OP_AM, PERF_TEST_FLAG_BIDIR},
    {"stream_bibw", NULL, "UCP stream bandwidth, both directions at once",
     PERF_API_UCP, PERF_PATTERN_STREAM, PERF_OP_STREAM, PERF_TEST_FLAG_BIDIR},
    {"ucp_put_bw", NULL, "UCP put bandwidth",
     PERF_API_UCP, PERF_PATTERN_STREAM, PERF_OP_PUT, PERF_TEST_FLAG_ONE_SIDED},
    {"ucp_get_bw", "ucp_get", "UCP get bandwidth",
     PERF_API_UCP, PERF_PATTERN_STREAM, PERF_OP_GET, PERF_TEST_FLAG_ONE_SIDED},
};

static const perf_driver_t *const perf_drivers[PERF_API_LAST] = {
    [PERF_API_UCT] = &perf_uct_driver,
    [PERF_API_UCP] = &perf_ucp_driver,
};

const perf_test_desc_t *perf_test_find(const char *name)
{
    size_t i;

    for (i = 0; i < sizeof(perf_tests) / sizeof(perf_tests[0]); ++i) {
        if (!strcmp(perf_tests[i].name, name) ||
            ((perf_tests[i].alias != NULL) && !strcmp(perf_tests[i].alias, name))) {
            return &perf_tests[i];
        }
    }
    return NULL;
}

const perf_driver_t *perf_driver_get(perf_api_t api)
{
    return perf_drivers[api];
}

unsigned perf_test_msgs_per_iter(const perf_test_desc_t *test)
{
    return ((test->pattern == PERF_PATTERN_PINGPONG) ||
            (test->flags & PERF_TEST_FLAG_BIDIR)) ? 2 : 1;
}

const char *perf_op_name(perf_op_t op)
{
    switch (op) {
    case PERF_OP_AM:       return "am";
    case PERF_OP_PUT:      return "put";
    case PERF_OP_GET:      return "get";
    case PERF_OP_TAG:      return "tag";
    case PERF_OP_TAG_SYNC: return "tag_sync";
    case PERF_OP_STREAM:   return "stream";
    }
    return "?";
}

void perf_tests_print_list(FILE *stream)
{
    const char *why;
    size_t i;
    int api;

    for (i = 0; i < sizeof(perf_tests) / sizeof(perf_tests[0]); ++i) {
        fprintf(stream, "    %14s - %s%s%s%s\n", perf_tests[i].name,
                perf_tests[i].description,
                (perf_tests[i].alias != NULL) ? " (also: " : "",
                (perf_tests[i].alias != NULL) ? perf_tests[i].alias : "",
                (perf_tests[i].alias != NULL) ? ")" : "");
    }

    /* Say once per API, not once per test, what this build cannot run. */
    for (api = 0; api < PERF_API_LAST; ++api) {
        why = perf_drivers[api]->unavailable();
        if (why != NULL) {
            fprintf(stream, "                     %s tests: %s\n",
                    perf_drivers[api]->name, why);
        }
    }
}
