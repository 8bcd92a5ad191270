#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "perf_uct.h"
#include "perf_oob.h"
#include "perf_tests.h"
#include "perf_time.h"
#include "perf_wire.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Finding the transport                                                     */
/* ------------------------------------------------------------------------ */

/* Append "tl/dev" to the list of what exists, for the not-found message. */
static void perf_uct_list_append(char *list, size_t max, const uct_tl_resource_desc_t *r)
{
    size_t len = strlen(list);

    if (len + 4 < max) {
        snprintf(list + len, max - len, "%s%s/%s", (len > 0) ? ", " : "", r->tl_name,
                 r->dev_name);
    }
}

/*
 * Open the md that offers transport params->tl_name on params->dev_name
 * (any device when dev_name is empty) and fill ctx->component, md and
 * resource. Every other md is closed again at once.
 */
static ucs_status_t perf_uct_find_resource(perf_uct_ctx_t *ctx, const perf_params_t *params)
{
    char available[PERF_ERROR_MAX] = "";
    uct_component_attr_t comp_attr;
    uct_tl_resource_desc_t *res;
    uct_md_config_t *md_config;
    unsigned c, m, r, num_res;
    ucs_status_t status;
    uct_md_h md;

    if (params->tl_name[0] == '\0') {
        perf_run_set_error(ctx->run, "%s is a UCT test: give a transport with -x (and "
                           "a device with -d); ucx_info -d lists them",
                           params->test_name);
        return UCS_ERR_INVALID_PARAM;
    }

    status = uct_query_components(&ctx->components, &ctx->num_components);
    if (status != UCS_OK) {
        perf_run_set_error(ctx->run, "uct_query_components() failed: %s",
                           ucs_status_string(status));
        return status;
    }

    for (c = 0; c < ctx->num_components; ++c) {
        memset(&comp_attr, 0, sizeof(comp_attr));
        comp_attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME |
                               UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        if (uct_component_query(ctx->components[c], &comp_attr) != UCS_OK) {
            continue;
        }
        comp_attr.md_resources = calloc(comp_attr.md_resource_count + 1,
                                        sizeof(*comp_attr.md_resources));
        if (comp_attr.md_resources == NULL) {
            perf_run_set_error(ctx->run, "out of memory");
            return UCS_ERR_NO_MEMORY;
        }
        comp_attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        if (uct_component_query(ctx->components[c], &comp_attr) != UCS_OK) {
            free(comp_attr.md_resources);
            continue;
        }

        for (m = 0; m < comp_attr.md_resource_count; ++m) {
            if (uct_md_config_read(ctx->components[c], NULL, NULL, &md_config) != UCS_OK) {
                continue;
            }
            status = uct_md_open(ctx->components[c], comp_attr.md_resources[m].md_name,
                                 md_config, &md);
            uct_config_release(md_config);
            if (status != UCS_OK) {
                continue;
            }
            if (uct_md_query_tl_resources(md, &res, &num_res) != UCS_OK) {
                uct_md_close(md);
                continue;
            }
            for (r = 0; r < num_res; ++r) {
                perf_uct_list_append(available, sizeof(available), &res[r]);
                if (!strcmp(res[r].tl_name, params->tl_name) &&
                    ((params->dev_name[0] == '\0') ||
                     !strcmp(res[r].dev_name, params->dev_name))) {
                    ctx->resource  = res[r];
                    ctx->component = ctx->components[c];
                    ctx->md        = md;
                    uct_release_tl_resource_list(res);
                    free(comp_attr.md_resources);
                    return UCS_OK;
                }
            }
            uct_release_tl_resource_list(res);
            uct_md_close(md);
        }
        free(comp_attr.md_resources);
    }

    perf_run_set_error(ctx->run, "transport %s%s%s not found; this build offers: %s",
                       params->tl_name, (params->dev_name[0] != '\0') ? "/" : "",
                       params->dev_name, (available[0] != '\0') ? available : "nothing");
    return UCS_ERR_NO_DEVICE;
}

/* ------------------------------------------------------------------------ */
/* Opening one side                                                          */
/* ------------------------------------------------------------------------ */

