#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * Seed generator for the fuzz corpora: captures real messages of this
 * build and writes them under DIR/<target>/ (usage: fuzz_seed DIR).
 *
 *   address/        worker addresses over self, posix, tcp and all three
 *   rkey/           ucp packed keys (self, posix endpoints) and the md keys
 *                   inside them (uct level), prefixed by the target's
 *                   selector byte
 *   cuda_ipc_rkey/  a packed key of every cuda_ipc kind (no driver needed)
 *   am/             message sequences recorded from real traffic on a
 *                   loopback endpoint: the generator wraps every handler of
 *                   the worker's AM table, so whatever a protocol sends
 *                   (eager, sync, multi-fragment, and rendezvous or RMA
 *                   messages once those protocols exist) is recorded with
 *                   its id, in delivery order, between the receive posts.
 *   config/         a value of every parser and a configuration file
 *
 * RMA calls are weak references: until the RMA protocols are linked in, the
 * RMA scenarios are skipped.
 */

#include "fuzz_common.h"

#include <ucp/core/ucp_int.h>
#include <uct/base/uct_iface.h>
#if HAVE_CUDA
#  include <uct/cuda/cuda_ipc_rkey.h>
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Weak: NULL until the RMA protocols are linked in (declared here too, so
 * that the generator builds against headers from before them). */
ucs_status_ptr_t ucp_put_nbx(ucp_ep_h ep, const void *buffer, size_t count,
                             uint64_t remote_addr, ucp_rkey_h rkey,
                             const ucp_request_param_t *param) __attribute__((weak));
ucs_status_ptr_t ucp_get_nbx(ucp_ep_h ep, void *buffer, size_t count,
                             uint64_t remote_addr, ucp_rkey_h rkey,
                             const ucp_request_param_t *param) __attribute__((weak));

static const char *fuzz_seed_dir;

/* The recording of the scenario in progress. */
static uint8_t *fuzz_seed_rec;
static size_t fuzz_seed_rec_len;
static uct_am_handler_t fuzz_seed_orig[UCT_AM_ID_MAX];

static void fuzz_seed_write(const char *target, const char *name, uint8_t prefix,
                            int use_prefix, const void *data, size_t size,
                            int suffix)
{
    char path[512];
    uint8_t flag = (uint8_t)suffix;
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", fuzz_seed_dir, target);
    if ((mkdir(path, 0755) != 0) && (errno != EEXIST)) {
        perror(path);
        exit(1);
    }
    snprintf(path, sizeof(path), "%s/%s/%s", fuzz_seed_dir, target, name);
    f = fopen(path, "wb");
    if ((f == NULL) || (use_prefix && (fwrite(&prefix, 1, 1, f) != 1)) ||
        ((size > 0) && (fwrite(data, size, 1, f) != 1)) ||
        ((suffix >= 0) && (fwrite(&flag, 1, 1, f) != 1)) || fclose(f)) {
        perror(path);
        exit(1);
    }
}

static void fuzz_seed_addresses(void)
{
    static const char *tls[] = {"self", "posix", "tcp", "self,posix,tcp"};
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_address_t *address;
    size_t length;
    char name[64];
    unsigned i;
    ucp_ep_h ep;

    for (i = 0; i < sizeof(tls) / sizeof(tls[0]); ++i) {
        context = fuzz_context_create(tls[i]);
        fuzz_worker_create(context, &worker, &ep);
        if (ucp_worker_get_address(worker, &address, &length) != UCS_OK) {
            abort();
        }
        snprintf(name, sizeof(name), "worker_%u", i);
        /* Trailing flag byte 0: the blob is used as captured. */
        fuzz_seed_write("address", name, 0, 0, address, length, 0);
        ucp_worker_release_address(worker, address);
        fuzz_worker_destroy(worker, ep);
        ucp_cleanup(context);
    }
}

static ucp_mem_h fuzz_seed_map(ucp_context_h context, void *buffer, size_t length)
{
    ucp_mem_map_params_t params;
    ucp_mem_h memh;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                        UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    params.address    = buffer;
    params.length     = length;
    if (buffer == NULL) {
        params.field_mask |= UCP_MEM_MAP_PARAM_FIELD_FLAGS;
        params.flags       = UCP_MEM_MAP_ALLOCATE;
    }
    if (ucp_mem_map(context, &params, &memh) != UCS_OK) {
        abort();
    }
    return memh;
}

