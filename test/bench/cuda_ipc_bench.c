/*
 * cuda_ipc bandwidth and cost benchmark (issue 6, "Benchmark").
 *
 * Two processes (forked before any CUDA call, talking over a socketpair):
 * the child exports device memory of each allocation kind (cuMemAlloc, pool
 * with POSIX-fd handles, VMM with POSIX-fd handles) on device 0; the parent
 * imports it on device 0 (same GPU) or device 1 (across GPUs) and measures,
 * alternating in the same run:
 *   - UCT get_zcopy / put_zcopy through a cuda_ipc ep (one operation, then
 *     progress until its completion), and
 *   - the raw reference: cuMemcpyDtoDAsync between the same two buffers +
 *     cuStreamSynchronize. The transport has no rkey_ptr, so the importer
 *     maps the exporter's buffer itself with the driver calls the transport
 *     uses (cuIpcOpenMemHandle; pool fd import + cuMemPoolSetAccess +
 *     cuMemPoolImportPointer; VMM fd import + reserve + map + setAccess),
 *     from handles/fds the exporter sends besides the rkey (SCM_RIGHTS).
 * Also the first-use cost (unpack + first operation on a fresh rkey, which
 * imports) and the CPU cost of issuing a small get on an imported rkey.
 * Data are checked once per kind and placement before anything is timed.
 *
 * usage: cuda_ipc_bench [--quick] [-n REPS] [-w WARMUPS] [-W WINDOW] [-s SIZE_MIB,...]
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dl_iterate_phdr, RTLD_NOLOAD */
#endif

#include <uct/api/uct.h>
#include <ucs/type/status.h>

#include <cuda.h>

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MIB            (1024ul * 1024ul)
#define MAX_SIZES      16
#define NUM_SAMPLES    64
#define SMALL_OP       64      /* bytes of the get timed for hit cost */
#define MAX_BLOB       4096

typedef enum {
    KIND_LEGACY,
    KIND_POOL_FD,
    KIND_VMM_FD,
    KIND_LAST
} kind_t;

static const char *kind_names[KIND_LAST] = {"legacy", "pool-fd", "vmm-fd"};

typedef struct {
    int      quick;
    unsigned reps;
    unsigned warmups;
    unsigned hit_reps;
    unsigned window;     /* operations in flight per timed sample */
    size_t   sizes[MAX_SIZES];
    unsigned num_sizes;
} options_t;

static options_t opts;
static int       failures;

/* ---- helpers ---------------------------------------------------------- */

static double now_sec(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cu_check(CUresult res, const char *what, int line)
{
    const char *name = NULL;

    if (res == CUDA_SUCCESS) {
        return 0;
    }
    cuGetErrorName(res, &name);
    fprintf(stderr, "[%d] line %d: %s failed: %s\n", (int)getpid(), line, what,
            (name != NULL) ? name : "?");
    return -1;
}

#define CU(_call) cu_check((_call), #_call, __LINE__)

static int uct_check(ucs_status_t status, const char *what, int line)
{
    if (status == UCS_OK) {
        return 0;
    }
    fprintf(stderr, "[%d] line %d: %s failed: %s\n", (int)getpid(), line, what,
            ucs_status_string(status));
    return -1;
}

#define UCT(_call) uct_check((_call), #_call, __LINE__)

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;

    return (x > y) - (x < y);
}

