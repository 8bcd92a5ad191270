/**
 * @file ucp_rndv.h
 * Rendezvous for large tag messages (docs/rendezvous.md): the sender
 * announces the message (RTS, with the cuda_ipc key of its buffer when it
 * has one); the receiver picks
 *   get_zcopy  -- it reads the sender's buffer over cuda_ipc, then ATS;
 *   put_zcopy  -- RTR with its own key; the sender writes, then ATP;
 *   pipeline   -- RTR asking for staging: device fragments (FRAG / FRAG_ACK,
 *                 the receiver reads each one over cuda_ipc) or data as
 *                 active messages (RNDV_DATA, then ATS).
 * Requests are named on the wire by ids from a per-worker table, never by
 * pointers; a reply with an unknown or stale id is logged and dropped.
 *
 * Everything here runs with the worker lock held (see ucp_int.h).
 */
#ifndef UCP_RNDV_H_
#define UCP_RNDV_H_

#include <ucp/core/ucp_int.h>
#include <ucs/sys/topo_device.h>

BEGIN_C_DECLS

/* Smallest message a receiver on the sender's GPU stages through host memory
 * (UCX_RNDV_SAME_GPU_HOST_MAX): below it the copy to the device is one the
 * driver runs on the compute engine anyway. */
#define UCP_RNDV_SAME_GPU_HOST_MIN (32ul * 1024)

/* ---- wire formats (little-endian, same build on both sides) ------------ */

enum {
    UCP_RNDV_RTS_FLAG_SYNC      = UCS_BIT(0), /* ucp_tag_send_sync */
    UCP_RNDV_RTS_FLAG_KEY       = UCS_BIT(1), /* a cuda_ipc key follows */
    UCP_RNDV_RTS_FLAG_CAN_PUT   = UCS_BIT(2), /* contiguous + rma lane */
    UCP_RNDV_RTS_FLAG_CAN_FRAG  = UCS_BIT(3), /* may stage in device fragments */
    UCP_RNDV_RTS_FLAG_HOST_KEY  = UCS_BIT(4), /* a host lane key follows */
    UCP_RNDV_RTS_FLAG_HOST_FRAG = UCS_BIT(5)  /* may stage in host fragments
                                                 read over the host lane */
};

typedef struct ucp_rndv_rts {
    uint64_t tag;
    uint64_t uuid;      /* sender worker */
    uint64_t sreq_id;
    uint64_t length;
    uint64_t address;   /* of the sender's buffer, for a get */
    uint32_t flags;
    uint32_t mem_type;
    uint32_t key_len;
    uint32_t gpu;       /* the GPU holding a device buffer: ucp_rndv_gpu_tag(),
                           0 = host memory or unknown */
} ucp_rndv_rts_t;       /* + key */

enum {
    UCP_RNDV_RTR_PUT           = 1, /* put into the key's buffer, then ATP */
    UCP_RNDV_RTR_PIPE_CUDA     = 2, /* stage in device fragments (FRAG) */
    UCP_RNDV_RTR_PIPE_AM       = 3, /* send RNDV_DATA messages */
    UCP_RNDV_RTR_PIPE_HOST_GET = 4  /* stage in host fragments (FRAG), read
                                       over the host lane */
};

/* Flags above the mode in an RTR's mode field. SAME_GPU (with PIPE_CUDA):
 * both buffers are on one GPU, where the two processes' copies cannot
 * overlap and each switch between them costs ~140 us on an H200: the
 * sender stages whole fragments instead of cutting a message into depth
 * pieces, so that more messages are in flight and each costs one switch
 * per process. */
#define UCP_RNDV_RTR_MODE_MASK     0xffu
#define UCP_RNDV_RTR_FLAG_SAME_GPU 0x100u


typedef struct ucp_rndv_rtr {
    uint64_t sreq_id;
    uint64_t rreq_id;
    uint64_t address;   /* of the receiver's buffer, for a put */
    uint64_t length;    /* bytes wanted (0 when truncated: none) */
    uint32_t mode;
    uint32_t key_len;
} ucp_rndv_rtr_t;       /* + key */

