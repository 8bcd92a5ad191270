#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/* Per-worker protocol counters (ucp_proto_stats.h): bumped where each side
 * learns the protocol of a message, read by our tools. */

#include <ucp/core/ucp_int.h>
#include <ucp/rndv/ucp_rndv.h>

#include <stdio.h>
#include <string.h>

static const char *ucp_proto_stat_names[] = {
    [UCP_PROTO_STAT_EAGER_SHORT]        = "eager_short",
    [UCP_PROTO_STAT_EAGER_BCOPY]        = "eager_bcopy",
    [UCP_PROTO_STAT_EAGER_MULTI]        = "eager_multi",
    [UCP_PROTO_STAT_EAGER_STAGED]       = "eager_staged",
    [UCP_PROTO_STAT_RNDV_GET]           = "rndv_get",
    [UCP_PROTO_STAT_RNDV_HOST_GET]      = "rndv_host_get",
    [UCP_PROTO_STAT_RNDV_PUT]           = "rndv_put",
    [UCP_PROTO_STAT_RNDV_PIPE_CUDA]     = "rndv_pipe_cuda",
    [UCP_PROTO_STAT_RNDV_PIPE_HOST]     = "rndv_pipe_host",
    [UCP_PROTO_STAT_RNDV_AM]            = "rndv_am",
    [UCP_PROTO_STAT_RNDV_PIPE_HOST_GET] = "rndv_pipe_host_get",
};

const char *ucp_proto_stat_name(ucp_proto_stat_t proto)
{
    return ((unsigned)proto < UCP_PROTO_STAT_LAST) ? ucp_proto_stat_names[proto] :
                                                     "unknown";
}

const char *ucp_proto_stat_transport(ucp_ep_h ep, ucp_proto_stat_t proto)
{
    static __thread char buf[64];
    const ucp_tl_rsc_t *rscs = ep->worker->context->rscs;
    const char *am_tl        = rscs[ep->wiface->rsc_index].desc.tl_name;
    int staged               = (ep->worker->mt_ep != NULL);
    const char *mt_tl        = staged ? rscs[ep->worker->mt_rsc_index].desc.tl_name : "-";
    const char *rma_tl =
        (ep->rma_ep != NULL) ? rscs[ep->worker->rma_iface.rsc_index].desc.tl_name : "-";

    switch (proto) {
    case UCP_PROTO_STAT_EAGER_SHORT:
    case UCP_PROTO_STAT_EAGER_BCOPY:
    case UCP_PROTO_STAT_EAGER_MULTI:
    case UCP_PROTO_STAT_RNDV_AM:
        return am_tl;
    case UCP_PROTO_STAT_EAGER_STAGED:
    case UCP_PROTO_STAT_RNDV_PIPE_HOST:
        if (!staged) {
            return "-";
        }
        snprintf(buf, sizeof(buf), "%s+%s", mt_tl, am_tl);
        return buf;
    case UCP_PROTO_STAT_RNDV_HOST_GET:
        return (ep->host_rma_ep != NULL)
                   ? rscs[ep->host_lane->wiface->rsc_index].desc.tl_name
                   : "-";
    case UCP_PROTO_STAT_RNDV_PIPE_HOST_GET:
        if ((ep->host_rma_ep == NULL) || !staged) {
            return "-";
        }
        snprintf(buf, sizeof(buf), "%s+%s", mt_tl,
                 rscs[ep->host_lane->wiface->rsc_index].desc.tl_name);
        return buf;
    case UCP_PROTO_STAT_RNDV_GET:
    case UCP_PROTO_STAT_RNDV_PUT:
        return rma_tl;
    case UCP_PROTO_STAT_RNDV_PIPE_CUDA:
        if ((ep->rma_ep == NULL) || !staged) {
            return "-";
        }
        snprintf(buf, sizeof(buf), "%s+%s", mt_tl, rma_tl);
        return buf;
    default:
        return "-";
    }
}

void ucp_worker_proto_stats(ucp_worker_h worker,
                            uint64_t counts[UCP_PROTO_STAT_LAST])
{
    ucp_worker_lock(worker);
    memcpy(counts, worker->proto_stats, sizeof(worker->proto_stats));
    ucp_worker_unlock(worker);
}