static double median(double *v, unsigned n)
{
    qsort(v, n, sizeof(*v), cmp_double);
    return (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double min_of(const double *v, unsigned n)
{
    double m = v[0];
    unsigned i;

    for (i = 1; i < n; ++i) {
        m = (v[i] < m) ? v[i] : m;
    }
    return m;
}

static size_t max_size(void)
{
    size_t m = 0;
    unsigned i;

    for (i = 0; i < opts.num_sizes; ++i) {
        m = (opts.sizes[i] > m) ? opts.sizes[i] : m;
    }
    return m;
}

static void format_size(size_t size, char *buf, size_t len)
{
    if ((size >= MIB) && (size % MIB) == 0) {
        snprintf(buf, len, "%zuMiB", size / MIB);
    } else if ((size >= 1024) && (size % 1024) == 0) {
        snprintf(buf, len, "%zuKiB", size / 1024);
    } else {
        snprintf(buf, len, "%zuB", size);
    }
}

/* ---- socket messages ---------------------------------------------------- */

static int send_all(int sock, const void *buf, size_t len)
{
    const char *p = buf;
    ssize_t n;

    while (len > 0) {
        n = send(sock, p, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            perror("send");
            return -1;
        }
        p   += n;
        len -= n;
    }
    return 0;
}

static int recv_all(int sock, void *buf, size_t len)
{
    char *p = buf;
    ssize_t n;

    while (len > 0) {
        n = recv(sock, p, len, 0);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            perror("recv");
            return -1;
        }
        if (n == 0) {
            fprintf(stderr, "[%d] peer closed the socket\n", (int)getpid());
            return -1;
        }
        p   += n;
        len -= n;
    }
    return 0;
}

/* One byte of payload carrying @a fd (SCM_RIGHTS). */
static int send_fd(int sock, int fd)
{
    char byte = 'F';
    struct iovec iov = {&byte, 1};
    union {
        struct cmsghdr hdr;
        char           buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    struct msghdr msg;
    struct cmsghdr *c;

    memset(&msg, 0, sizeof(msg));
    memset(&ctl, 0, sizeof(ctl));
    msg.msg_iov        = &iov;
    msg.msg_iovlen     = 1;
    msg.msg_control    = ctl.buf;
    msg.msg_controllen = sizeof(ctl.buf);
    c                  = CMSG_FIRSTHDR(&msg);
    c->cmsg_level      = SOL_SOCKET;
    c->cmsg_type       = SCM_RIGHTS;
    c->cmsg_len        = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
    if (sendmsg(sock, &msg, MSG_NOSIGNAL) != 1) {
        perror("sendmsg");
        return -1;
    }
    return 0;
}

static int recv_fd(int sock)
{
    char byte;
    struct iovec iov = {&byte, 1};
    union {
        struct cmsghdr hdr;
        char           buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    struct msghdr msg;
    struct cmsghdr *c;
    int fd = -1;

    memset(&msg, 0, sizeof(msg));
    msg.msg_iov        = &iov;
    msg.msg_iovlen     = 1;
    msg.msg_control    = ctl.buf;
    msg.msg_controllen = sizeof(ctl.buf);
    if (recvmsg(sock, &msg, 0) != 1) {
        perror("recvmsg");
        return -1;
    }
    c = CMSG_FIRSTHDR(&msg);
    if ((c == NULL) || (c->cmsg_type != SCM_RIGHTS)) {
        fprintf(stderr, "no fd in message\n");
        return -1;
    }
    memcpy(&fd, CMSG_DATA(c), sizeof(int));
    return fd;
}

/* What the exporter sends for one buffer (then iface address, rkey, fd). */
typedef struct {
    int32_t  ok;          /* 0: allocation/export failed, nothing follows */
    uint32_t kind;
    uint64_t ptr;
    uint64_t size;        /* allocated (VMM: rounded to the granularity) */
    uint32_t addr_len;
    uint32_t rkey_len;
    uint32_t has_fd;
    uint32_t pad;
    union {
        CUipcMemHandle         legacy;
        CUmemPoolPtrExportData pool;
    } raw;
} offer_t;

/* ---- data pattern ------------------------------------------------------- */

static uint64_t pattern_word(uint64_t seed, size_t index)
{
    uint64_t x = (seed + 1) * 0x9e3779b97f4a7c15ull ^ (index * 0xbf58476d1ce4e5b9ull);

    return x ^ (x >> 29);
}

static int fill_pattern(CUdeviceptr ptr, size_t size, uint64_t seed)
{
    size_t i, n = size / sizeof(uint64_t);
    uint64_t *host = malloc(size);
    int ret;

    if (host == NULL) {
        fprintf(stderr, "malloc(%zu) failed\n", size);
        return -1;
    }
    for (i = 0; i < n; ++i) {
        host[i] = pattern_word(seed, i);
    }
    ret = CU(cuMemcpyHtoD(ptr, host, n * sizeof(uint64_t)));
    free(host);
    return ret;
}

/* Compare NUM_SAMPLES words spread over [0, size) and the last one. */
static int check_pattern(CUdeviceptr ptr, size_t size, uint64_t seed,
                         const char *what)
{
    size_t words = size / sizeof(uint64_t), idx;
    uint64_t v;
    unsigned i;

    for (i = 0; i <= NUM_SAMPLES; ++i) {
        idx = (i == NUM_SAMPLES) ? (words - 1) : (words * i) / NUM_SAMPLES;
        if (CU(cuMemcpyDtoH(&v, ptr + idx * sizeof(uint64_t), sizeof(v)))) {
            return -1;
        }
        if (v != pattern_word(seed, idx)) {
            fprintf(stderr, "DATA MISMATCH (%s): word %zu = 0x%016" PRIx64
                    ", expected 0x%016" PRIx64 "\n", what, idx, v,
                    pattern_word(seed, idx));
            return -1;
        }
    }
    return 0;
}

/* ---- allocation kinds (exporter) ---------------------------------------- */

typedef struct {
    kind_t                       kind;
    CUdeviceptr                  ptr;
    size_t                       size;
    CUmemoryPool                 pool;
    CUstream                     stream;
    CUmemGenericAllocationHandle handle;
    int                          fd;
} allocation_t;

static int alloc_kind(allocation_t *a, kind_t kind, size_t size, int dev)
{
    CUmemPoolProps pprops;
    CUmemAllocationProp prop;
    CUmemAccessDesc acc;
    size_t gran = 0;

    memset(a, 0, sizeof(*a));
    a->kind = kind;
    a->size = size;
    a->fd   = -1;
    switch (kind) {
    case KIND_LEGACY:
        return CU(cuMemAlloc(&a->ptr, size));
    case KIND_POOL_FD:
        memset(&pprops, 0, sizeof(pprops));
        pprops.allocType     = CU_MEM_ALLOCATION_TYPE_PINNED;
        pprops.handleTypes   = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
        pprops.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        pprops.location.id   = dev;
        if (CU(cuMemPoolCreate(&a->pool, &pprops))) {
            return -1;
        }
        if (CU(cuStreamCreate(&a->stream, CU_STREAM_NON_BLOCKING)) ||
            CU(cuMemAllocFromPoolAsync(&a->ptr, size, a->pool, a->stream)) ||
            CU(cuStreamSynchronize(a->stream))) {
            return -1;
        }
        return 0;
    case KIND_VMM_FD:
        memset(&prop, 0, sizeof(prop));
        prop.type                 = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type        = CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id          = dev;
        prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
        if (CU(cuMemGetAllocationGranularity(&gran, &prop,
                                             CU_MEM_ALLOC_GRANULARITY_MINIMUM))) {
            return -1;
        }
        a->size = ((size + gran - 1) / gran) * gran;
        memset(&acc, 0, sizeof(acc));
        acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        acc.location.id   = dev;
        acc.flags         = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        if (CU(cuMemCreate(&a->handle, a->size, &prop, 0)) ||
            CU(cuMemAddressReserve(&a->ptr, a->size, gran, 0, 0)) ||
            CU(cuMemMap(a->ptr, a->size, 0, a->handle, 0)) ||
            CU(cuMemSetAccess(a->ptr, a->size, &acc, 1))) {
            return -1;
        }
        return 0;
    default:
        return -1;
    }
}

static void free_kind(allocation_t *a)
{
    if (a->fd >= 0) {
        close(a->fd);
    }
    switch (a->kind) {
    case KIND_LEGACY:
        if (a->ptr) {
            CU(cuMemFree(a->ptr));
        }
        break;
    case KIND_POOL_FD:
        if (a->ptr) {
            CU(cuMemFreeAsync(a->ptr, a->stream));
            CU(cuStreamSynchronize(a->stream));
        }
        if (a->stream) {
            CU(cuStreamDestroy(a->stream));
        }
        if (a->pool) {
            CU(cuMemPoolDestroy(a->pool));
        }
        break;
    case KIND_VMM_FD:
        if (a->ptr) {
            CU(cuMemUnmap(a->ptr, a->size));
            CU(cuMemAddressFree(a->ptr, a->size));
        }
        if (a->handle) {
            CU(cuMemRelease(a->handle));
        }
        break;
    default:
        break;
    }
    memset(a, 0, sizeof(*a));
    a->fd = -1;
}

/* The raw export, made with the calls the transport's exporter makes. */
static int raw_export(allocation_t *a, offer_t *o)
{
    CUmemGenericAllocationHandle h;
    int fd = -1;

    switch (a->kind) {
    case KIND_LEGACY:
        return CU(cuIpcGetMemHandle(&o->raw.legacy, a->ptr));
    case KIND_POOL_FD:
        if (CU(cuMemPoolExportToShareableHandle(&fd, a->pool,
                                                CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                                0)) ||
            CU(cuMemPoolExportPointer(&o->raw.pool, a->ptr))) {
            return -1;
        }
        break;
    case KIND_VMM_FD:
        if (CU(cuMemRetainAllocationHandle(&h, (void*)a->ptr))) {
            return -1;
        }
        if (CU(cuMemExportToShareableHandle(&fd, h,
                                            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                            0))) {
            cuMemRelease(h);
            return -1;
        }
        CU(cuMemRelease(h)); /* the retain's reference */
        break;
    default:
        return -1;
    }
    a->fd     = fd;
    o->has_fd = 1;
    return 0;
}

/* ---- UCT ---------------------------------------------------------------- */

typedef struct {
    uct_component_h  *comps;
    uct_component_h  comp;
    uct_md_h         md;
    uct_md_attr_t    md_attr;
    uct_worker_h     worker;
    char             tl_name[UCT_TL_NAME_MAX];
    char             dev_name[UCT_DEVICE_NAME_MAX];
    uct_iface_config_t *iface_config;
} uct_ctx_t;

static int uct_setup(uct_ctx_t *u)
{
    uct_md_resource_desc_t *mds = NULL;
    uct_tl_resource_desc_t *tls;
    uct_component_attr_t attr;
    uct_md_config_t *md_config;
    unsigned ncomps, i, ntls;
    int found = 0;

    memset(u, 0, sizeof(*u));
    if (UCT(uct_query_components(&u->comps, &ncomps))) {
        return -1;
    }
    for (i = 0; (i < ncomps) && !found; ++i) {
        memset(&attr, 0, sizeof(attr));
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME |
                          UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        if ((uct_component_query(u->comps[i], &attr) != UCS_OK) ||
            strcmp(attr.name, "cuda_ipc") || (attr.md_resource_count == 0)) {
            continue;
        }
        mds = calloc(attr.md_resource_count, sizeof(*mds));
        attr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        attr.md_resources = mds;
        if ((mds == NULL) || UCT(uct_component_query(u->comps[i], &attr))) {
            free(mds);
            return -1;
        }
        u->comp = u->comps[i];
        found   = 1;
    }
    if (!found) {
        fprintf(stderr, "component cuda_ipc not found (libuct_cuda.so not loaded?)\n");
        return -1;
    }
    if (UCT(uct_md_config_read(u->comp, NULL, NULL, &md_config))) {
        free(mds);
        return -1;
    }
    if (UCT(uct_md_open(u->comp, mds[0].md_name, md_config, &u->md))) {
        uct_config_release(md_config);
        free(mds);
        return -1;
    }
    uct_config_release(md_config);
    free(mds);
    if (UCT(uct_md_query(u->md, &u->md_attr)) ||
        UCT(uct_md_query_tl_resources(u->md, &tls, &ntls))) {
        return -1;
    }
    for (i = 0, found = 0; i < ntls; ++i) {
        if (!strcmp(tls[i].tl_name, "cuda_ipc")) {
            snprintf(u->tl_name, sizeof(u->tl_name), "%s", tls[i].tl_name);
            snprintf(u->dev_name, sizeof(u->dev_name), "%s", tls[i].dev_name);
            found = 1;
            break;
        }
    }
    uct_release_tl_resource_list(tls);
    if (!found) {
        fprintf(stderr, "transport cuda_ipc not found\n");
        return -1;
    }
    if (UCT(uct_worker_create(NULL, UCS_THREAD_MODE_SINGLE, &u->worker)) ||
        UCT(uct_md_iface_config_read(u->md, u->tl_name, NULL, NULL,
                                     &u->iface_config))) {
        return -1;
    }
    return 0;
}

static void uct_teardown(uct_ctx_t *u)
{
    if (u->iface_config != NULL) {
        uct_config_release(u->iface_config);
    }
    if (u->worker != NULL) {
        uct_worker_destroy(u->worker);
    }
    if (u->md != NULL) {
        uct_md_close(u->md);
    }
    if (u->comps != NULL) {
        uct_release_component_list(u->comps);
    }
}

/* Opened in the context current now (the iface's device). */
static int iface_open(uct_ctx_t *u, uct_iface_h *iface_p)
{
    uct_iface_params_t params;

    memset(&params, 0, sizeof(params));
    params.field_mask      = UCT_IFACE_PARAM_FIELD_DEVICE;
    params.device.tl_name  = u->tl_name;
    params.device.dev_name = u->dev_name;
    return UCT(uct_iface_open(u->md, u->worker, &params, u->iface_config, iface_p));
}

typedef struct {
    uct_completion_t comp;
    int              done;
} bench_comp_t;

static void comp_cb(uct_completion_t *self)
{
    ((bench_comp_t*)self)->done = 1;
}

static void comp_init(bench_comp_t *c)
{
    c->comp.func   = comp_cb;
    c->comp.count  = 1;
    c->comp.status = UCS_OK;
    c->done        = 0;
}

/*
 * The mapping-cache statistics of a cuda_ipc iface, from the loaded module
 * (loaded RTLD_LOCAL, so found by its path); NULL if not found.
 */
typedef void (*cache_stats_fn_t)(uct_iface_h, uint64_t*, uint64_t*, unsigned*);

static int find_module_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    if (strstr(info->dlpi_name, "libuct_cuda.so") != NULL) {
        snprintf(arg, PATH_MAX, "%s", info->dlpi_name);
        return 1;
    }
    return 0;
}

static cache_stats_fn_t cache_stats_fn(void)
{
    static cache_stats_fn_t fn;
    static int looked;
    char path[PATH_MAX] = "";
    void *handle;

    if (!looked) {
        looked = 1;
        dl_iterate_phdr(find_module_cb, path);
        handle = (path[0] != '\0') ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
        if (handle != NULL) {
            *(void**)&fn = dlsym(handle, "uct_cuda_ipc_iface_cache_stats");
            dlclose(handle); /* still loaded by libuct */
        }
    }
    return fn;
}

static void cache_stats(uct_iface_h iface, uint64_t *imports, uint64_t *hits)
{
    cache_stats_fn_t fn = cache_stats_fn();
    unsigned regions;

    *imports = *hits = UINT64_MAX;
    if (fn != NULL) {
        fn(iface, imports, hits, &regions);
    }
}

/* Issue and wait; @a issue_sec gets the time of the issuing call only. */
/*
 * @a window operations in flight at once, one completion counting them all;
 * returns when every one has completed. @a issue_sec: CPU time of issuing.
 */
static int uct_ops(uct_worker_h worker, uct_ep_h ep, int is_get, CUdeviceptr local,
                   size_t len, uint64_t remote, uct_rkey_t rkey, unsigned window,
                   double *issue_sec)
{
    bench_comp_t c;
    uct_iov_t iov;
    ucs_status_t status = UCS_OK;
    double t0, t1, deadline;
    unsigned i;

    comp_init(&c);
    c.comp.count = (int)window + 1; /* +1: ours, dropped after issuing */
    iov.buffer   = (void*)local;
    iov.length   = len;
    iov.memh     = NULL;
    iov.stride   = 0;
    iov.count    = 1;
    t0 = now_sec();
    for (i = 0; i < window; ++i) {
        if (is_get) {
            status = uct_ep_get_zcopy(ep, &iov, 1, remote, rkey, &c.comp);
        } else {
            status = uct_ep_put_zcopy(ep, &iov, 1, remote, rkey, &c.comp);
        }
        if (status == UCS_OK) {
            --c.comp.count;
        } else if (status != UCS_INPROGRESS) {
            return UCT(status);
        }
    }
    t1 = now_sec();
    if (issue_sec != NULL) {
        *issue_sec = t1 - t0;
    }
    if (--c.comp.count == 0) {
        return UCT(c.comp.status);
    }
    deadline = t1 + 60.0;
    while (!c.done) {
        uct_worker_progress(worker);
        if (now_sec() > deadline) {
            fprintf(stderr, "operations did not complete in 60 s\n");
            return -1;
        }
    }
    return UCT(c.comp.status);
}

static int uct_op(uct_worker_h worker, uct_ep_h ep, int is_get, CUdeviceptr local,
                  size_t len, uint64_t remote, uct_rkey_t rkey, double *issue_sec)
{
    return uct_ops(worker, ep, is_get, local, len, remote, rkey, 1, issue_sec);
}

/* ---- importer ----------------------------------------------------------- */

typedef struct {
    CUdeviceptr                  ptr;
    size_t                       size;
    kind_t                       kind;
    CUmemoryPool                 pool;
} raw_import_t;

static int raw_import(raw_import_t *r, const offer_t *o, int fd, int dev)
{
    CUmemGenericAllocationHandle h;
    CUmemAccessDesc acc;

    memset(r, 0, sizeof(*r));
    r->kind = (kind_t)o->kind;
    r->size = o->size;
    memset(&acc, 0, sizeof(acc));
    acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    acc.location.id   = dev;
    acc.flags         = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    switch (r->kind) {
    case KIND_LEGACY:
        return CU(cuIpcOpenMemHandle(&r->ptr, o->raw.legacy,
                                     CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    case KIND_POOL_FD:
        if (CU(cuMemPoolImportFromShareableHandle(&r->pool, (void*)(uintptr_t)fd,
                                                  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                                  0))) {
            return -1;
        }
        if (CU(cuMemPoolSetAccess(r->pool, &acc, 1)) ||
            CU(cuMemPoolImportPointer(&r->ptr, r->pool,
                                      (CUmemPoolPtrExportData*)&o->raw.pool))) {
            r->ptr = 0;
            return -1;
        }
        return 0;
    case KIND_VMM_FD:
        if (CU(cuMemImportFromShareableHandle(&h, (void*)(uintptr_t)fd,
                                              CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))) {
            return -1;
        }
        if (CU(cuMemAddressReserve(&r->ptr, r->size, 0, 0, 0))) {
            r->ptr = 0;
            cuMemRelease(h);
            return -1;
        }
        if (CU(cuMemMap(r->ptr, r->size, 0, h, 0))) {
            cuMemRelease(h);
            cuMemAddressFree(r->ptr, r->size);
            r->ptr = 0;
            return -1;
        }
        CU(cuMemRelease(h));
        if (CU(cuMemSetAccess(r->ptr, r->size, &acc, 1))) {
            return -1;
        }
        return 0;
    default:
        return -1;
    }
}

static void raw_release(raw_import_t *r)
{
    switch (r->kind) {
    case KIND_LEGACY:
        if (r->ptr) {
            CU(cuIpcCloseMemHandle(r->ptr));
        }
        break;
    case KIND_POOL_FD:
        if (r->ptr) {
            CU(cuMemFree(r->ptr));
        }
        if (r->pool) {
            CU(cuMemPoolDestroy(r->pool));
        }
        break;
    case KIND_VMM_FD:
        if (r->ptr) {
            CU(cuMemUnmap(r->ptr, r->size));
            CU(cuMemAddressFree(r->ptr, r->size));
        }
        break;
    default:
        break;
    }
    memset(r, 0, sizeof(*r));
}

typedef struct {
    double min_ratio;
    char   min_where[96];
    double max_hit_us;
    char   max_hit_where[64];
    double max_ours_us;  /* hit issue - raw issue */
    unsigned rows;
} summary_t;

static summary_t summary = {.min_ratio = 1e9};

/* The raw reference: @a window copies queued, then one synchronisation. */
static int raw_copy(CUstream stream, CUdeviceptr dst, CUdeviceptr src, size_t len)
{
    unsigned i;

    for (i = 0; i < opts.window; ++i) {
        if (CU(cuMemcpyDtoDAsync(dst, src, len, stream))) {
            return -1;
        }
    }
    return CU(cuStreamSynchronize(stream));
}

/* Timed loop for one size: alternating UCT get, raw get, UCT put, raw put. */
static int bench_size(uct_worker_h worker, uct_ep_h ep, uct_rkey_t rkey,
                      uint64_t remote, CUdeviceptr raw_remote, CUdeviceptr local,
                      CUstream stream, size_t size, const char *kind,
                      const char *place)
{
    unsigned total = opts.warmups + opts.reps, i, j, op;
    double *t[4], t0, gbs[4], ratio;
    static const char *op_names[2] = {"get", "put"};
    char sz[32];
    int ret = -1;

    for (j = 0; j < 4; ++j) {
        t[j] = calloc(opts.reps, sizeof(double));
        if (t[j] == NULL) {
            goto out;
        }
    }
    for (i = 0; i < total; ++i) {
        for (j = 0; j < 4; ++j) {
            t0 = now_sec();
            switch (j) {
            case 0:
                if (uct_ops(worker, ep, 1, local, size, remote, rkey,
                            opts.window, NULL)) {
                    goto out;
                }
                break;
            case 1:
                if (raw_copy(stream, local, raw_remote, size)) {
                    goto out;
                }
                break;
            case 2:
                if (uct_ops(worker, ep, 0, local, size, remote, rkey,
                            opts.window, NULL)) {
                    goto out;
                }
                break;
            default:
                if (raw_copy(stream, raw_remote, local, size)) {
                    goto out;
                }
                break;
            }
            if (i >= opts.warmups) {
                t[j][i - opts.warmups] = now_sec() - t0;
            }
        }
    }
    for (j = 0; j < 4; ++j) {
        gbs[j] = (double)size * opts.window / median(t[j], opts.reps) / 1e9;
    }
    format_size(size, sz, sizeof(sz));
    for (op = 0; op < 2; ++op) {
        ratio = gbs[2 * op] / gbs[2 * op + 1];
        printf("%-8s %-9s %8s  %-4s %10.1f %10.1f %7.1f%%\n", kind, place, sz,
               op_names[op], gbs[2 * op], gbs[2 * op + 1], 100.0 * ratio);
        if (ratio < summary.min_ratio) {
            summary.min_ratio = ratio;
            snprintf(summary.min_where, sizeof(summary.min_where), "%s %s %s %s",
                     kind, place, sz, op_names[op]);
        }
        ++summary.rows;
    }
    fflush(stdout);
    ret = 0;
out:
    for (j = 0; j < 4; ++j) {
        free(t[j]);
    }
    return ret;
}

typedef struct {
    char   kind[16];
    char   place[16];
    double unpack_us;
    double first_us;
    double repeat_us;
    double raw_import_us;
    double hit_med_us;
    double hit_min_us;
    double raw_issue_us;
    uint64_t imports;     /* after the repeat: 1 if the repeat was a hit */
    uint64_t hits;
} cost_row_t;

static cost_row_t cost_rows[KIND_LAST * 2];
static unsigned   num_cost_rows;

/* CPU time of issuing a small get on an imported key, and of the raw issue. */
static int hit_cost(uct_worker_h worker, uct_ep_h ep, uct_rkey_t rkey,
                    uint64_t remote, CUdeviceptr raw_remote, CUdeviceptr local,
                    CUstream stream, cost_row_t *row)
{
    unsigned n = opts.hit_reps, i;
    double *v = calloc(n, sizeof(double)), *w = calloc(n, sizeof(double));
    CUevent ev = NULL;
    double t0;
    int ret = -1;

    if ((v == NULL) || (w == NULL) ||
        CU(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING))) {
        goto out;
    }
    for (i = 0; i < n; ++i) {
        if (uct_op(worker, ep, 1, local, SMALL_OP, remote, rkey, &v[i])) {
            goto out;
        }
        /* The raw equivalent of what the transport issues: copy + event. */
        t0 = now_sec();
        if (CU(cuMemcpyDtoDAsync(local, raw_remote, SMALL_OP, stream)) ||
            CU(cuEventRecord(ev, stream))) {
            goto out;
        }
        w[i] = now_sec() - t0;
        if (CU(cuStreamSynchronize(stream))) {
            goto out;
        }
    }
    row->hit_min_us   = 1e6 * min_of(v, n);
    row->hit_med_us   = 1e6 * median(v, n);
    row->raw_issue_us = 1e6 * median(w, n);
    if (row->hit_med_us > summary.max_hit_us) {
        summary.max_hit_us = row->hit_med_us;
        snprintf(summary.max_hit_where, sizeof(summary.max_hit_where), "%s %s",
                 row->kind, row->place);
    }
    ret = 0;
out:
    if (ev != NULL) {
        cuEventDestroy(ev);
    }
    free(v);
    free(w);
    return ret;
}

/* One offered buffer on device @a dev; tells the exporter when it may free. */
static int import_one(uct_ctx_t *u, int sock, CUcontext ctx, int dev,
                      const char *place)
{
    char addr[MAX_BLOB], rkey_buf[MAX_BLOB];
    uct_rkey_bundle_t bundle;
    uct_iface_h iface = NULL;
    uct_ep_h ep = NULL;
    uct_ep_params_t ep_params;
    raw_import_t raw;
    CUdeviceptr local = 0;
    CUstream stream = NULL;
    cost_row_t *row;
    const char *kind;
    offer_t o;
    int fd = -1, have_rkey = 0, ret = -1, verified = 0;
    double t0, t1;
    unsigned i;
    char done = 'D';
    size_t maxs = max_size();

    memset(&raw, 0, sizeof(raw));
    if (recv_all(sock, &o, sizeof(o))) {
        return -1;
    }
    kind = (o.kind < KIND_LAST) ? kind_names[o.kind] : "?";
    if (!o.ok) {
        printf("%-8s %-9s  exporter could not allocate/export: FAILED\n", kind, place);
        ++failures;
        return send_all(sock, &done, 1);
    }
    if ((o.addr_len > MAX_BLOB) || (o.rkey_len > MAX_BLOB) ||
        recv_all(sock, addr, o.addr_len) || recv_all(sock, rkey_buf, o.rkey_len) ||
        (o.has_fd && ((fd = recv_fd(sock)) < 0))) {
        return -1;
    }

    row = &cost_rows[num_cost_rows++];
    memset(row, 0, sizeof(*row));
    snprintf(row->kind, sizeof(row->kind), "%s", kind);
    snprintf(row->place, sizeof(row->place), "%s", place);

    if (CU(cuCtxSetCurrent(ctx)) || CU(cuMemAlloc(&local, maxs)) ||
        CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING)) ||
        iface_open(u, &iface)) {
        goto out;
    }

    /* First use: unpack + the first operation (imports), then a repeat. */
    t0 = now_sec();
    if (UCT(uct_rkey_unpack(u->comp, rkey_buf, &bundle))) {
        goto out;
    }
    have_rkey      = 1;
    row->unpack_us = 1e6 * (now_sec() - t0);
    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                           UCT_EP_PARAM_FIELD_IFACE_ADDR;
    ep_params.iface      = iface;
    ep_params.dev_addr   = (const uct_device_addr_t*)addr; /* length 0 */
    ep_params.iface_addr = (const uct_iface_addr_t*)addr;
    if (UCT(uct_ep_create(&ep_params, &ep))) {
        goto out;
    }
    t0 = now_sec();
    if (uct_op(u->worker, ep, 1, local, SMALL_OP, o.ptr, bundle.rkey, NULL)) {
        goto out;
    }
    t1 = now_sec();
    row->first_us = 1e6 * (t1 - t0);
    if (uct_op(u->worker, ep, 1, local, SMALL_OP, o.ptr, bundle.rkey, NULL)) {
        goto out;
    }
    row->repeat_us = 1e6 * (now_sec() - t1);
    cache_stats(iface, &row->imports, &row->hits);

    t0 = now_sec();
    if (raw_import(&raw, &o, fd, dev)) {
        printf("%-8s %-9s  raw import failed: FAILED\n", kind, place);
        goto out;
    }
    row->raw_import_us = 1e6 * (now_sec() - t0);

    /* Data: the exporter's pattern (seed 1) by UCT get and through the raw
     * mapping; then ours (seed 2) by UCT put, read back through the raw
     * mapping (both see the same buffer). */
    if (uct_op(u->worker, ep, 1, local, maxs, o.ptr, bundle.rkey, NULL) ||
        check_pattern(local, maxs, 1, "uct get") ||
        check_pattern(raw.ptr, maxs, 1, "raw mapping") ||
        fill_pattern(local, maxs, 2) ||
        uct_op(u->worker, ep, 0, local, maxs, o.ptr, bundle.rkey, NULL) ||
        check_pattern(raw.ptr, maxs, 2, "uct put")) {
        printf("%-8s %-9s  data check: FAILED (no numbers reported)\n", kind, place);
        goto out;
    }
    verified = 1;

    for (i = 0; i < opts.num_sizes; ++i) {
        if (bench_size(u->worker, ep, bundle.rkey, o.ptr, raw.ptr, local, stream,
                       opts.sizes[i], kind, place)) {
            goto out;
        }
    }
    if (hit_cost(u->worker, ep, bundle.rkey, o.ptr, raw.ptr, local, stream, row)) {
        goto out;
    }
    ret = 0;
out:
    if (ret != 0) {
        printf("%-8s %-9s  FAILED %s (see stderr)\n", kind, place,
               verified ? "during measurement" : "before or at the data check");
        ++failures;
        --num_cost_rows;
    }
    raw_release(&raw);
    if (ep != NULL) {
        uct_ep_destroy(ep);
    }
    if (have_rkey) {
        uct_rkey_release(u->comp, &bundle);
    }
    if (iface != NULL) {
        uct_iface_close(iface); /* unmaps: before the exporter frees */
    }
    if (stream != NULL) {
        cuStreamDestroy(stream);
    }
    if (local != 0) {
        cuMemFree(local);
    }
    if (fd >= 0) {
        close(fd);
    }
    fflush(stdout);
    /* The exporter frees only after this (pool imports must go first). */
    return send_all(sock, &done, 1);
}

static int num_placements(int ndev)
{
    return (ndev >= 2) ? 2 : 1;
}

static int importer(int sock)
{
    static const char *places[2] = {"same-gpu", "cross-gpu"};
    CUcontext ctx[2] = {NULL, NULL};
    CUdevice cudev;
    uct_ctx_t u;
    int ndev = 0, p, k, ret = 0;
    char name[128];

    if (CU(cuInit(0)) || CU(cuDeviceGetCount(&ndev)) || (ndev < 1)) {
        fprintf(stderr, "no CUDA device\n");
        return -1;
    }
    for (p = 0; p < num_placements(ndev); ++p) {
        if (CU(cuDeviceGet(&cudev, p)) ||
            CU(cuDevicePrimaryCtxRetain(&ctx[p], cudev))) {
            return -1;
        }
    }
    if (CU(cuCtxSetCurrent(ctx[0])) || uct_setup(&u)) {
        return -1;
    }
    cuDeviceGet(&cudev, 0);
    cuDeviceGetName(name, sizeof(name), cudev);
    printf("# cuda_ipc_bench: %d GPU(s), device 0 = %s; reps %u (median) after %u "
           "warm-ups, window %u%s\n", ndev, name, opts.reps, opts.warmups,
           opts.window, opts.quick ? ", --quick" : "");
    printf("# raw = %u x cuMemcpyDtoDAsync + cuStreamSynchronize on the importer's "
           "own mapping of the same buffer; uct = %u x get/put_zcopy, then progress "
           "until all complete\n", opts.window, opts.window);
    printf("# (the transport has no rkey_ptr: the importer maps it with the driver "
           "calls the transport uses)\n");
    printf("%-8s %-9s %8s  %-4s %10s %10s %8s\n", "kind", "placement", "size", "op",
           "uct_GB/s", "raw_GB/s", "ratio");
    for (p = 0; p < 2; ++p) {
        if (p >= num_placements(ndev)) {
            printf("%-8s %-9s  SKIPPED: needs two GPUs (have %d)\n", "all",
                   places[p], ndev);
            continue;
        }
        for (k = 0; k < KIND_LAST; ++k) {
            if (import_one(&u, sock, ctx[p], p, places[p])) {
                ret = -1;
                goto out;
            }
        }
    }

    printf("\n# first use: unpack = uct_rkey_unpack; first op = first %d B get on "
           "the fresh key (imports) incl. completion;\n# repeat = the same get "
           "again (cache hit); import ~= first - repeat; raw import = the driver "
           "calls alone\n# hit issue = CPU time of the uct_ep_get_zcopy call of a "
           "%d B get on an imported key (median / min of %u);\n# raw issue = "
           "cuMemcpyDtoDAsync + cuEventRecord of the same copy (median); "
           "ours = hit issue - raw issue: the CPU time the transport adds to the "
           "driver's own calls\n"
           "# imp/hit = the iface's mapping-cache imports/hits after the repeat "
           "(1/1: the first op imported, the repeat hit)\n",
           SMALL_OP, SMALL_OP, opts.hit_reps);
    printf("%-8s %-9s %10s %11s %10s %10s %11s %16s %10s %8s %8s\n", "kind",
           "placement",
           "unpack_us", "first_op_us", "repeat_us", "import_us", "raw_imp_us",
           "hit_issue_us", "raw_iss_us", "imp/hit", "ours_us");
    for (k = 0; k < (int)num_cost_rows; ++k) {
        cost_row_t *r = &cost_rows[k];
        char ih[48];

        if (r->imports == UINT64_MAX) {
            snprintf(ih, sizeof(ih), "n/a");
        } else {
            snprintf(ih, sizeof(ih), "%" PRIu64 "/%" PRIu64, r->imports, r->hits);
        }
        printf("%-8s %-9s %10.2f %11.1f %10.1f %10.1f %11.1f %7.2f / %6.2f %10.2f %8s "
               "%8.2f\n",
               r->kind, r->place, r->unpack_us, r->first_us, r->repeat_us,
               r->first_us - r->repeat_us, r->raw_import_us, r->hit_med_us,
               r->hit_min_us, r->raw_issue_us, ih, r->hit_med_us - r->raw_issue_us);
        if (r->hit_med_us - r->raw_issue_us > summary.max_ours_us) {
            summary.max_ours_us = r->hit_med_us - r->raw_issue_us;
        }
    }
out:
    printf("\nsummary: %u rows, min ratio %.1f%% (%s), target >= 97%%; max hit issue "
           "%.2f us (%s), of which the transport's own %.2f us, target < 2 us; "
           "data checks: %s\n", summary.rows,
           100.0 * ((summary.rows > 0) ? summary.min_ratio : 0.0), summary.min_where,
           summary.max_hit_us, summary.max_hit_where, summary.max_ours_us,
           (failures == 0 && ret == 0) ? "ok" : "FAILED");
    fflush(stdout);
    uct_teardown(&u);
    for (p = 0; p < 2; ++p) {
        if (ctx[p] != NULL) {
            cuCtxSetCurrent(NULL);
            cuDevicePrimaryCtxRelease(p);
        }
    }
    return ret;
}

/* ---- exporter ----------------------------------------------------------- */

static int export_one(uct_ctx_t *u, uct_iface_h iface, uct_iface_attr_t *ia,
                      int sock, kind_t kind)
{
    char addr[MAX_BLOB], rkey_buf[MAX_BLOB], done;
    allocation_t a;
    uct_mem_h memh;
    offer_t o;
    int ret = -1;

    memset(&o, 0, sizeof(o));
    o.kind = kind;
    if ((ia->iface_addr_len > MAX_BLOB) || (u->md_attr.rkey_packed_size > MAX_BLOB)) {
        return -1;
    }
    if (alloc_kind(&a, kind, max_size(), 0) || fill_pattern(a.ptr, a.size, 1) ||
        UCT(uct_iface_get_address(iface, (uct_iface_addr_t*)addr)) ||
        UCT(uct_md_mem_reg(u->md, (void*)a.ptr, a.size, UCT_MD_MEM_ACCESS_ALL,
                           &memh))) {
        goto send;
    }
    if (UCT(uct_md_mkey_pack(u->md, memh, rkey_buf))) {
        uct_md_mem_dereg(u->md, memh);
        goto send;
    }
    UCT(uct_md_mem_dereg(u->md, memh));
    if (raw_export(&a, &o)) {
        goto send;
    }
    o.ok       = 1;
    o.ptr      = a.ptr;
    o.size     = a.size;
    o.addr_len = ia->iface_addr_len;
    o.rkey_len = u->md_attr.rkey_packed_size;
send:
    if (send_all(sock, &o, sizeof(o)) ||
        (o.ok && (send_all(sock, addr, o.addr_len) ||
                  send_all(sock, rkey_buf, o.rkey_len) ||
                  (o.has_fd && send_fd(sock, a.fd))))) {
        goto out;
    }
    ret = recv_all(sock, &done, 1); /* importer released everything */
out:
    free_kind(&a);
    return ret;
}

static int exporter(int sock)
{
    uct_iface_attr_t ia;
    uct_iface_h iface = NULL;
    CUcontext ctx = NULL;
    CUdevice dev = 0;
    uct_ctx_t u;
    int ndev = 0, p, k, ret = -1;

    if (CU(cuInit(0)) || CU(cuDeviceGetCount(&ndev)) || (ndev < 1) ||
        CU(cuDeviceGet(&dev, 0)) || CU(cuDevicePrimaryCtxRetain(&ctx, dev)) ||
        CU(cuCtxSetCurrent(ctx))) {
        return -1;
    }
    if (uct_setup(&u)) {
        goto out_ctx;
    }
    if (iface_open(&u, &iface) || UCT(uct_iface_query(iface, &ia))) {
        goto out;
    }
    for (p = 0; p < num_placements(ndev); ++p) {
        for (k = 0; k < KIND_LAST; ++k) {
            if (export_one(&u, iface, &ia, sock, (kind_t)k)) {
                goto out;
            }
        }
    }
    ret = 0;
out:
    if (iface != NULL) {
        uct_iface_close(iface);
    }
    uct_teardown(&u);
out_ctx:
    cuCtxSetCurrent(NULL);
    cuDevicePrimaryCtxRelease(dev);
    return ret;
}

/* ---- main ---------------------------------------------------------------- */

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [--quick] [-n REPS] [-w WARMUPS] [-W WINDOW] "
            "[-s SIZE_MIB[,SIZE_MIB...]]\n"
            "  default: -n 20 -w 3 -W 1 -s 4,16,64,256\n"
            "  -W: operations in flight per timed sample (the raw reference "
            "queues as many copies before it synchronises)\n"
            "  --quick: 1 MiB and 4 MiB, 3 reps, 1 warm-up (functional run, e.g. "
            "on the driver model)\n", prog);
}

