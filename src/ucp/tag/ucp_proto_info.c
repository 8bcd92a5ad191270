#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/* UCX_PROTO_INFO=y: which eager protocol serves which size, per endpoint. */

#include <ucp/core/ucp_int.h>
#include <ucp/rndv/ucp_rndv.h>

static void ucp_proto_info_size(char *buf, size_t max, size_t size)
{
    if (size == SIZE_MAX) {
        snprintf(buf, max, "inf");
    } else {
        snprintf(buf, max, "%zu", size);
    }
}

/* Which protocol each sender -> receiver memory-type pair takes from the
 * rendezvous threshold on. Exportability is known only per buffer, so the
 * receiver's choice is printed as its rule. */
static void ucp_proto_info_print_rndv(ucp_ep_h ep)
{
    static const ucs_memory_type_t types[] = {UCS_MEMORY_TYPE_HOST,
                                              UCS_MEMORY_TYPE_CUDA};
    const ucp_rndv_config_t *cfg = &ep->worker->context->rndv;
    int cuda_frags = (ep->rma_ep != NULL) && (ep->worker->mt_ep != NULL) &&
                     (cfg->frag_type == UCP_RNDV_FRAG_TYPE_CUDA);
    char thresh[32], pipe[96];
    unsigned s, r;
    int get, early;
    size_t t;

    snprintf(pipe, sizeof(pipe), cuda_frags ?
             "pipeline, cuda fragments of %zu B, depth %u" :
             "pipeline, active messages via host fragments of %zu B",
             cfg->frag_size[cuda_frags ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST],
             cfg->depth);
    for (s = 0; s < 2; ++s) {
        for (r = 0; r < 2; ++r) {
            t = ucp_rndv_thresh(ep, types[s]);
            ucp_proto_info_size(thresh, sizeof(thresh), t);
            if (t == SIZE_MAX) {
                printf("| %-4s -> %-4s  | eager at every size\n",
                       ucs_memory_type_names[types[s]],
                       ucs_memory_type_names[types[r]]);
                continue;
            }
            get = (ep->rma_ep != NULL) && (types[s] != UCS_MEMORY_TYPE_HOST);
            /* Auto: an exportable device buffer takes get at every size. */
            early = get && (cfg->thresh == UCS_MEMUNITS_AUTO) && (t > 0);
            printf("| %-4s -> %-4s  | %s0..%zu eager; %s..inf rndv: %s%s%s\n",
                   ucs_memory_type_names[types[s]], ucs_memory_type_names[types[r]],
                   early ? "1..inf rndv get_zcopy (cuda_ipc) if the sender's "
                           "buffer exports, else " : "",
                   t ? t - 1 : 0, thresh,
                   (get && !early) ?
                   "get_zcopy (cuda_ipc) if the sender's buffer exports, else " : "",
                   ((ep->rma_ep != NULL) && (types[r] != UCS_MEMORY_TYPE_HOST)) ?
                   "put_zcopy (cuda_ipc) if the receiver's buffer exports, else " : "",
                   /* host data is never staged on the GPU */
                   ((s == 0) && (r == 0)) ? "data as active messages (RNDV_DATA)" :
                                            pipe);
        }
    }
    printf("| rndv scheme   | %s (UCX_RNDV_SCHEME)\n", ucp_rndv_scheme_names[cfg->scheme]);
    printf("| same GPU      | %s (UCX_RNDV_SAME_GPU_ONE_COPIER)\n",
           (cfg->one_copier && (cfg->scheme == UCP_RNDV_SCHEME_AUTO)) ?
           "one copier: both buffers exportable on one GPU, the lower worker "
           "uuid copies (a higher-uuid receiver asks for put)" :
           "off: the receiver's rule above alone");
    if (cuda_frags && cfg->whole_pieces) {
        printf("| same GPU      | device-fragment pipeline: one piece per fragment "
               "(UCX_RNDV_SAME_GPU_WHOLE_PIECES)\n");
    }
    if (cuda_frags && cfg->split_alone) {
        printf("| pipeline      | a message is cut into depth pieces only while "
               "alone in its GPU's fragments (UCX_RNDV_SPLIT_ONLY_ALONE)\n");
    }
    if (cuda_frags && cfg->frag_type_auto &&
        (cfg->same_gpu_host_max >= UCP_RNDV_SAME_GPU_HOST_MIN)) {
        printf("| same GPU      | neither buffer exportable, %lu..%zu B: pipeline "
               "through host fragments (UCX_RNDV_SAME_GPU_HOST_MAX)\n",
               UCP_RNDV_SAME_GPU_HOST_MIN, cfg->same_gpu_host_max);
    }
}

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
           "below the rendezvous threshold: cuda_copy to/from a host bounce "
           "buffer (synchronous), then the host protocols above" :
           "not supported (no cuda_copy transport)");
    ucp_proto_info_print_rndv(ep);
    fflush(stdout);
}