typedef struct ucp_rndv_ats {
    uint64_t sreq_id;
    uint32_t proto;     /* ucp_proto_stat_t the receiver used */
    int32_t  status;
} ucp_rndv_ats_t;

typedef struct ucp_rndv_atp {
    uint64_t rreq_id;
    int32_t  status;
    uint32_t reserved;
} ucp_rndv_atp_t;

typedef struct ucp_rndv_frag_msg {
    uint64_t rreq_id;
    uint64_t sreq_id;
    uint64_t offset;
    uint64_t length;
    uint64_t address;   /* of the fragment */
    uint32_t frag_index;
    uint32_t key_len;
} ucp_rndv_frag_msg_t;  /* + key of the fragment's slab */

typedef struct ucp_rndv_frag_ack {
    uint64_t sreq_id;
    uint32_t frag_index;
    int32_t  status;
} ucp_rndv_frag_ack_t;

typedef struct ucp_rndv_data_hdr {
    uint64_t rreq_id;
    uint64_t offset;
} ucp_rndv_data_hdr_t;  /* + data */

/* ---- state -------------------------------------------------------------- */

struct ucp_rndv_frag;

/** One rendezvous message on one side. Lives in the worker's id table from
 *  start to completion. */
typedef struct ucp_rndv_req {
    ucp_request_t      *req;
    ucp_worker_h       worker;
    uint64_t           id;          /* ours */
    uint64_t           remote_id;   /* the peer's (0 until known) */
    uint64_t           peer_uuid;
    int                is_send;
    size_t             length;      /* bytes to move */
    size_t             msg_length;  /* announced (receiver: may exceed length) */
    void               *buffer;     /* contiguous data, or NULL */
    ucs_memory_type_t  mem_type;
    ucp_proto_stat_t   proto;
    uint32_t           rts_flags;   /* sender: what the RTS said */
    uint32_t           peer_gpu;    /* receiver: the RTS's gpu tag */
    ucs_sys_device_t   gpu;         /* of buffer, once gpu_known: ucp_rndv_req_gpu() */
    int                gpu_known;
    unsigned           mode;        /* UCP_RNDV_RTR_* once chosen, else 0 */
    uct_mem_h          ipc_memh;    /* our buffer's cuda_ipc registration */
    uct_mem_h          host_memh;   /* our buffer's host lane registration */
    uct_md_h           host_md;     /* that registered it */
    /* pipeline */
    size_t             next_offset; /* next byte to stage / send */
    size_t             done_bytes;  /* acknowledged / received */
    unsigned           inflight;    /* fragments out */
    int                whole_pieces; /* sender: a piece fills a fragment
                                        (UCP_RNDV_RTR_FLAG_SAME_GPU) */
    struct ucp_rndv_frag *stage;    /* host fragment (AM data) */
    /* Device data as AM: the second host fragment, whose staging copy runs
     * while the segments of the first go out (sender: device -> host into
     * it; receiver: host -> device out of it); stage_comp counts that copy. */
    struct ucp_rndv_frag *stage_next;
    uct_completion_t stage_comp;
    size_t stage_end;               /* sender: staged bytes of the message */
    int                waiting;     /* on the worker's fragment waiters */
    ucs_list_link_t    wait_link;
    /* Receiver of a staged read (ucp_rndv_hread.c): FRAG messages waiting
     * for a host fragment of ours, and the first error of a piece. */
    ucs_list_link_t hread_pending;
    ucs_status_t hread_status;
    void *hread_key;        /* the sender's host buffer: its key, */
    uint32_t hread_key_len; /* (NULL: the sender's fragments) */
    uint64_t hread_address; /* and address */
} ucp_rndv_req_t;

/** Everything a worker keeps for rendezvous. */
typedef struct ucp_rndv_worker ucp_rndv_worker_t;

