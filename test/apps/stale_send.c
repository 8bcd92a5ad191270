#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * stale_send: does a tag message posted right after a blocking fill of a
 * device buffer carry the new bytes (issue 19)? The driver may return from
 * cuMemcpyHtoD from pageable memory, and from cuMemsetD8, before the data
 * has landed ("API synchronization behavior"); a library that reads the
 * buffer on a stream of its own, or through another process's IPC mapping,
 * without ordering itself after the legacy default stream can send the old
 * bytes.
 *
 * Two processes, forked before any CUDA call, joined by a socketpair (UCP
 * worker addresses, cell commands, results). For each process order
 * (library first: ucp_init, worker and endpoint before the application's
 * cuInit and primary context, as mpi4py does; context first; own: library
 * first, then a cuCtxCreate context), for each sender kind x receiver kind
 * (the same kind, and cudaMalloc memory) x size, a cell: the sender
 * allocates a fresh buffer, sets it to 0xa5 (and synchronises), then R
 * times writes a new pattern with a blocking fill and posts
 * ucp_tag_send_nbx at once; the receiver (a fresh buffer, 0xee before every
 * message) checks every byte after completion, read on a non-blocking
 * stream of its own and then with cuMemcpyDtoH on the legacy stream, and
 * counts bad messages. Per kind pair and order, a short ping-pong gives the
 * 8 B / 64 KiB / 1 MiB latency (us, one way) so that the cost of a fix can
 * be compared. One row per cell. -D measures the driver alone (no library).
 *
 * Runs on the real driver and on the driver model (test/cudasim, with
 * LD_LIBRARY_PATH): see contrib/stale-data-gpu.sh and -h.
 */

#include <ucp/api/ucp.h>
#include <ucp/core/ucp_proto_stats.h>

#include <cuda.h>

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SS_OLD          0xa5 /* the sender's bytes before a cell */
#define SS_GUARD        0xee /* the receiver's bytes before a message */
#define SS_MAX_SIZES    32
#define SS_LAT_ITERS    100
#define SS_LAT_WARMUP   10
#define SS_WAIT_SEC     60.0
#define SS_TAG_LAT      (1ull << 63)

#define CHECK(_call) \
    do { \
        CUresult _r = (_call); \
        if (_r != CUDA_SUCCESS) { \
            ss_die("%s:%d %s failed: %s", __FILE__, __LINE__, #_call, \
                   ss_cu_name(_r)); \
        } \
    } while (0)

typedef enum {
    K_MALLOC,    /* cuMemAlloc (what cudaMalloc gives) */
    K_ASYNC,     /* cuMemAllocAsync, the device's default pool */
    K_POOL_FD,   /* explicit pool, POSIX-fd handles */
    K_POOL_NONE, /* explicit pool, no handle types */
    K_VMM_FD,    /* cuMemCreate with a POSIX-fd handle */
    K_VMM_NONE,  /* cuMemCreate without handle type */
    K_MANAGED,   /* cuMemAllocManaged */
    K_LAST
} ss_kind_t;

static const char *ss_kind_names[K_LAST] = {
    "malloc", "async", "pool_fd", "pool_none", "vmm_fd", "vmm_none", "managed"
};

/* library: ucp_init, worker and endpoint, then cuInit and the primary
 * context (mpi4py's order); context: the other way round; own: library
 * first, then a context of the application's own (cuCtxCreate). */
typedef enum { O_LIBRARY, O_CONTEXT, O_OWN, O_LAST } ss_order_t;
static const char *ss_order_names[O_LAST] = {"library", "context", "own"};

typedef enum { F_HTOD, F_MEMSET, F_CUDART, F_ASYNC, F_LAST } ss_fill_t;
static const char *ss_fill_names[F_LAST] = {"htod", "memset", "cudart", "async"};

/* What the sender application itself does about ordering. */
typedef enum { S_NONE, S_CTX, S_PTR, S_SYNC, S_LAST } ss_sync_t;
static const char *ss_sync_names[S_LAST] = {"none", "ctx", "ptr", "sync"};

static struct {
    unsigned   reps;
    size_t     cell_bytes;  /* cap on reps x size per cell */
    unsigned   kinds;       /* mask of sender kinds */
    int        pairs_same;
    int        pairs_malloc;
    size_t     sizes[SS_MAX_SIZES];
    unsigned   nsizes;
    unsigned   orders;      /* mask */
    ss_fill_t  fill;
    ss_sync_t  sync;
    int        fresh;       /* fresh sender buffer per repetition */
    int        latency;
    int        driver_only; /* -D: no library, a read on a stream of our own */
    double     budget;
    double     deadline;
} opt;

typedef enum { CMD_CELL = 1, CMD_LAT, CMD_END } ss_cmd_t;

typedef struct {
    uint32_t cmd;
    uint32_t skind;
    uint32_t rkind;
    uint32_t reps;     /* 0: skipped (time budget) */
    uint64_t size;
    uint64_t cell;
} ss_msg_t;

typedef struct {
    double lat[3];     /* 8 B, 64 KiB, 1 MiB: one way, us; < 0: not measured */
} ss_lat_t;

/* A result row the receiver keeps until the pair's latency is known. */
typedef struct {
    ss_msg_t msg;
    unsigned bad;            /* read on the legacy stream */
    unsigned bad_user;       /* read on a non-blocking stream, before */
    int      first_bad;      /* repetition, -1 none */
    char     detail[200];
    char     proto[64];
} ss_row_t;

typedef struct {
    ss_kind_t                    kind;
    CUdeviceptr                  ptr;
    size_t                       size;
    size_t                       alloc;
    CUmemoryPool                 pool;
    CUmemGenericAllocationHandle handle;
} ss_buf_t;

typedef struct {
    int           fd;         /* socketpair end */
    ss_order_t    order;
    int           is_sender;
    ucp_context_h context;
    ucp_worker_h  worker;
    ucp_ep_h      ep;
    CUcontext     ctx;
    CUstream      user_stream; /* receiver: CU_STREAM_NON_BLOCKING */
    char          *base;      /* random bytes, largest size */
    char          *host;      /* pageable staging of a fill / readback */
    size_t        max_size;
    int           (*cudart_memcpy)(void*, const void*, size_t, int); /* cudaMemcpy */
} ss_proc_t;

/* ---- small helpers ---- */

