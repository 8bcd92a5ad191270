#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * Device memory on the eager paths: memory-type lookup and the staging
 * copies through the cuda_copy transport (issue 7).
 *
 * libucp holds no CUDA code and does not link libcuda: every copy is a
 * uct_ep_get_zcopy/put_zcopy on a cuda_copy endpoint the worker opens, so the
 * CUDA calls stay in libuct_cuda.so. Copies are synchronous for now: the
 * worker polls the cuda_copy iface until the copy's completion (an event
 * recorded after the cuMemcpyAsync) has fired, before it returns to the
 * protocol. So a send never hands a bounce buffer to the transport, and a
 * receive never completes, before the device copy is done.
 */

#include <ucp/core/ucp_int.h>
#include <ucs/memory/memtype_cache.h>
#include <uct/api/v2/uct_v2.h>

#include <stdlib.h>
#include <string.h>

/* How a user makes a staging copier available (error messages). */
#define UCP_MEMTYPE_COPY_HINT                                                            \
    "a transport that copies device memory (UCX_TLS with cuda or cuda_copy)"

/* The process-wide cache: set once a context found the cuda_copy transport. */
static ucs_memtype_cache_t *ucp_memtype_cache;

static ucs_memory_type_t ucp_memtype_cache_lookup(const void *buffer,
                                                  size_t length)
{
    ucs_memtype_info_t info;
    ucs_status_t status;

    status = ucs_memtype_cache_lookup(ucp_memtype_cache, buffer,
                                      (length == 0) ? 1 : length, &info);
    if ((status == UCS_OK) || (status == UCS_MEMTYPE_CACHE_ERR_SPANS)) {
        /* SPANS: the first region decides; a device region that ends inside
         * the buffer is refused by the copy itself. */
        if ((info.mem_type == UCS_MEMORY_TYPE_CUDA) ||
            (info.mem_type == UCS_MEMORY_TYPE_CUDA_MANAGED)) {
            return info.mem_type;
        }
    }
    return UCS_MEMORY_TYPE_HOST;
}

/* A staging copier's domain: it detects and reaches memory other than host
 * memory, registers host memory for the other side of a copy, and works on
 * local memory alone (no remote key). Chosen by these capabilities, never by
 * name (cuda_copy today). */
static int ucp_memtype_copy_md_fits(const uct_md_attr_t *attr)
{
    const uint64_t host = UCS_BIT(UCS_MEMORY_TYPE_HOST);

    return (attr->cap.flags & UCT_MD_FLAG_REG) &&
           !(attr->cap.flags & UCT_MD_FLAG_NEED_RKEY) &&
           (attr->cap.access_mem_types & ~host) && (attr->cap.reg_mem_types & host) &&
           (attr->cap.detect_mem_types != 0);
}

static int ucp_memtype_copy_rsc(ucp_context_h context)
{
    unsigned i;

    for (i = 0; i < context->num_rscs; ++i) {
        if (ucp_memtype_copy_md_fits(&context->mds[context->rscs[i].md_index].attr)) {
            return (int)i;
        }
    }
    return -1;
}

/* Open md @a name of @a component and keep it as the detection md when it
 * detects device memory; UCS_OK when kept. */
static ucs_status_t ucp_memtype_try_detect_md(ucp_context_h context,
                                              uct_component_h component, const char *name)
{
    uct_md_config_t *md_config;
    uct_md_attr_t attr;
    ucs_status_t status;
    uct_md_h md;

    if (uct_md_config_read(component, NULL, NULL, &md_config) != UCS_OK) {
        return UCS_ERR_NO_RESOURCE;
    }
    status = uct_md_open(component, name, md_config, &md);
    uct_config_release(md_config);
    if (status != UCS_OK) {
        return status;
    }
    if ((uct_md_query(md, &attr) != UCS_OK) || !ucp_memtype_copy_md_fits(&attr)) {
        uct_md_close(md);
        return UCS_ERR_UNSUPPORTED;
    }
    ucs_debug("ucp: md %s detects device memory for this context", name);
    context->mt_detect_md = md;
    return UCS_OK;
}

