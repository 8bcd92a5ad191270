#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucx_info.h"

#include <tools/perf/perf_memory.h>
#include <ucp/api/ucp.h>
#include <ucp/core/ucp_proto_query.h>
#include <ucp/core/ucp_proto_stats.h>

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/*
 * ucx_info -p: which protocol libucp selects for a memory-type pair and a
 * range of sizes. Two workers of one context are connected as two peers
 * would be, and one tag message of each size is sent from a buffer of the
 * sender's kind into one of the receiver's kind; the receiver's protocol
 * counters say what carried it. The answer is what libucp did, not a model
 * of what it would do. The libucp entry points are weak references, so
 * that a libucp without them gives "-" rather than a tool that cannot load.
 */
#pragma weak ucp_worker_proto_stats
#pragma weak ucp_proto_stat_name
#pragma weak ucp_proto_stat_transport
#pragma weak ucp_proto_info_print

#define UCX_INFO_PROTO_MAX_SIZES 64
#define UCX_INFO_PROTO_TIMEOUT_NS (10ull * 1000000000ull)
#define UCX_INFO_PROTO_TAG       0x1f0ull

typedef struct {
    ucp_context_h  context;
    ucp_worker_h   worker[2];
    ucp_ep_h       ep[2];
    perf_mem_buf_t buf[2];
} ucx_info_proto_t;

void perf_print_error(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "ucx_info: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
}

/* "64K" -> 65536; binary suffixes K, M, G. */
static int ucx_info_parse_size(const char *str, size_t *size_p)
{
    static const char suffixes[] = "KMG";
    unsigned long long value;
    const char *s;
    char *end;

    errno = 0;
    value = strtoull(str, &end, 10);
    if ((end == str) || (errno != 0) || (*str == '-')) {
        return -1;
    }
    s = (*end != '\0') ? strchr(suffixes, *end & ~0x20) : NULL;
    if (s != NULL) {
        value <<= 10 * (unsigned)(s - suffixes + 1);
        ++end;
    }
    if (*end == 'B' || *end == 'b') {
        ++end;
    }
    *size_p = (size_t)value;
    return (*end == '\0') ? 0 : -1;
}

/* "8,64K" or "1K:256M" (doubling): the sizes to ask about. */
static int ucx_info_parse_sizes(const char *str, size_t *sizes, unsigned *count_p)
{
    char buf[256], *tok, *save = NULL, *colon;
    size_t lo, hi, size;
    unsigned count = 0;

    snprintf(buf, sizeof(buf), "%s", str);
    for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        colon = strchr(tok, ':');
        if (colon != NULL) {
            *colon = '\0';
        }
        if ((ucx_info_parse_size(tok, &lo) < 0) ||
            ((colon != NULL) && (ucx_info_parse_size(colon + 1, &hi) < 0))) {
            return -1;
        }
        if (colon == NULL) {
            hi = lo;
        }
        if (hi < lo) {
            return -1;
        }
        for (size = lo; count < UCX_INFO_PROTO_MAX_SIZES; size = (size > 0) ? size * 2 : 1) {
            sizes[count++] = (size > hi) ? hi : size;
            if (size >= hi) {
                break;
            }
        }
    }
    *count_p = count;
    return (count > 0) ? 0 : -1;
}

/* Close an endpoint by force, progressing both workers until it is gone. */
static void ucx_info_proto_close_ep(ucx_info_proto_t *p, ucp_ep_h ep)
{
    const ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                       .flags        = UCP_EP_CLOSE_FLAG_FORCE};
    ucs_status_ptr_t req = ucp_ep_close_nbx(ep, &param);

    if ((req == NULL) || UCS_PTR_IS_ERR(req)) {
        return;
    }
    while (ucp_request_check_status(req) == UCS_INPROGRESS) {
        ucp_worker_progress(p->worker[0]);
        ucp_worker_progress(p->worker[1]);
    }
    ucp_request_free(req);
}

static void ucx_info_proto_cleanup(ucx_info_proto_t *p)
{
    int i;

    for (i = 0; i < 2; ++i) {
        if (p->ep[i] != NULL) {
            ucx_info_proto_close_ep(p, p->ep[i]);
        }
    }
    for (i = 0; i < 2; ++i) {
        if (p->worker[i] != NULL) {
            ucp_worker_destroy(p->worker[i]);
        }
        perf_mem_free(&p->buf[i]);
    }
    if (p->context != NULL) {
        ucp_cleanup(p->context);
    }
}