static ucs_status_t perf_uct_error_handler(void *arg, uct_ep_h ep, ucs_status_t status)
{
    perf_uct_ctx_t *ctx = arg;

    /* Remembered and reported by the next check of a wait loop, which
     * turns it into a clean error instead of a hang. */
    if (ctx->async_status == UCS_OK) {
        ctx->async_status = status;
    }
    return UCS_OK;
}

/* Every zcopy and flush of a side reports to one completion object that
 * re-arms itself, so it works as a counter of finished operations. */
static void perf_uct_completion_cb(uct_completion_t *self)
{
    perf_uct_side_t *side = ucs_container_of(self, perf_uct_side_t, comp);

    ++side->completed;
    self->count = 1;
}

static ucs_status_t perf_uct_open_iface(perf_uct_ctx_t *ctx, perf_uct_side_t *side)
{
    uct_iface_params_t iface_params;
    ucs_status_t status;

    memset(&iface_params, 0, sizeof(iface_params));
    iface_params.field_mask        = UCT_IFACE_PARAM_FIELD_DEVICE |
                                     UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                                     UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                                     UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
    iface_params.device.tl_name    = ctx->resource.tl_name;
    iface_params.device.dev_name   = ctx->resource.dev_name;
    iface_params.err_handler       = perf_uct_error_handler;
    iface_params.err_handler_arg   = ctx;
    iface_params.err_handler_flags = 0;

    status = uct_iface_open(ctx->md, ctx->worker, &iface_params, ctx->iface_config,
                            &side->iface);
    if (status != UCS_OK) {
        perf_run_set_error(ctx->run, "cannot open %s/%s: %s", ctx->resource.tl_name,
                           ctx->resource.dev_name, ucs_status_string(status));
    }
    return status;
}

/*
 * The side's buffer: from its memory kind, registered when zcopy or a
 * one-sided peer needs a memory handle; or, when the md cannot register
 * but can allocate (shared memory that the peer maps), from the md.
 */
static ucs_status_t perf_uct_alloc_buffer(perf_uct_ctx_t *ctx, perf_uct_side_t *side)
{
    const perf_mem_kind_t *kind = ctx->run->mem[side->index];
    int one_sided   = (ctx->run->test->flags & PERF_TEST_FLAG_ONE_SIDED) != 0;
    int need_memh   = one_sided || (ctx->layout == PERF_LAYOUT_ZCOPY);
    uint64_t flags  = ctx->md_attr.cap.flags;
    size_t length   = ctx->params->msg_size;
    ucs_status_t status;
    void *address;

    if (need_memh && !(flags & UCT_MD_FLAG_REG) && (flags & UCT_MD_FLAG_ALLOC) &&
        (kind->mem_type == UCS_MEMORY_TYPE_HOST) &&
        (ctx->md_attr.cap.alloc_mem_types & UCS_BIT(UCS_MEMORY_TYPE_HOST))) {
        if (length == 0) {
            length = 1;
        }
        status = uct_md_mem_alloc(ctx->md, &length, &address, UCS_MEMORY_TYPE_HOST,
                                  UCT_MD_MEM_ACCESS_ALL, "ucx_perftest", &side->memh);
        if (status != UCS_OK) {
            perf_run_set_error(ctx->run, "%s md cannot allocate %zu bytes: %s",
                               ctx->md_attr.component_name, length,
                               ucs_status_string(status));
            return status;
        }
        side->buf.ptr      = address;
        side->buf.length   = length;
        side->buf.kind     = kind;
        side->md_allocated = 1;
        memset(address, 0, length);
        return UCS_OK;
    }

    status = perf_mem_alloc(kind, length, ctx->params->device[side->index], &side->buf);
    if (status != UCS_OK) {
        perf_run_set_error(ctx->run, "cannot allocate %zu bytes of %s memory: %s",
                           length, kind->name, ucs_status_string(status));
        return status;
    }
    if (!need_memh) {
        return UCS_OK;
    }
    if (!(flags & UCT_MD_FLAG_REG)) {
        if ((flags & (UCT_MD_FLAG_NEED_MEMH | UCT_MD_FLAG_NEED_RKEY)) == 0) {
            return UCS_OK; /* the transport reaches memory without a handle */
        }
        perf_run_set_error(ctx->run, "%s/%s cannot register or allocate %s memory",
                           ctx->resource.tl_name, ctx->resource.dev_name, kind->name);
        return UCS_ERR_UNSUPPORTED;
    }
    status = uct_md_mem_reg(ctx->md, side->buf.ptr, side->buf.length,
                            UCT_MD_MEM_ACCESS_ALL, &side->memh);
    if (status != UCS_OK) {
        perf_run_set_error(ctx->run, "cannot register %zu bytes of %s memory on %s: %s",
                           side->buf.length, kind->name, ctx->md_attr.component_name,
                           ucs_status_string(status));
    }
    return status;
}