/* UCX_TLS without a staging copier still must not take device memory for
 * host memory: open a domain that detects it, for detection only (it feeds
 * the memtype cache from ucm's events and queries the driver on a miss). */
static void ucp_memtype_open_detect_md(ucp_context_h context)
{
    uct_md_resource_desc_t *mds;
    uct_component_h *components;
    uct_component_attr_t attr;
    unsigned num, i, j;

    if (uct_query_components(&components, &num) != UCS_OK) {
        return;
    }
    for (i = 0; (i < num) && (context->mt_detect_md == NULL); ++i) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        if ((uct_component_query(components[i], &attr) != UCS_OK) ||
            (attr.md_resource_count == 0)) {
            continue;
        }
        mds = calloc(attr.md_resource_count, sizeof(*mds));
        if (mds == NULL) {
            break;
        }
        attr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        attr.md_resources = mds;
        if (uct_component_query(components[i], &attr) == UCS_OK) {
            for (j = 0; (j < attr.md_resource_count) &&
                        (ucp_memtype_try_detect_md(context, components[i],
                                                   mds[j].md_name) != UCS_OK);
                 ++j) {
            }
        }
        free(mds);
    }
    uct_release_component_list(components);
}

/* The domain that detects device memory also knows what to wait for before
 * a request touches it; one that answers length 0 with UCS_OK orders. */
static void ucp_memtype_fence_md_init(ucp_context_h context)
{
    int rsc_index = ucp_memtype_copy_rsc(context);
    uct_md_h md   = (rsc_index >= 0) ?
                    context->mds[context->rscs[rsc_index].md_index].md :
                    context->mt_detect_md;

    context->mt_fence_md = NULL;
    if ((md != NULL) && (uct_md_mem_fence(md, NULL, 0) == UCS_OK)) {
        context->mt_fence_md = md;
    }
    ucs_debug("ucp: device memory requests %s the device work queued for it",
              (context->mt_fence_md != NULL) ? "wait for" : "do not wait for");
}

void ucp_memtype_fence(ucp_context_h context, const void *buffer, size_t length)
{
    if (context->mt_fence_md != NULL) {
        (void)uct_md_mem_fence(context->mt_fence_md, buffer, (length == 0) ? 1 : length);
    }
}

void ucp_memtype_context_init(ucp_context_h context)
{
    ucs_memtype_cache_t *cache;
    ucs_status_t status;

    context->memtype_lookup = ucp_memtype_host_lookup;
    context->mt_fence_md    = NULL;
    if (ucp_memtype_copy_rsc(context) < 0) {
        ucp_memtype_open_detect_md(context);
        if (context->mt_detect_md == NULL) {
            ucs_debug("ucp: no domain detects device memory: every buffer is "
                      "host memory");
            return;
        }
        ucs_debug("ucp: no staging copier among the transports (UCX_TLS): "
                  "device memory is detected and refused");
    }
    /* The detecting md, opened by this context and kept open as long as it,
     * attached the global cache to ucm's device memory events
     * (ucm_memtype_cache_attach); a miss costs one driver query. */
    status = ucs_memtype_cache_get_global(&cache);
    if (status != UCS_OK) {
        ucs_debug("ucp: no global memtype cache (%s): every buffer is host "
                  "memory", ucs_status_string(status));
        return;
    }
    ucp_memtype_cache       = cache;
    context->memtype_lookup = ucp_memtype_cache_lookup;
    ucp_memtype_fence_md_init(context);
}

void ucp_memtype_context_cleanup(ucp_context_h context)
{
    if (context->mt_detect_md != NULL) {
        uct_md_close(context->mt_detect_md);
        context->mt_detect_md = NULL;
    }
}

