#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "perf_ucp.h"
#include "perf_tests.h"

#include <ucp/core/ucp_proto_stats.h>

#include <string.h>

/*
 * Which protocol carried a UCP test's data, from libucp's per-worker
 * counters (ucp_proto_stats.h). They are weak references, so that a
 * libucp built before the counters shows "-" rather than failing to load.
 */
#pragma weak ucp_worker_proto_stats
#pragma weak ucp_proto_stat_name
#pragma weak ucp_proto_stat_transport

void perf_ucp_proto_describe(perf_ucp_ctx_t *ctx)
{
    perf_ucp_side_t *side = &ctx->sides[PERF_SIDE_SEND];
    perf_result_t *result = &ctx->run->result;
    uint64_t counts[UCP_PROTO_STAT_LAST];
    int i, best = -1;

    snprintf(result->proto, sizeof(result->proto), "-");
    /* The counters are of tag messages; a one-sided run sends only its end. */
    if ((ctx->run->test->flags & PERF_TEST_FLAG_ONE_SIDED) ||
        (ucp_worker_proto_stats == NULL) || (ucp_proto_stat_name == NULL) ||
        (ucp_proto_stat_transport == NULL) || (side->worker == NULL)) {
        return;
    }

    memset(counts, 0, sizeof(counts));
    ucp_worker_proto_stats(side->worker, counts);
    /* The test's data messages outnumber its few control messages (acks,
     * the end of a one-sided run), so the most used protocol is the data's. */
    for (i = 0; i < UCP_PROTO_STAT_LAST; ++i) {
        if ((counts[i] > 0) && ((best < 0) || (counts[i] > counts[best]))) {
            best = i;
        }
    }
    if (best >= 0) {
        snprintf(result->proto, sizeof(result->proto), "%s/%s",
                 ucp_proto_stat_name((ucp_proto_stat_t)best),
                 ucp_proto_stat_transport(side->ep, (ucp_proto_stat_t)best));
    }
}