static int parse_sizes(const char *arg)
{
    char *copy = strdup(arg), *tok, *save = NULL, *end;
    double mib;

    opts.num_sizes = 0;
    for (tok = strtok_r(copy, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        mib = strtod(tok, &end);
        if ((*end != '\0') || (mib <= 0) || (opts.num_sizes >= MAX_SIZES)) {
            free(copy);
            return -1;
        }
        /* whole 8-byte words */
        opts.sizes[opts.num_sizes++] = ((size_t)(mib * MIB) + 7) & ~(size_t)7;
    }
    free(copy);
    return (opts.num_sizes > 0) ? 0 : -1;
}

int main(int argc, char **argv)
{
    int sv[2], i, status, ret, sizes_given = 0;
    pid_t pid;

    opts.reps     = 20;
    opts.warmups  = 3;
    opts.window   = 1;
    opts.hit_reps = 1000;
    parse_sizes("4,16,64,256");
    for (i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--quick")) {
            opts.quick = 1;
        } else if (!strcmp(argv[i], "-n") && (i + 1 < argc)) {
            opts.reps = (unsigned)atoi(argv[++i]);
        } else if (!strcmp(argv[i], "-W") && (i + 1 < argc)) {
            opts.window = (unsigned)atoi(argv[++i]);
            if (opts.window == 0) {
                opts.window = 1;
            }
        } else if (!strcmp(argv[i], "-w") && (i + 1 < argc)) {
            opts.warmups = (unsigned)atoi(argv[++i]);
        } else if (!strcmp(argv[i], "-s") && (i + 1 < argc)) {
            if (parse_sizes(argv[++i])) {
                usage(argv[0]);
                return 2;
            }
            sizes_given = 1;
        } else {
            usage(argv[0]);
            return 2;
        }
    }
    if (opts.quick) {
        if (!sizes_given) {
            parse_sizes("1,4");
        }
        opts.reps     = 3;
        opts.warmups  = 1;
        opts.hit_reps = 50;
    }
    if (opts.reps == 0) {
        usage(argv[0]);
        return 2;
    }

    /* Fork before any CUDA call: a child forked after cuInit cannot use it. */
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        perror("socketpair");
        return 1;
    }
    fflush(stdout);
    pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        /* Child: the exporter (the importer, its parent, may pidfd_getfd). */
        close(sv[0]);
        ret = exporter(sv[1]);
        close(sv[1]);
        _exit(ret ? 1 : 0);
    }
    close(sv[1]);
    ret = importer(sv[0]);
    close(sv[0]);
    if (waitpid(pid, &status, 0) != pid) {
        perror("waitpid");
        return 1;
    }
    if (!WIFEXITED(status) || (WEXITSTATUS(status) != 0)) {
        fprintf(stderr, "exporter failed (status 0x%x)\n", status);
        ret = -1;
    }
    return ((ret == 0) && (failures == 0)) ? 0 : 1;
}
