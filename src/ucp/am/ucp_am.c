#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * Active messages: the handler table, delivery of eager messages (one
 * segment, or reassembled from fragments) and of rendezvous announcements,
 * ucp_am_recv_data_nbx() and ucp_am_data_release().
 *
 * Anything the application may keep past its handler lives in one block:
 * [user header, 8-aligned][ucp_am_desc_t][data], so that the data pointer
 * the handler got finds its descriptor right in front of it. For a
 * rendezvous message the "data" is the copy of its RTS (ucp_rndv.h), which
 * ucp_am_recv_data_nbx() hands to the rendezvous receive.
 *
 * Sends share the tag path (ucp_tag_send.c), with UCP_AM_WORD() in place of
 * the tag and the user header in front of the data.
 */

#include <ucp/core/ucp_int.h>
#include <ucp/rndv/ucp_rndv.h>

#include <stdlib.h>
#include <string.h>

#define UCP_AM_DESC_MAGIC 0x75616d64u /* "uamd" */

enum {
    UCP_AM_DESC_RNDV       = UCS_BIT(0), /* data is an RTS */
    UCP_AM_DESC_IN_HANDLER = UCS_BIT(1), /* the handler is running */
    UCP_AM_DESC_CONSUMED   = UCS_BIT(2)  /* received or released inside it */
};

typedef struct ucp_am_desc {
    uint32_t magic;
    uint32_t flags;
    void     *block;
    size_t   length;     /* data bytes (RNDV: bytes of the RTS copy) */
    size_t   msg_length; /* the message's data length */
    uint64_t uuid;       /* sender worker */
    uint64_t dest_ep;
} ucp_am_desc_t;

struct ucp_am_handler {
    ucp_am_recv_callback_t cb;
    ucp_am_callback_t      old_cb;
    void                   *arg;
    uint32_t               flags;
};

static inline size_t ucp_am_hdr_room(size_t hdr_len)
{
    return (hdr_len + 7) & ~(size_t)7;
}

/* A block with room for @a hdr_len header bytes and @a data_len data. */
static ucp_am_desc_t *ucp_am_desc_alloc(size_t hdr_len, size_t data_len)
{
    char *block = malloc(ucp_am_hdr_room(hdr_len) + sizeof(ucp_am_desc_t) +
                         (data_len ? data_len : 1));
    ucp_am_desc_t *desc;

    if (block == NULL) {
        return NULL;
    }
    desc = (ucp_am_desc_t*)(block + ucp_am_hdr_room(hdr_len));
    memset(desc, 0, sizeof(*desc));
    desc->magic  = UCP_AM_DESC_MAGIC;
    desc->block  = block;
    desc->length = data_len;
    return desc;
}

static inline void *ucp_am_desc_data(ucp_am_desc_t *desc)
{
    return desc + 1;
}

/* The descriptor of a data pointer a handler got; NULL (with an error) for
 * a pointer the library did not hand out. */
static ucp_am_desc_t *ucp_am_desc_of(void *data, const char *what)
{
    ucp_am_desc_t *desc = (ucp_am_desc_t*)data - 1;

    if ((data == NULL) || (desc->magic != UCP_AM_DESC_MAGIC)) {
        ucs_error("ucp: %s: %p is not data of an active message the handler "
                  "could keep", what, data);
        return NULL;
    }
    return desc;
}

static void ucp_am_desc_free(ucp_am_desc_t *desc)
{
    desc->magic = 0;
    free(desc->block);
}

/* The sender of a rendezvous message nobody receives: complete its send. */
void ucp_am_rndv_drop(ucp_worker_h worker, const void *rts_data)
{
    ucp_rndv_rts_t rts;
    ucp_rndv_ats_t ats;

    memcpy(&rts, rts_data, sizeof(rts));
    memset(&ats, 0, sizeof(ats));
    ats.sreq_id = rts.sreq_id;
    ats.proto   = UCP_PROTO_STAT_LAST;
    ats.status  = UCS_OK;
    if (ucp_rndv_ctrl_send(worker, rts.uuid, UCP_AM_ID_RNDV_ATS, &ats,
                           sizeof(ats), NULL, 0) != UCS_OK) {
        ucs_debug("ucp: cannot release the sender of a dropped rendezvous message");
    }
}