/* The message as the scatter-gather list lays it out, for zcopy. An
 * active message's first PERF_UCT_HDR_SIZE bytes travel as its header. */
static void perf_uct_init_iov(perf_uct_ctx_t *ctx, perf_uct_side_t *side)
{
    const perf_params_t *params = ctx->params;
    size_t skip = (ctx->run->test->op == PERF_OP_AM) ? PERF_UCT_HDR_SIZE : 0;
    size_t offset = 0, length;
    unsigned i;

    side->iovcnt = 0;
    for (i = 0; i < params->sg_count; ++i) {
        length = params->sg[i];
        if (skip > 0) {
            length  = (length > skip) ? length - skip : 0;
            offset += params->sg[i] - length;
            skip   -= params->sg[i] - length;
        }
        if (length == 0) {
            continue;
        }
        side->iov[side->iovcnt].buffer = (char*)side->buf.ptr + offset;
        side->iov[side->iovcnt].length = length;
        side->iov[side->iovcnt].memh   = side->memh;
        side->iov[side->iovcnt].stride = 0;
        side->iov[side->iovcnt].count  = 1;
        ++side->iovcnt;
        offset += length;
    }
}

/* Allocate, fill, register, pack addresses and key: everything the peer
 * needs to know about this side. */
static ucs_status_t perf_uct_setup_side(perf_uct_ctx_t *ctx, perf_uct_side_t *side)
{
    const perf_test_desc_t *test = ctx->run->test;
    uct_iface_attr_t *attr       = &ctx->iface_attr;
    uct_ep_params_t ep_params;
    ucs_status_t status;
    unsigned seed;

    status = perf_uct_set_handlers(side);
    if (status != UCS_OK) {
        return status;
    }
    status = perf_uct_alloc_buffer(ctx, side);
    if (status != UCS_OK) {
        return status;
    }

    /* A destination starts with other data than what will arrive. */
    seed = (((test->op == PERF_OP_PUT) && (side->index == PERF_SIDE_RECV)) ||
            ((test->op == PERF_OP_GET) && (side->index == PERF_SIDE_SEND))) ?
           PERF_UCT_SEED_STALE : PERF_UCT_SEED_DATA;
    status = perf_mem_fill(&side->buf, 0, ctx->params->msg_size, seed);
    if (status != UCS_OK) {
        perf_run_set_error(ctx->run, "cannot fill the %s buffer: %s",
                           side->buf.kind->name, ucs_status_string(status));
        return status;
    }
    perf_uct_init_iov(ctx, side);

    side->comp.func   = perf_uct_completion_cb;
    side->comp.count  = 1;
    side->comp.status = UCS_OK;

    side->dev_addr   = calloc(1, attr->device_addr_len + 1);
    side->iface_addr = calloc(1, attr->iface_addr_len + 1);
    side->ep_addr    = calloc(1, attr->ep_addr_len + 1);
    side->rkey_buf   = calloc(1, ctx->md_attr.rkey_packed_size + 1);
    if ((side->dev_addr == NULL) || (side->iface_addr == NULL) ||
        (side->ep_addr == NULL) || (side->rkey_buf == NULL)) {
        perf_run_set_error(ctx->run, "out of memory");
        return UCS_ERR_NO_MEMORY;
    }

    status = uct_iface_get_device_address(side->iface, side->dev_addr);
    if ((status == UCS_OK) && (attr->cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE)) {
        status = uct_iface_get_address(side->iface, side->iface_addr);
    } else if (status == UCS_OK) {
        /* Connect-to-ep transports: the ep exists before the peer's address. */
        memset(&ep_params, 0, sizeof(ep_params));
        ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
        ep_params.iface      = side->iface;
        status = uct_ep_create(&ep_params, &side->ep);
        if (status == UCS_OK) {
            status = uct_ep_get_address(side->ep, side->ep_addr);
        }
    }
    if (status != UCS_OK) {
        perf_run_set_error(ctx->run, "cannot get the addresses of %s/%s: %s",
                           ctx->resource.tl_name, ctx->resource.dev_name,
                           ucs_status_string(status));
        return status;
    }

    if ((test->flags & PERF_TEST_FLAG_ONE_SIDED) && (side->memh != UCT_MEM_HANDLE_NULL) &&
        (ctx->md_attr.rkey_packed_size > 0)) {
        status = uct_md_mkey_pack(ctx->md, side->memh, side->rkey_buf);
        if (status != UCS_OK) {
            perf_run_set_error(ctx->run, "cannot pack a remote key on %s: %s",
                               ctx->md_attr.component_name, ucs_status_string(status));
            return status;
        }
    }
    return UCS_OK;
}