/* ---- ucp_rndv.c: lanes, ids, control messages, life cycle --------------- */

/** Open the cuda_ipc iface (when UCX_TLS selects it) and the state. */
ucs_status_t ucp_rndv_worker_init(ucp_worker_h worker);
/** Fail what is outstanding, wait for copies in flight, free everything. */
void ucp_rndv_worker_cleanup(ucp_worker_h worker);
/** Close the cuda_ipc iface (after the eps are gone). */
void ucp_rndv_worker_close_iface(ucp_worker_h worker);
/** Give @a ep an rma (cuda_ipc) ep when the peer is on this host and its
 *  address has a reachable cuda_ipc entry. */
void ucp_rndv_ep_init(ucp_ep_h ep, const ucp_unpacked_address_t *addr,
                      int same_host);
void ucp_rndv_ep_cleanup(ucp_ep_h ep);
/** Completions, fragment waiters and keepalive; from worker progress. */
unsigned ucp_rndv_progress(ucp_worker_h worker);
/** Fail the rendezvous requests exchanged with worker @a uuid. */
void ucp_rndv_peer_failed(ucp_worker_h worker, uint64_t uuid,
                          ucs_status_t status);

/** Size from which a message from a buffer of @a kind takes rendezvous on
 *  @a ep: UCX_RNDV_THRESH (auto: the performance model's answer for the
 *  ep's transports, ucp_rndv_model.h), at most UCX_TAG_EAGER_MAX_SIZE + 1. */
static inline size_t ucp_rndv_thresh(ucp_ep_h ep, ucp_rndv_kind_t kind)
{
    return ep->rndv_thresh[kind];
}

/** Set @a ep's thresholds (ucp_rndv_thresh()); at connection. */
void ucp_rndv_ep_set_thresh(ucp_ep_h ep);

/** The performance model of @a ep's transports (UCX_PROTO_INFO shows it). */
ucs_status_t ucp_rndv_ep_model(ucp_ep_h ep, ucp_rndv_model_t *model);

ucp_rndv_req_t *ucp_rndv_req_new(ucp_request_t *req, int is_send,
                                 uint64_t peer_uuid);
ucp_rndv_req_t *ucp_rndv_req_find(ucp_worker_h worker, uint64_t id,
                                  int is_send, const char *what);
/** Complete the user's request and free the state (and its resources). */
void ucp_rndv_req_complete(ucp_rndv_req_t *rreq, ucs_status_t status);

/** Send a control message to worker @a uuid, in order behind what its ep
 *  already queued. @a data (optional) follows @a hdr. */
ucs_status_t ucp_rndv_ctrl_send(ucp_worker_h worker, uint64_t uuid, uint8_t id,
                                const void *hdr, size_t hdr_len,
                                const void *data, size_t data_len);

/* ---- ucp_rndv_keys.c: cuda_ipc keys and caches of unpacked keys ---------- */

/** Most keys a cache keeps (per peer: user buffers and fragment slabs);
 *  the least recently used one is evicted. */
#define UCP_RNDV_KEY_CACHE_ENTRIES 32

typedef struct ucp_rndv_key_cache ucp_rndv_key_cache_t;

typedef struct ucp_rndv_key_cache_stats {
    uint64_t hits;
    uint64_t misses;
    uint64_t unpacks;    /**< uct_rkey_unpack calls */
    uint64_t evictions;
    unsigned entries;    /**< kept now */
} ucp_rndv_key_cache_stats_t;

/** Register @a buffer with the cuda_ipc md and pack its key into @a key
 *  (ucp_rndv_key_size() bytes); *@a len_p is the length without trailing
 *  zeros, what goes on the wire. UCS_ERR_UNSUPPORTED without cuda_ipc. */
ucs_status_t ucp_rndv_key_pack(ucp_worker_h worker, void *buffer, size_t length,
                               uct_mem_h *memh_p, void *key, uint32_t *len_p);
