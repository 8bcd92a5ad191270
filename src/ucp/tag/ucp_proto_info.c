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

/* The model's times at a few sizes for each sender -> receiver pair, so
 * that a user sees why the threshold is where it is. */
static void ucp_proto_info_print_model(ucp_ep_h ep)
{
    static const size_t sizes[] = {8, 1024, 4096, 16384, 65536, 262144, 1048576};
    ucp_rndv_model_proto_t proto;
    ucp_rndv_model_t model;
    char label[32];
    unsigned s, r, i;
    double te, tr;

    if (ucp_rndv_ep_model(ep, &model) != UCS_OK) {
        printf("| model         | unavailable (a transport gave no estimate)\n");
        return;
    }
    printf("| model         | time to the receiver's buffer, us: eager / rendezvous "
           "(UCX_RNDV_THRESH=auto; docs/rendezvous.md)\n");
    printf("| %-33s | %-27s |", "sender -> receiver", "rendezvous protocol");
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
        ucp_proto_info_size(label, sizeof(label), sizes[i]);
        printf(" %13s", label);
    }
    printf("\n");
    for (s = 0; s < UCP_RNDV_KIND_LAST; ++s) {
        for (r = 0; r < UCP_RNDV_KIND_LAST; ++r) {
            (void)ucp_rndv_model_rndv_time(&model, s, r, 1, &proto);
            printf("| %15s -> %-15s | %-27s |", ucp_rndv_model_kind_name(s),
                   ucp_rndv_model_kind_name(r), ucp_rndv_model_proto_name(proto));
            for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
                te = ucp_rndv_model_time(&model, UCP_RNDV_MODEL_EAGER, s, r, sizes[i]);
                tr = ucp_rndv_model_rndv_time(&model, s, r, sizes[i], NULL);
                printf(" %6.1f/%-6.1f", te * 1e6, tr * 1e6);
            }
            printf("\n");
        }
    }
}

/* The rendezvous threshold of each sender kind and what the receiver then
 * chooses. */
static void ucp_proto_info_print_rndv(ucp_ep_h ep)
{
    const ucp_rndv_config_t *cfg = &ep->worker->context->rndv;
    int cuda_frags = (ep->rma_ep != NULL) && (ep->worker->mt_ep != NULL) &&
                     (cfg->frag_type == UCP_RNDV_FRAG_TYPE_CUDA);
    char thresh[64];
    unsigned k;
    size_t t;

    for (k = 0; k < UCP_RNDV_KIND_LAST; ++k) {
        if ((k != UCP_RNDV_KIND_HOST) && (ep->worker->mt_ep == NULL)) {
            continue;
        }
        t = ucp_rndv_thresh(ep, k);
        if (t <= 1) {
            snprintf(thresh, sizeof(thresh), "rendezvous at every size");
        } else if (t == SIZE_MAX) {
            snprintf(thresh, sizeof(thresh), "eager at every size");
        } else {
            snprintf(thresh, sizeof(thresh), "eager below %zu B, rendezvous from it", t);
        }
        printf("| %-15s | %s (%s)\n", ucp_rndv_model_kind_name(k), thresh,
               ((cfg->eager_max < SIZE_MAX) && (t == cfg->eager_max + 1)) ?
               "UCX_TAG_EAGER_MAX_SIZE" :
               (cfg->thresh == UCS_MEMUNITS_AUTO) ? "model" : "UCX_RNDV_THRESH");
        if ((k == UCP_RNDV_KIND_HOST) && (ep->rndv_host_get_max < SIZE_MAX) &&
            (ep->rndv_host_after_get > ep->rndv_host_get_max + 1)) {
            printf("| %-15s | above %zu B (UCX_RNDV_HOST_GET_MAX) eager again up to "
                   "%zu B: the model's choice without the host lane\n", "",
                   ep->rndv_host_get_max, ep->rndv_host_after_get - 1);
        }
    }
    printf("| rndv receiver | get_zcopy (cuda_ipc) if the sender's buffer exports, else "
           "put_zcopy if the receiver's does, else pipeline: %s\n",
           cuda_frags ? "device fragments (host to host: data messages)" :
                        "data messages via host fragments");
    if (ep->host_rma_ep != NULL) {
        const ucp_tl_rsc_t *hrsc =
                &ep->worker->context->rscs[ep->host_lane->wiface->rsc_index];
        char upto[48] = "";
        if (ucp_rndv_host_get_max(ep) < SIZE_MAX) {
            snprintf(upto, sizeof(upto), " up to %zu B", ucp_rndv_host_get_max(ep));
        }
        printf("| rndv host     | host to host%s: the receiver reads the "
               "sender's buffer over %s/%s%s (UCX_RNDV_HOST_GET_MAX)\n",
               upto, hrsc->desc.tl_name, hrsc->desc.dev_name,
               ep->host_lane->own_eps ? "" : ", its messaging connection");
        for (unsigned i = 0; i < ep->num_host_rails; ++i) {
            hrsc = &ep->worker->context->rscs[ep->host_rails[i].wiface->rsc_index];
            printf("| %-15s | rail %u: %s/%s, a share by bandwidth of reads from %zu B "
                   "(UCX_MAX_RNDV_RAILS, UCX_MIN_RNDV_CHUNK_SIZE)\n",
                   "", i + 1, hrsc->desc.tl_name, hrsc->desc.dev_name,
                   (i + 2) * cfg->min_chunk);
        }
    } else {
        printf("| rndv host     | host to host: data messages (no transport reads "
               "the peer's host memory)\n");
    }
    printf("| fragments     | host %zu B, cuda %zu B, depth %u\n",
           cfg->frag_size[UCS_MEMORY_TYPE_HOST], cfg->frag_size[UCS_MEMORY_TYPE_CUDA],
           cfg->depth);
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
    ucp_proto_info_print_model(ep);
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
