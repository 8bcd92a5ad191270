#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * Queries, diagnostics and the blocking compatibility calls that bindings
 * (UCX-Py, UCXX, Julia) and older MPI code use: request and library
 * queries, print_info, performance estimates, ucp_put/ucp_get and the
 * blocking atomics of ucp_compat.h.
 */

#include <ucp/core/ucp_int.h>
#include <ucp/rndv/ucp_rndv.h>

#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* ---- requests ------------------------------------------------------------- */

static const char *ucp_request_kind(const ucp_request_t *req)
{
    if (req->flags & UCP_REQ_FLAG_RECV) {
        return (req->flags & UCP_REQ_FLAG_RECV_LENGTH) ? "stream/am receive" :
                                                         "tag receive";
    }
    return (req->rndv != NULL) ? "rendezvous send" : "send";
}

ucs_status_t ucp_request_query(void *request, ucp_request_attr_t *attr)
{
    ucp_request_t *req = (ucp_request_t*)request - 1;
    ucs_status_t status = UCS_OK;

    ucp_worker_lock(req->worker);
    if (attr->field_mask & UCP_REQUEST_ATTR_FIELD_STATUS) {
        attr->status = (req->flags & UCP_REQ_FLAG_COMPLETED) ? req->status :
                                                               UCS_INPROGRESS;
    }
    if (attr->field_mask & UCP_REQUEST_ATTR_FIELD_MEM_TYPE) {
        attr->mem_type = req->mem_type;
    }
    if (attr->field_mask & UCP_REQUEST_ATTR_FIELD_INFO_STRING) {
        if (!(attr->field_mask & UCP_REQUEST_ATTR_FIELD_INFO_STRING_SIZE) ||
            (attr->debug_string == NULL) || (attr->debug_string_size == 0)) {
            status = UCS_ERR_INVALID_PARAM;
        } else {
            snprintf(attr->debug_string, attr->debug_string_size,
                     "%s of %zu bytes, %s memory, %s", ucp_request_kind(req),
                     req->dt.length, ucs_memory_type_names[req->mem_type],
                     (req->flags & UCP_REQ_FLAG_COMPLETED) ?
                     ucs_status_string(req->status) : "in progress");
        }
    }
    ucp_worker_unlock(req->worker);
    return status;
}

int ucp_request_is_completed(void *request)
{
    return ucp_request_check_status(request) != UCS_INPROGRESS;
}

void *ucp_request_alloc(ucp_worker_h worker)
{
    ucp_request_t *req;

    ucp_worker_lock(worker);
    req = ucp_request_get(worker, NULL);
    if (req != NULL) {
        /* Not an operation yet: freeing it returns it at once. */
        req->flags |= UCP_REQ_FLAG_COMPLETED;
        req->status = UCS_OK;
    }
    ucp_worker_unlock(worker);
    return (req != NULL) ? req + 1 : NULL;
}

ucs_status_t ucp_tag_recv_request_test(void *request, ucp_tag_recv_info_t *info)
{
    return ucp_request_test(request, info);
}

/* ---- library, worker, endpoint -------------------------------------------- */

ucs_status_t ucp_lib_query(ucp_lib_attr_t *attr)
{
    if (attr->field_mask & UCP_LIB_ATTR_FIELD_MAX_THREAD_LEVEL) {
        attr->max_thread_level = UCS_THREAD_MODE_MULTI;
    }
    return UCS_OK;
}

