#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "perf_tests.h"

/*
 * The UCP driver: tag_lat, tag_bw, tag_sync_lat, ucp_put_bw, ucp_get_bw.
 * libucp has no protocols in this build yet, so the driver only says so;
 * issue 9 replaces this file with one that creates a ucp context, worker
 * and endpoint from the address blob exchanged over perf_oob, and runs the
 * same ping-pong and stream patterns as the UCT driver.
 */

static const char *perf_ucp_unavailable(void)
{
    return "not available in this build (UCP tests come with issue 9)";
}

static ucs_status_t perf_ucp_run(perf_run_t *run)
{
    perf_run_set_error(run, "%s: %s", run->params->test_name, perf_ucp_unavailable());
    return UCS_ERR_UNSUPPORTED;
}

const perf_driver_t perf_ucp_driver = {
    .api            = PERF_API_UCP,
    .name           = "ucp",
    .description    = "protocol layer (ucp)",
    .unavailable    = perf_ucp_unavailable,
    .run            = perf_ucp_run,
    .single_process = NULL
};