void ucp_rndv_key_release(ucp_worker_h worker, uct_mem_h memh);
size_t ucp_rndv_key_size(ucp_worker_h worker);
/** @a len without the trailing zero bytes of @a key. */
size_t ucp_rndv_key_trim(const void *key, size_t len);
/** Whether a key we packed would import on a peer (cuda_ipc packs memory it
 *  cannot export as "not exportable"); answered from the worker's cache of
 *  its own keys, so asking again for the same buffer is a lookup. */
int ucp_rndv_key_exportable(ucp_worker_h worker, const void *key, size_t key_len);
/** Whether the peer's key @a peer_key (from @a ep) unpacks here and names
 *  memory on the same physical device as our own key @a own_key; 0 when
 *  either key does not say which device (uct_rkey_device_id()). */
int ucp_rndv_key_same_device(ucp_ep_h ep, const void *peer_key, size_t peer_len,
                             const void *own_key, size_t own_len);

/** A cache of keys unpacked with @a component, whose packed keys take at
 *  most @a key_size bytes; NULL without component or memory. */
ucp_rndv_key_cache_t *ucp_rndv_key_cache_create(uct_component_h component,
                                                size_t key_size);
/** Release every rkey and the cache (NULL is ignored). */
void ucp_rndv_key_cache_destroy(ucp_rndv_key_cache_t *cache);
/**
 * The unpacked form of @a key (@a key_len bytes, trailing zeros may be
 * cut): a hit when the same bytes were unpacked before, else unpacked now
 * (zero-padded to key_size). Returns the unpack's answer (cached as well:
 * UCS_ERR_UNREACHABLE for a key that does not import here);
 * UCS_ERR_UNREACHABLE for an empty or oversized key. *@a rkey_p is valid
 * until the next call on this cache.
 */
ucs_status_t ucp_rndv_key_cache_get(ucp_rndv_key_cache_t *cache, const void *key,
                                    size_t key_len, uct_rkey_t *rkey_p);
void ucp_rndv_key_cache_stats(const ucp_rndv_key_cache_t *cache,
                              ucp_rndv_key_cache_stats_t *stats);
/** The cache of @a ep's peer's keys (created on first use; NULL without
 *  cuda_ipc or memory); freed with the ep. */
ucp_rndv_key_cache_t *ucp_rndv_ep_keys(ucp_ep_h ep);

/** One asynchronous copy (get, put, fragment staging); its completion is
 *  handed to ucp_rndv_progress() through the worker's done list. */
typedef struct ucp_rndv_op ucp_rndv_op_t;
typedef void (*ucp_rndv_op_cb_t)(ucp_rndv_op_t *op);

struct ucp_rndv_op {
    uct_completion_t     comp;
    ucs_list_link_t      list;
    ucp_worker_h         worker;
    ucp_rndv_op_cb_t     cb;      /* called from progress, state may be gone */
    uint64_t             id;      /* local state */
    uint64_t             remote_id;
    uint64_t             peer_uuid;
    size_t               offset;
    size_t               length;
    uint32_t             frag_index;
    struct ucp_rndv_frag *frag;
    uct_rkey_bundle_t    rkey;           /* the peer's key, while in use */
    uct_component_h      rkey_component; /* that unpacked it; NULL: none */
    ucs_list_link_t      free_link; /* on the worker's free list */
};

ucp_rndv_op_t *ucp_rndv_op_new(ucp_worker_h worker, uint64_t id,
                               ucp_rndv_op_cb_t cb);
/** Account for the op's start result: UCS_OK runs the callback from the
 *  next progress, UCS_INPROGRESS waits for the transport, an error frees
 *  the op and is returned. */