ucs_status_t ucp_memtype_worker_init(ucp_worker_h worker)
{
    ucp_context_h context = worker->context;
    int rsc_index         = ucp_memtype_copy_rsc(context);
    uct_iface_config_t *config;
    uct_iface_params_t params;
    uct_ep_params_t ep_params;
    const ucp_tl_rsc_t *rsc;
    ucs_status_t status;
    uct_md_h md;

    if (rsc_index < 0) {
        return UCS_OK;
    }
    rsc = &context->rscs[rsc_index];
    md  = context->mds[rsc->md_index].md;
    memset(&params, 0, sizeof(params));
    params.field_mask      = UCT_IFACE_PARAM_FIELD_DEVICE;
    params.device.tl_name  = rsc->desc.tl_name;
    params.device.dev_name = rsc->desc.dev_name;
    status = uct_md_iface_config_read(md, rsc->desc.tl_name, NULL, NULL, &config);
    if (status != UCS_OK) {
        goto err;
    }
    status = uct_iface_open(md, worker->uct_worker, &params, config,
                            &worker->mt_iface);
    uct_config_release(config);
    if (status != UCS_OK) {
        goto err;
    }
    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
    ep_params.iface      = worker->mt_iface;
    status = uct_ep_create(&ep_params, &worker->mt_ep);
    if (status != UCS_OK) {
        goto err_iface;
    }
    worker->mt_rsc_index = (unsigned)rsc_index;
    return UCS_OK;

err_iface:
    uct_iface_close(worker->mt_iface);
    worker->mt_iface = NULL;
err:
    /* Not fatal: host memory still works, device memory is refused. */
    ucs_debug("ucp: %s/%s not opened for staging copies: %s",
              rsc->desc.tl_name, rsc->desc.dev_name, ucs_status_string(status));
    return UCS_OK;
}

void ucp_memtype_worker_cleanup(ucp_worker_h worker)
{
    if (worker->mt_ep != NULL) {
        uct_ep_destroy(worker->mt_ep);
        worker->mt_ep = NULL;
    }
    if (worker->mt_iface != NULL) {
        uct_iface_close(worker->mt_iface);
        worker->mt_iface = NULL;
    }
}

static void ucp_memtype_copy_done(uct_completion_t *comp)
{
    (void)comp;
}

ucs_status_t ucp_memtype_copy_start(ucp_worker_h worker, void *dst,
                                    const void *src, size_t length,
                                    uct_completion_t *comp)
{
    uct_iov_t iov;

    if (worker->mt_ep == NULL) {
        ucs_error("ucp: device memory needs %s: none is available",
                  UCP_MEMTYPE_COPY_HINT);
        return UCS_ERR_UNSUPPORTED;
    }
    /* cuda_copy's put copies the local iov to remote_addr; both are our
     * pointers and the driver finds the direction from unified addressing. */
    iov.buffer = (void*)src;
    iov.length = length;
    iov.memh   = UCT_MEM_HANDLE_NULL;
    iov.stride = 0;
    iov.count  = 1;
    return uct_ep_put_zcopy(worker->mt_ep, &iov, 1, (uintptr_t)dst, 0, comp);
}

ucs_status_t ucp_memtype_copy(ucp_worker_h worker, void *dst, const void *src,
                              size_t length)
{
    uct_completion_t comp;
    ucs_status_t status;

    if (length == 0) {
        return UCS_OK;
    }
    comp.func   = ucp_memtype_copy_done;
    comp.count  = 1;
    comp.status = UCS_OK;
    status      = ucp_memtype_copy_start(worker, dst, src, length, &comp);
    if (status == UCS_INPROGRESS) {
        while (comp.count > 0) {
            uct_iface_progress(worker->mt_iface);
        }
        status = comp.status;
    }
    if ((status != UCS_OK) && (status != UCS_ERR_UNSUPPORTED)) {
        ucs_error("ucp: staging copy of %zu bytes %p -> %p failed: %s", length,
                  src, dst, ucs_status_string(status));
    }
    return status;
}

static ucs_memory_type_t ucp_memtype_of(ucp_worker_h worker, const void *buffer,
                                        size_t length,
                                        const ucp_request_param_t *param)
{
    if ((param != NULL) && (param->op_attr_mask & UCP_OP_ATTR_FIELD_MEMORY_TYPE) &&
        (param->memory_type < UCS_MEMORY_TYPE_UNKNOWN)) {
        return param->memory_type;
    }
    return worker->context->memtype_lookup(buffer, length);
}

