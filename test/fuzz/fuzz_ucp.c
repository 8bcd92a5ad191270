#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/* The loopback UCP objects of the targets that need a worker (fuzz_common.h). */

#include "fuzz_common.h"

#include <ucs/debug/log.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ucp_context_h fuzz_context_create(const char *tls)
{
    ucp_params_t params;
    ucp_config_t *config;
    ucp_context_h context;

    if (ucp_config_read(NULL, NULL, &config) != UCS_OK) {
        abort();
    }
    if (ucp_config_modify(config, "TLS", tls) != UCS_OK) {
        abort();
    }
    /* The richest feature set this library accepts: a protocol that is not
     * built yet is left out, the rest stays fuzzed. */
    static const uint64_t feature_sets[] = {
        UCP_FEATURE_TAG | UCP_FEATURE_RMA | UCP_FEATURE_AM | UCP_FEATURE_AMO32 |
                UCP_FEATURE_AMO64,
        UCP_FEATURE_TAG | UCP_FEATURE_RMA | UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64,
        UCP_FEATURE_TAG | UCP_FEATURE_RMA,
        UCP_FEATURE_TAG
    };
    ucs_log_level_t level = ucs_log_level;
    unsigned i;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    ucs_log_set_level(UCS_LOG_LEVEL_FATAL); /* refused sets are expected */
    for (i = 0; i < sizeof(feature_sets) / sizeof(feature_sets[0]); ++i) {
        params.features = feature_sets[i];
        if (ucp_init(&params, config, &context) == UCS_OK) {
            break;
        }
    }
    ucs_log_set_level(level);
    if (i == sizeof(feature_sets) / sizeof(feature_sets[0])) {
        fprintf(stderr, "fuzz: cannot create a UCP context over %s\n", tls);
        abort();
    }
    ucp_config_release(config);
    return context;
}

void fuzz_worker_create(ucp_context_h context, ucp_worker_h *worker_p,
                        ucp_ep_h *ep_p)
{
    ucp_worker_params_t wparams;
    ucp_ep_params_t eparams;
    ucp_address_t *address;
    size_t address_len;

    memset(&wparams, 0, sizeof(wparams));
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    if ((ucp_worker_create(context, &wparams, worker_p) != UCS_OK) ||
        (ucp_worker_get_address(*worker_p, &address, &address_len) != UCS_OK)) {
        abort();
    }
    memset(&eparams, 0, sizeof(eparams));
    eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    eparams.address    = address;
    if (ucp_ep_create(*worker_p, &eparams, ep_p) != UCS_OK) {
        abort();
    }
    ucp_worker_release_address(*worker_p, address);
}

void fuzz_worker_destroy(ucp_worker_h worker, ucp_ep_h ep)
{
    ucp_request_param_t param;
    ucs_status_ptr_t req;
    int i;

    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    req = ucp_ep_close_nbx(ep, &param);
    if (UCS_PTR_IS_PTR(req)) {
        for (i = 0; (i < 1000) && (ucp_request_check_status(req) == UCS_INPROGRESS);
             ++i) {
            ucp_worker_progress(worker);
        }
        ucp_request_free(req);
    }
    ucp_worker_destroy(worker);
}