ucs_status_t ucp_rndv_op_started(ucp_rndv_op_t *op, ucs_status_t status);
/** Give the op back to the worker's free list. */
void ucp_rndv_op_free(ucp_rndv_op_t *op);
/** Look @a key up in @a ep's key cache and start a put (@a is_put) or get
 *  of [buffer, +length) with remote_addr over its rma lane; as
 *  ucp_rndv_op_started() (the op is freed on error). UCS_ERR_UNREACHABLE:
 *  the key does not import here; UCS_ERR_IO_ERROR: the import failed. */
ucs_status_t ucp_rndv_op_zcopy(ucp_rndv_op_t *op, ucp_ep_h ep, void *buffer,
                               size_t length, uint64_t remote_addr,
                               const void *key, size_t key_len, int is_put);

/** Warn once per process that an import failed and staging took over. */
void ucp_rndv_warn_import_failed(ucs_status_t status);

/* ---- ucp_rndv_host.c: the host-memory lane ------------------------------ */

/** A transport that reads a peer's host memory for rendezvous: either an
 *  iface of its own (cma: eps get their own uct ep on it) or a messaging
 *  network iface that offers get zcopy itself (tcp: the messaging ep reads). */
typedef struct ucp_rndv_host_lane {
    const ucp_worker_iface_t *wiface;
    uct_md_h                 md;        /* registers and packs our keys */
    uct_component_h          component; /* unpacks the peer's */
    size_t                   key_size;
    int                      own_eps;   /* eps connect their own uct ep */
} ucp_rndv_host_lane_t;

/** Whether a resource's md fits a rendezvous lane. */
typedef int (*ucp_rndv_md_fits_func_t)(const uct_md_attr_t *attr);

/**
 * Open, into @a best, the rendezvous lane of the highest bandwidth among the
 * resources that no other iface of @a worker uses, whose md @a md_fits and
 * whose iface has every capability flag of @a needed; @a best->iface is NULL
 * when none does.
 */
void ucp_rndv_lane_select(ucp_worker_h worker, ucp_rndv_md_fits_func_t md_fits,
                          uint64_t needed, ucp_worker_iface_t *best);

/** Choose and open the host lane (after the messaging ifaces are open). */
void ucp_rndv_host_lane_open(ucp_worker_h worker);
void ucp_rndv_host_lane_close(ucp_worker_h worker);
/** Give @a ep a host lane: an ep of the worker's host lane when the peer's
 *  address has a reachable entry of its transport, else its messaging ep
 *  when that iface reads peers' host memory itself (after its uct_ep). */
void ucp_rndv_host_ep_connect(ucp_ep_h ep, const ucp_unpacked_address_t *addr);
void ucp_rndv_host_ep_cleanup(ucp_ep_h ep);
/** Bytes of a packed key of @a ep's host lane; 0 without one. */
size_t ucp_rndv_host_key_size(ucp_ep_h ep);
/** Register [buffer, +length) with @a ep's host lane md (into *@a md_p and
 *  *@a memh_p) and pack its key into @a key (ucp_rndv_host_key_size()
 *  bytes). */
ucs_status_t ucp_rndv_host_key_pack(ucp_ep_h ep, void *buffer, size_t length,
                                    uct_md_h *md_p, uct_mem_h *memh_p, void *key);
void ucp_rndv_host_key_release(uct_md_h md, uct_mem_h memh);
/** The largest host message @a ep reads (UCX_RNDV_HOST_GET_MAX, auto
 *  resolved by its rails); valid with a host lane. */
size_t ucp_rndv_host_get_max(ucp_ep_h ep);
/** Whether a get of @a length bytes over @a ep's host lane is allowed. */
int ucp_rndv_host_get_fits(ucp_ep_h ep, size_t length);
/** Read [remote_addr, +length) of @a ep's peer, named by @a key, into
 *  @a buffer over the host lane; as ucp_rndv_op_started() (the op is freed
 *  on error). UCS_ERR_UNREACHABLE: the key does not unpack here. */
ucs_status_t ucp_rndv_host_get(ucp_rndv_op_t *op, ucp_ep_h ep, void *buffer,
                               size_t length, uint64_t remote_addr, const void *key,
                               size_t key_len);

