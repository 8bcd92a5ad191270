#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * libFuzzer target: the active-message handlers a real UCP worker installs
 * (eager tag protocols, sync acks, wireup, keepalive, and whatever later
 * protocols register: rendezvous, RMA, AM), fed arbitrary ids and bytes.
 *
 * Each input is a message sequence (fuzz_common.h) replayed on a fresh
 * worker of a context over the self transport, with a loopback endpoint so
 * that handlers which answer (sync acks, rendezvous replies) have a peer.
 * Messages go straight into the iface's handler table, as a transport does
 * on receive, from a buffer of exactly their length. The worker is
 * destroyed after each input, so anything a handler leaks or leaves
 * dangling is a LeakSanitizer/ASan report.
 *
 * Nothing here lists the AM ids: every id 0..UCT_AM_ID_MAX-1 reaches the
 * handler table, so a protocol that registers a new id is fuzzed without a
 * change here; its seeds come from fuzz_seed's recorded traffic.
 */

#include "fuzz_common.h"

#include <ucp/core/ucp_int.h>
#include <uct/base/uct_iface.h>

#include <stdlib.h>
#include <string.h>

#define FUZZ_AM_MAX_RECVS    16
#define FUZZ_AM_MAX_CAPACITY (64u << 10)

static ucp_context_h fuzz_am_context;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_quiet_logs();
    /* Announced eager lengths up to the limit are reserved, those above are
     * dropped: a small limit lets inputs reach both sides of it without
     * spending each run on a 256 MiB reservation (the default). */
    setenv("UCX_TAG_EAGER_MAX_SIZE", "1M", 0);
    fuzz_am_context = fuzz_context_create("self");
    return 0;
}

static void fuzz_am_deliver(ucp_worker_h worker, const fuzz_record_t *rec)
{
    uct_base_iface_t *iface = (uct_base_iface_t*)worker->ifaces[0].iface;
    void *msg               = fuzz_dup(rec->data, rec->length);

    (void)uct_iface_invoke_am(iface, rec->op % UCT_AM_ID_MAX, msg, rec->length, 0);
    free(msg);
}

/* Receive ops: payload [tag u64 (RECV_TAG only)][capacity u32]; missing
 * bytes read as zero. */
static void fuzz_am_post_recv(ucp_worker_h worker, const fuzz_record_t *rec,
                              void **buffers, ucs_status_ptr_t *reqs,
                              unsigned *count)
{
    uint8_t args[12] = {0};
    ucp_request_param_t param;
    ucp_tag_t tag = 0, mask = 0;
    ucs_status_ptr_t req;
    uint32_t capacity;
    size_t off = 0;

    if (*count >= FUZZ_AM_MAX_RECVS) {
        return;
    }
    memcpy(args, rec->data, (rec->length < sizeof(args)) ? rec->length : sizeof(args));
    if (rec->op == FUZZ_OP_POST_RECV_TAG) {
        memcpy(&tag, args, sizeof(tag));
        mask = UINT64_MAX;
        off  = sizeof(tag);
    }
    memcpy(&capacity, args + off, sizeof(capacity));
    capacity %= FUZZ_AM_MAX_CAPACITY + 1;
    buffers[*count] = malloc(capacity ? capacity : 1);
    memset(&param, 0, sizeof(param));
    req = ucp_tag_recv_nbx(worker, buffers[*count], capacity, tag, mask, &param);
    if (UCS_PTR_IS_ERR(req)) {
        free(buffers[*count]);
        return;
    }
    reqs[(*count)++] = req;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    void *buffers[FUZZ_AM_MAX_RECVS];
    ucs_status_ptr_t reqs[FUZZ_AM_MAX_RECVS];
    fuzz_cursor_t cursor = {data, data + size};
    unsigned count = 0, i;
    fuzz_record_t rec;
    ucp_worker_h worker;
    ucp_ep_h ep;

    fuzz_worker_create(fuzz_am_context, &worker, &ep);
    while (fuzz_next_record(&cursor, &rec)) {
        if (rec.op < 0x80) {
            fuzz_am_deliver(worker, &rec);
        } else if (rec.op == FUZZ_OP_PROGRESS) {
            ucp_worker_progress(worker);
        } else {
            fuzz_am_post_recv(worker, &rec, buffers, reqs, &count);
        }
    }
    for (i = 0; i < 4; ++i) {
        ucp_worker_progress(worker);
    }
    for (i = 0; i < count; ++i) {
        if (reqs[i] != NULL) {
            ucp_request_cancel(worker, reqs[i]);
        }
    }
    ucp_worker_progress(worker);
    for (i = 0; i < count; ++i) {
        if (reqs[i] != NULL) {
            ucp_request_free(reqs[i]);
        }
        free(buffers[i]);
    }
    fuzz_worker_destroy(worker, ep);
    return 0;
}
