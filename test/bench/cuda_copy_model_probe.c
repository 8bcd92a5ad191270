/*
 * What cuda_copy's copies really cost, next to what its performance model
 * reports (uct_iface_estimate_perf), for the copies UCP's eager path and
 * device pipeline make: device to pageable host, pageable host to device,
 * device to device on one GPU. Each copy is issued with put_zcopy and
 * waited for by progress, as ucp_memtype_copy() does. The cost at 8 bytes
 * gives the fixed part, the slope between 64 KiB and 4 MiB the bandwidth
 * (docs/performance.md, "Model inputs").
 *
 * usage: cuda_copy_model_probe [-n REPS]
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <uct/api/uct.h>
#include <uct/api/v2/uct_v2.h>

#include <cuda.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECK(_cond, _what)                                                              \
    do {                                                                                 \
        if (!(_cond)) {                                                                  \
            fprintf(stderr, "cuda_copy_model_probe: %s failed\n", _what);                \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct {
    uct_completion_t super;
    int done;
} probe_comp_t;

static void probe_comp_cb(uct_completion_t *self)
{
    ((probe_comp_t *)self)->done = 1;
}

static uct_iface_h probe_iface;
static uct_ep_h probe_ep;
static uct_worker_h probe_worker;

static void probe_open(void)
{
    uct_component_h *comps;
    uct_component_attr_t attr;
    uct_md_resource_desc_t md_rsc;
    uct_tl_resource_desc_t *tls;
    uct_md_config_t *md_config;
    uct_iface_config_t *config;
    uct_iface_params_t params;
    uct_ep_params_t ep_params;
    uct_md_h md = NULL;
    unsigned n, i, ntls;
    void *addr;

    CHECK(uct_query_components(&comps, &n) == UCS_OK, "uct_query_components");
    for (i = 0; (i < n) && (md == NULL); ++i) {
        attr.field_mask =
            UCT_COMPONENT_ATTR_FIELD_NAME | UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        if ((uct_component_query(comps[i], &attr) != UCS_OK) ||
            strcmp(attr.name, "cuda_cpy") || (attr.md_resource_count != 1)) {
            continue;
        }
        attr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        attr.md_resources = &md_rsc;
        CHECK(uct_component_query(comps[i], &attr) == UCS_OK, "component query");
        CHECK(uct_md_config_read(comps[i], NULL, NULL, &md_config) == UCS_OK,
              "md config");
        CHECK(uct_md_open(comps[i], md_rsc.md_name, md_config, &md) == UCS_OK,
              "uct_md_open(cuda_cpy)");
        uct_config_release(md_config);
    }
    CHECK(md != NULL, "finding the cuda_cpy component");
    CHECK(uct_md_query_tl_resources(md, &tls, &ntls) == UCS_OK && (ntls > 0),
          "cuda_copy resources");
    CHECK(uct_worker_create(NULL, UCS_THREAD_MODE_SINGLE, &probe_worker) == UCS_OK,
          "uct_worker_create");
    CHECK(uct_md_iface_config_read(md, tls[0].tl_name, NULL, NULL, &config) == UCS_OK,
          "iface config");
    memset(&params, 0, sizeof(params));
    params.field_mask      = UCT_IFACE_PARAM_FIELD_DEVICE;
    params.device.tl_name  = tls[0].tl_name;
    params.device.dev_name = tls[0].dev_name;
    CHECK(uct_iface_open(md, probe_worker, &params, config, &probe_iface) == UCS_OK,
          "uct_iface_open(cuda_copy)");
    uct_config_release(config);
    uct_release_tl_resource_list(tls);

    addr = calloc(1, 256);
    CHECK(uct_iface_get_address(probe_iface, addr) == UCS_OK, "iface address");
    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_IFACE_ADDR;
    ep_params.iface      = probe_iface;
    ep_params.iface_addr = addr;
    CHECK(uct_ep_create(&ep_params, &probe_ep) == UCS_OK, "uct_ep_create");
    free(addr);
}

/* Mean seconds per copy of @a len bytes, src -> dst, waited for. */
static double probe_copy(void *dst, const void *src, size_t len, int reps)
{
    probe_comp_t comp;
    uct_iov_t iov;
    ucs_status_t status;
    double t0 = 0;
    int i;

    for (i = -reps / 10 - 1; i < reps; ++i) {
        if (i == 0) {
            t0 = now_s();
        }
        iov.buffer        = (void *)src;
        iov.length        = len;
        iov.memh          = UCT_MEM_HANDLE_NULL;
        iov.stride        = 0;
        iov.count         = 1;
        comp.super.func   = probe_comp_cb;
        comp.super.count  = 1;
        comp.super.status = UCS_OK;
        comp.done         = 0;
        status = uct_ep_put_zcopy(probe_ep, &iov, 1, (uintptr_t)dst, 0, &comp.super);
        CHECK((status == UCS_OK) || (status == UCS_INPROGRESS), "put_zcopy");
        while ((status == UCS_INPROGRESS) && !comp.done) {
            uct_worker_progress(probe_worker);
        }
    }
    return (now_s() - t0) / reps;
}