/* ---- ucp_rndv_send.c ---------------------------------------------------- */

/** Whether send request @a req (datatype initialised) of @a mem_type takes
 *  rendezvous on @a ep: from the threshold of its kind (ucp_rndv_thresh());
 *  for device memory whether the buffer exports decides between two, and
 *  the key packed to find out is kept for ucp_rndv_send_start of the same
 *  request. */
int ucp_rndv_send_wanted(ucp_ep_h ep, const ucp_request_t *req,
                         ucs_memory_type_t mem_type);
/** Release a key ucp_rndv_send_wanted() kept and nobody took. */
void ucp_rndv_send_key_drop(ucp_worker_h worker);
/** Start the rendezvous of send request @a req (datatype initialised,
 *  staging decided, tag set) on its ep. */
ucs_status_t ucp_rndv_send_start(ucp_request_t *req, ucp_ep_h ep,
                                 ucs_memory_type_t mem_type, int sync);
/** Device pieces of the pipeline: aligned, and not smaller than this
 *  unless the fragment is (UCX_RNDV_FRAG_SIZE). */
#define UCP_RNDV_PIECE_ALIGN (64ul * 1024)
#define UCP_RNDV_PIECE_MIN   (1ul << 20)
/** Bytes a message of @a length puts in each device fragment of
 *  @a frag_size bytes with @a depth fragments in flight. */
size_t ucp_rndv_send_piece_size(size_t length, size_t frag_size, unsigned depth);
/** Bytes of the piece at @a offset of a @a length-byte message read
 *  through host fragments of @a frag_size bytes: @a ramp for the first,
 *  doubling up to @a frag_size, and halving back towards the end, so
 *  that the copies before the first read and after the last are short
 *  (UCX_RNDV_PIPELINE_HOST_GET_RAMP; 0: whole fragments). */
size_t ucp_rndv_ramp_piece_size(size_t offset, size_t length, size_t frag_size,
                                size_t ramp);
/** Sender: resume a request that waited for a fragment. */
void ucp_rndv_send_resume(ucp_rndv_req_t *rreq);
/** Sender: whether @a ep can stage device data of @a rreq in host
 *  fragments that the peer reads over the host lane. */
int ucp_rndv_send_can_host_frag(ucp_rndv_req_t *rreq, ucp_ep_h ep);
/** Sender's handlers: RTR, ATS, FRAG_ACK. */
ucs_status_t ucp_rndv_am_rtr(void *arg, void *data, size_t length, unsigned flags);
ucs_status_t ucp_rndv_am_ats(void *arg, void *data, size_t length, unsigned flags);
ucs_status_t ucp_rndv_am_frag_ack(void *arg, void *data, size_t length,
                                  unsigned flags);

/* ---- ucp_rndv_recv.c ---------------------------------------------------- */

/** A matched receive for the RTS message @a rts (of @a len bytes). */
void ucp_rndv_recv_start(ucp_request_t *req, const void *rts, size_t len);
/** Receiver: give the sender's fragment @a frag_index of request @a sreq_id
 *  back (FRAG_ACK), with the status of its read. */
void ucp_rndv_recv_frag_ack(ucp_worker_h worker, uint64_t peer_uuid, uint64_t sreq_id,
                            uint32_t frag_index, ucs_status_t status);
/** Receiver: tell the sender (ATS) and complete the request. */
void ucp_rndv_recv_done(ucp_rndv_req_t *rreq, ucs_status_t status);
/** Receiver: a read of the sender's host buffer failed; stop reading from
 *  that peer and ask for the whole message as data messages. */
void ucp_rndv_recv_read_failed(ucp_rndv_req_t *rreq, ucs_status_t status);
/** Receiver's handlers: ATP, FRAG, DATA (RTS is matched in ucp_tag_recv.c). */
ucs_status_t ucp_rndv_am_atp(void *arg, void *data, size_t length, unsigned flags);
ucs_status_t ucp_rndv_am_frag(void *arg, void *data, size_t length, unsigned flags);
ucs_status_t ucp_rndv_am_data(void *arg, void *data, size_t length, unsigned flags);