/* ------------------------------------------------------------------------ */
/* Wire-up                                                                   */
/* ------------------------------------------------------------------------ */

static void perf_uct_pack_side(perf_uct_ctx_t *ctx, const perf_uct_side_t *side,
                               perf_wire_out_t *out)
{
    int one_sided = (ctx->run->test->flags & PERF_TEST_FLAG_ONE_SIDED) &&
                    (side->memh != UCT_MEM_HANDLE_NULL);

    perf_wire_put_u64(out, (uintptr_t)side->buf.ptr);
    perf_wire_put_u64(out, side->buf.length);
    perf_wire_put_u32(out, (side->ep != NULL)); /* 1: connect to our ep, 0: to our iface */
    perf_wire_put_bytes(out, side->dev_addr, ctx->iface_attr.device_addr_len);
    perf_wire_put_bytes(out, side->iface_addr, (side->ep == NULL) ?
                        ctx->iface_attr.iface_addr_len : 0);
    perf_wire_put_bytes(out, side->ep_addr, (side->ep != NULL) ?
                        ctx->iface_attr.ep_addr_len : 0);
    perf_wire_put_bytes(out, side->rkey_buf, one_sided ? ctx->md_attr.rkey_packed_size : 0);
}

/* Connect @a side to the peer described by @a blob (perf_uct_pack_side). */
static ucs_status_t perf_uct_connect_side(perf_uct_ctx_t *ctx, perf_uct_side_t *side,
                                          const void *blob, size_t length)
{
    const void *dev_addr, *iface_addr, *ep_addr, *rkey;
    size_t dev_len, iface_len, ep_len, rkey_len;
    uct_ep_params_t ep_params;
    ucs_status_t status;
    perf_wire_in_t in;
    uint64_t remote_length;
    uint32_t to_ep;

    perf_wire_in_init(&in, blob, length);
    side->remote_addr = perf_wire_get_u64(&in);
    remote_length     = perf_wire_get_u64(&in);
    to_ep             = perf_wire_get_u32(&in);
    dev_len           = perf_wire_get_bytes(&in, &dev_addr);
    iface_len         = perf_wire_get_bytes(&in, &iface_addr);
    ep_len            = perf_wire_get_bytes(&in, &ep_addr);
    rkey_len          = perf_wire_get_bytes(&in, &rkey);
    if (in.failed || (in.offset != length) || (remote_length < ctx->params->msg_size) ||
        (to_ep > 1) || ((side->ep != NULL) != (to_ep == 1)) ||
        (dev_len != ctx->iface_attr.device_addr_len) ||
        (iface_len != (to_ep ? 0 : ctx->iface_attr.iface_addr_len)) ||
        (ep_len != (to_ep ? ctx->iface_attr.ep_addr_len : 0))) {
        perf_run_set_error(ctx->run, "malformed transport address from the peer "
                           "(%zu bytes)", length);
        return UCS_ERR_INVALID_PARAM;
    }

    if (!uct_iface_is_reachable(side->iface, dev_addr, to_ep ? NULL : iface_addr)) {
        perf_run_set_error(ctx->run, "%s/%s cannot reach the peer%s",
                           ctx->resource.tl_name, ctx->resource.dev_name,
                           (ctx->resource.dev_type == UCT_DEVICE_TYPE_SELF) ?
                           " (self works inside one process: use -l)" : "");
        return UCS_ERR_UNREACHABLE;
    }

    if (!to_ep) {
        memset(&ep_params, 0, sizeof(ep_params));
        ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                               UCT_EP_PARAM_FIELD_IFACE_ADDR;
        ep_params.iface      = side->iface;
        ep_params.dev_addr   = dev_addr;
        ep_params.iface_addr = iface_addr;
        status = uct_ep_create(&ep_params, &side->ep);
    } else {
        status = uct_ep_connect_to_ep(side->ep, dev_addr, ep_addr);
    }
    if (status != UCS_OK) {
        perf_run_set_error(ctx->run, "cannot connect %s/%s to the peer: %s",
                           ctx->resource.tl_name, ctx->resource.dev_name,
                           ucs_status_string(status));
        return status;
    }

    side->rkey.rkey = UCT_INVALID_RKEY;
    if (rkey_len > 0) {
        status = uct_rkey_unpack(ctx->component, rkey, &side->rkey);
        if (status != UCS_OK) {
            perf_run_set_error(ctx->run, "cannot unpack the peer's remote key: %s",
                               ucs_status_string(status));
            return status;
        }
        side->have_rkey = 1;
    }
    return UCS_OK;
}