/* The md-level key of every md of @a context that can register or
 * allocate host memory, prefixed by the fuzz target's selector (2 + md
 * index in its "self,posix,tcp" context, which is made the same way). */
static void fuzz_seed_uct_keys(ucp_context_h context)
{
    static char host[8192];
    uct_mem_h memh;
    size_t length;
    void *address;
    char name[64];
    uint8_t *key;
    unsigned m;
    uct_md_h md;

    for (m = 0; m < context->num_mds; ++m) {
        md     = context->mds[m].md;
        length = sizeof(host);
        if (uct_md_mem_reg(md, host, sizeof(host), UCT_MD_MEM_ACCESS_ALL,
                           &memh) != UCS_OK) {
            address = NULL;
            if (uct_md_mem_alloc(md, &length, &address, UCS_MEMORY_TYPE_HOST, 0,
                                 "fuzz_seed", &memh) != UCS_OK) {
                continue;
            }
        } else {
            address = host;
        }
        key = calloc(1, context->mds[m].attr.rkey_packed_size + 1);
        if ((key != NULL) && (uct_md_mkey_pack(md, memh, key) == UCS_OK)) {
            snprintf(name, sizeof(name), "uct_%s", context->mds[m].component_name);
            fuzz_seed_write("rkey", name, (uint8_t)(2 + m), 1, key,
                            context->mds[m].attr.rkey_packed_size, -1);
        }
        free(key);
        if (address == host) {
            uct_md_mem_dereg(md, memh);
        } else {
            uct_md_mem_free(md, memh);
        }
    }
}

static void fuzz_seed_rkeys(void)
{
    static const char *tls[] = {"self", "posix", "self,posix,tcp"};
    ucp_context_h context;
    size_t size;
    ucp_mem_h memh;
    void *key;
    char name[64];
    unsigned i;

    for (i = 0; i < sizeof(tls) / sizeof(tls[0]); ++i) {
        context = fuzz_context_create(tls[i]);
        memh    = fuzz_seed_map(context, NULL, 8192);
        if (ucp_rkey_pack(context, memh, &key, &size) != UCS_OK) {
            abort();
        }
        if (i < 2) {
            snprintf(name, sizeof(name), "ucp_%s", tls[i]);
            fuzz_seed_write("rkey", name, (uint8_t)i, 1, key, size, -1);
        } else {
            fuzz_seed_uct_keys(context);
        }
        ucp_rkey_buffer_release(key);
        ucp_mem_unmap(context, memh);
        ucp_cleanup(context);
    }
}

#if HAVE_CUDA
static void fuzz_seed_cuda_ipc(void)
{
    static const char *names[] = {"none", "legacy", "pool", "vmm", "vmm_fabric"};
    uint8_t *buf = malloc(uct_cuda_ipc_rkey_max_size());
    static uct_cuda_ipc_key_t key;
    uint32_t length;
    unsigned kind, i;

    for (kind = 0; kind < UCT_CUDA_IPC_KIND_LAST; ++kind) {
        memset(&key, 0, sizeof(key));
        key.kind        = (uct_cuda_ipc_kind_t)kind;
        key.pid         = 4242;
        key.uid         = 1000;
        key.pid_ns      = 4026531836ull;
        key.remote_base = 0x7f0000200000ull;
        key.length      = 6u << 20;
        key.buffer_id   = 7;
        memset(key.legacy.reserved, 0x5a, sizeof(key.legacy.reserved));
        key.pool_id     = 3;
        key.pool_fd     = 11;
        key.num_chunks  = 3;
        for (i = 0; i < key.num_chunks; ++i) {
            key.chunks[i].offset = (uint64_t)i << 21;
            key.chunks[i].size   = 2u << 20;
            key.chunks[i].fd     = 20 + (int)i;
            memset(key.chunks[i].fabric, (int)i + 1, sizeof(key.chunks[i].fabric));
        }
        uct_cuda_ipc_rkey_pack(&key, buf);
        memcpy(&length, buf + 8, sizeof(length));
        fuzz_seed_write("cuda_ipc_rkey", names[kind], 0, 0, buf, length, 0);
    }
    free(buf);
}
#endif