/* ---- ucp_rndv_hread.c: device data read through host fragments ---------- */

/** Receiver: whether @a rreq (contiguous, not host to host) can take its
 *  data by reads over @a ep's host lane through host fragments: the peer is
 *  reached over a host lane and no device lane. */
int ucp_rndv_hread_possible(ucp_rndv_req_t *rreq, ucp_ep_h ep);
/** Receiver, device buffer, sender's host buffer named by @a key: read it
 *  piece by piece into host fragments and copy each to the device; ATS at
 *  the end. UCS_OK when started (the request is ours from then on). */
ucs_status_t ucp_rndv_hread_start(ucp_rndv_req_t *rreq, const ucp_rndv_rts_t *rts,
                                  const void *key);
/** Receiver, mode UCP_RNDV_RTR_PIPE_HOST_GET: read the sender's fragment
 *  of @a msg (key after it, checked by the caller) into our buffer, through
 *  a host fragment of ours when the buffer is on a device. */
void ucp_rndv_hread_frag(ucp_rndv_req_t *rreq, const ucp_rndv_frag_msg_t *msg,
                         const void *key);
/** Receiver: resume a staged read that waited for a fragment. */
void ucp_rndv_hread_resume(ucp_rndv_req_t *rreq);
/** Receiver: drop what a staged read still holds (request completing). */
void ucp_rndv_hread_release(ucp_rndv_req_t *rreq);

/* ---- ucp_rndv_frag.c: fragment pools ------------------------------------ */

typedef struct ucp_rndv_frag {
    ucs_list_link_t          list;     /* free list */
    struct ucp_rndv_frag_slab *slab;
    void                     *address;
    size_t                   size;
    uint32_t                 index;    /* in its pool */
    ucs_memory_type_t        mem_type;
    uint64_t                 owner;    /* request id using it, 0 when free */
    size_t                   used;     /* bytes of the message it carries */
} ucp_rndv_frag_t;

/** The GPU holding @a buffer as a system device (one memory-type lookup);
 *  UCS_SYS_DEVICE_ID_UNKNOWN for NULL, host memory, no cuda_cpy md, or a
 *  device without a PCI bus id. */
ucs_sys_device_t ucp_rndv_buffer_gpu(ucp_worker_h worker, const void *buffer);
/** The GPU of @a rreq's buffer, looked up once per request. */
ucs_sys_device_t ucp_rndv_req_gpu(ucp_rndv_req_t *rreq);
/** A free fragment of @a mem_type from the pool of GPU @a gpu (the GPU of the
 *  buffer the fragment stages for; UNKNOWN: a pool of no GPU), growing it up
 *  to UCX_RNDV_FRAG_POOL_SIZE; NULL when it is dry or the memory cannot be
 *  had. CUDA: cuMemAlloc memory on that GPU, exportable by cuda_ipc. HOST:
 *  placed on the NUMA node nearest that GPU and pinned when cuda_copy is
 *  there. */
ucp_rndv_frag_t *ucp_rndv_frag_get(ucp_worker_h worker, ucs_memory_type_t mem_type,
                                   ucs_sys_device_t gpu, uint64_t owner);
/** As ucp_rndv_frag_get(), from a pool of its own when @a recv: what a
 *  receiver stages its reads in. Its fragments come back once a local copy
 *  ends, while a sender's wait for the peer's read: sharing one pool, two
 *  workers sending to each other could each hold every fragment for sends
 *  and wait for the other's reads, which wait for a fragment. */
ucp_rndv_frag_t *ucp_rndv_frag_get_recv(ucp_worker_h worker, ucs_memory_type_t mem_type,
                                        ucs_sys_device_t gpu, uint64_t owner, int recv);