/*
 * Tell the peer about our sides and connect them to its sides. When setup
 * failed here (@a status), the peer gets our error instead of addresses.
 */
static ucs_status_t perf_uct_wireup(perf_uct_ctx_t *ctx, ucs_status_t status)
{
    perf_uct_side_t *local = &ctx->sides[(ctx->run->role == PERF_ROLE_INITIATOR) ?
                                         PERF_SIDE_SEND : PERF_SIDE_RECV];
    perf_wire_out_t blobs[PERF_SIDE_LAST];
    size_t length;
    void *data;
    int i;

    if (status != UCS_OK) {
        if (!ctx->loopback) {
            (void)perf_run_exchange(ctx->run, &ctx->oob_state, NULL, 0, NULL, NULL);
        }
        return status;
    }

    memset(blobs, 0, sizeof(blobs));
    for (i = 0; i < PERF_SIDE_LAST; ++i) {
        if (perf_uct_side_is_local(ctx, i)) {
            perf_uct_pack_side(ctx, &ctx->sides[i], &blobs[i]);
            if (blobs[i].failed) {
                perf_run_set_error(ctx->run, "out of memory packing addresses");
                status = UCS_ERR_NO_MEMORY;
            }
        }
    }
    if (status != UCS_OK) {
        if (!ctx->loopback) {
            (void)perf_run_exchange(ctx->run, &ctx->oob_state, NULL, 0, NULL, NULL);
        }
        goto out;
    }

    if (ctx->loopback) {
        /* Each side connects to the other one, in this process. */
        status = perf_uct_connect_side(ctx, &ctx->sides[PERF_SIDE_SEND],
                                       blobs[PERF_SIDE_RECV].data,
                                       blobs[PERF_SIDE_RECV].length);
        if (status == UCS_OK) {
            status = perf_uct_connect_side(ctx, &ctx->sides[PERF_SIDE_RECV],
                                           blobs[PERF_SIDE_SEND].data,
                                           blobs[PERF_SIDE_SEND].length);
        }
        goto out;
    }

    status = perf_run_exchange(ctx->run, &ctx->oob_state,
                               blobs[local->index].data, blobs[local->index].length,
                               &data, &length);
    if (status != UCS_OK) {
        goto out;
    }
    status = perf_uct_connect_side(ctx, local, data, length);
    free(data);

    /* Both eps must exist before the first message: connect-to-ep peers
     * cannot reply before they are connected. */
    if (perf_run_exchange(ctx->run, &ctx->oob_state, NULL, 0, NULL, NULL) != UCS_OK) {
        status = (status != UCS_OK) ? status : UCS_ERR_CANCELED;
    }

out:
    for (i = 0; i < PERF_SIDE_LAST; ++i) {
        perf_wire_free(&blobs[i]);
    }
    return status;
}