static const char *ss_cu_name(CUresult r)
{
    const char *s = NULL;

    cuGetErrorName(r, &s);
    return (s != NULL) ? s : "?";
}

static void ss_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void ss_die(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "stale_send[%d]: ", (int)getpid());
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    exit(2);
}

static double ss_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void ss_send(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    ssize_t n;

    while (len > 0) {
        n = send(fd, p, len, MSG_NOSIGNAL);
        if (n <= 0) {
            if ((n < 0) && (errno == EINTR)) {
                continue;
            }
            ss_die("socket send: %s", (n < 0) ? strerror(errno) : "closed");
        }
        p   += n;
        len -= (size_t)n;
    }
}

static void ss_recv(int fd, void *buf, size_t len)
{
    char *p = buf;
    ssize_t n;

    while (len > 0) {
        n = recv(fd, p, len, 0);
        if (n <= 0) {
            if ((n < 0) && (errno == EINTR)) {
                continue;
            }
            ss_die("socket recv: %s", (n < 0) ? strerror(errno) : "peer closed");
        }
        p   += n;
        len -= (size_t)n;
    }
}

static uint64_t ss_mix(uint64_t x)
{
    /* splitmix64 finaliser: distinct repetition keys */
    x += 0x9e3779b97f4a7c15ull;
    x  = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x  = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* The bytes of repetition @a key: the random base XOR a 64-bit key (memset
 * fills: one byte value). */
static unsigned char ss_expected(const ss_proc_t *p, size_t i, uint64_t key)
{
    if (opt.fill == F_MEMSET) {
        return (unsigned char)key;
    }
    return (unsigned char)(p->base[i] ^ (char)(key >> (8 * (i % 8))));
}

static uint64_t ss_key(uint64_t cell, unsigned rep)
{
    uint64_t key = ss_mix((cell << 20) + rep + 1);

    if (opt.fill == F_MEMSET) {
        /* a byte value that is neither the old one nor the guard */
        key = 1 + (key % 250);
        key = ((key == SS_OLD) || (key == SS_GUARD)) ? 0x42 : key;
    }
    return key;
}

static void ss_make_pattern(ss_proc_t *p, size_t size, uint64_t key)
{
    uint64_t *dst = (uint64_t*)p->host;
    const uint64_t *src = (const uint64_t*)p->base;
    size_t i;

    for (i = 0; i < size / 8; ++i) {
        dst[i] = src[i] ^ key;
    }
    for (i = (size / 8) * 8; i < size; ++i) {
        p->host[i] = (char)ss_expected(p, i, key);
    }
}

/* ---- allocations ---- */

static size_t ss_vmm_granularity(void)
{
    CUmemAllocationProp prop;
    size_t gran = 0;
    CUdevice dev;

    CHECK(cuCtxGetDevice(&dev));
    memset(&prop, 0, sizeof(prop));
    prop.type          = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id   = dev;
    CHECK(cuMemGetAllocationGranularity(&gran, &prop,
                                        CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    return gran;
}

static void ss_buf_alloc(ss_buf_t *b, ss_kind_t kind, size_t size)
{
    CUmemAllocationProp prop;
    CUmemPoolProps pprops;
    CUmemAccessDesc access;
    CUdevice dev;
    size_t gran;

    memset(b, 0, sizeof(*b));
    b->kind  = kind;
    b->size  = size;
    b->alloc = size;
    CHECK(cuCtxGetDevice(&dev));
    switch (kind) {
    case K_MALLOC:
        CHECK(cuMemAlloc(&b->ptr, size));
        break;
    case K_ASYNC:
        /* As cudaMallocAsync on the legacy stream (CuPy's MemoryAsyncPool). */
        CHECK(cuMemAllocAsync(&b->ptr, size, CU_STREAM_LEGACY));
        break;
    case K_POOL_FD:
    case K_POOL_NONE:
        memset(&pprops, 0, sizeof(pprops));
        pprops.allocType     = CU_MEM_ALLOCATION_TYPE_PINNED;
        pprops.handleTypes   = (kind == K_POOL_FD) ?
                               CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR :
                               CU_MEM_HANDLE_TYPE_NONE;
        pprops.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        pprops.location.id   = dev;
        CHECK(cuMemPoolCreate(&b->pool, &pprops));
        CHECK(cuMemAllocFromPoolAsync(&b->ptr, size, b->pool, CU_STREAM_LEGACY));
        break;
    case K_VMM_FD:
    case K_VMM_NONE:
        gran     = ss_vmm_granularity();
        b->alloc = ((size + gran - 1) / gran) * gran;
        memset(&prop, 0, sizeof(prop));
        prop.type                 = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type        = CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id          = dev;
        prop.requestedHandleTypes = (kind == K_VMM_FD) ?
                                    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR :
                                    CU_MEM_HANDLE_TYPE_NONE;
        CHECK(cuMemCreate(&b->handle, b->alloc, &prop, 0));
        CHECK(cuMemAddressReserve(&b->ptr, b->alloc, 0, 0, 0));
        CHECK(cuMemMap(b->ptr, b->alloc, 0, b->handle, 0));
        memset(&access, 0, sizeof(access));
        access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        access.location.id   = dev;
        access.flags         = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        CHECK(cuMemSetAccess(b->ptr, b->alloc, &access, 1));
        break;
    case K_MANAGED:
        CHECK(cuMemAllocManaged(&b->ptr, size, CU_MEM_ATTACH_GLOBAL));
        break;
    default:
        ss_die("bad kind %d", (int)kind);
    }
    CHECK(cuCtxSynchronize());
}

static void ss_buf_free(ss_buf_t *b)
{
    switch (b->kind) {
    case K_MALLOC:
    case K_MANAGED:
        CHECK(cuMemFree(b->ptr));
        break;
    case K_ASYNC:
    case K_POOL_FD:
    case K_POOL_NONE:
        CHECK(cuMemFreeAsync(b->ptr, CU_STREAM_LEGACY));
        CHECK(cuCtxSynchronize());
        if (b->pool != NULL) {
            CHECK(cuMemPoolDestroy(b->pool));
        }
        break;
    case K_VMM_FD:
    case K_VMM_NONE:
        CHECK(cuMemUnmap(b->ptr, b->alloc));
        CHECK(cuMemRelease(b->handle));
        CHECK(cuMemAddressFree(b->ptr, b->alloc));
        break;
    default:
        break;
    }
    memset(b, 0, sizeof(*b));
}

/* ---- UCP ---- */

static void ss_ucp_init(ss_proc_t *p)
{
    ucp_params_t params;
    ucp_worker_params_t wparams;
    ucp_ep_params_t eparams;
    ucp_address_t *addr;
    size_t addr_len, remote_len;
    void *remote;
    ucs_status_t status;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_TAG;
    status = ucp_init(&params, NULL, &p->context);
    if (status != UCS_OK) {
        ss_die("ucp_init: %s", ucs_status_string(status));
    }
    memset(&wparams, 0, sizeof(wparams));
    status = ucp_worker_create(p->context, &wparams, &p->worker);
    if (status != UCS_OK) {
        ss_die("ucp_worker_create: %s", ucs_status_string(status));
    }
    status = ucp_worker_get_address(p->worker, &addr, &addr_len);
    if (status != UCS_OK) {
        ss_die("ucp_worker_get_address: %s", ucs_status_string(status));
    }
    ss_send(p->fd, &addr_len, sizeof(addr_len));
    ss_send(p->fd, addr, addr_len);
    ucp_worker_release_address(p->worker, addr);
    ss_recv(p->fd, &remote_len, sizeof(remote_len));
    remote = malloc(remote_len);
    if (remote == NULL) {
        ss_die("out of memory");
    }
    ss_recv(p->fd, remote, remote_len);
    memset(&eparams, 0, sizeof(eparams));
    eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    eparams.address    = remote;
    status = ucp_ep_create(p->worker, &eparams, &p->ep);
    free(remote);
    if (status != UCS_OK) {
        ss_die("ucp_ep_create: %s", ucs_status_string(status));
    }
}

static void ss_wait(ss_proc_t *p, ucs_status_ptr_t req, const char *what)
{
    double deadline = ss_now() + SS_WAIT_SEC;
    ucs_status_t status;

    if (!UCS_PTR_IS_PTR(req)) {
        status = UCS_PTR_STATUS(req);
    } else {
        while ((status = ucp_request_check_status(req)) == UCS_INPROGRESS) {
            ucp_worker_progress(p->worker);
            if (ss_now() > deadline) {
                ss_die("%s: no completion in %.0f s", what, SS_WAIT_SEC);
            }
        }
        ucp_request_free(req);
    }
    if (status != UCS_OK) {
        ss_die("%s: %s", what, ucs_status_string(status));
    }
}

static void ss_tag_send(ss_proc_t *p, CUdeviceptr buf, size_t size, ucp_tag_t tag)
{
    ucp_request_param_t param;

    memset(&param, 0, sizeof(param));
    ss_wait(p, ucp_tag_send_nbx(p->ep, (void*)(uintptr_t)buf, size, tag, &param),
            "ucp_tag_send_nbx");
}

static void ss_tag_recv(ss_proc_t *p, CUdeviceptr buf, size_t size, ucp_tag_t tag)
{
    ucp_request_param_t param;

    memset(&param, 0, sizeof(param));
    ss_wait(p, ucp_tag_recv_nbx(p->worker, (void*)(uintptr_t)buf, size, tag,
                                (ucp_tag_t)-1, &param),
            "ucp_tag_recv_nbx");
}

static void ss_ucp_cleanup(ss_proc_t *p)
{
    ucp_request_param_t param;
    char c = 0;

    memset(&param, 0, sizeof(param));
    ss_wait(p, ucp_ep_flush_nbx(p->ep, &param), "ucp_ep_flush_nbx");
    ss_send(p->fd, &c, 1);
    ss_recv(p->fd, &c, 1);
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    ss_wait(p, ucp_ep_close_nbx(p->ep, &param), "ucp_ep_close_nbx");
    ucp_worker_destroy(p->worker);
    ucp_cleanup(p->context);
}

/* ---- the application's side of CUDA ---- */

static void ss_app_context(ss_proc_t *p)
{
    CUdevice dev;

    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    if (p->order == O_OWN) {
#if CUDA_VERSION >= 13000
        CHECK(cuCtxCreate(&p->ctx, NULL, 0, dev));
#else
        CHECK(cuCtxCreate(&p->ctx, 0, dev));
#endif
        return;
    }
    /* What cudart does at the first CUDA call of a program. */
    CHECK(cuDevicePrimaryCtxRetain(&p->ctx, dev));
    CHECK(cuCtxSetCurrent(p->ctx));
}

static int ss_ctx_sync_memops(void)
{
    unsigned flags = 0;

    return (cuCtxGetFlags(&flags) == CUDA_SUCCESS) ?
           !!(flags & CU_CTX_SYNC_MEMOPS) : -1;
}

/* The random base pattern and the pageable staging buffer. */
static void ss_setup_host(ss_proc_t *p)
{
    size_t i;

    p->base = malloc(p->max_size + 8);
    p->host = malloc(p->max_size + 8);
    if ((p->base == NULL) || (p->host == NULL)) {
        ss_die("out of memory for %zu-byte host buffers", p->max_size);
    }
    for (i = 0; i < (p->max_size + 7) / 8; ++i) {
        ((uint64_t*)p->base)[i] = ss_mix(i ^ 0x5eedull);
    }
}

/* What the sender application does before its first fill (-S ctx, -f
 * cudart), and the host buffers. */
static void ss_prepare(ss_proc_t *p)
{
    const char *names[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12"};
    unsigned flags;
    void *h = NULL;
    unsigned i;

    if (p->is_sender && (opt.sync == S_CTX)) {
        CHECK(cuCtxGetFlags(&flags));
        CHECK(cuCtxSetFlags(flags | CU_CTX_SYNC_MEMOPS));
    }
    if (p->is_sender && (opt.fill == F_CUDART)) {
        for (i = 0; (h == NULL) && (i < sizeof(names) / sizeof(names[0])); ++i) {
            h = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);
        }
        if (h == NULL) {
            ss_die("-f cudart: cannot load libcudart.so: %s", dlerror());
        }
        *(void**)&p->cudart_memcpy = dlsym(h, "cudaMemcpy");
        if (p->cudart_memcpy == NULL) {
            ss_die("-f cudart: no cudaMemcpy in libcudart");
        }
    }
    ss_setup_host(p);
}

/* The library and the application's context, in the order of @a p. */
static void ss_setup(ss_proc_t *p)
{
    if (p->order == O_CONTEXT) {
        ss_app_context(p);
        ss_ucp_init(p);
    } else {
        ss_ucp_init(p);
        ss_app_context(p);
    }
    ss_prepare(p);
}

/* The blocking fill of the message's new bytes; no synchronisation. */
static void ss_fill(ss_proc_t *p, ss_buf_t *b, size_t size, uint64_t key)
{
    int r;

    switch (opt.fill) {
    case F_HTOD:
        ss_make_pattern(p, size, key);
        CHECK(cuMemcpyHtoD(b->ptr, p->host, size));
        break;
    case F_MEMSET:
        CHECK(cuMemsetD8(b->ptr, (unsigned char)key, size));
        break;
    case F_CUDART:
        ss_make_pattern(p, size, key);
        r = (int)p->cudart_memcpy((void*)(uintptr_t)b->ptr, p->host, size,
                                  1 /* cudaMemcpyHostToDevice */);
        if (r != 0) {
            ss_die("cudaMemcpy: error %d", r);
        }
        break;
    case F_ASYNC:
        /* CuPy's ndarray.set(): queued on the legacy stream, not waited for */
        ss_make_pattern(p, size, key);
        CHECK(cuMemcpyHtoDAsync(b->ptr, p->host, size, CU_STREAM_LEGACY));
        break;
    default:
        break;
    }
    if (opt.sync == S_SYNC) {
        CHECK(cuCtxSynchronize());
    }
}

static void ss_sender_fresh(ss_buf_t *b, ss_kind_t kind, size_t size)
{
    unsigned one = 1;
    CUresult r;

    ss_buf_alloc(b, kind, size);
    CHECK(cuMemsetD8(b->ptr, SS_OLD, b->alloc));
    CHECK(cuCtxSynchronize());
    if (opt.sync == S_PTR) {
        r = cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, b->ptr);
        if (r != CUDA_SUCCESS) {
            static int told[K_LAST];
            if (!told[kind]) {
                fprintf(stderr, "# -S ptr: SYNC_MEMOPS on %s memory: %s\n",
                        ss_kind_names[kind], ss_cu_name(r));
                told[kind] = 1;
            }
        }
    }
}

/* ---- cells ---- */

static const size_t ss_lat_sizes[3] = {8, 64 << 10, 1 << 20};

static void ss_sender_latency(ss_proc_t *p, ss_kind_t skind, ss_kind_t rkind,
                              ss_lat_t *lat)
{
    ss_msg_t msg = {CMD_LAT, skind, rkind, 1, ss_lat_sizes[2], 0};
    ss_buf_t b;
    double t0 = 0;
    unsigned i, s;

    ss_send(p->fd, &msg, sizeof(msg));
    ss_buf_alloc(&b, skind, ss_lat_sizes[2]);
    for (s = 0; s < 3; ++s) {
        for (i = 0; i < SS_LAT_WARMUP + SS_LAT_ITERS; ++i) {
            if (i == SS_LAT_WARMUP) {
                t0 = ss_now();
            }
            ss_tag_send(p, b.ptr, ss_lat_sizes[s], SS_TAG_LAT | (s << 1));
            ss_tag_recv(p, b.ptr, ss_lat_sizes[s], SS_TAG_LAT | (s << 1) | 1);
        }
        lat->lat[s] = (ss_now() - t0) * 1e6 / (2.0 * SS_LAT_ITERS);
    }
    ss_send(p->fd, lat, sizeof(*lat));
    ss_buf_free(&b);
}

static void ss_receiver_latency(ss_proc_t *p, const ss_msg_t *msg, ss_lat_t *lat)
{
    ss_buf_t b;
    unsigned i, s;

    ss_buf_alloc(&b, (ss_kind_t)msg->rkind, ss_lat_sizes[2]);
    for (s = 0; s < 3; ++s) {
        for (i = 0; i < SS_LAT_WARMUP + SS_LAT_ITERS; ++i) {
            ss_tag_recv(p, b.ptr, ss_lat_sizes[s], SS_TAG_LAT | (s << 1));
            ss_tag_send(p, b.ptr, ss_lat_sizes[s], SS_TAG_LAT | (s << 1) | 1);
        }
    }
    ss_recv(p->fd, lat, sizeof(*lat));
    ss_buf_free(&b);
}

static unsigned ss_cell_reps(size_t size)
{
    size_t cap = opt.cell_bytes / (size ? size : 1);

    cap = (cap < 4) ? 4 : cap;
    return (unsigned)((cap < opt.reps) ? cap : opt.reps);
}

static void ss_sender_cell(ss_proc_t *p, ss_msg_t *msg)
{
    ss_buf_t b;
    unsigned rep;
    char c;

    if ((opt.budget > 0) && (ss_now() > opt.deadline)) {
        msg->reps = 0; /* skipped */
    }
    ss_send(p->fd, msg, sizeof(*msg));
    if (msg->reps == 0) {
        return;
    }
    ss_recv(p->fd, &c, 1); /* receiver's buffer is ready */
    ss_sender_fresh(&b, (ss_kind_t)msg->skind, msg->size);
    for (rep = 0; rep < msg->reps; ++rep) {
        if (opt.fresh && (rep > 0)) {
            ss_buf_free(&b);
            ss_sender_fresh(&b, (ss_kind_t)msg->skind, msg->size);
        }
        ss_fill(p, &b, msg->size, ss_key(msg->cell, rep));
        ss_tag_send(p, b.ptr, msg->size, (msg->cell << 20) | rep);
    }
    ss_recv(p->fd, &c, 1); /* receiver checked everything */
    ss_buf_free(&b);
}

/* Bytes that are not the new pattern: how many, from where, and how many
 * are what the buffer held before (the sender's 0xa5 or the previous
 * repetition's bytes, or the receiver's 0xee). */
static void ss_describe(ss_proc_t *p, const char *got, size_t size, uint64_t key,
                        uint64_t prev_key, int has_prev, char *out, size_t max)
{
    size_t i, bad = 0, old = 0, guard = 0, first = 0;
    unsigned char g;

    for (i = 0; i < size; ++i) {
        g = (unsigned char)got[i];
        if (g == ss_expected(p, i, key)) {
            continue;
        }
        first  = (bad == 0) ? i : first;
        ++bad;
        if ((g == SS_OLD) || (has_prev && (g == ss_expected(p, i, prev_key)))) {
            ++old;
        } else if (g == SS_GUARD) {
            ++guard;
        }
    }
    snprintf(out, max, "%zu of %zu bytes wrong from byte %zu: %zu old, %zu "
             "receiver's guard, %zu other", bad, size, first, old, guard,
             bad - old - guard);
}

static int ss_check(ss_proc_t *p, const char *got, size_t size, uint64_t key)
{
    const uint64_t *g = (const uint64_t*)got, *b = (const uint64_t*)p->base;
    size_t i;

    if (opt.fill == F_MEMSET) {
        for (i = 0; i < size; ++i) {
            if ((unsigned char)got[i] != (unsigned char)key) {
                return 0;
            }
        }
        return 1;
    }
    for (i = 0; i < size / 8; ++i) {
        if (g[i] != (b[i] ^ key)) {
            return 0;
        }
    }
    for (i = (size / 8) * 8; i < size; ++i) {
        if ((unsigned char)got[i] != ss_expected(p, i, key)) {
            return 0;
        }
    }
    return 1;
}

static void ss_proto_name(const uint64_t *before, const uint64_t *after, char *out,
                          size_t max)
{
    size_t len = 0;
    int i;

    out[0] = '\0';
    for (i = 0; i < UCP_PROTO_STAT_LAST; ++i) {
        if ((after[i] != before[i]) && (len + 1 < max)) {
            len += snprintf(out + len, max - len, "%s%s", len ? "+" : "",
                            ucp_proto_stat_name((ucp_proto_stat_t)i));
        }
    }
    if (len == 0) {
        snprintf(out, max, "?");
    }
}

/* Keep the first bad read of a cell, described. */
static void ss_first_bad(ss_proc_t *p, ss_row_t *row, const ss_msg_t *msg,
                         unsigned rep, const char *read)
{
    size_t len;

    if (row->first_bad >= 0) {
        return;
    }
    row->first_bad = (int)rep;
    len = (size_t)snprintf(row->detail, sizeof(row->detail), "rep %u, %s: ", rep,
                           read);
    ss_describe(p, p->host, msg->size, ss_key(msg->cell, rep),
                rep ? ss_key(msg->cell, rep - 1) : 0, (rep > 0) && !opt.fresh,
                row->detail + len, sizeof(row->detail) - len);
}

static void ss_receiver_cell(ss_proc_t *p, const ss_msg_t *msg, ss_row_t *row)
{
    uint64_t before[UCP_PROTO_STAT_LAST], after[UCP_PROTO_STAT_LAST];
    ss_buf_t b;
    unsigned rep;
    char c = 0;

    memset(row, 0, sizeof(*row));
    row->msg       = *msg;
    row->first_bad = -1;
    if (msg->reps == 0) {
        return;
    }
    ss_buf_alloc(&b, (ss_kind_t)msg->rkind, msg->size);
    ss_send(p->fd, &c, 1);
    ucp_worker_proto_stats(p->worker, before);
    for (rep = 0; rep < msg->reps; ++rep) {
        CHECK(cuMemsetD8(b.ptr, SS_GUARD, b.size));
        CHECK(cuCtxSynchronize());
        ss_tag_recv(p, b.ptr, msg->size, (msg->cell << 20) | rep);
        /* A stream of the application's that waits for nothing, then the
         * legacy stream: both must see the message once it completed. */
        CHECK(cuMemcpyDtoHAsync(p->host, b.ptr, msg->size, p->user_stream));
        CHECK(cuStreamSynchronize(p->user_stream));
        if (!ss_check(p, p->host, msg->size, ss_key(msg->cell, rep))) {
            ss_first_bad(p, row, msg, rep, "user stream");
            ++row->bad_user;
        }
        CHECK(cuMemcpyDtoH(p->host, b.ptr, msg->size));
        if (!ss_check(p, p->host, msg->size, ss_key(msg->cell, rep))) {
            ss_first_bad(p, row, msg, rep, "legacy stream");
            ++row->bad;
        }
    }
    ucp_worker_proto_stats(p->worker, after);
    ss_proto_name(before, after, row->proto, sizeof(row->proto));
    ss_send(p->fd, &c, 1);
    ss_buf_free(&b);
}

static void ss_size_str(size_t size, char *out, size_t max)
{
    if ((size >= (1u << 20)) && (size % (1u << 20) == 0)) {
        snprintf(out, max, "%zuM", size >> 20);
    } else if ((size >= 1024) && (size % 1024 == 0)) {
        snprintf(out, max, "%zuK", size >> 10);
    } else {
        snprintf(out, max, "%zu", size);
    }
}

static void ss_print_row(const ss_proc_t *p, const ss_row_t *row, const ss_lat_t *lat)
{
    char size[24], lats[3][16];
    int s;

    ss_size_str(row->msg.size, size, sizeof(size));
    for (s = 0; s < 3; ++s) {
        if ((lat == NULL) || (lat->lat[s] < 0)) {
            snprintf(lats[s], sizeof(lats[s]), "-");
        } else {
            snprintf(lats[s], sizeof(lats[s]), "%.1f", lat->lat[s]);
        }
    }
    if (row->msg.reps == 0) {
        printf("%-7s %-6s %-4s %-9s %-9s %6s %5s %5s %5s %-26s %7s %7s %7s  skipped (time budget)\n",
               ss_order_names[p->order], ss_fill_names[opt.fill],
               ss_sync_names[opt.sync], ss_kind_names[row->msg.skind],
               ss_kind_names[row->msg.rkind], size, "-", "-", "-", "-", lats[0],
               lats[1], lats[2]);
    } else {
        printf("%-7s %-6s %-4s %-9s %-9s %6s %5u %5u %5u %-26s %7s %7s %7s%s%s\n",
               ss_order_names[p->order], ss_fill_names[opt.fill],
               ss_sync_names[opt.sync], ss_kind_names[row->msg.skind],
               ss_kind_names[row->msg.rkind], size, row->msg.reps, row->bad,
               row->bad_user, row->proto, lats[0], lats[1], lats[2],
               (row->first_bad >= 0) ? "  first: " : "",
               (row->first_bad >= 0) ? row->detail : "");
    }
    fflush(stdout);
}

/* The kind pairs of the matrix, in order. */
static unsigned ss_pairs(ss_kind_t pairs[][2], unsigned max)
{
    unsigned n = 0;
    int k;

    for (k = 0; k < K_LAST; ++k) {
        if (!(opt.kinds & (1u << k))) {
            continue;
        }
        if (opt.pairs_same && (n < max)) {
            pairs[n][0] = (ss_kind_t)k;
            pairs[n][1] = (ss_kind_t)k;
            ++n;
        }
        if (opt.pairs_malloc && (!opt.pairs_same || (k != K_MALLOC)) && (n < max)) {
            pairs[n][0] = (ss_kind_t)k;
            pairs[n][1] = K_MALLOC;
            ++n;
        }
    }
    return n;
}

static void ss_sender(ss_proc_t *p)
{
    ss_kind_t pairs[2 * K_LAST][2];
    unsigned npairs = ss_pairs(pairs, 2 * K_LAST), i, s;
    ss_msg_t msg;
    ss_lat_t lat;
    uint64_t cell = 1;
    int flags[2];

    ss_setup(p);
    flags[0] = ss_ctx_sync_memops();
    for (i = 0; i < npairs; ++i) {
        for (s = 0; s < opt.nsizes; ++s) {
            memset(&msg, 0, sizeof(msg));
            msg.cmd   = CMD_CELL;
            msg.skind = pairs[i][0];
            msg.rkind = pairs[i][1];
            msg.size  = opt.sizes[s];
            msg.reps  = ss_cell_reps(opt.sizes[s]);
            msg.cell  = cell++;
            ss_sender_cell(p, &msg);
        }
        if (opt.latency && !((opt.budget > 0) && (ss_now() > opt.deadline))) {
            ss_sender_latency(p, pairs[i][0], pairs[i][1], &lat);
        } else {
            memset(&msg, 0, sizeof(msg));
            msg.cmd  = CMD_LAT;
            msg.reps = 0;
            ss_send(p->fd, &msg, sizeof(msg));
        }
    }
    flags[1] = ss_ctx_sync_memops();
    memset(&msg, 0, sizeof(msg));
    msg.cmd  = CMD_END;
    msg.reps = (uint32_t)(flags[0] + 1);
    msg.size = (uint64_t)(flags[1] + 1);
    ss_send(p->fd, &msg, sizeof(msg));
    ss_ucp_cleanup(p);
}

/* Returns the number of bad reads (legacy and user stream). */
static unsigned long ss_receiver(ss_proc_t *p)
{
    ss_row_t *rows = calloc(opt.nsizes, sizeof(*rows));
    unsigned long total_bad = 0;
    unsigned nrows = 0, i;
    ss_lat_t lat;
    ss_msg_t msg;

    if (rows == NULL) {
        ss_die("out of memory");
    }
    ss_setup(p);
    CHECK(cuStreamCreate(&p->user_stream, CU_STREAM_NON_BLOCKING));
    for (;;) {
        ss_recv(p->fd, &msg, sizeof(msg));
        if (msg.cmd == CMD_CELL) {
            if (nrows >= opt.nsizes) {
                ss_die("protocol error: more cells than sizes");
            }
            ss_receiver_cell(p, &msg, &rows[nrows]);
            total_bad += rows[nrows].bad + rows[nrows].bad_user;
            ++nrows;
        } else if (msg.cmd == CMD_LAT) {
            if (msg.reps == 0) {
                lat.lat[0] = lat.lat[1] = lat.lat[2] = -1.0;
            } else {
                ss_receiver_latency(p, &msg, &lat);
            }
            for (i = 0; i < nrows; ++i) {
                ss_print_row(p, &rows[i], &lat);
            }
            nrows = 0;
        } else if (msg.cmd == CMD_END) {
            printf("# order %s: the sender's context had CU_CTX_SYNC_MEMOPS %s "
                   "before the first cell and %s after the last\n",
                   ss_order_names[p->order],
                   (msg.reps == 2) ? "set" : (msg.reps == 1) ? "clear" : "unknown",
                   (msg.size == 2) ? "set" : (msg.size == 1) ? "clear" : "unknown");
            break;
        } else {
            ss_die("protocol error: command %u", msg.cmd);
        }
    }
    ss_ucp_cleanup(p);
    free(rows);
    return total_bad;
}

static pid_t ss_spawn(ss_proc_t *p, int fd, int close_fd, int result_fd,
                      int close_fd2)
{
    unsigned long bad;
    pid_t pid;

    fflush(stdout);
    pid = fork();
    if (pid < 0) {
        ss_die("fork: %s", strerror(errno));
    }
    if (pid > 0) {
        return pid;
    }
    close(close_fd);
    close(close_fd2);
    p->fd = fd;
    if (p->is_sender) {
        ss_sender(p);
    } else {
        bad = ss_receiver(p);
        if (write(result_fd, &bad, sizeof(bad)) != (ssize_t)sizeof(bad)) {
            ss_die("result pipe: %s", strerror(errno));
        }
    }
    exit(0);
}

/*
 * -D: the driver alone, no library. In one process, per kind and size: a
 * fresh buffer set to 0xa5, then R times a blocking fill and at once a copy
 * to pinned host memory on a CU_STREAM_NON_BLOCKING stream (what a
 * library's copy engine read would do), synchronised, compared. Tells
 * whether the driver returns from the fill before the data is there, and
 * whether CU_CTX_SYNC_MEMOPS (-S ctx) or the pointer attribute (-S ptr)
 * stops that. Timing-dependent: counts, not verdicts.
 */
static unsigned long ss_driver_probe(void)
{
    unsigned long total = 0;
    ss_proc_t p;
    CUstream stream;
    ss_buf_t b;
    void *pinned;
    unsigned rep, s, bad, reps;
    uint64_t key;
    char size_str[24], detail[160];
    int k, first_bad;

    memset(&p, 0, sizeof(p));
    p.order     = O_CONTEXT;
    p.is_sender = 1;
    for (s = 0; s < opt.nsizes; ++s) {
        p.max_size = (opt.sizes[s] > p.max_size) ? opt.sizes[s] : p.max_size;
    }
    ss_app_context(&p);
    ss_prepare(&p);
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CHECK(cuMemHostAlloc(&pinned, p.max_size, 0));
    for (k = 0; k < K_LAST; ++k) {
        if (!(opt.kinds & (1u << k))) {
            continue;
        }
        for (s = 0; s < opt.nsizes; ++s) {
            if ((opt.budget > 0) && (ss_now() > opt.deadline)) {
                break;
            }
            reps      = ss_cell_reps(opt.sizes[s]);
            bad       = 0;
            first_bad = -1;
            ss_sender_fresh(&b, (ss_kind_t)k, opt.sizes[s]);
            for (rep = 0; rep < reps; ++rep) {
                key = ss_key(1000 + s, rep);
                ss_fill(&p, &b, opt.sizes[s], key);
                CHECK(cuMemcpyDtoHAsync(pinned, b.ptr, opt.sizes[s], stream));
                CHECK(cuStreamSynchronize(stream));
                if (!ss_check(&p, pinned, opt.sizes[s], key)) {
                    if (first_bad < 0) {
                        first_bad = (int)rep;
                        ss_describe(&p, pinned, opt.sizes[s], key,
                                    rep ? ss_key(1000 + s, rep - 1) : 0, rep > 0,
                                    detail, sizeof(detail));
                    }
                    ++bad;
                }
            }
            CHECK(cuCtxSynchronize());
            ss_buf_free(&b);
            ss_size_str(opt.sizes[s], size_str, sizeof(size_str));
            printf("%-7s %-6s %-4s %-9s %-9s %6s %5u %5s %5u %-26s%s%s\n", "driver",
                   ss_fill_names[opt.fill], ss_sync_names[opt.sync],
                   ss_kind_names[k], "-", size_str, reps, "-", bad,
                   "(no library)", bad ? "  first: " : "", bad ? detail : "");
            total += bad;
        }
    }
    CHECK(cuMemFreeHost(pinned));
    CHECK(cuStreamDestroy(stream));
    return total;
}

/* The probe in a child: this process never initialises CUDA. */
static long ss_run_driver_probe(void)
{
    unsigned long bad = 0;
    int res[2], status;
    pid_t pid;

    if (pipe(res) != 0) {
        ss_die("pipe: %s", strerror(errno));
    }
    fflush(stdout);
    pid = fork();
    if (pid < 0) {
        ss_die("fork: %s", strerror(errno));
    }
    if (pid == 0) {
        close(res[0]);
        bad = ss_driver_probe();
        if (write(res[1], &bad, sizeof(bad)) != (ssize_t)sizeof(bad)) {
            ss_die("result pipe: %s", strerror(errno));
        }
        exit(0);
    }
    close(res[1]);
    if ((read(res[0], &bad, sizeof(bad)) != (ssize_t)sizeof(bad)) ||
        (waitpid(pid, &status, 0) != pid) || !WIFEXITED(status) ||
        (WEXITSTATUS(status) != 0)) {
        close(res[0]);
        return -1;
    }
    close(res[0]);
    return (long)bad;
}

/* One process pair for one order, both forked from this process, which
 * never initialises CUDA (a child forked after cuInit cannot use it).
 * Returns the bad messages, or -1. */
static long ss_run_order(ss_order_t order)
{
    unsigned long bad = 0;
    int sv[2], res[2], status, ok = 1, i;
    pid_t pids[2];
    ss_proc_t p;

    memset(&p, 0, sizeof(p));
    p.order = order;
    for (unsigned k = 0; k < opt.nsizes; ++k) {
        p.max_size = (opt.sizes[k] > p.max_size) ? opt.sizes[k] : p.max_size;
    }
    p.max_size = (p.max_size < (1u << 20)) ? (1u << 20) : p.max_size;
    if ((socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) || (pipe(res) != 0)) {
        ss_die("socketpair/pipe: %s", strerror(errno));
    }
    p.is_sender = 0;
    pids[0]     = ss_spawn(&p, sv[0], sv[1], res[1], res[0]);
    p.is_sender = 1;
    pids[1]     = ss_spawn(&p, sv[1], sv[0], -1, res[1]);
    close(sv[0]);
    close(sv[1]);
    close(res[1]);
    if (read(res[0], &bad, sizeof(bad)) != (ssize_t)sizeof(bad)) {
        ok = 0;
    }
    close(res[0]);
    for (i = 0; i < 2; ++i) {
        if ((waitpid(pids[i], &status, 0) != pids[i]) || !WIFEXITED(status) ||
            (WEXITSTATUS(status) != 0)) {
            fprintf(stderr, "stale_send: the %s failed (status 0x%x)\n",
                    i ? "sender" : "receiver", status);
            ok = 0;
        }
    }
    return ok ? (long)bad : -1;
}

/* ---- options ---- */

static size_t ss_parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);

    switch (*end) {
    case 'k': case 'K': v *= 1024; ++end; break;
    case 'm': case 'M': v *= 1024 * 1024; ++end; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; ++end; break;
    default: break;
    }
    if ((end == s) || (*end != '\0') || (v < 1)) {
        ss_die("bad size '%s'", s);
    }
    return (size_t)v;
}