static void probe_report(const char *name, ucs_memory_type_t local,
                         ucs_memory_type_t remote, void *dst, void *src, int reps)
{
    const size_t small = 8, a = 64 * 1024, b = 4 * 1024 * 1024;
    double t_small = probe_copy(dst, src, small, reps);
    double t_a     = probe_copy(dst, src, a, reps);
    double t_b     = probe_copy(dst, src, b, reps / 4 + 1);
    uct_perf_attr_t pa;
    double bw = (double)(b - a) / (t_b - t_a);

    pa.field_mask =
        UCT_PERF_ATTR_FIELD_OPERATION | UCT_PERF_ATTR_FIELD_LOCAL_MEMORY_TYPE |
        UCT_PERF_ATTR_FIELD_REMOTE_MEMORY_TYPE | UCT_PERF_ATTR_FIELD_LOCAL_SYS_DEVICE |
        UCT_PERF_ATTR_FIELD_REMOTE_SYS_DEVICE | UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD |
        UCT_PERF_ATTR_FIELD_SEND_POST_OVERHEAD | UCT_PERF_ATTR_FIELD_LATENCY |
        UCT_PERF_ATTR_FIELD_BANDWIDTH;
    pa.operation          = UCT_EP_OP_PUT_ZCOPY;
    pa.local_memory_type  = local;
    pa.remote_memory_type = remote;
    pa.local_sys_device   = 0;
    pa.remote_sys_device  = 0;
    CHECK(uct_iface_estimate_perf(probe_iface, &pa) == UCS_OK, "uct_iface_estimate_perf");
    printf(
        "%-10s measured: 8 B %6.2f us, 64 KiB %7.2f us, 4 MiB %8.1f us, slope %7.1f GB/s"
        " | model: fixed %6.2f us, %7.1f GB/s\n",
        name, t_small * 1e6, t_a * 1e6, t_b * 1e6, bw / 1e9,
        (pa.send_pre_overhead + pa.latency.c + pa.send_post_overhead) * 1e6,
        pa.bandwidth.dedicated / 1e9);
}

int main(int argc, char **argv)
{
    const size_t len = 4 * 1024 * 1024;
    CUdeviceptr d1, d2;
    int reps = 400, c;
    void *host;

    while ((c = getopt(argc, argv, "n:")) != -1) {
        if (c == 'n') {
            reps = atoi(optarg);
        } else {
            fprintf(stderr, "usage: %s [-n REPS]\n", argv[0]);
            return 2;
        }
    }
    probe_open(); /* makes the device's primary context current */
    CHECK(cuMemAlloc(&d1, len) == CUDA_SUCCESS, "cuMemAlloc");
    CHECK(cuMemAlloc(&d2, len) == CUDA_SUCCESS, "cuMemAlloc");
    host = malloc(len); /* pageable, as UCP's staging buffers */
    CHECK(host != NULL, "malloc");
    memset(host, 1, len);
    printf("cuda_copy put_zcopy + progress until complete, %d copies each\n", reps);
    probe_report("d2h", UCS_MEMORY_TYPE_CUDA, UCS_MEMORY_TYPE_HOST, host, (void *)d1,
                 reps);
    probe_report("h2d", UCS_MEMORY_TYPE_HOST, UCS_MEMORY_TYPE_CUDA, (void *)d1, host,
                 reps);
    probe_report("d2d", UCS_MEMORY_TYPE_CUDA, UCS_MEMORY_TYPE_CUDA, (void *)d2,
                 (void *)d1, reps);
    free(host);
    return 0;
}