/* ------------------------------------------------------------------------ */
/* Loop checks                                                               */
/* ------------------------------------------------------------------------ */

/* A number that changes whenever a local side makes progress. */
static uint64_t perf_uct_activity(const perf_uct_ctx_t *ctx)
{
    const perf_uct_side_t *side;
    uint64_t sum = 0;
    int i;

    for (i = 0; i < PERF_SIDE_LAST; ++i) {
        side = &ctx->sides[i];
        sum += side->rx_count + side->credit + side->tx_count + side->reported +
               side->fin + side->completed;
    }
    return sum;
}

ucs_status_t perf_uct_check(perf_uct_ctx_t *ctx, const char *what, uint64_t *deadline_p)
{
    uint64_t now = perf_time_mono_ns();
    perf_oob_t *oob;
    ucs_status_t status;

    if (ctx->async_status != UCS_OK) {
        perf_run_set_error(ctx->run, "%s/%s reported an error on the connection: %s",
                           ctx->resource.tl_name, ctx->resource.dev_name,
                           ucs_status_string(ctx->async_status));
        return ctx->async_status;
    }

    if (!ctx->loopback && (ctx->oob_state == PERF_OOB_STATE_OK)) {
        oob    = ctx->run->oob;
        status = perf_oob_check_peer(oob);
        if (status == UCS_ERR_REJECTED) {
            /* The peer failed and now waits for our last message. */
            perf_run_set_error(ctx->run, "%s: %s", oob->peer_name, oob->error);
            ctx->oob_state = PERF_OOB_STATE_PEER_WAITING;
            return status;
        } else if (status != UCS_OK) {
            perf_run_set_error(ctx->run, "%s", oob->error);
            ctx->oob_state = PERF_OOB_STATE_CLOSED;
            return status;
        }
    }

    if ((*deadline_p == 0) || (perf_uct_activity(ctx) != ctx->activity)) {
        ctx->activity = perf_uct_activity(ctx);
        *deadline_p   = now + (uint64_t)(ctx->params->timeout * 1e9);
    } else if (now >= *deadline_p) {
        perf_run_set_error(ctx->run, "timed out after %.0f s waiting for %s over %s/%s "
                           "(raise --timeout if this is expected)", ctx->params->timeout,
                           what, ctx->resource.tl_name, ctx->resource.dev_name);
        return UCS_ERR_TIMED_OUT;
    }
    return UCS_OK;
}

/* ------------------------------------------------------------------------ */
/* The driver                                                                */
/* ------------------------------------------------------------------------ */

/* "<=N" for a limit, "unlimited" for none, "-" when the operation is absent. */
static const char *perf_uct_limit(char *buf, size_t max, uint64_t flags, uint64_t flag,
                                  size_t limit)
{
    if (!(flags & flag)) {
        return "-";
    } else if (limit >= (SIZE_MAX >> 1)) {
        return "unlimited";
    }
    snprintf(buf, max, "<=%zu", limit);
    return buf;
}