static void ucp_am_rndv_release(ucp_worker_h worker, const ucp_am_desc_t *desc)
{
    ucp_am_rndv_drop(worker, ucp_am_desc_data((ucp_am_desc_t*)desc));
}

/* ---- handler table -------------------------------------------------------- */

static ucs_status_t ucp_am_handler_slot(ucp_worker_h worker, unsigned id,
                                        struct ucp_am_handler **slot_p)
{
    struct ucp_am_handler *table;
    unsigned num;

    if (id >= UCP_AM_ID_LIMIT) {
        ucs_error("ucp: active message id %u is out of range (< %u)", id,
                  UCP_AM_ID_LIMIT);
        return UCS_ERR_INVALID_PARAM;
    }
    if (id >= worker->num_am_handlers) {
        num   = ucs_max(id + 1, 2 * worker->num_am_handlers);
        num   = ucs_min(num, UCP_AM_ID_LIMIT);
        table = realloc(worker->am_handlers, num * sizeof(*table));
        if (table == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
        memset(table + worker->num_am_handlers, 0,
               (num - worker->num_am_handlers) * sizeof(*table));
        worker->am_handlers     = table;
        worker->num_am_handlers = num;
    }
    *slot_p = &worker->am_handlers[id];
    return UCS_OK;
}

ucs_status_t ucp_worker_set_am_recv_handler(ucp_worker_h worker,
                                            const ucp_am_handler_param_t *param)
{
    struct ucp_am_handler *slot;
    ucs_status_t status;

    if ((param == NULL) || !(param->field_mask & UCP_AM_HANDLER_PARAM_FIELD_ID)) {
        ucs_error("ucp_worker_set_am_recv_handler: the id is required");
        return UCS_ERR_INVALID_PARAM;
    }
    ucp_worker_lock(worker);
    status = ucp_am_handler_slot(worker, param->id, &slot);
    if (status == UCS_OK) {
        memset(slot, 0, sizeof(*slot));
        slot->cb    = (param->field_mask & UCP_AM_HANDLER_PARAM_FIELD_CB) ?
                      param->cb : NULL;
        slot->arg   = (param->field_mask & UCP_AM_HANDLER_PARAM_FIELD_ARG) ?
                      param->arg : NULL;
        slot->flags = (param->field_mask & UCP_AM_HANDLER_PARAM_FIELD_FLAGS) ?
                      param->flags : 0;
        ucs_debug("ucp: worker %s: active message handler %u %s", worker->name,
                  param->id, (slot->cb != NULL) ? "set" : "removed");
    }
    ucp_worker_unlock(worker);
    return status;
}

ucs_status_t ucp_worker_set_am_handler(ucp_worker_h worker, uint16_t id,
                                       ucp_am_callback_t cb, void *arg,
                                       uint32_t flags)
{
    struct ucp_am_handler *slot;
    ucs_status_t status;

    ucp_worker_lock(worker);
    status = ucp_am_handler_slot(worker, id, &slot);
    if (status == UCS_OK) {
        memset(slot, 0, sizeof(*slot));
        slot->old_cb = cb;
        slot->arg    = arg;
        slot->flags  = flags;
    }
    ucp_worker_unlock(worker);
    return status;
}

void ucp_am_worker_init(ucp_worker_h worker)
{
    size_t min_bcopy = SIZE_MAX;
    unsigned i;

    for (i = 0; i < worker->num_ifaces; ++i) {
        min_bcopy = ucs_min(min_bcopy, worker->ifaces[i].attr.cap.am.max_bcopy);
    }
    /* A header must fit a rendezvous announcement (RTS, dest ep, header);
     * eager messages of any header length fragment. */
    if ((min_bcopy == SIZE_MAX) ||
        (min_bcopy < sizeof(ucp_rndv_rts_t) + sizeof(uint64_t))) {
        worker->max_am_header = 0;
    } else {
        worker->max_am_header = min_bcopy - sizeof(ucp_rndv_rts_t) -
                                sizeof(uint64_t);
    }
}

void ucp_am_worker_cleanup(ucp_worker_h worker)
{
    free(worker->am_handlers);
    worker->am_handlers     = NULL;
    worker->num_am_handlers = 0;
}

/* ---- delivery ------------------------------------------------------------- */

static struct ucp_am_handler *ucp_am_handler_find(ucp_worker_h worker, uint64_t word)
{
    unsigned id = UCP_AM_WORD_ID(word);
    struct ucp_am_handler *h;