static ucs_memory_type_t ucp_memtype_classify_dt(ucp_worker_h worker,
                                                 const ucp_dt_state_t *dt,
                                                 const ucp_request_param_t *param)
{
    const ucp_dt_iov_t *iov = dt->buffer;
    ucs_memory_type_t mem_type;
    size_t i;

    switch (dt->datatype & UCP_DATATYPE_CLASS_MASK) {
    case UCP_DATATYPE_CONTIG:
        return ucp_memtype_of(worker, dt->buffer, dt->length, param);
    case UCP_DATATYPE_IOV:
        /* The first device element decides: the whole message is staged. */
        for (i = 0; i < dt->count; ++i) {
            if (iov[i].length == 0) {
                continue;
            }
            mem_type = ucp_memtype_of(worker, iov[i].buffer, iov[i].length, param);
            if (mem_type != UCS_MEMORY_TYPE_HOST) {
                return mem_type;
            }
        }
        return UCS_MEMORY_TYPE_HOST;
    default:
        /* Generic: the application's pack/unpack handle their memory. */
        return UCS_MEMORY_TYPE_HOST;
    }
}

ucs_memory_type_t ucp_memtype_of_dt(ucp_worker_h worker, const ucp_dt_state_t *dt,
                                    const ucp_request_param_t *param)
{
    ucs_memory_type_t mem_type = ucp_memtype_classify_dt(worker, dt, param);

    if (mem_type != UCS_MEMORY_TYPE_HOST) {
        ucp_memtype_fence(worker->context, dt->buffer, dt->length);
    }
    return mem_type;
}

/*
 * A staging buffer remembers the datatype it replaced, so that a receive
 * can scatter into contiguous device memory or into each element of an
 * IOV (host elements by memcpy, device elements by cuda_copy).
 */
typedef struct ucp_memtype_bounce {
    ucp_datatype_t datatype;
    void           *buffer;
    size_t         count;
    size_t         length;
    char           data[] __attribute__((aligned(16)));
} ucp_memtype_bounce_t;

static ucp_memtype_bounce_t *ucp_memtype_bounce_of(const ucp_request_t *req)
{
    return (ucp_memtype_bounce_t*)req->bounce;
}

/* Copy between the packed stream and the original buffer: contiguous, or
 * element by element for an IOV (@a to_user: bounce -> user buffer). */
static ucs_status_t ucp_memtype_move(ucp_worker_h worker,
                                     const ucp_memtype_bounce_t *b,
                                     void *packed, size_t length, int to_user)
{
    const ucp_dt_iov_t *iov = b->buffer;
    ucs_status_t status     = UCS_OK;
    size_t i, pos = 0, n;
    void *elem;

    if ((b->datatype & UCP_DATATYPE_CLASS_MASK) == UCP_DATATYPE_CONTIG) {
        return to_user ? ucp_memtype_copy(worker, b->buffer, packed, length) :
                         ucp_memtype_copy(worker, packed, b->buffer, length);
    }
    for (i = 0; (i < b->count) && (pos < length) && (status == UCS_OK); ++i) {
        n    = ucs_min(iov[i].length, length - pos);
        elem = iov[i].buffer;
        if (n == 0) {
            continue;
        }
        if (worker->context->memtype_lookup(elem, n) == UCS_MEMORY_TYPE_HOST) {
            memcpy(to_user ? elem : (char*)packed + pos,
                   to_user ? (char*)packed + pos : elem, n);
        } else {
            status = to_user ? ucp_memtype_copy(worker, elem, (char*)packed + pos, n) :
                               ucp_memtype_copy(worker, (char*)packed + pos, elem, n);
        }
        pos += n;
    }
    return status;
}

