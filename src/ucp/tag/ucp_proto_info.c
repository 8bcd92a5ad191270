#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/* UCX_PROTO_INFO=y: which eager protocol serves which size, per endpoint. */

#include <ucp/core/ucp_int.h>

void ucp_proto_info_print(ucp_ep_h ep)
{
    const ucp_tl_rsc_t *rsc = &ep->worker->context->rscs[ep->wiface->rsc_index];
    size_t single = ep->max_bcopy - sizeof(uint64_t);

    printf("+---------------+------------------------------------------------\n");
    printf("| %s (worker %s) | %s/%s, host memory\n", ep->name, ep->worker->name,
           rsc->desc.tl_name, rsc->desc.dev_name);
    printf("+---------------+------------------------------------------------\n");
    if (ep->max_short > 0) {
        printf("| tag_send      | 0..%zu: eager short\n", ep->max_short);
    }
    printf("| tag_send      | %zu..%zu: eager bcopy single\n",
           ep->max_short ? ep->max_short + 1 : 0, single);
    printf("| tag_send      | %zu..inf: eager bcopy multi-fragment (%zu B)\n",
           single + 1, ep->max_bcopy);
    printf("| tag_send_sync | 0..%zu: eager sync bcopy; larger: multi + ack\n",
           ep->max_bcopy - UCP_EAGER_SYNC_HDR);
    printf("| device memory | %s\n", (ep->worker->mt_ep != NULL) ?
           "any size: cuda_copy to/from a host bounce buffer (synchronous), "
           "then the host protocols above" :
           "not supported (no cuda_copy transport)");
    fflush(stdout);
}
