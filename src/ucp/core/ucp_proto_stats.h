/**
 * @file ucp_proto_stats.h
 * Which protocol carried each tag message: per-worker counters that our own
 * tools (ucx_perftest, ucx_info) read to show what moved the data. Not part
 * of upstream's API and not installed; the symbols are exported by libucp
 * for the in-tree tools only.
 */
#ifndef UCP_PROTO_STATS_H_
#define UCP_PROTO_STATS_H_

#include <ucp/api/ucp.h>

#include <stdint.h>

BEGIN_C_DECLS

/** The protocols a tag message can take. A message is counted once on each
 *  side, when that side learns which protocol was used (a rendezvous sender
 *  learns it from the receiver's reply). */
typedef enum ucp_proto_stat {
    UCP_PROTO_STAT_EAGER_SHORT,    /**< one am_short */
    UCP_PROTO_STAT_EAGER_BCOPY,    /**< one am_bcopy segment */
    UCP_PROTO_STAT_EAGER_MULTI,    /**< several am_bcopy segments */
    UCP_PROTO_STAT_EAGER_STAGED,   /**< eager, device data bounced via host */
    UCP_PROTO_STAT_RNDV_GET,       /**< receiver read the sender's buffer over
                                        the device lane */
    UCP_PROTO_STAT_RNDV_HOST_GET,  /**< receiver read the sender's host buffer
                                        over the host lane */
    UCP_PROTO_STAT_RNDV_PUT,       /**< sender wrote the receiver's buffer */
    UCP_PROTO_STAT_RNDV_PIPE_CUDA, /**< staged through device fragments */
    UCP_PROTO_STAT_RNDV_PIPE_HOST, /**< staged through host fragments */
    UCP_PROTO_STAT_RNDV_AM,        /**< rendezvous, data as active messages */
    UCP_PROTO_STAT_RNDV_PIPE_HOST_GET, /**< staged through host fragments,
                                            read over the host lane */
    UCP_PROTO_STAT_LAST
} ucp_proto_stat_t;

/** Whether @a proto is a rendezvous protocol: they follow the eager ones, so
 *  a counter added among them is counted by every caller. */
static inline int ucp_proto_stat_is_rndv(ucp_proto_stat_t proto)
{
    return (proto >= UCP_PROTO_STAT_RNDV_GET) && (proto < UCP_PROTO_STAT_LAST);
}

/** Messages of @a counts (from ucp_worker_proto_stats()) that took rendezvous. */
static inline uint64_t ucp_proto_stat_rndv_total(const uint64_t *counts)
{
    uint64_t total = 0;
    int proto;

    for (proto = 0; proto < UCP_PROTO_STAT_LAST; ++proto) {
        total += ucp_proto_stat_is_rndv((ucp_proto_stat_t)proto) ? counts[proto] : 0;
    }
    return total;
}

/**
 * Short name of a protocol ("eager_short", "rndv_get", ...), or "unknown".
 */
const char *ucp_proto_stat_name(ucp_proto_stat_t proto);

/**
 * Name of the transport(s) that carry the data of @a proto on @a ep
 * ("posix", "cuda_ipc", "cuda_copy+cuda_ipc", ...), or "-" when @a ep has no
 * such lane.
 */
const char *ucp_proto_stat_transport(ucp_ep_h ep, ucp_proto_stat_t proto);

/**
 * Copy the worker's counters (messages sent plus messages received, per
 * protocol, since the worker was created) into @a counts.
 */
void ucp_worker_proto_stats(ucp_worker_h worker,
                            uint64_t counts[UCP_PROTO_STAT_LAST]);

/**
 * Pieces of messages the worker staged into device fragments as a
 * rendezvous sender (one copy each), since it was created.
 */
uint64_t ucp_worker_rndv_pipe_pieces(ucp_worker_h worker);

/**
 * Staging copies of device data sent or received as active messages that
 * the worker ran in the background, beside the network transfer of the
 * previous piece (UCX_RNDV_AM_STAGE_OVERLAP), since it was created.
 */
uint64_t ucp_worker_rndv_stage_overlaps(ucp_worker_h worker);

END_C_DECLS

#endif