static ucs_status_t ucp_memtype_stage(ucp_request_t *req,
                                      ucs_memory_type_t mem_type, int recv)
{
    ucp_memtype_bounce_t *b;
    ucs_status_t status;

    if ((req->dt.datatype & UCP_DATATYPE_CLASS_MASK) == UCP_DATATYPE_GENERIC) {
        return UCS_OK;
    }
    if (req->worker->mt_ep == NULL) {
        ucs_error("ucp: %s memory at %p needs %s: none is available",
                  ucs_memory_type_names[mem_type], req->dt.buffer, UCP_MEMTYPE_COPY_HINT);
        return UCS_ERR_UNSUPPORTED;
    }
    b = malloc(sizeof(*b) + ((req->dt.length == 0) ? 1 : req->dt.length));
    if (b == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    b->datatype = req->dt.datatype;
    b->buffer   = req->dt.buffer;
    b->count    = req->dt.count;
    b->length   = req->dt.length;
    if (!recv) {
        status = ucp_memtype_move(req->worker, b, b->data, b->length, 0);
        if (status != UCS_OK) {
            free(b);
            return status;
        }
    }
    ucs_debug("ucp: %s of %zu bytes in %s memory %p staged in %p",
              recv ? "receive" : "send", b->length,
              ucs_memory_type_names[mem_type], b->buffer, b->data);
    req->bounce      = b;
    req->dev_buffer  = recv ? b->buffer : NULL;
    req->dt.buffer   = b->data;
    req->dt.datatype = ucp_dt_make_contig(1);
    req->dt.count    = b->length;
    return UCS_OK;
}

ucs_status_t ucp_memtype_stage_send(ucp_request_t *req,
                                    ucs_memory_type_t mem_type)
{
    return ucp_memtype_stage(req, mem_type, 0);
}

ucs_status_t ucp_memtype_stage_recv(ucp_request_t *req,
                                    ucs_memory_type_t mem_type)
{
    return ucp_memtype_stage(req, mem_type, 1);
}

int ucp_memtype_unstage_contig(ucp_request_t *req)
{
    ucp_memtype_bounce_t *b = ucp_memtype_bounce_of(req);

    if ((b == NULL) ||
        ((b->datatype & UCP_DATATYPE_CLASS_MASK) != UCP_DATATYPE_CONTIG)) {
        return 0;
    }
    req->dt.buffer   = b->buffer;
    req->dt.datatype = b->datatype;
    req->dt.count    = b->count;
    req->bounce      = NULL;
    req->dev_buffer  = NULL;
    free(b);
    return 1;
}

void *ucp_memtype_bounce_target(const ucp_request_t *req)
{
    ucp_memtype_bounce_t *b = ucp_memtype_bounce_of(req);

    if ((b == NULL) ||
        ((b->datatype & UCP_DATATYPE_CLASS_MASK) != UCP_DATATYPE_CONTIG)) {
        return NULL;
    }
    return b->buffer;
}

void *ucp_request_scratch_alloc(ucp_request_t *req, size_t length)
{
    ucp_memtype_bounce_t *b = malloc(sizeof(*b) + length);

    if (b == NULL) {
        return NULL;
    }
    memset(b, 0, sizeof(*b));
    b->datatype = ucp_dt_make_contig(1);
    req->bounce = b;
    return b->data;
}

ucs_status_t ucp_memtype_unstage(ucp_request_t *req, ucs_status_t status)
{
    ucp_memtype_bounce_t *b = ucp_memtype_bounce_of(req);
    size_t length;

    if (b == NULL) {
        return status;
    }
    if ((req->dev_buffer != NULL) &&
        ((status == UCS_OK) || (status == UCS_ERR_MESSAGE_TRUNCATED))) {
        length = ucs_min(req->u.recv.info.length, b->length);
        if (ucp_memtype_move(req->worker, b, b->data, length, 1) != UCS_OK) {
            status = UCS_ERR_IO_ERROR;
        }
    }
    req->dt.buffer   = b->buffer;
    req->dt.datatype = b->datatype;
    req->dt.count    = b->count;
    free(b);
    req->bounce     = NULL;
    req->dev_buffer = NULL;
    return status;
}