/* The transport and what it offers, for the header (-I) and JSON. */
static void perf_uct_describe(perf_uct_ctx_t *ctx)
{
    const uct_iface_attr_t *a = &ctx->iface_attr;
    perf_result_t *result     = &ctx->run->result;
    uint64_t f                = a->cap.flags;
    char l[8][32];

    snprintf(result->transport, sizeof(result->transport), "%s/%s",
             ctx->resource.tl_name, ctx->resource.dev_name);
    snprintf(result->info, sizeof(result->info),
             "am short %s, bcopy %s, zcopy %s | put short %s, bcopy %s, zcopy %s | "
             "get bcopy %s, zcopy %s | connects to %s",
             perf_uct_limit(l[0], 32, f, UCT_IFACE_FLAG_AM_SHORT, a->cap.am.max_short),
             perf_uct_limit(l[1], 32, f, UCT_IFACE_FLAG_AM_BCOPY, a->cap.am.max_bcopy),
             perf_uct_limit(l[2], 32, f, UCT_IFACE_FLAG_AM_ZCOPY, a->cap.am.max_zcopy),
             perf_uct_limit(l[3], 32, f, UCT_IFACE_FLAG_PUT_SHORT, a->cap.put.max_short),
             perf_uct_limit(l[4], 32, f, UCT_IFACE_FLAG_PUT_BCOPY, a->cap.put.max_bcopy),
             perf_uct_limit(l[5], 32, f, UCT_IFACE_FLAG_PUT_ZCOPY, a->cap.put.max_zcopy),
             perf_uct_limit(l[6], 32, f, UCT_IFACE_FLAG_GET_BCOPY, a->cap.get.max_bcopy),
             perf_uct_limit(l[7], 32, f, UCT_IFACE_FLAG_GET_ZCOPY, a->cap.get.max_zcopy),
             (f & UCT_IFACE_FLAG_CONNECT_TO_IFACE) ? "iface" : "ep");
    result->layout = ctx->layout;
    /* A UCT test chooses its own protocol: the operation in its layout. */
    snprintf(result->proto, sizeof(result->proto), "%s_%s/%s",
             perf_op_name(ctx->run->test->op), perf_layout_names[ctx->layout],
             ctx->resource.tl_name);
}

/* Open the md, worker and the local sides' ifaces; choose the layout. */
static ucs_status_t perf_uct_setup(perf_uct_ctx_t *ctx)
{
    ucs_status_t status;
    int i;

    status = perf_uct_find_resource(ctx, ctx->params);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_md_query(ctx->md, &ctx->md_attr);
    if (status == UCS_OK) {
        status = uct_worker_create(NULL, UCS_THREAD_MODE_SINGLE, &ctx->worker);
    }
    if (status == UCS_OK) {
        status = uct_md_iface_config_read(ctx->md, ctx->resource.tl_name, NULL, NULL,
                                          &ctx->iface_config);
    }
    if (status != UCS_OK) {
        perf_run_set_error(ctx->run, "cannot set up %s/%s: %s", ctx->resource.tl_name,
                           ctx->resource.dev_name, ucs_status_string(status));
        return status;
    }

    for (i = 0; i < PERF_SIDE_LAST; ++i) {
        if (!perf_uct_side_is_local(ctx, i)) {
            continue;
        }
        status = perf_uct_open_iface(ctx, &ctx->sides[i]);
        if (status != UCS_OK) {
            return status;
        }
        if (ctx->layout == PERF_LAYOUT_LAST) {
            /* Both sides' ifaces are alike: query and choose once. */
            status = uct_iface_query(ctx->sides[i].iface, &ctx->iface_attr);
            if (status != UCS_OK) {
                perf_run_set_error(ctx->run, "cannot query %s/%s: %s",
                                   ctx->resource.tl_name, ctx->resource.dev_name,
                                   ucs_status_string(status));
                return status;
            }
            status = perf_uct_select_layout(ctx);
            if (status != UCS_OK) {
                return status;
            }
            perf_uct_describe(ctx);
        }
        status = perf_uct_setup_side(ctx, &ctx->sides[i]);
        if (status != UCS_OK) {
            return status;
        }
    }
    return UCS_OK;
}

