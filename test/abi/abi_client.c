/*
 * A client as a binding is built: compiled against upstream UCX's headers
 * (contrib/tests/abi.sh builds it once per upstream header set), linked and
 * run against our libraries. It checks what such a binary relies on beyond
 * the layouts the fact list compares:
 *  - logging through a component of its own, as UCXX does;
 *  - memory-type values of the caller's numbering (UNKNOWN is 5, 9 or 10
 *    depending on the release) in names and in calls;
 *  - no warning about its API version at ucp_init();
 *  - a tag message to itself with data checked.
 * Exit status 0 when all hold; each failure is printed with its cause.
 */
#include <ucp/api/ucp.h>
#include <ucs/debug/log_def.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define CHECK(_cond, ...)                                                                \
    do {                                                                                 \
        if (!(_cond)) {                                                                  \
            printf("abi_client: FAIL %s: ", #_cond);                                     \
            printf(__VA_ARGS__);                                                         \
            printf("\n");                                                                \
            ++failures;                                                                  \
        }                                                                                \
    } while (0)

static void abi_client_log(void)
{
    ucs_log_component_config_t comp;

    memset(&comp, 0, sizeof(comp));
    comp.log_level = UCS_LOG_LEVEL_INFO;
    strcpy(comp.name, "ABICLIENT");
    comp.file_filter = "*";
    /* The call UCXX's ucxx_log() expands to. The log goes to stderr, which
     * the script reads. */
    ucs_log_dispatch(__FILE__, __LINE__, __func__, UCS_LOG_LEVEL_INFO, &comp,
                     "value %d text %s", 42, "abc");
}

static void abi_client_memtype_names(void)
{
    CHECK(!strcmp(ucs_memory_type_names[UCS_MEMORY_TYPE_HOST], "host"), "%s",
          ucs_memory_type_names[UCS_MEMORY_TYPE_HOST]);
    CHECK(!strcmp(ucs_memory_type_names[UCS_MEMORY_TYPE_CUDA], "cuda"), "%s",
          ucs_memory_type_names[UCS_MEMORY_TYPE_CUDA]);
    CHECK((ucs_memory_type_names[UCS_MEMORY_TYPE_UNKNOWN] != NULL) &&
              !strcmp(ucs_memory_type_names[UCS_MEMORY_TYPE_UNKNOWN], "unknown"),
          "UNKNOWN is %d here", (int)UCS_MEMORY_TYPE_UNKNOWN);
}

static void abi_client_empty_cb(void *request, ucs_status_t status, void *user_data)
{
    (void)request;
    (void)status;
    (void)user_data;
}

static ucs_status_t abi_client_wait(ucp_worker_h worker, void *request)
{
    ucs_status_t status;

    if (UCS_PTR_IS_ERR(request)) {
        return UCS_PTR_STATUS(request);
    }
    if (request == NULL) {
        return UCS_OK;
    }
    while ((status = ucp_request_check_status(request)) == UCS_INPROGRESS) {
        ucp_worker_progress(worker);
    }
    ucp_request_free(request);
    return status;
}

static void abi_client_recv_cb(void *request, ucs_status_t status,
                               const ucp_tag_recv_info_t *info, void *user_data)
{
    (void)request;
    (void)status;
    (void)info;
    (void)user_data;
}

/* Map a host buffer declaring the caller's UNKNOWN memory type, query it,
 * and send it to ourselves declaring UNKNOWN on both sides. */
static void abi_client_transfer(ucp_context_h context, ucp_worker_h worker, ucp_ep_h ep)
{
    enum { LEN = 64 * 1024 };
    ucp_mem_map_params_t mp;
    ucp_request_param_t sp, rp;
    ucp_mem_attr_t attr;
    char *src, *dst;
    ucp_mem_h memh;
    void *sreq, *rreq;
    ucs_status_t status;

    src = malloc(LEN);
    dst = calloc(1, LEN);
    memset(src, 0x5a, LEN);

    memset(&mp, 0, sizeof(mp));
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                    UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
    mp.address     = src;
    mp.length      = LEN;
    mp.memory_type = UCS_MEMORY_TYPE_UNKNOWN;
    status         = ucp_mem_map(context, &mp, &memh);
    CHECK(status == UCS_OK, "ucp_mem_map: %s", ucs_status_string(status));
    if (status == UCS_OK) {
        attr.field_mask = UCP_MEM_ATTR_FIELD_MEM_TYPE;
        status          = ucp_mem_query(memh, &attr);
        CHECK((status == UCS_OK) && (attr.mem_type == UCS_MEMORY_TYPE_HOST),
              "ucp_mem_query: %s, type %d", ucs_status_string(status),
              (int)attr.mem_type);
        ucp_mem_unmap(context, memh);
    }

    memset(&rp, 0, sizeof(rp));
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    rp.cb.recv      = abi_client_recv_cb;
    rp.memory_type  = UCS_MEMORY_TYPE_UNKNOWN;
    rreq            = ucp_tag_recv_nbx(worker, dst, LEN, 7, (ucp_tag_t)-1, &rp);

    memset(&sp, 0, sizeof(sp));
    sp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    sp.cb.send      = abi_client_empty_cb;
    sp.memory_type  = UCS_MEMORY_TYPE_UNKNOWN;
    sreq            = ucp_tag_send_nbx(ep, src, LEN, 7, &sp);

    status = abi_client_wait(worker, sreq);
    CHECK(status == UCS_OK, "send: %s", ucs_status_string(status));
    status = abi_client_wait(worker, rreq);
    CHECK(status == UCS_OK, "recv: %s", ucs_status_string(status));
    CHECK(memcmp(src, dst, LEN) == 0, "received data differs");
    free(src);
    free(dst);
}

int main(void)
{
    ucp_params_t params;
    ucp_worker_params_t wp;
    ucp_ep_params_t ep_params;
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_address_t *address;
    size_t address_len;
    ucp_ep_h ep;
    ucs_status_t status;
    void *req;

    abi_client_log();
    abi_client_memtype_names();

    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_TAG;
    status            = ucp_init(&params, NULL, &context);
    CHECK(status == UCS_OK, "ucp_init: %s", ucs_status_string(status));
    if (status != UCS_OK) {
        return 1;
    }

    memset(&wp, 0, sizeof(wp));
    wp.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SINGLE;
    status         = ucp_worker_create(context, &wp, &worker);
    CHECK(status == UCS_OK, "ucp_worker_create: %s", ucs_status_string(status));
    if (status != UCS_OK) {
        return 1;
    }
    status = ucp_worker_get_address(worker, &address, &address_len);
    CHECK(status == UCS_OK, "ucp_worker_get_address: %s", ucs_status_string(status));

    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep_params.address    = address;
    status               = ucp_ep_create(worker, &ep_params, &ep);
    CHECK(status == UCS_OK, "ucp_ep_create: %s", ucs_status_string(status));
    if (status == UCS_OK) {
        abi_client_transfer(context, worker, ep);
        req    = ucp_ep_close_nb(ep, UCP_EP_CLOSE_MODE_FLUSH);
        status = abi_client_wait(worker, req);
        CHECK(status == UCS_OK, "close: %s", ucs_status_string(status));
    }
    ucp_worker_release_address(worker, address);
    ucp_worker_destroy(worker);
    ucp_cleanup(context);

    printf("abi_client: built with UCP API %d.%d headers (UNKNOWN=%d): %s\n",
           UCP_API_MAJOR, UCP_API_MINOR, (int)UCS_MEMORY_TYPE_UNKNOWN,
           failures ? "FAIL" : "ok");
    return failures ? 1 : 0;
}