static ucs_status_t fuzz_seed_record_am(void *arg, void *data, size_t length,
                                        unsigned flags)
{
    uct_am_handler_t *orig = arg;
    uint8_t id             = (uint8_t)(orig - fuzz_seed_orig);

    fuzz_append_record(&fuzz_seed_rec, &fuzz_seed_rec_len, id, data, length);
    return orig->cb(orig->arg, data, length, flags);
}

static void fuzz_seed_wrap_handlers(ucp_worker_h worker)
{
    uct_base_iface_t *iface = (uct_base_iface_t*)worker->ifaces[0].iface;
    unsigned id;

    for (id = 0; id < UCT_AM_ID_MAX; ++id) {
        fuzz_seed_orig[id]  = iface->am[id];
        iface->am[id].cb  = fuzz_seed_record_am;
        iface->am[id].arg = &fuzz_seed_orig[id];
    }
}

static void fuzz_seed_wait(ucp_worker_h worker, ucs_status_ptr_t req)
{
    int i;

    if (!UCS_PTR_IS_PTR(req)) {
        return;
    }
    for (i = 0; (i < 100000) && (ucp_request_check_status(req) == UCS_INPROGRESS); ++i) {
        ucp_worker_progress(worker);
    }
    ucp_request_free(req);
}

static void fuzz_seed_post_recv(ucp_worker_h worker, void *buffer, uint32_t capacity,
                                ucs_status_ptr_t *req_p)
{
    ucp_request_param_t param;
    uint8_t args[12];
    ucp_tag_t tag = 0x1234;

    memcpy(args, &tag, sizeof(tag));
    memcpy(args + 8, &capacity, sizeof(capacity));
    fuzz_append_record(&fuzz_seed_rec, &fuzz_seed_rec_len, FUZZ_OP_POST_RECV_TAG,
                       args, sizeof(args));
    memset(&param, 0, sizeof(param));
    *req_p = ucp_tag_recv_nbx(worker, buffer, capacity, tag, UINT64_MAX, &param);
}

/* One tag message of @a size bytes; the receive is posted before (expected)
 * or after (unexpected) the send. */
static void fuzz_seed_tag(const char *name, size_t size, int sync, int expected)
{
    ucp_context_h context = fuzz_context_create("self");
    ucp_request_param_t param;
    ucs_status_ptr_t sreq, rreq = NULL;
    char *sbuf = calloc(1, size + 1), *rbuf = calloc(1, size + 1);
    ucp_worker_h worker;
    ucp_ep_h ep;

    fuzz_worker_create(context, &worker, &ep);
    fuzz_seed_wrap_handlers(worker);
    fuzz_seed_rec_len = 0;
    memset(sbuf, 'x', size);
    if (expected) {
        fuzz_seed_post_recv(worker, rbuf, (uint32_t)size, &rreq);
    }
    memset(&param, 0, sizeof(param));
    sreq = sync ? ucp_tag_send_sync_nbx(ep, sbuf, size, 0x1234, &param) :
                  ucp_tag_send_nbx(ep, sbuf, size, 0x1234, &param);
    if (!expected) {
        ucp_worker_progress(worker);
        fuzz_seed_post_recv(worker, rbuf, (uint32_t)size, &rreq);
    }
    fuzz_seed_wait(worker, sreq);
    fuzz_seed_wait(worker, rreq);
    fuzz_seed_write("am", name, 0, 0, fuzz_seed_rec, fuzz_seed_rec_len, -1);
    fuzz_worker_destroy(worker, ep);
    ucp_cleanup(context);
    free(sbuf);
    free(rbuf);
}