/** The PCI address of GPU @a gpu as a nonzero 32-bit tag (domain, bus,
 *  slot, function) that another process on the node derives the same way,
 *  whatever its device numbering; 0 when unknown. */
uint32_t ucp_rndv_gpu_tag(ucs_sys_device_t gpu);
/* ---- ucp_rndv_stage.c: device data as AM through two host fragments ----- */

/** Sender, device data: the current host fragment (rreq->stage) has gone
 *  out; make the next piece of the message the current one, and start the
 *  copy of the piece after it into the other fragment when there is one. */
ucs_status_t ucp_rndv_stage_send_next(ucp_rndv_req_t *rreq);
/** Receiver, device buffer: rreq->stage holds the data for
 *  rreq->next_offset onwards; copy it to the device, in the background
 *  unless @a last (the data must then be in place on return) or no second
 *  fragment is free. */
ucs_status_t ucp_rndv_stage_recv_flush(ucp_rndv_req_t *rreq, int last);
/** Give back both host fragments, after a copy still in flight ended. */
void ucp_rndv_stage_release(ucp_rndv_req_t *rreq);

/** Give a fragment back and wake a waiter. */
void ucp_rndv_frag_put(ucp_worker_h worker, ucp_rndv_frag_t *frag);
/** Whether others than the request that holds @a held fragments of the
 *  pool of @a frag (and has just taken @a frag) hold fragments of that pool,
 *  or any request waits for a fragment. */
int ucp_rndv_frag_shared(ucp_worker_h worker, const ucp_rndv_frag_t *frag,
                         unsigned held);
/** The fragment of @a mem_type @a index owned by @a owner, or NULL (the
 *  index names the GPU's pool and the fragment in it). An index from a peer
 *  is checked, not trusted. */
ucp_rndv_frag_t *ucp_rndv_frag_find(ucp_worker_h worker, ucs_memory_type_t mem_type,
                                    uint32_t index, uint64_t owner);
/** Packed cuda_ipc key of the slab of a CUDA fragment. */
const void *ucp_rndv_frag_key(const ucp_rndv_frag_t *frag, size_t *len_p);
/** Packed key of the slab of a host fragment for @a ep's host lane (the
 *  slab is registered with its md on first use); NULL when it cannot be. */
const void *ucp_rndv_frag_host_key(const ucp_rndv_frag_t *frag, ucp_ep_h ep,
                                   size_t *len_p);
/** Host fragment: the NUMA node nearest its GPU (UCS_NUMA_NODE_UNKNOWN when
 *  not known); @a placed_p (may be NULL): that node if the kernel accepted
 *  the placement of its pages, else UCS_NUMA_NODE_UNKNOWN. (Tests.) */
int ucp_rndv_frag_numa_node(const ucp_rndv_frag_t *frag, int *placed_p);
/** Whether the fragment's memory is pinned or device memory of cuda_cpy
 *  (a registration the md accepted). (Tests.) */
int ucp_rndv_frag_pinned(const ucp_rndv_frag_t *frag);
/** Wait for a fragment: @a rreq's resume function runs when one is free. */
void ucp_rndv_frag_wait(ucp_worker_h worker, ucp_rndv_req_t *rreq);
void ucp_rndv_frag_unwait(ucp_worker_h worker, ucp_rndv_req_t *rreq);
/** Resume waiters while fragments are free. */
unsigned ucp_rndv_frag_progress(ucp_worker_h worker);
/** Whether fragments of @a mem_type can exist on this worker for staging
 *  data of GPU @a gpu (device fragments live on it; a GPU whose fragments
 *  could not be allocated has none). */
int ucp_rndv_frag_supported(ucp_worker_h worker, ucs_memory_type_t mem_type,
                            ucs_sys_device_t gpu);
void ucp_rndv_frag_cleanup(ucp_worker_h worker);
/** Fragments handed out (tests, diagnostics). */
unsigned ucp_rndv_frag_in_use(ucp_worker_h worker);

END_C_DECLS

#endif