ucs_status_t ucp_worker_address_query(ucp_address_t *address,
                                      ucp_worker_address_attr_t *attr)
{
    ucp_unpacked_address_t *addr = malloc(sizeof(*addr));
    ucs_status_t status;

    if (addr == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    status = ucp_address_unpack(address, ucp_address_length(address), addr);
    if ((status == UCS_OK) && (attr->field_mask & UCP_WORKER_ADDRESS_ATTR_FIELD_UID)) {
        attr->worker_uid = addr->uuid;
    }
    free(addr);
    return status;
}

static const ucp_tl_rsc_t *ucp_ep_lane_rsc(ucp_ep_h ep, unsigned rsc_index)
{
    return &ep->worker->context->rscs[rsc_index];
}

ucs_status_t ucp_ep_query_transports(ucp_ep_h ep, ucp_transports_t *transports)
{
    const ucp_worker_iface_t *lanes[3 + UCP_MAX_RAILS - 1];
    ucp_transport_entry_t *entry;
    unsigned num = 0, i;
    const ucp_tl_rsc_t *rsc;

    if ((transports->entries == NULL) && (transports->num_entries > 0)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (ep->wiface != NULL) {
        lanes[num++] = ep->wiface;
    }
    if (ep->rma_ep != NULL) {
        lanes[num++] = &ep->worker->rma_iface;
    }
    if ((ep->host_rma_ep != NULL) && ep->host_lane->own_eps) {
        lanes[num++] = ep->host_lane->wiface;
    }
    for (i = 0; i < ep->num_host_rails; ++i) {
        lanes[num++] = ep->host_rails[i].wiface;
    }
    num = ucs_min(num, transports->num_entries);
    for (i = 0; i < num; ++i) {
        rsc   = ucp_ep_lane_rsc(ep, lanes[i]->rsc_index);
        entry = (ucp_transport_entry_t*)((char*)transports->entries +
                                         i * transports->entry_size);
        entry->transport_name = rsc->desc.tl_name;
        entry->device_name    = rsc->desc.dev_name;
    }
    transports->num_entries = num;
    return UCS_OK;
}

void ucp_ep_print_info(ucp_ep_h ep, FILE *stream)
{
    ucp_transport_entry_t entries[3];
    ucp_transports_t tls = {entries, 3, sizeof(entries[0])};
    unsigned i;

    ucp_worker_lock(ep->worker);
    fprintf(stream, "#\n# UCP endpoint %s of worker %s\n#\n", ep->name,
            ep->worker->name);
    fprintf(stream, "#   peer worker     : 0x%llx%s\n",
            (unsigned long long)ep->remote_uuid,
            (ep->flags & UCP_EP_FLAG_CONNECTING) ? " (connecting)" : "");
    (void)ucp_ep_query_transports(ep, &tls);
    for (i = 0; i < tls.num_entries; ++i) {
        fprintf(stream, "#   lane %u          : %s/%s%s\n", i,
                entries[i].transport_name, entries[i].device_name,
                (i == 0) ? " (messages)" : " (rendezvous)");
    }
    if (!(ep->flags & UCP_EP_FLAG_CONNECTING)) {
        fprintf(stream, "#   eager short     : 0..%zu\n", ep->max_short);
        fprintf(stream, "#   eager segment   : %zu\n", ep->max_bcopy);
        fprintf(stream, "#   rndv threshold  : host %zu, device (exports) %zu, "
                "device %zu\n", ucp_rndv_thresh(ep, UCP_RNDV_KIND_HOST),
                ucp_rndv_thresh(ep, UCP_RNDV_KIND_DEVICE_EXPORT),
                ucp_rndv_thresh(ep, UCP_RNDV_KIND_DEVICE));
    }
    fprintf(stream, "#   status          : %s\n#\n",
            (ep->flags & UCP_EP_FLAG_FAILED) ? ucs_status_string(ep->status) : "ok");
    ucp_worker_unlock(ep->worker);
}

void ucp_worker_print_info(ucp_worker_h worker, FILE *stream)
{
    ucp_context_h context = worker->context;
    unsigned i, num_eps = 0;
    ucp_ep_h ep;

    ucp_worker_lock(worker);
    ucs_list_for_each(ep, &worker->eps, link) {
        ++num_eps;
    }
    fprintf(stream, "#\n# UCP worker '%s'\n#\n", worker->name);
    fprintf(stream, "#   uuid            : 0x%llx\n", (unsigned long long)worker->uuid);
    fprintf(stream, "#   thread mode     : %s\n",
            ucs_thread_mode_names[worker->thread_mode]);
    fprintf(stream, "#   address         : %zu bytes\n", worker->address_len);
    fprintf(stream, "#   max_am_header   : %zu\n", worker->max_am_header);
    fprintf(stream, "#   endpoints       : %u\n", num_eps);
    for (i = 0; i < worker->num_ifaces; ++i) {
        const ucp_tl_rsc_t *rsc = &context->rscs[worker->ifaces[i].rsc_index];
        fprintf(stream, "#   messaging       : %s/%s\n", rsc->desc.tl_name,
                rsc->desc.dev_name);
    }
    if (worker->rma_iface.iface != NULL) {
        fprintf(stream, "#   device rndv     : %s\n",
                context->rscs[worker->rma_iface.rsc_index].desc.tl_name);
    }
    if (worker->host_rma_iface.iface != NULL) {
        fprintf(stream, "#   host rndv       : %s\n",
                context->rscs[worker->host_rma_iface.rsc_index].desc.tl_name);
    }
    fprintf(stream, "#\n");
    ucp_worker_unlock(worker);
}

void ucp_mem_print_info(const char *mem_spec, ucp_context_h context, FILE *stream)
{
    ucp_mem_map_params_t params;
    ucp_mem_attr_t attr;
    ucs_status_t status;
    ucp_mem_h memh;
    char *end;
    size_t size;

    size = strtoull((mem_spec != NULL) ? mem_spec : "0", &end, 0);
    switch ((end != NULL) ? *end : '\0') {
    case 'k': case 'K': size <<= 10; break;
    case 'm': case 'M': size <<= 20; break;
    case 'g': case 'G': size <<= 30; break;
    default: break;
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    params.length     = size ? size : 1;
    params.flags      = UCP_MEM_MAP_ALLOCATE;
    status = ucp_mem_map(context, &params, &memh);
    if (status != UCS_OK) {
        fprintf(stream, "# ucp_mem_map of '%s' failed: %s\n",
                (mem_spec != NULL) ? mem_spec : "", ucs_status_string(status));
        return;
    }
    attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH |
                      UCP_MEM_ATTR_FIELD_MEM_TYPE;
    if (ucp_mem_query(memh, &attr) == UCS_OK) {
        fprintf(stream, "#\n# UCP memory allocation\n#\n#   address  : %p\n"
                "#   length   : %zu\n#   type     : %s\n#\n", attr.address,
                attr.length, ucs_memory_type_names[attr.mem_type]);
    }
    ucp_mem_unmap(context, memh);
}

ucs_status_t ucp_ep_evaluate_perf(ucp_ep_h ep,
                                  const ucp_ep_evaluate_perf_param_t *param,
                                  ucp_ep_evaluate_perf_attr_t *attr)
{
    ucp_rndv_model_t model;
    ucs_status_t status;
    size_t size;

    if ((param == NULL) || !(param->field_mask & UCP_EP_PERF_PARAM_FIELD_MESSAGE_SIZE)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (!(attr->field_mask & UCP_EP_PERF_ATTR_FIELD_ESTIMATED_TIME)) {
        return UCS_OK;
    }
    ucp_worker_lock(ep->worker);
    if (ep->flags & UCP_EP_FLAG_CONNECTING) {
        status = UCS_ERR_NO_RESOURCE; /* no lanes to estimate yet */
        goto out;
    }
    status = ucp_rndv_ep_model(ep, &model);
    if (status != UCS_OK) {
        goto out;
    }
    size = param->message_size;
    /* The protocol the ep would choose for host memory, timed by the same
     * model that chose it. */
    attr->estimated_time = (size >= ucp_rndv_thresh(ep, UCP_RNDV_KIND_HOST)) ?
                           ucp_rndv_model_rndv_time(&model, UCP_RNDV_KIND_HOST,
                                                    UCP_RNDV_KIND_HOST, size, NULL) :
                           ucp_rndv_model_time(&model, UCP_RNDV_MODEL_EAGER,
                                               UCP_RNDV_KIND_HOST,
                                               UCP_RNDV_KIND_HOST, size);
out:
    ucp_worker_unlock(ep->worker);
    return status;
}

void ucp_worker_wait_mem(ucp_worker_h worker, void *address)
{
    volatile uint64_t *word = address;
    uint64_t value          = *word;
    unsigned i;

    (void)worker;
    for (i = 0; (i < 1000) && (*word == value); ++i) {
        __asm__ __volatile__("" ::: "memory");
    }
    if (*word == value) {
        sched_yield();
    }
}

/* ---- blocking compatibility calls ------------------------------------------ */

/* Wait for @a ret (what a non-blocking call returned), then flush the ep so
 * that the operation is complete at the target, as the blocking calls
 * promise. */
static ucs_status_t ucp_info_wait(ucp_ep_h ep, ucs_status_ptr_t ret, int flush)
{
    ucs_status_t status;

    if (UCS_PTR_IS_ERR(ret)) {
        return UCS_PTR_STATUS(ret);
    }
    if (ret != NULL) {
        while ((status = ucp_request_check_status(ret)) == UCS_INPROGRESS) {
            ucp_worker_progress(ep->worker);
        }
        ucp_request_free(ret);
        if (status != UCS_OK) {
            return status;
        }
    }
    return flush ? ucp_ep_flush(ep) : UCS_OK;
}

ucs_status_t ucp_put(ucp_ep_h ep, const void *buffer, size_t length,
                     uint64_t remote_addr, ucp_rkey_h rkey)
{
    return ucp_info_wait(ep, ucp_put_nbx(ep, buffer, length, remote_addr, rkey,
                                         NULL), 1);
}

ucs_status_t ucp_get(ucp_ep_h ep, void *buffer, size_t length,
                     uint64_t remote_addr, ucp_rkey_h rkey)
{
    return ucp_info_wait(ep, ucp_get_nbx(ep, buffer, length, remote_addr, rkey,
                                         NULL), 0);
}

/* One atomic of @a size bytes; @a result (may be NULL) gets the old value. */
static ucs_status_t ucp_info_atomic(ucp_ep_h ep, ucp_atomic_op_t op,
                                    const void *value, void *result, size_t size,
                                    uint64_t remote_addr, ucp_rkey_h rkey)
{
    ucp_request_param_t param;

    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype     = ucp_dt_make_contig(size);
    if (result != NULL) {
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
        param.reply_buffer  = result;
    }
    return ucp_info_wait(ep, ucp_atomic_op_nbx(ep, op, value, 1, remote_addr, rkey,
                                               &param), result == NULL);
}

ucs_status_t ucp_atomic_add32(ucp_ep_h ep, uint32_t add, uint64_t remote_addr,
                              ucp_rkey_h rkey)
{
    return ucp_info_atomic(ep, UCP_ATOMIC_OP_ADD, &add, NULL, 4, remote_addr, rkey);
}

ucs_status_t ucp_atomic_add64(ucp_ep_h ep, uint64_t add, uint64_t remote_addr,
                              ucp_rkey_h rkey)
{
    return ucp_info_atomic(ep, UCP_ATOMIC_OP_ADD, &add, NULL, 8, remote_addr, rkey);
}

ucs_status_t ucp_atomic_fadd32(ucp_ep_h ep, uint32_t add, uint64_t remote_addr,
                               ucp_rkey_h rkey, uint32_t *result)
{
    return ucp_info_atomic(ep, UCP_ATOMIC_OP_ADD, &add, result, 4, remote_addr, rkey);
}

ucs_status_t ucp_atomic_fadd64(ucp_ep_h ep, uint64_t add, uint64_t remote_addr,
                               ucp_rkey_h rkey, uint64_t *result)
{
    return ucp_info_atomic(ep, UCP_ATOMIC_OP_ADD, &add, result, 8, remote_addr, rkey);
}

ucs_status_t ucp_atomic_swap32(ucp_ep_h ep, uint32_t swap, uint64_t remote_addr,
                               ucp_rkey_h rkey, uint32_t *result)
{
    return ucp_info_atomic(ep, UCP_ATOMIC_OP_SWAP, &swap, result, 4, remote_addr,
                           rkey);
}

ucs_status_t ucp_atomic_swap64(ucp_ep_h ep, uint64_t swap, uint64_t remote_addr,
                               ucp_rkey_h rkey, uint64_t *result)
{
    return ucp_info_atomic(ep, UCP_ATOMIC_OP_SWAP, &swap, result, 8, remote_addr,
                           rkey);
}

ucs_status_t ucp_atomic_cswap32(ucp_ep_h ep, uint32_t compare, uint32_t swap,
                                uint64_t remote_addr, ucp_rkey_h rkey,
                                uint32_t *result)
{
    /* CSWAP takes the value to store from the reply buffer. */
    *result = swap;
    return ucp_info_atomic(ep, UCP_ATOMIC_OP_CSWAP, &compare, result, 4,
                           remote_addr, rkey);
}

ucs_status_t ucp_atomic_cswap64(ucp_ep_h ep, uint64_t compare, uint64_t swap,
                                uint64_t remote_addr, ucp_rkey_h rkey,
                                uint64_t *result)
{
    *result = swap;
    return ucp_info_atomic(ep, UCP_ATOMIC_OP_CSWAP, &compare, result, 8,
                           remote_addr, rkey);
}