    h = (id < worker->num_am_handlers) ? &worker->am_handlers[id] : NULL;
    if ((h == NULL) || ((h->cb == NULL) && (h->old_cb == NULL))) {
        ucs_warn("ucp: worker %s: active message %u dropped: no handler is set "
                 "for it", worker->name, id);
        return NULL;
    }
    return h;
}

/* A rendezvous message for a handler of the old interface, which takes
 * whole data only: fetched into host memory, handed over when it is there. */
typedef struct {
    ucp_worker_h worker;
    uint64_t     word;
    uint64_t     uuid;
    uint64_t     dest_ep;
    size_t       length;
    char         data[];
} ucp_am_old_fetch_t;

static void ucp_am_old_deliver(ucp_am_old_fetch_t *f)
{
    struct ucp_am_handler *h = ucp_am_handler_find(f->worker, f->word);
    ucp_ep_h reply_ep        = NULL;

    if ((h != NULL) && (h->old_cb != NULL)) {
        if (UCP_AM_WORD_FLAGS(f->word) & UCP_AM_SEND_FLAG_REPLY) {
            reply_ep = ucp_worker_ep_of_msg(f->worker, f->uuid, f->dest_ep);
        }
        /* no UCP_CB_PARAM_FLAG_DATA: the bytes are freed after the call */
        (void)h->old_cb(h->arg, f->data, f->length, reply_ep, 0);
    }
    free(f);
}

static void ucp_am_old_fetched(void *request, ucs_status_t status, size_t length,
                               void *user_data)
{
    ucp_am_old_fetch_t *f = user_data;

    (void)length;
    if (request != NULL) {
        ucp_request_free(request);
    }
    if (status != UCS_OK) {
        ucs_error("ucp: active message %u of %zu bytes could not be fetched for "
                  "its handler: %s", UCP_AM_WORD_ID(f->word), f->length,
                  ucs_status_string(status));
        free(f);
        return;
    }
    ucp_am_old_deliver(f);
}

static void ucp_am_old_fetch(ucp_worker_h worker, uint64_t word, uint64_t uuid,
                             uint64_t dest_ep, void *desc_data, size_t length)
{
    ucp_am_old_fetch_t *f = malloc(sizeof(*f) + length);
    ucp_request_param_t param;
    ucs_status_ptr_t ret;

    if (f == NULL) {
        ucs_error("ucp: no memory for active message %u of %zu bytes: dropped",
                  UCP_AM_WORD_ID(word), length);
        return; /* the descriptor is released by the caller */
    }
    f->worker  = worker;
    f->word    = word;
    f->uuid    = uuid;
    f->dest_ep = dest_ep;
    f->length  = length;
    ucs_debug("ucp: active message %u of %zu bytes came by rendezvous: fetched "
              "for its ucp_worker_set_am_handler() handler", UCP_AM_WORD_ID(word),
              length);
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                         UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    param.cb.recv_am   = ucp_am_old_fetched;
    param.user_data    = f;
    param.memory_type  = UCS_MEMORY_TYPE_HOST;
    ret = ucp_am_recv_data_nbx(worker, desc_data, f->data, length, &param);
    if (ret == NULL) {
        ucp_am_old_deliver(f);
    } else if (UCS_PTR_IS_ERR(ret)) {
        ucp_am_old_fetched(NULL, UCS_PTR_STATUS(ret), 0, f);
    }
}

/*
 * Call the handler of a message. @a desc is NULL when @a data is the
 * transport's buffer (valid during the call only). What the handler does
 * with a descriptor decides its fate: kept (UCS_INPROGRESS), received or
 * released inside the call, or freed here.
 */
static void ucp_am_dispatch(ucp_worker_h worker, uint64_t word, uint64_t uuid,
                            uint64_t dest_ep, const void *hdr, void *data,
                            size_t length, ucp_am_desc_t *desc)
{
    struct ucp_am_handler *h = ucp_am_handler_find(worker, word);
    ucp_am_recv_param_t param;
    ucs_status_t status;
    unsigned old_flags;

    if (h == NULL) {
        if (desc != NULL) {
            if (desc->flags & UCP_AM_DESC_RNDV) {
                ucp_am_rndv_release(worker, desc);
            }
            ucp_am_desc_free(desc);
        }
        return;
    }
    param.recv_attr = 0;
    param.reply_ep  = NULL;
    if (UCP_AM_WORD_FLAGS(word) & UCP_AM_SEND_FLAG_REPLY) {
        param.reply_ep = ucp_worker_ep_of_msg(worker, uuid, dest_ep);
        if (param.reply_ep != NULL) {
            param.recv_attr |= UCP_AM_RECV_ATTR_FIELD_REPLY_EP;
        }
    }
    if (desc != NULL) {
        param.recv_attr |= (desc->flags & UCP_AM_DESC_RNDV) ?
                           UCP_AM_RECV_ATTR_FLAG_RNDV : UCP_AM_RECV_ATTR_FLAG_DATA;
        desc->flags     |= UCP_AM_DESC_IN_HANDLER;
        desc->uuid       = uuid;
        desc->dest_ep    = dest_ep;
    }
    ucs_trace_req("ucp: worker %s: active message %u, %zu+%zu bytes, attr 0x%llx",
                  worker->name, UCP_AM_WORD_ID(word), UCP_AM_WORD_HDR_LEN(word),
                  length, (unsigned long long)param.recv_attr);

    if (h->cb != NULL) {
        status = h->cb(h->arg, hdr, UCP_AM_WORD_HDR_LEN(word), data, length, &param);
    } else if ((desc != NULL) && (desc->flags & UCP_AM_DESC_RNDV)) {
        ucp_am_old_fetch(worker, word, uuid, dest_ep, data, length);
        status = UCS_OK;
    } else {
        old_flags = (desc != NULL) ? UCP_CB_PARAM_FLAG_DATA : 0;
        status    = h->old_cb(h->arg, data, length, param.reply_ep, old_flags);
    }

    if (desc == NULL) {
        if (status == UCS_INPROGRESS) {
            ucs_error("ucp: active message handler %u returned UCS_INPROGRESS for "
                      "data it may not keep (no UCP_AM_RECV_ATTR_FLAG_DATA; set "
                      "UCP_AM_FLAG_PERSISTENT_DATA to keep data)",
                      UCP_AM_WORD_ID(word));
        }
        return;
    }
    desc->flags &= ~UCP_AM_DESC_IN_HANDLER;
    if (desc->flags & UCP_AM_DESC_CONSUMED) {
        ucp_am_desc_free(desc);
    } else if (status != UCS_INPROGRESS) {
        if (desc->flags & UCP_AM_DESC_RNDV) {
            ucp_am_rndv_release(worker, desc);
        }
        ucp_am_desc_free(desc);
    }
}

/* The message [user header][data] of @a payload_len bytes is complete. */
static void ucp_am_deliver_eager(ucp_worker_h worker, uint64_t word, uint64_t uuid,
                                 uint64_t dest_ep, void *payload,
                                 size_t payload_len)
{
    size_t hdr_len = UCP_AM_WORD_HDR_LEN(word);
    struct ucp_am_handler *h;
    ucp_am_desc_t *desc;

    if (hdr_len > payload_len) {
        ucs_error("ucp: active message with a %zu-byte header in %zu bytes "
                  "dropped", hdr_len, payload_len);
        return;
    }
    h = (UCP_AM_WORD_ID(word) < worker->num_am_handlers) ?
        &worker->am_handlers[UCP_AM_WORD_ID(word)] : NULL;
    if ((h != NULL) && (h->flags & UCP_AM_FLAG_PERSISTENT_DATA)) {
        /* Data the handler may keep: in memory of ours. */
        desc = ucp_am_desc_alloc(hdr_len, payload_len - hdr_len);
        if (desc == NULL) {
            ucs_error("ucp: no memory for an active message of %zu bytes",
                      payload_len);
            return;
        }
        memcpy(desc->block, payload, hdr_len);
        memcpy(ucp_am_desc_data(desc), (char*)payload + hdr_len,
               payload_len - hdr_len);
        desc->msg_length = desc->length;
        ucp_am_dispatch(worker, word, uuid, dest_ep, desc->block,
                        ucp_am_desc_data(desc), desc->length, desc);
        return;
    }
    ucp_am_dispatch(worker, word, uuid, dest_ep, payload, (char*)payload + hdr_len,
                    payload_len - hdr_len, NULL);
}

static ucs_status_t ucp_am_am_single(void *arg, void *data, size_t length,
                                     unsigned flags)
{
    ucp_worker_h worker = ((ucp_worker_iface_t*)arg)->worker;
    uint64_t hdr[3];
    ucp_ep_h ep;

    (void)flags;
    if (length < sizeof(hdr)) {
        ucs_error("ucp: active message of %zu bytes dropped (header is %zu)",
                  length, sizeof(hdr));
        return UCS_OK;
    }
    memcpy(hdr, data, sizeof(hdr));
    if (hdr[0] & UCP_AM_WORD_STREAM) {
        ep = ucp_worker_ep_of_msg(worker, hdr[1], hdr[2]);
        if (ep == NULL) {
            ucs_error("ucp: stream bytes of worker 0x%llx dropped: no endpoint "
                      "to it", (unsigned long long)hdr[1]);
            return UCS_OK;
        }
        ucp_stream_deliver(ep, (char*)data + sizeof(hdr), length - sizeof(hdr));
        return UCS_OK;
    }
    ucp_am_deliver_eager(worker, hdr[0], hdr[1], hdr[2], (char*)data + sizeof(hdr),
                         length - sizeof(hdr));
    return UCS_OK;
}

/* First of several fragments: [word][uuid][msg_id][length][dest ep]. */
static ucs_status_t ucp_am_am_first(void *arg, void *data, size_t length,
                                    unsigned flags)
{
    ucp_worker_h worker = ((ucp_worker_iface_t*)arg)->worker;
    struct ucp_recv_desc *rdesc;
    const char *payload;
    ucp_am_desc_t *desc;
    uint64_t hdr[5];
    size_t len;

    (void)flags;
    if (length < sizeof(hdr)) {
        ucs_error("ucp: active message fragment of %zu bytes dropped", length);
        return UCS_OK;
    }
    memcpy(hdr, data, sizeof(hdr));
    payload = (const char*)data + sizeof(hdr);
    len     = length - sizeof(hdr);
    if (len > hdr[3]) {
        ucs_error("ucp: first fragment of %zu bytes exceeds its message of %llu",
                  len, (unsigned long long)hdr[3]);
        return UCS_OK;
    }
    rdesc = calloc(1, sizeof(*rdesc));
    if (rdesc == NULL) {
        ucs_error("ucp: no memory for an active message");
        return UCS_OK;
    }
    rdesc->tag     = hdr[0];
    rdesc->uuid    = hdr[1];
    rdesc->msg_id  = hdr[2];
    rdesc->length  = hdr[3];
    rdesc->sync_id = hdr[4]; /* the receiver's ep */
    if (hdr[0] & UCP_AM_WORD_STREAM) {
        rdesc->is_am = UCP_RDESC_STREAM;
    } else {
        if ((hdr[3] > worker->context->rndv.eager_max) ||
            (UCP_AM_WORD_HDR_LEN(hdr[0]) > hdr[3])) {
            ucs_error("ucp: active message of %llu bytes (header %zu) dropped: "
                      "over UCX_TAG_EAGER_MAX_SIZE=%zu or malformed",
                      (unsigned long long)hdr[3], UCP_AM_WORD_HDR_LEN(hdr[0]),
                      worker->context->rndv.eager_max);
            free(rdesc);
            return UCS_OK;
        }
        desc = ucp_am_desc_alloc(UCP_AM_WORD_HDR_LEN(hdr[0]),
                                 hdr[3] - UCP_AM_WORD_HDR_LEN(hdr[0]));
        if (desc == NULL) {
            ucs_error("ucp: no memory for an active message of %llu bytes",
                      (unsigned long long)hdr[3]);
            free(rdesc);
            return UCS_OK;
        }
        desc->msg_length = desc->length;
        rdesc->is_am     = UCP_RDESC_AM;
        rdesc->data      = desc->block; /* freeable as it is */
    }
    /* Middles find it by (uuid, msg_id); the last one delivers and frees. */
    rdesc->in_rx = 1;
    ucs_list_add_tail(&worker->rx_inflight, &rdesc->rx_link);
    ucp_am_rdesc_fragment(worker, rdesc, payload, len);
    return UCS_OK;
}

void ucp_am_rdesc_fragment(ucp_worker_h worker, struct ucp_recv_desc *rdesc,
                           const void *data, size_t length)
{
    size_t offset = rdesc->received;
    ucp_am_desc_t *desc;
    size_t hdr_len, n;
    ucp_ep_h ep;

    if (rdesc->is_am == UCP_RDESC_STREAM) {
        ep = ucp_worker_ep_of_msg(worker, rdesc->uuid, rdesc->sync_id);
        if (ep != NULL) {
            ucp_stream_deliver(ep, data, length);
        }
    } else if (length > 0) {
        hdr_len = UCP_AM_WORD_HDR_LEN(rdesc->tag);
        desc    = (ucp_am_desc_t*)(rdesc->data + ucp_am_hdr_room(hdr_len));
        if (offset < hdr_len) {
            n = ucs_min(hdr_len - offset, length);
            memcpy((char*)desc->block + offset, data, n);
            data    = (const char*)data + n;
            offset += n;
            length -= n;
        }
        /* A fragment may end inside the user header: no payload offset yet. */
        if (length > 0) {
            memcpy((char*)ucp_am_desc_data(desc) + (offset - hdr_len), data,
                   length);
            offset += length;
        }
    } else {
        return;
    }
    rdesc->received = (rdesc->is_am == UCP_RDESC_STREAM) ?
                      rdesc->received + length : offset;
    if (rdesc->received < rdesc->length) {
        return;
    }
    if (rdesc->in_rx) {
        ucs_list_del(&rdesc->rx_link);
        rdesc->in_rx = 0;
    }
    if (rdesc->is_am == UCP_RDESC_AM) {
        desc = (ucp_am_desc_t*)(rdesc->data +
                                ucp_am_hdr_room(UCP_AM_WORD_HDR_LEN(rdesc->tag)));
        ucp_am_dispatch(worker, rdesc->tag, rdesc->uuid, rdesc->sync_id,
                        desc->block, ucp_am_desc_data(desc), desc->length, desc);
    }
    free(rdesc);
}

/* Stream bytes by rendezvous: [RTS][key][dest ep], no user header. */
static void ucp_am_stream_rts(ucp_worker_h worker, const ucp_rndv_rts_t *rts,
                              const void *data, size_t length)
{
    uint64_t dest_ep;
    ucp_ep_h ep;

    if (sizeof(*rts) + (size_t)rts->key_len + sizeof(dest_ep) != length) {
        ucs_error("ucp: stream RTS of %zu bytes with a %u-byte key dropped",
                  length, rts->key_len);
        return;
    }
    memcpy(&dest_ep, (const char*)data + sizeof(*rts) + rts->key_len,
           sizeof(dest_ep));
    ep = ucp_worker_ep_of_msg(worker, rts->uuid, dest_ep);
    if (ep == NULL) {
        ucs_error("ucp: %llu stream bytes of worker 0x%llx dropped: no endpoint "
                  "to it", (unsigned long long)rts->length,
                  (unsigned long long)rts->uuid);
        ucp_am_rndv_drop(worker, data);
        return;
    }
    ucp_stream_deliver_rts(ep, data, length - sizeof(dest_ep));
}

/* [RTS][key][dest ep][user header] */
static ucs_status_t ucp_am_am_rts(void *arg, void *data, size_t length,
                                  unsigned flags)
{
    ucp_worker_h worker = ((ucp_worker_iface_t*)arg)->worker;
    ucp_am_desc_t *desc;
    ucp_rndv_rts_t rts;
    uint64_t dest_ep;
    size_t hdr_len, fixed;

    (void)flags;
    if (length < sizeof(rts) + sizeof(dest_ep)) {
        ucs_error("ucp: active message RTS of %zu bytes dropped", length);
        return UCS_OK;
    }
    memcpy(&rts, data, sizeof(rts));
    if (rts.tag & UCP_AM_WORD_STREAM) {
        ucp_am_stream_rts(worker, &rts, data, length);
        return UCS_OK;
    }
    hdr_len = UCP_AM_WORD_HDR_LEN(rts.tag);
    fixed   = sizeof(rts) + (size_t)rts.key_len + sizeof(dest_ep);
    if ((fixed > length) || (hdr_len != length - fixed)) {
        ucs_error("ucp: active message RTS of %zu bytes with a %u-byte key and "
                  "a %zu-byte header dropped", length, rts.key_len, hdr_len);
        return UCS_OK;
    }
    memcpy(&dest_ep, (char*)data + sizeof(rts) + rts.key_len, sizeof(dest_ep));
    desc = ucp_am_desc_alloc(hdr_len, length);
    if (desc == NULL) {
        ucs_error("ucp: no memory for an active message announcement");
        return UCS_OK;
    }
    memcpy(desc->block, (char*)data + fixed, hdr_len);
    memcpy(ucp_am_desc_data(desc), data, length);
    desc->flags      = UCP_AM_DESC_RNDV;
    desc->msg_length = rts.length;
    ucp_am_dispatch(worker, rts.tag, rts.uuid, dest_ep, desc->block,
                    ucp_am_desc_data(desc), rts.length, desc);
    return UCS_OK;
}

void ucp_am_set_am_handlers(ucp_worker_iface_t *wiface)
{
    uct_iface_set_am_handler(wiface->iface, UCP_AM_ID_AM_SINGLE, ucp_am_am_single,
                             wiface, 0);
    uct_iface_set_am_handler(wiface->iface, UCP_AM_ID_AM_FIRST, ucp_am_am_first,
                             wiface, 0);
    uct_iface_set_am_handler(wiface->iface, UCP_AM_ID_AM_RTS, ucp_am_am_rts,
                             wiface, 0);
}

/* ---- receiving kept data ------------------------------------------------- */

ucs_status_ptr_t ucp_am_recv_data_nbx(ucp_worker_h worker, void *data_desc,
                                      void *buffer, size_t count,
                                      const ucp_request_param_t *param)
{
    ucp_am_desc_t *desc;
    ucs_status_ptr_t ret;
    ucs_status_t status;
    ucp_request_t *req;

    ucp_worker_lock(worker);
    desc = ucp_am_desc_of(data_desc, "ucp_am_recv_data_nbx");
    if ((desc == NULL) || (desc->flags & UCP_AM_DESC_CONSUMED)) {
        ucp_worker_unlock(worker);
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    req = ucp_request_get(worker, param);
    if (req == NULL) {
        ucp_worker_unlock(worker);
        return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    }
    req->flags |= UCP_REQ_FLAG_IN_CALL | UCP_REQ_FLAG_RECV | UCP_REQ_FLAG_RECV_LENGTH;
    ucp_request_set_callback(req, param, UCP_REQ_CB_AM_RECV);
    status = ucp_request_recv_buffer(req, buffer, count, param);
    if (status != UCS_OK) {
        goto err_req;
    }

    if (desc->flags & UCP_AM_DESC_RNDV) {
        ucs_trace_req("ucp: am rendezvous receive %p of %zu bytes", (void*)req,
                      desc->msg_length);
        ucp_rndv_recv_start(req, ucp_am_desc_data(desc), desc->length);
    } else {
        req->u.recv.info.length = desc->length;
        status = ucp_dt_unpack(&req->dt, 0, ucp_am_desc_data(desc), desc->length);
        if ((status == UCS_OK) && (desc->length > req->dt.length)) {
            status = UCS_ERR_MESSAGE_TRUNCATED;
        }
        ucp_request_complete(req, status);
    }
    if (desc->flags & UCP_AM_DESC_IN_HANDLER) {
        desc->flags |= UCP_AM_DESC_CONSUMED; /* freed when the handler returns */
    } else {
        ucp_am_desc_free(desc);
    }
    ret = ucp_request_finish_call(req, param);
    ucp_worker_unlock(worker);
    return ret;

err_req:
    ucp_request_put(req);
    ucp_worker_unlock(worker);
    return UCS_STATUS_PTR(status);
}

void ucp_am_data_release(ucp_worker_h worker, void *data)
{
    ucp_am_desc_t *desc;

    ucp_worker_lock(worker);
    desc = ucp_am_desc_of(data, "ucp_am_data_release");
    if ((desc != NULL) && !(desc->flags & UCP_AM_DESC_CONSUMED)) {
        if (desc->flags & UCP_AM_DESC_RNDV) {
            ucp_am_rndv_release(worker, desc);
        }
        if (desc->flags & UCP_AM_DESC_IN_HANDLER) {
            desc->flags |= UCP_AM_DESC_CONSUMED;
        } else {
            ucp_am_desc_free(desc);
        }
    }
    ucp_worker_unlock(worker);
}

/* ---- sending ------------------------------------------------------------- */

ucs_status_ptr_t ucp_am_send_nbx(ucp_ep_h ep, unsigned id, const void *header,
                                 size_t header_length, const void *buffer,
                                 size_t count, const ucp_request_param_t *param)
{
    uint32_t flags = ((param != NULL) &&
                      (param->op_attr_mask & UCP_OP_ATTR_FIELD_FLAGS)) ?
                     param->flags : 0;
    ucp_send_msg_t msg;

    if (id >= UCP_AM_ID_LIMIT) {
        ucs_error("ucp_am_send_nbx: id %u is out of range (< %u)", id,
                  UCP_AM_ID_LIMIT);
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    if (header_length > ep->worker->max_am_header) {
        ucs_error("ucp_am_send_nbx: a header of %zu bytes exceeds the worker's "
                  "max_am_header (%zu)", header_length, ep->worker->max_am_header);
        return UCS_STATUS_PTR(UCS_ERR_EXCEEDS_LIMIT);
    }
    if ((header_length > 0) && (header == NULL)) {
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    msg.word       = UCP_AM_WORD(id, header_length, flags & UCP_AM_SEND_FLAG_REPLY);
    msg.prefix     = header;
    msg.prefix_len = header_length;
    msg.kind       = UCP_SEND_KIND_AM;
    msg.proto      = (flags & UCP_AM_SEND_FLAG_EAGER) ? UCP_SEND_PROTO_EAGER :
                     (flags & UCP_AM_SEND_FLAG_RNDV) ? UCP_SEND_PROTO_RNDV :
                     UCP_SEND_PROTO_AUTO;
    msg.sync       = 0;
    return ucp_send_common(ep, buffer, count, &msg, param);
}

ucs_status_ptr_t ucp_am_send_nb(ucp_ep_h ep, uint16_t id, const void *buffer,
                                size_t count, ucp_datatype_t datatype,
                                ucp_send_callback_t cb, unsigned flags)
{
    ucp_request_param_t param;

    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_FLAGS;
    param.datatype     = datatype;
    /* Handlers of the old interface take data, never announcements. */
    param.flags        = (flags & UCP_AM_SEND_FLAG_REPLY) | UCP_AM_SEND_FLAG_EAGER;
    return ucp_request_set_nb_callback(ep->worker,
                                       ucp_am_send_nbx(ep, id, NULL, 0, buffer,
                                                       count, &param), cb);
}
