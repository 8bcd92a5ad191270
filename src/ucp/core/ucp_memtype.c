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

#include <stdlib.h>
#include <string.h>

#define UCP_MEMTYPE_COPY_TL "cuda_copy"

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

static int ucp_memtype_copy_rsc(ucp_context_h context)
{
    unsigned i;

    for (i = 0; i < context->num_rscs; ++i) {
        if (!strcmp(context->rscs[i].desc.tl_name, UCP_MEMTYPE_COPY_TL)) {
            return (int)i;
        }
    }
    return -1;
}

void ucp_memtype_context_init(ucp_context_h context)
{
    ucs_memtype_cache_t *cache;
    ucs_status_t status;

    context->memtype_lookup = ucp_memtype_host_lookup;
    if (ucp_memtype_copy_rsc(context) < 0) {
        ucs_debug("ucp: no %s transport: every buffer is host memory",
                  UCP_MEMTYPE_COPY_TL);
        return;
    }
    /* The cuda_cpy md, opened by this context and kept open as long as it,
     * attached the global cache to ucm's CUDA events
     * (ucm_memtype_cache_attach); a miss costs one driver query. */
    status = ucs_memtype_cache_get_global(&cache);
    if (status != UCS_OK) {
        ucs_debug("ucp: no global memtype cache (%s): every buffer is host "
                  "memory", ucs_status_string(status));
        return;
    }
    ucp_memtype_cache       = cache;
    context->memtype_lookup = ucp_memtype_cache_lookup;
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

/* Copy @a length bytes between host memory @a host and device memory
 * @a device (@a to_device: host -> device), and wait for it. */
static ucs_status_t ucp_memtype_copy(ucp_worker_h worker, void *host,
                                     void *device, size_t length, int to_device)
{
    uct_completion_t comp;
    ucs_status_t status;
    uct_iov_t iov;

    if (length == 0) {
        return UCS_OK;
    }
    if (worker->mt_ep == NULL) {
        ucs_error("ucp: device memory needs the %s transport (not available "
                  "or not allowed by UCX_TLS)", UCP_MEMTYPE_COPY_TL);
        return UCS_ERR_UNSUPPORTED;
    }
    iov.buffer = host;
    iov.length = length;
    iov.memh   = UCT_MEM_HANDLE_NULL;
    iov.stride = 0;
    iov.count  = 1;
    comp.func   = ucp_memtype_copy_done;
    comp.count  = 1;
    comp.status = UCS_OK;
    status = to_device ?
             uct_ep_put_zcopy(worker->mt_ep, &iov, 1, (uintptr_t)device, 0, &comp) :
             uct_ep_get_zcopy(worker->mt_ep, &iov, 1, (uintptr_t)device, 0, &comp);
    if (status == UCS_INPROGRESS) {
        while (comp.count > 0) {
            uct_iface_progress(worker->mt_iface);
        }
        status = comp.status;
    }
    if (status != UCS_OK) {
        ucs_error("ucp: staging copy of %zu bytes %s device memory %p failed: %s",
                  length, to_device ? "to" : "from", device,
                  ucs_status_string(status));
    }
    return status;
}

static ucs_status_t ucp_memtype_check_dt(const ucp_dt_state_t *dt,
                                         ucs_memory_type_t mem_type)
{
    if (((dt->datatype & UCP_DATATYPE_CLASS_MASK) == UCP_DATATYPE_CONTIG) &&
        (dt->generic == NULL)) {
        return UCS_OK;
    }
    ucs_error("ucp: only contiguous datatypes are supported in %s memory",
              ucs_memory_type_names[mem_type]);
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t ucp_memtype_stage_send(ucp_request_t *req,
                                    ucs_memory_type_t mem_type)
{
    ucs_status_t status;
    void *bounce;

    status = ucp_memtype_check_dt(&req->dt, mem_type);
    if (status != UCS_OK) {
        return status;
    }
    bounce = malloc((req->dt.length == 0) ? 1 : req->dt.length);
    if (bounce == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    status = ucp_memtype_copy(req->worker, bounce, req->dt.buffer,
                              req->dt.length, 0);
    if (status != UCS_OK) {
        free(bounce);
        return status;
    }
    ucs_debug("ucp: send of %zu bytes from %s memory %p staged in %p",
              req->dt.length, ucs_memory_type_names[mem_type], req->dt.buffer,
              bounce);
    req->bounce     = bounce;
    req->dt.buffer  = bounce;
    return UCS_OK;
}

ucs_status_t ucp_memtype_stage_recv(ucp_request_t *req,
                                    ucs_memory_type_t mem_type)
{
    ucs_status_t status;
    void *bounce;

    status = ucp_memtype_check_dt(&req->dt, mem_type);
    if (status != UCS_OK) {
        return status;
    }
    if (req->worker->mt_ep == NULL) {
        return ucp_memtype_copy(req->worker, NULL, NULL, 1, 1); /* error */
    }
    bounce = malloc((req->dt.length == 0) ? 1 : req->dt.length);
    if (bounce == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    ucs_debug("ucp: receive of up to %zu bytes into %s memory %p staged in %p",
              req->dt.length, ucs_memory_type_names[mem_type], req->dt.buffer,
              bounce);
    req->dev_buffer = req->dt.buffer;
    req->bounce     = bounce;
    req->dt.buffer  = bounce;
    return UCS_OK;
}

ucs_status_t ucp_memtype_unstage(ucp_request_t *req, ucs_status_t status)
{
    size_t length;

    if (req->bounce == NULL) {
        return status;
    }
    if ((req->dev_buffer != NULL) &&
        ((status == UCS_OK) || (status == UCS_ERR_MESSAGE_TRUNCATED))) {
        length = (req->u.recv.info.length < req->dt.length) ?
                 req->u.recv.info.length : req->dt.length;
        if (ucp_memtype_copy(req->worker, req->bounce, req->dev_buffer, length,
                             1) != UCS_OK) {
            status = UCS_ERR_IO_ERROR;
        }
    }
    if (req->dev_buffer != NULL) {
        req->dt.buffer = req->dev_buffer;
    }
    free(req->bounce);
    req->bounce     = NULL;
    req->dev_buffer = NULL;
    return status;
}