/* put and get on the loopback endpoint, when RMA is linked in. */
static void fuzz_seed_rma(size_t size)
{
    ucp_context_h context;
    ucp_request_param_t param;
    ucp_worker_h worker;
    ucp_rkey_h rkey;
    ucp_mem_h memh;
    char name[64], *local;
    size_t key_size;
    void *key, *region;
    ucp_ep_h ep;

    if ((ucp_put_nbx == NULL) || (ucp_get_nbx == NULL)) {
        printf("fuzz_seed: no RMA in this build: rma seeds skipped\n");
        return;
    }
    context = fuzz_context_create("self");
    fuzz_worker_create(context, &worker, &ep);
    region = calloc(1, size);
    local  = calloc(1, size);
    memh   = fuzz_seed_map(context, region, size);
    if ((ucp_rkey_pack(context, memh, &key, &key_size) != UCS_OK) ||
        (ucp_ep_rkey_unpack(ep, key, &rkey) != UCS_OK)) {
        abort();
    }
    fuzz_seed_wrap_handlers(worker);
    fuzz_seed_rec_len = 0;
    memset(&param, 0, sizeof(param));
    fuzz_seed_wait(worker, ucp_put_nbx(ep, local, size, (uintptr_t)region, rkey, &param));
    fuzz_seed_wait(worker, ucp_get_nbx(ep, local, size, (uintptr_t)region, rkey, &param));
    fuzz_seed_wait(worker, ucp_worker_flush_nbx(worker, &param));
    snprintf(name, sizeof(name), "rma_%zu", size);
    fuzz_seed_write("am", name, 0, 0, fuzz_seed_rec, fuzz_seed_rec_len, -1);
    ucp_rkey_destroy(rkey);
    ucp_rkey_buffer_release(key);
    ucp_mem_unmap(context, memh);
    fuzz_worker_destroy(worker, ep);
    ucp_cleanup(context);
    free(region);
    free(local);
}

static void fuzz_seed_config(void)
{
    static const struct {
        uint8_t    sel;
        const char *text;
    } values[] = {
        {0, "64K"}, {1, "inf"}, {2, "10ms"}, {3, "auto"}, {4, "17"}, {5, "inf"},
        {6, "123456789"}, {7, "-5"}, {8, "2.5"}, {9, "yes"}, {10, "try"},
        {11, "auto"}, {12, "debug"}, {13, "gamma"}, {14, "alpha,ab"},
        {15, "host,cuda"}, {16, "some string"}, {17, "a,b,c"}, {18, "^posix,tcp"},
        {19, "host:512K,cuda:4M"}, {19, "1.5M"},
        {20, "# comment\nUCX_TLS = ^tcp\n\nUCX_LOG_LEVEL=info\n"}
    };
    char name[32];
    unsigned i;

    for (i = 0; i < sizeof(values) / sizeof(values[0]); ++i) {
        snprintf(name, sizeof(name), "value_%02u", i);
        fuzz_seed_write("config", name, values[i].sel, 1, values[i].text,
                        strlen(values[i].text), -1);
    }
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = {0, 8, 100, 3000, 20000};
    char name[64];
    unsigned i;

    if (argc != 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
        return 2;
    }
    fuzz_seed_dir = argv[1];
    fuzz_quiet_logs(); /* a context without RMA/AM features logs its retry */
    if ((mkdir(fuzz_seed_dir, 0755) != 0) && (errno != EEXIST)) {
        perror(fuzz_seed_dir);
        return 1;
    }
    fuzz_seed_addresses();
    fuzz_seed_rkeys();
#if HAVE_CUDA
    fuzz_seed_cuda_ipc();
#endif
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
        snprintf(name, sizeof(name), "tag_expected_%zu", sizes[i]);
        fuzz_seed_tag(name, sizes[i], 0, 1);
        snprintf(name, sizeof(name), "tag_unexpected_%zu", sizes[i]);
        fuzz_seed_tag(name, sizes[i], 0, 0);
        snprintf(name, sizeof(name), "tag_sync_%zu", sizes[i]);
        fuzz_seed_tag(name, sizes[i], 1, 1);
    }
    fuzz_seed_rma(64);
    fuzz_seed_rma(4096);
    fuzz_seed_config();
    printf("fuzz_seed: corpora written under %s\n", fuzz_seed_dir);
    free(fuzz_seed_rec);
    return 0;
}