static void perf_uct_cleanup_side(perf_uct_ctx_t *ctx, perf_uct_side_t *side)
{
    if (side->have_rkey) {
        uct_rkey_release(ctx->component, &side->rkey);
    }
    if (side->ep != NULL) {
        uct_ep_destroy(side->ep);
    }
    if (side->md_allocated) {
        uct_md_mem_free(ctx->md, side->memh);
        memset(&side->buf, 0, sizeof(side->buf));
    } else {
        if (side->memh != UCT_MEM_HANDLE_NULL) {
            uct_md_mem_dereg(ctx->md, side->memh);
        }
        perf_mem_free(&side->buf);
    }
    if (side->iface != NULL) {
        uct_iface_close(side->iface);
    }
    free(side->dev_addr);
    free(side->iface_addr);
    free(side->ep_addr);
    free(side->rkey_buf);
}

static void perf_uct_cleanup(perf_uct_ctx_t *ctx)
{
    int i;

    for (i = 0; i < PERF_SIDE_LAST; ++i) {
        perf_uct_cleanup_side(ctx, &ctx->sides[i]);
    }
    if (ctx->iface_config != NULL) {
        uct_config_release(ctx->iface_config);
    }
    if (ctx->worker != NULL) {
        uct_worker_destroy(ctx->worker);
    }
    if (ctx->md != NULL) {
        uct_md_close(ctx->md);
    }
    if (ctx->components != NULL) {
        uct_release_component_list(ctx->components);
    }
}

/* The responder reports what its validation found (perf_run_finish). */
static ucs_status_t perf_uct_finish(perf_uct_ctx_t *ctx, ucs_status_t status)
{
    perf_uct_side_t *resp = &ctx->sides[PERF_SIDE_RECV];

    if (ctx->loopback) {
        return status;
    }
    return perf_run_finish(ctx->run, &ctx->oob_state, &resp->bad, resp->bad_what,
                           sizeof(resp->bad_what), status);
}

static ucs_status_t perf_uct_run(perf_run_t *run)
{
    perf_uct_ctx_t ctx;
    ucs_status_t status;
    int i;

    memset(&ctx, 0, sizeof(ctx));
    ctx.run      = run;
    ctx.params   = run->params;
    ctx.loopback = (run->role == PERF_ROLE_BOTH);
    ctx.layout   = PERF_LAYOUT_LAST; /* not chosen yet */
    for (i = 0; i < PERF_SIDE_LAST; ++i) {
        ctx.sides[i].ctx   = &ctx;
        ctx.sides[i].index = i;
    }

    /* The peer learns how setup went even when it failed here, so that
     * both report the cause and neither waits. */
    status = perf_uct_setup(&ctx);
    status = perf_uct_wireup(&ctx, status);
    if (status == UCS_OK) {
        status = perf_uct_run_test(&ctx);
    }
    status = perf_uct_finish(&ctx, status);

    for (i = 0; (status == UCS_OK) && (i < PERF_SIDE_LAST); ++i) {
        if (ctx.sides[i].bad > 0) {
            perf_run_set_error(run, "validation failed at the %s: %llu bad "
                               "message(s) or buffer(s); first: %s",
                               (i == PERF_SIDE_SEND) ? "initiator (client)" :
                                                       "responder (server)",
                               (unsigned long long)ctx.sides[i].bad,
                               ctx.sides[i].bad_what);
            status = UCS_ERR_IO_ERROR;
        }
    }

    perf_uct_cleanup(&ctx);
    if (run->oob != NULL) {
        run->oob->timeout = ctx.params->timeout; /* -o lifts it for one run */
    }
    return status;
}

/* The self transport reaches only its own process. */
/*
 * Decided by name, without opening any transport: opening one here, in the
 * parent of -L, would initialize CUDA (the cuda transports do) before the
 * fork, and a CUDA driver cannot be used in a child forked after cuInit.
 */
static int perf_uct_single_process(const perf_params_t *params)
{
    return !strcmp(params->tl_name, "self");
}

static const char *perf_uct_unavailable(void)
{
    return NULL;
}

const perf_driver_t perf_uct_driver = {
    .api            = PERF_API_UCT,
    .name           = "uct",
    .description    = "transport layer (uct)",
    .unavailable    = perf_uct_unavailable,
    .run            = perf_uct_run,
    .single_process = perf_uct_single_process
};