static int ss_lookup(const char *s, const char **names, int n)
{
    int i;

    for (i = 0; i < n; ++i) {
        if (!strcmp(s, names[i])) {
            return i;
        }
    }
    return -1;
}

static void ss_usage(void)
{
    printf("usage: stale_send [options]\n"
           "  -r REPS     repetitions per cell (default 200)\n"
           "  -B BYTES    at most this many bytes sent per cell: fewer repetitions\n"
           "              for large sizes, at least 4 (default 256M)\n"
           "  -k KINDS    sender kinds, comma list of malloc,async,pool_fd,\n"
           "              pool_none,vmm_fd,vmm_none,managed or all (default all)\n"
           "  -p PAIRS    receiver kind: same, malloc or both (default both)\n"
           "  -s SIZES    comma list (default 8,1K,4K,16K,64K,256K,1M,4M,64M)\n"
           "  -o ORDERS   comma list of library (ucp_init, worker and endpoint\n"
           "              before cuInit and the primary context), context (the\n"
           "              other way round), own (library first, then a context\n"
           "              of cuCtxCreate), or all (default all)\n"
           "  -f FILL     htod (cuMemcpyHtoD from pageable memory), memset\n"
           "              (cuMemsetD8), cudart (cudaMemcpy, libcudart loaded at\n"
           "              run time), async (cuMemcpyHtoDAsync from pageable\n"
           "              memory on the legacy stream, not waited for: CuPy's\n"
           "              ndarray.set()) (default htod)\n"
           "  -S SYNC     what the sender does itself: none, ctx (sets\n"
           "              CU_CTX_SYNC_MEMOPS on its context), ptr (sets the\n"
           "              SYNC_MEMOPS pointer attribute on each fresh buffer),\n"
           "              sync (cuCtxSynchronize between fill and send) (default none)\n"
           "  -F          a fresh sender buffer for every repetition\n"
           "  -L          no latency ping-pong\n"
           "  -D          the driver alone, no library: after each fill a copy to\n"
           "              pinned memory on a non-blocking stream reads the buffer\n"
           "  -t SECONDS  time budget; cells not started by then are skipped\n"
           "              (default 170, 0: none)\n"
           "  -q          quick: -r 3 -s 8,8K,64K,1M\n"
           "Exit status: 0 all messages right, 1 bad messages, 2 error.\n"
           "Columns: bad / badU: messages with a wrong byte, read on the legacy\n"
           "stream / on a non-blocking stream (first); protocol: what the\n"
           "receiver counted; lat8, lat64K, lat1M: one-way us of the kind pair.\n");
}