static ucs_status_t ucx_info_proto_setup(ucx_info_proto_t *p)
{
    ucp_worker_params_t wparams;
    ucp_ep_params_t eparams;
    ucp_params_t params;
    ucp_address_t *address[2] = {NULL, NULL};
    size_t length;
    ucs_status_t status;
    int i;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_TAG;
    status = ucp_init(&params, NULL, &p->context);
    if (status != UCS_OK) {
        p->context = NULL;
        fprintf(stderr, "ucx_info: ucp_init() failed: %s\n", ucs_status_string(status));
        return status;
    }
    memset(&wparams, 0, sizeof(wparams));
    for (i = 0; (status == UCS_OK) && (i < 2); ++i) {
        status = ucp_worker_create(p->context, &wparams, &p->worker[i]);
        if (status != UCS_OK) {
            p->worker[i] = NULL;
        } else {
            status = ucp_worker_get_address(p->worker[i], &address[i], &length);
        }
    }
    memset(&eparams, 0, sizeof(eparams));
    eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    for (i = 0; (status == UCS_OK) && (i < 2); ++i) {
        eparams.address = address[1 - i];
        status = ucp_ep_create(p->worker[i], &eparams, &p->ep[i]);
        if (status != UCS_OK) {
            p->ep[i] = NULL;
        }
    }
    for (i = 0; i < 2; ++i) {
        if (address[i] != NULL) {
            ucp_worker_release_address(p->worker[i], address[i]);
        }
    }
    if (status != UCS_OK) {
        fprintf(stderr, "ucx_info: connecting two workers failed: %s\n",
                ucs_status_string(status));
    }
    return status;
}

static void ucx_info_proto_cb(void *request, ucs_status_t status, void *user_data)
{
    (void)request;
    *(ucs_status_t*)user_data = status;
}

static void ucx_info_proto_recv_cb(void *request, ucs_status_t status,
                                   const ucp_tag_recv_info_t *info, void *user_data)
{
    (void)info;
    ucx_info_proto_cb(request, status, user_data);
}

/* Send one message of @a size from worker 0 to worker 1 and wait for both. */
static ucs_status_t ucx_info_proto_send(ucx_info_proto_t *p, size_t size)
{
    ucs_status_t sstatus = UCS_INPROGRESS, rstatus = UCS_INPROGRESS;
    ucp_request_param_t sparam, rparam;
    ucs_status_ptr_t sreq, rreq;
    struct timespec ts;
    uint64_t deadline, now;

    memset(&rparam, 0, sizeof(rparam));
    rparam.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    rparam.cb.recv      = ucx_info_proto_recv_cb;
    rparam.user_data    = &rstatus;
    rreq = ucp_tag_recv_nbx(p->worker[1], p->buf[1].ptr, size, UCX_INFO_PROTO_TAG,
                            UINT64_MAX, &rparam);
    memset(&sparam, 0, sizeof(sparam));
    sparam.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    sparam.cb.send      = ucx_info_proto_cb;
    sparam.user_data    = &sstatus;
    sreq = ucp_tag_send_nbx(p->ep[0], p->buf[0].ptr, size, UCX_INFO_PROTO_TAG, &sparam);

    sstatus = (sreq == NULL) ? UCS_OK : UCS_PTR_IS_ERR(sreq) ? UCS_PTR_STATUS(sreq) : sstatus;
    rstatus = (rreq == NULL) ? UCS_OK : UCS_PTR_IS_ERR(rreq) ? UCS_PTR_STATUS(rreq) : rstatus;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    deadline = ts.tv_sec * 1000000000ull + ts.tv_nsec + UCX_INFO_PROTO_TIMEOUT_NS;
    while ((sstatus == UCS_INPROGRESS) || (rstatus == UCS_INPROGRESS)) {
        ucp_worker_progress(p->worker[0]);
        ucp_worker_progress(p->worker[1]);
        clock_gettime(CLOCK_MONOTONIC, &ts);
        now = ts.tv_sec * 1000000000ull + ts.tv_nsec;
        if (now > deadline) {
            /* Requests are left to the workers' destruction. */
            return UCS_ERR_TIMED_OUT;
        }
    }
    if ((sreq != NULL) && !UCS_PTR_IS_ERR(sreq)) {
        ucp_request_free(sreq);
    }
    if ((rreq != NULL) && !UCS_PTR_IS_ERR(rreq)) {
        ucp_request_free(rreq);
    }
    return (sstatus != UCS_OK) ? sstatus : rstatus;
}

/* The protocol whose receiver-side count grew, or -1. */
static int ucx_info_proto_used(const uint64_t *before, const uint64_t *after)
{
    int i;

    for (i = 0; i < UCP_PROTO_STAT_LAST; ++i) {
        if (after[i] > before[i]) {
            return i;
        }
    }
    return -1;
}

int ucx_info_print_protocols(FILE *stream, const char *mem, const char *sizes_str,
                             const char *devices)
{
    char kinds[2][64], *comma;
    const perf_mem_kind_t *kind[2];
    uint64_t before[UCP_PROTO_STAT_LAST], after[UCP_PROTO_STAT_LAST];
    size_t sizes[UCX_INFO_PROTO_MAX_SIZES];
    unsigned count, dev[2] = {0, 0}, i;
    int have_stats, proto, rc = 1;
    ucx_info_proto_t p;
    ucs_status_t status;
    const char *why;

    snprintf(kinds[0], sizeof(kinds[0]), "%s", (mem != NULL) ? mem : "host");
    comma = strchr(kinds[0], ',');
    if (comma != NULL) {
        *comma = '\0';
    }
    snprintf(kinds[1], sizeof(kinds[1]), "%s", (comma != NULL) ? comma + 1 : kinds[0]);
    if (ucx_info_parse_sizes((sizes_str != NULL) ? sizes_str : "8:1M", sizes, &count) < 0) {
        fprintf(stderr, "ucx_info: -s: '%s' is not a size list such as 8,64K or a range "
                "such as 1K:256M\n", sizes_str);
        return 1;
    }
    if ((devices != NULL) && (sscanf(devices, "%u,%u", &dev[0], &dev[1]) < 1)) {
        fprintf(stderr, "ucx_info: -a: '%s' is not a GPU index or pair such as 0,1\n",
                devices);
        return 1;
    }
    if ((devices != NULL) && (strchr(devices, ',') == NULL)) {
        dev[1] = dev[0];
    }
    for (i = 0; i < 2; ++i) {
        kind[i] = perf_mem_kind_find(kinds[i]);
        if (kind[i] == NULL) {
            fprintf(stderr, "ucx_info: -m: unknown memory type '%s' (ucx_perftest -h "
                    "lists them)\n", kinds[i]);
            return 1;
        }
        why = perf_mem_kind_unavailable(kind[i]);
        if (why == NULL) {
            why = perf_mem_device_unavailable(kind[i], dev[i]);
        }
        if (why != NULL) {
            fprintf(stderr, "ucx_info: memory type '%s': %s\n", kinds[i], why);
            return 1;
        }
    }

    memset(&p, 0, sizeof(p));
    (void)perf_mem_select_device(kind[0], dev[0], (char[PERF_ERROR_MAX]){0}, PERF_ERROR_MAX);
    if (ucx_info_proto_setup(&p) != UCS_OK) {
        goto out;
    }
    for (i = 0; i < 2; ++i) {
        if (perf_mem_alloc(kind[i], sizes[count - 1], dev[i], &p.buf[i]) != UCS_OK) {
            fprintf(stderr, "ucx_info: cannot allocate %zu bytes of %s memory\n",
                    sizes[count - 1], kinds[i]);
            goto out;
        }
    }

    have_stats = (ucp_worker_proto_stats != NULL) && (ucp_proto_stat_name != NULL) &&
                 (ucp_proto_stat_transport != NULL);
    fprintf(stream, "# Protocols libucp selected for tag messages, %s (GPU %u) -> %s "
            "(GPU %u), two workers of one process%s\n", kinds[0], dev[0], kinds[1],
            dev[1], have_stats ? "" : " (this libucp has no protocol counters: \"-\")");
    fprintf(stream, "# %12s  %-16s %s\n", "size", "protocol", "transport");
    for (i = 0; i < count; ++i) {
        memset(before, 0, sizeof(before));
        memset(after, 0, sizeof(after));
        if (have_stats) {
            ucp_worker_proto_stats(p.worker[1], before);
        }
        status = ucx_info_proto_send(&p, sizes[i]);
        if (status != UCS_OK) {
            fprintf(stream, "# %12zu  failed: %s\n", sizes[i], ucs_status_string(status));
            goto out;
        }
        proto = -1;
        if (have_stats) {
            ucp_worker_proto_stats(p.worker[1], after);
            proto = ucx_info_proto_used(before, after);
        }
        fprintf(stream, "  %12zu  %-16s %s\n", sizes[i],
                (proto >= 0) ? ucp_proto_stat_name((ucp_proto_stat_t)proto) : "-",
                (proto >= 0) ? ucp_proto_stat_transport(p.ep[0], (ucp_proto_stat_t)proto) :
                               "-");
    }
    if (ucp_proto_info_print != NULL) {
        fprintf(stream, "#\n# The sender's protocol table (UCX_PROTO_INFO):\n");
        fflush(stream);
        ucp_proto_info_print(p.ep[0]);
    }
    rc = 0;

out:
    ucx_info_proto_cleanup(&p);
    return rc;
}