static void ss_parse(int argc, char **argv)
{
    char *list, *tok, *save;
    int c, k;

    opt.reps         = 200;
    opt.cell_bytes   = 256ul << 20;
    opt.kinds        = (1u << K_LAST) - 1;
    opt.pairs_same   = 1;
    opt.pairs_malloc = 1;
    opt.orders       = (1u << O_LAST) - 1;
    opt.fill         = F_HTOD;
    opt.sync         = S_NONE;
    opt.latency      = 1;
    opt.budget       = 170;
    list             = strdup("8,1K,4K,16K,64K,256K,1M,4M,64M");
    while ((c = getopt(argc, argv, "r:B:k:p:s:o:f:S:FLDt:qh")) != -1) {
        switch (c) {
        case 'r': opt.reps = (unsigned)atoi(optarg); break;
        case 'B': opt.cell_bytes = ss_parse_size(optarg); break;
        case 'k':
            opt.kinds = 0;
            for (tok = strtok_r(optarg, ",", &save); tok != NULL;
                 tok = strtok_r(NULL, ",", &save)) {
                if (!strcmp(tok, "all")) {
                    opt.kinds = (1u << K_LAST) - 1;
                } else if ((k = ss_lookup(tok, ss_kind_names, K_LAST)) >= 0) {
                    opt.kinds |= 1u << k;
                } else {
                    ss_die("unknown kind '%s'", tok);
                }
            }
            break;
        case 'p':
            opt.pairs_same   = !strcmp(optarg, "same") || !strcmp(optarg, "both");
            opt.pairs_malloc = !strcmp(optarg, "malloc") || !strcmp(optarg, "both");
            if (!opt.pairs_same && !opt.pairs_malloc) {
                ss_die("-p: same, malloc or both");
            }
            break;
        case 's': free(list); list = strdup(optarg); break;
        case 'o':
            opt.orders = 0;
            for (tok = strtok_r(optarg, ",", &save); tok != NULL;
                 tok = strtok_r(NULL, ",", &save)) {
                if (!strcmp(tok, "all")) {
                    opt.orders = (1u << O_LAST) - 1;
                } else if ((k = ss_lookup(tok, ss_order_names, O_LAST)) >= 0) {
                    opt.orders |= 1u << k;
                } else {
                    ss_die("-o: library, context, own or all");
                }
            }
            break;
        case 'f':
            if ((k = ss_lookup(optarg, ss_fill_names, F_LAST)) < 0) {
                ss_die("-f: htod, memset or cudart");
            }
            opt.fill = (ss_fill_t)k;
            break;
        case 'S':
            if ((k = ss_lookup(optarg, ss_sync_names, S_LAST)) < 0) {
                ss_die("-S: none, ctx, ptr or sync");
            }
            opt.sync = (ss_sync_t)k;
            break;
        case 'F': opt.fresh = 1; break;
        case 'L': opt.latency = 0; break;
        case 'D': opt.driver_only = 1; break;
        case 't': opt.budget = atof(optarg); break;
        case 'q':
            opt.reps = 3;
            free(list);
            list = strdup("8,8K,64K,1M");
            break;
        case 'h': ss_usage(); exit(0);
        default: ss_usage(); exit(2);
        }
    }
    opt.nsizes = 0;
    for (tok = strtok_r(list, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        if (opt.nsizes >= SS_MAX_SIZES) {
            ss_die("at most %d sizes", SS_MAX_SIZES);
        }
        opt.sizes[opt.nsizes++] = ss_parse_size(tok);
    }
    free(list);
    if ((opt.nsizes == 0) || (opt.kinds == 0) || (opt.reps == 0)) {
        ss_die("nothing to do");
    }
}

int main(int argc, char **argv)
{
    long bad, total = 0;
    int failed = 0, o;
    double t0;

    ss_parse(argc, argv);
    setvbuf(stdout, NULL, _IOLBF, 0);
    t0           = ss_now();
    opt.deadline = t0 + opt.budget;
    printf("# stale_send: driver %s, fill %s, sender sync %s, reps %u (at most %zu "
           "bytes per cell)%s, budget %.0f s\n",
           (dlsym(RTLD_DEFAULT, "cudasim_model_info") != NULL) ? "model (cudasim)" :
                                                                 "real",
           ss_fill_names[opt.fill], ss_sync_names[opt.sync], opt.reps, opt.cell_bytes,
           opt.fresh ? ", fresh buffer per repetition" : "", opt.budget);
    printf("# bad: messages whose bytes were not all the new ones, read after "
           "completion on the legacy stream (badU: on a non-blocking stream, "
           "first); lat: one-way us, ping-pong of %u\n",
           SS_LAT_ITERS);
    printf("%-7s %-6s %-4s %-9s %-9s %6s %5s %5s %5s %-26s %7s %7s %7s\n", "order",
           "fill", "sync", "sender", "receiver", "size", "reps", "bad", "badU",
           "protocol", "lat8", "lat64K", "lat1M");
    if (opt.driver_only) {
        bad = ss_run_driver_probe();
        failed = (bad < 0);
        total  = (bad < 0) ? 0 : bad;
        o      = O_LAST; /* no library runs */
    } else {
        o = 0;
    }
    for (; o < O_LAST; ++o) {
        if (!(opt.orders & (1u << o))) {
            continue;
        }
        bad = ss_run_order((ss_order_t)o);
        if (bad < 0) {
            failed = 1;
        } else {
            total += bad;
        }
    }
    printf("# %ld bad reads (bad + badU over all cells); %.1f s\n", total,
           ss_now() - t0);
    return failed ? 2 : (total > 0) ? 1 : 0;
}
