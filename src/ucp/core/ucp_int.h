/**
 * @file ucp_int.h
 * Private objects of libucp: context, worker, endpoint, request, receive
 * descriptor, datatype state, and the prototypes that tie the files of
 * src/ucp together. Nothing here is visible to applications.
 *
 * Locking: every public entry point that touches a worker takes the worker
 * lock (a recursive mutex, used only in UCS_THREAD_MODE_MULTI), so code below
 * the API runs single-threaded per worker; transport callbacks run from
 * ucp_worker_progress() with the lock held.
 */
#ifndef UCP_INT_H_
#define UCP_INT_H_

#include <ucp/api/ucp.h>
#include <ucp/core/ucp_config.h>
#include <ucp/core/ucp_proto_query.h> /* ucp_proto_info_print */
#include <ucp/core/ucp_proto_stats.h>
#include <ucp/rndv/ucp_rndv_model.h> /* ucp_rndv_kind_t */
#include <uct/api/uct.h>
#include <ucs/datastruct/list.h>
#include <ucs/datastruct/queue.h>
#include <ucs/debug/log.h>

#include <pthread.h>

BEGIN_C_DECLS

/* ---- context ------------------------------------------------------------ */

/** A memory domain the context opened. */
typedef struct ucp_md_entry {
    uct_component_h component;
    char            component_name[UCT_COMPONENT_NAME_MAX];
    char            md_name[UCT_MD_NAME_MAX];
    uct_md_h        md;
    uct_md_attr_t   attr;
} ucp_md_entry_t;

/** A transport resource selected by UCX_TLS. */
typedef struct ucp_tl_rsc {
    unsigned               md_index;
    uct_tl_resource_desc_t desc;
} ucp_tl_rsc_t;

/** Memory-type lookup hook: a later CUDA layer replaces the host default. */
typedef ucs_memory_type_t (*ucp_memtype_lookup_func_t)(const void *buffer,
                                                       size_t length);

struct ucp_context {
    uint64_t                       features;
    size_t                         user_req_size;
    ucp_request_init_callback_t    req_init;
    ucp_request_cleanup_callback_t req_cleanup;
    uint64_t                       tag_sender_mask;
    int                            mt_shared;
    char                           name[UCP_ENTITY_NAME_MAX];
    ucp_md_entry_t                 *mds;
    unsigned                       num_mds;
    ucp_tl_rsc_t                   *rscs;
    unsigned                       num_rscs;
    ucp_memtype_lookup_func_t      memtype_lookup;
    int                            proto_info;
    uint64_t                       keepalive_ns; /* UCX_KEEPALIVE_INTERVAL;
                                                    0: no idle probes */
    unsigned                       keepalive_num_eps;
    uint64_t                       keepalive_timeout_ns; /* UCX_KEEPALIVE_TIMEOUT;
                                                            0: inf */
    ucp_rndv_config_t              rndv;         /* UCX_RNDV_* */
    uct_md_h                       mt_detect_md; /* cuda_cpy opened only to
                                                    detect device memory */
    uct_md_h                       mt_fence_md;  /* orders requests after the
                                                    device work queued for
                                                    their memory, or NULL */
};

/* ---- requests ----------------------------------------------------------- */

enum {
    UCP_REQ_FLAG_COMPLETED      = UCS_BIT(0),
    UCP_REQ_FLAG_RELEASED       = UCS_BIT(1), /* the user freed it */
    UCP_REQ_FLAG_EXTERNAL       = UCS_BIT(2), /* user-provided memory */
    UCP_REQ_FLAG_CB_SEND        = UCS_BIT(3),
    UCP_REQ_FLAG_CB_SEND_NBX    = UCS_BIT(4),
    UCP_REQ_FLAG_CB_RECV        = UCS_BIT(5),
    UCP_REQ_FLAG_CB_RECV_NBX    = UCS_BIT(6),
    UCP_REQ_FLAG_IN_CALL        = UCS_BIT(7), /* starting call still running */
    UCP_REQ_FLAG_EXPECTED       = UCS_BIT(8), /* in the expected queue */
    UCP_REQ_FLAG_SYNC           = UCS_BIT(9),
    UCP_REQ_FLAG_SYNC_ACKED     = UCS_BIT(10),
    UCP_REQ_FLAG_LOCAL_DONE     = UCS_BIT(11),
    UCP_REQ_FLAG_IN_SYNC_LIST   = UCS_BIT(12),
    UCP_REQ_FLAG_RECV           = UCS_BIT(13),
    UCP_REQ_FLAG_INTERNAL       = UCS_BIT(14), /* no user ever sees it */
    UCP_REQ_FLAG_FLUSH_DONE     = UCS_BIT(15),
    UCP_REQ_FLAG_CB_RECV_STREAM = UCS_BIT(16), /* cb.recv_stream (nbx) */
    UCP_REQ_FLAG_CB_RECV_AM     = UCS_BIT(17), /* cb.recv_am */
    UCP_REQ_FLAG_CB_STREAM_OLD  = UCS_BIT(18), /* cb.stream_old */
    UCP_REQ_FLAG_RECV_LENGTH    = UCS_BIT(19), /* reports a length, not tag
                                                  info (stream, AM data) */
    UCP_REQ_FLAG_DEFERRED = UCS_BIT(20),       /* a send posted while its ep
                                                  was connecting */
    UCP_REQ_FLAG_DEFERRED_SYNC = UCS_BIT(21),  /* ... a sync one */
    UCP_REQ_FLAG_FREE          = UCS_BIT(22)   /* back in the worker's pool */
};

/* What a send carries (ucp_send_msg_t::kind). */
enum {
    UCP_SEND_KIND_TAG    = 0,
    UCP_SEND_KIND_AM     = 1,
    UCP_SEND_KIND_STREAM = 2
};

/* How an active message's data travels (ucp_send_msg_t::proto). */
enum {
    UCP_SEND_PROTO_AUTO  = 0,
    UCP_SEND_PROTO_EAGER = 1,
    UCP_SEND_PROTO_RNDV  = 2
};

/*
 * The first word of an AM or stream message (in place of a tag): the user
 * header's length (bits 0-31), the AM id (32-47), send flags (48-55:
 * UCP_AM_SEND_FLAG_REPLY) and, for stream bytes, bit 63.
 */
/* ucp_worker_progress() runs its housekeeping (queued sends, rendezvous
 * completions, probes, error handlers) at least once in this many calls
 * (a power of 2), and whenever there may be something for it. */
#define UCP_WORKER_HOUSEKEEPING_PERIOD 16

#define UCP_AM_WORD(_id, _hdr_len, _flags) \
    (((uint64_t)(_hdr_len) & 0xffffffffull) | ((uint64_t)((_id) & 0xffff) << 32) | \
     ((uint64_t)((_flags) & 0xff) << 48))
#define UCP_AM_WORD_STREAM          (1ull << 63)
#define UCP_AM_WORD_HDR_LEN(_w)     ((size_t)((_w) & 0xffffffffull))
#define UCP_AM_WORD_ID(_w)          ((unsigned)(((_w) >> 32) & 0xffff))
#define UCP_AM_WORD_FLAGS(_w)       ((unsigned)(((_w) >> 48) & 0xff))
#define UCP_AM_ID_LIMIT             65536u

/** Where a datatype operation stands (contig, iov or generic). */
typedef struct ucp_dt_state {
    void           *buffer;
    size_t         count;
    ucp_datatype_t datatype;
    size_t         length;       /* packed length (capacity for receives) */
    void           *generic;     /* generic datatype state, or NULL */
} ucp_dt_state_t;

typedef struct ucp_request ucp_request_t;

/** Moves a queued request forward on its endpoint: UCS_OK when finished
 *  (it leaves the queue), UCS_INPROGRESS to be called again, 
 *  UCS_ERR_NO_RESOURCE to wait for the transport, or an error. */
typedef ucs_status_t (*ucp_req_progress_func_t)(ucp_request_t *req);

struct ucp_request {
    uint32_t                flags;
    ucs_status_t            status;
    union {
        ucp_send_callback_t         send;
        ucp_send_nbx_callback_t     send_nbx;
        ucp_tag_recv_callback_t     recv;
        ucp_tag_recv_nbx_callback_t recv_nbx;
        ucp_stream_recv_nbx_callback_t recv_stream;
        ucp_stream_recv_callback_t  stream_old;
        ucp_am_recv_data_nbx_callback_t recv_am;
    } cb;
    void                    *user_data;
    ucp_worker_h            worker;
    ucp_ep_h                ep;
    ucp_req_progress_func_t progress;
    ucs_queue_elem_t        queue;     /* ep send queue */
    ucs_list_link_t         list;      /* expected queue, sync list, free list */
    ucp_dt_state_t          dt;
    void                    *bounce;     /* host staging of device data */
    void                    *dev_buffer; /* receive: the device buffer */
    ucs_memory_type_t       mem_type;    /* of the user's buffer */
    struct ucp_rndv_req     *rndv;       /* rendezvous in progress */
    void                    *owned;      /* malloc'ed memory of the request
                                            (an AM's user header), freed at
                                            completion */
    union {
        struct {
            ucp_tag_t tag;
            size_t    offset;
            uint64_t  msg_id;
            uint64_t  sync_id;
            /* AM and stream: the user header goes in front of the data;
             * offset counts it. */
            const void *prefix;
            size_t    prefix_len;
            uint64_t  dest_ep;   /* the receiver's ep id, 0: unknown */
            uint8_t   kind;      /* UCP_SEND_KIND_* */
            uint8_t   proto;     /* UCP_SEND_PROTO_* */
        } send;
        struct {
            ucp_tag_t           tag;
            ucp_tag_t           tag_mask;
            ucp_tag_recv_info_t info;
            size_t              stream_filled; /* stream: bytes placed */
            /* stream into staged device memory: bytes [0, dev_done) are in
             * the device buffer (rendezvous wrote there), the rest of the
             * filled bytes in the bounce buffer */
            size_t              stream_dev_done;
            /* stream: rendezvous fetches into this receive in flight; its
             * bytes [0, filled) are all there when it is 0 */
            uint32_t            stream_pending;
            uint32_t            stream_flags;  /* UCP_STREAM_RECV_FLAG_* */
        } recv;
        struct {
            ucp_request_t    *parent;   /* worker flush waiting for us */
            unsigned         pending;   /* children not yet done */
            uct_completion_t comp;
            int              close;     /* destroy the ep when done */
            uint64_t         ack_id;    /* a sync ack to send */
            const void       *blob;     /* wireup: our address */
            size_t           blob_len;
            uint64_t         rma_wait;  /* flush: RMA replies to wait for */
        } ctrl;
        struct {
            uint64_t      id;          /* worker-unique, echoed by replies */
            uint64_t      remote_addr;
            uint64_t      rkey_id;     /* the target's region identity */
            size_t        sent;        /* bytes (fragments) sent so far */
            size_t        replied;     /* get: bytes answered */
            unsigned      pending;     /* replies still expected */
            uint8_t       kind;        /* UCP_RMA_KIND_* (ucp_rma.h) */
            uint8_t       opcode;      /* atomics: UCP_ATOMIC_OP_* */
            uint8_t       op_size;     /* atomics: 4 or 8 */
            uint8_t       in_queue;    /* still sending (in the ep queue) */
            uint64_t      value;       /* atomics: the operand */
            uint64_t      swap;        /* atomics: CSWAP's new value */
            void          *result;     /* atomics: where the old value goes */
        } rma;
    } u;
} __attribute__((aligned(16)));

/* ---- receive descriptors ------------------------------------------------ */

/** A message that arrived before a receive matched it, or one whose
 *  fragments are still arriving. */
struct ucp_recv_desc {
    ucs_list_link_t list;     /* unexpected queue */
    ucs_list_link_t rx_link;  /* in-flight fragmented messages */
    ucp_tag_t       tag;
    size_t          length;   /* message length */
    size_t          received; /* bytes arrived so far */
    uint64_t        uuid;     /* sender worker */
    uint64_t        msg_id;
    uint64_t        sync_id;  /* 0: not a sync send */
    int             in_unexp;
    int             in_rx;
    int             is_rndv;  /* data holds the RTS message (ucp_rndv.h) */
    int             is_am;    /* UCP_RDESC_AM: an AM being reassembled
                                 (ucp_am.c), data is its block;
                                 UCP_RDESC_STREAM: stream bytes, each
                                 fragment goes to the ep at once */
    char            *data;    /* while unmatched */
    ucp_request_t   *req;     /* once matched */
};

enum {
    UCP_RDESC_AM     = 1,
    UCP_RDESC_STREAM = 2
};

/* ---- worker and endpoints ----------------------------------------------- */

typedef struct ucp_worker_iface {
    ucp_worker_h     worker;
    unsigned         rsc_index;
    uct_iface_h      iface;
    uct_iface_attr_t attr;
} ucp_worker_iface_t;

enum {
    UCP_EP_FLAG_INTERNAL     = UCS_BIT(0), /* made by a peer's wireup */
    UCP_EP_FLAG_FAILED       = UCS_BIT(1),
    UCP_EP_FLAG_CLOSING      = UCS_BIT(2),
    UCP_EP_FLAG_WIREUP_SENT  = UCS_BIT(3),
    UCP_EP_FLAG_NOTIFY       = UCS_BIT(4), /* in the worker's notify list */
    UCP_EP_FLAG_IN_PROGRESS  = UCS_BIT(5), /* send queue being processed */
    UCP_EP_FLAG_PENDING      = UCS_BIT(6), /* uct pending request added */
    UCP_EP_FLAG_READY        = UCS_BIT(7), /* in the worker's ready list */
    UCP_EP_FLAG_CONNECTING   = UCS_BIT(8)  /* client/server handshake not
                                              done: no lanes yet, sends wait
                                              in the queue (ucp_sockaddr.c) */
};

struct ucp_ep {
    ucp_worker_h            worker;
    ucs_list_link_t         link;         /* worker's ep list */
    ucs_list_link_t         notify_link;
    ucs_list_link_t         ready_link;   /* worker's ready list */
    unsigned                flags;
    ucs_status_t            status;
    uct_ep_h                uct_ep;
    ucp_worker_iface_t      *wiface;
    uct_ep_h                rma_ep;       /* cuda_ipc to the peer, or NULL */
    uct_ep_h                host_rma_ep;  /* host rendezvous lane, or NULL;
                                             may be uct_ep itself */
    const struct ucp_rndv_host_lane *host_lane; /* what host_rma_ep is */
    unsigned                num_host_rails; /* eps of host_rails[] in use */
    struct {
        uct_ep_h                 ep;     /* to the peer over another device */
        const ucp_worker_iface_t *wiface;
    } host_rails[UCP_MAX_RAILS - 1];     /* more lanes for host reads, with
                                            host_lane's keys (rndv_host.c) */
    struct ucp_rndv_key_cache *rndv_keys; /* the peer's unpacked cuda_ipc keys */
    uint64_t                remote_uuid;
    size_t                  max_short;    /* eager payload via am_short */
    size_t                  max_bcopy;    /* am_bcopy segment */
    size_t                  rndv_thresh[UCP_RNDV_KIND_LAST]; /* by sender kind:
                                             ucp_rndv_thresh() */
    size_t                  rndv_host_get_max;   /* host data above this is not
                                                    read over the host lane */
    size_t                  rndv_host_after_get; /* ...and takes rendezvous
                                                    from this size only */
    ucp_err_handling_mode_t err_mode;
    ucp_err_handler_cb_t    err_cb;
    void                    *err_arg;
    void                    *user_data;
    ucs_queue_head_t        send_q;
    uct_pending_req_t       pending;
    uint64_t                next_keepalive_ns;
    uint64_t                next_idle_keepalive_ns; /* UCX_KEEPALIVE_INTERVAL */
    struct {
        int                 pid;        /* the peer's process on this host,
                                           0: not watched (ucp_keepalive.c) */
        unsigned long long  start_time; /* its /proc start time */
        uint64_t            stopped_ns; /* when first seen stopped, or 0 */
        uint64_t            checked_ns; /* our last look */
    } peer;
    uint64_t                local_id;     /* names this ep to the peer */
    uint64_t                remote_ep_id; /* the peer's ep, 0: unknown */
    struct ucp_conn_request *sa;          /* client/server connection, or
                                             NULL */
    struct {
        ucs_list_link_t     data;     /* received chunks (ucp_stream.c) */
        ucs_list_link_t     held;     /* chunks lent by recv_data_nb */
        ucs_list_link_t     fetches;  /* chunks fetched into a receive */
        ucs_list_link_t     reqs;     /* posted receives */
        size_t              queued;   /* bytes in data */
    } stream;
    struct {
        uint64_t            issued;   /* operations that expect a reply */
        uint64_t            replied;
        ucs_status_t        status;   /* first failure of an nbi operation */
        ucs_list_link_t     flushes;  /* flushes waiting for replies */
    } rma;
    char                    name[UCP_ENTITY_NAME_MAX];
};

struct ucp_worker {
    ucp_context_h      context;
    ucs_thread_mode_t  thread_mode;
    pthread_mutex_t    lock;
    int                mt;
    uint64_t           uuid;
    uct_worker_h       uct_worker;
    ucp_worker_iface_t *ifaces;
    unsigned           num_ifaces;
    ucs_list_link_t    eps;
    ucs_list_link_t    zombies;      /* closed eps to destroy */
    ucs_list_link_t    ready;        /* eps whose transport has room again */
    ucs_list_link_t    notify;       /* failed eps whose handler is due */
    ucs_list_link_t    expected;
    ucs_list_link_t    unexpected;
    ucs_list_link_t    rx_inflight;
    ucs_list_link_t    sync_reqs;
    ucs_list_link_t    free_reqs;
    ucs_list_link_t    rma_reqs;     /* RMA operations awaiting replies */
    uint64_t           rma_next_id;
    uint64_t           rma_keepalive_ns; /* next probe of RMA targets and of
                                            peers of stream receives */
    unsigned           stream_waiting;   /* stream receives posted */
    uint64_t           idle_keepalive_ns; /* next round of idle probes */
    unsigned           keepalive_calls;  /* progress calls, to read the
                                            clock only now and then */
    int                housekeeping_due; /* work queued for the next
                                            progress call's housekeeping */
    unsigned           rounds;           /* progress calls (housekeeping) */
    int armed;                           /* ucp_worker_arm told the caller
                                            to sleep; no progress since */
    unsigned           live_reqs;    /* allocated and not given back */
    uint64_t           next_msg_id;
    uint64_t           next_sync_id;
    int                epfd;
    int                signal_fd;
    int                wakeup;
    int                destroying;   /* no more callbacks */
    int                user_event_fd;
    uint64_t           flags;
    void               *user_data;
    char               name[UCP_ENTITY_NAME_MAX];
    void               *address;     /* our packed address, for wireup */
    size_t             address_len;
    uct_iface_h mt_iface; /* copies between host and device
                             memory (ucp_memtype.c) */
    uct_ep_h           mt_ep;
    unsigned mt_rsc_index;             /* mt_iface's resource (its md:
                                          fragment memory) */
    ucp_worker_iface_t rma_iface;      /* reads and writes peers' device memory
                                          for rendezvous (iface NULL when no
                                          transport does) */
    ucp_worker_iface_t host_rma_iface; /* reads peers' host memory for
                                          rendezvous (ucp_rndv_host.c);
                                          iface NULL when none */
    struct ucp_rndv_worker *rndv;    /* rendezvous state (ucp_rndv.h) */
    struct ucp_am_handler  *am_handlers; /* by id (ucp_am.c) */
    unsigned           num_am_handlers;
    size_t             max_am_header;
    uint64_t           next_ep_id;
    struct ucp_sa_worker *sa;        /* listeners and handshakes, or NULL */
    uint64_t           client_id;    /* UCP_WORKER_PARAM_FIELD_CLIENT_ID */
    uint64_t           proto_stats[UCP_PROTO_STAT_LAST];
};

static inline void ucp_worker_lock(ucp_worker_h worker)
{
    if (worker->mt) {
        pthread_mutex_lock(&worker->lock);
    }
}

void ucp_worker_wake_armed(ucp_worker_h worker);

static inline void ucp_worker_unlock(ucp_worker_h worker)
{
    /* A call from another thread than the one sleeping on the armed fd may
     * have queued work that only progress does (a rendezvous read that
     * completed inside the call, a send that found no room): nothing else
     * would wake the sleeper. */
    if (ucs_unlikely(worker->armed)) {
        ucp_worker_wake_armed(worker);
    }
    if (worker->mt) {
        pthread_mutex_unlock(&worker->lock);
    }
}

/* ---- active message ids ------------------------------------------------- */

enum {
    UCP_AM_ID_EAGER_ONLY = 1,  /* [tag][data] */
    UCP_AM_ID_EAGER_SYNC,      /* [tag][uuid][sync_id][data] */
    UCP_AM_ID_EAGER_FIRST,     /* [tag][uuid][msg_id][length][sync_id][data] */
    UCP_AM_ID_EAGER_MIDDLE,    /* [uuid][msg_id][offset][data] */
    UCP_AM_ID_SYNC_ACK,        /* [sync_id] */
    UCP_AM_ID_WIREUP,          /* [uuid][address] */
    UCP_AM_ID_KEEPALIVE,       /* nothing */
    /* Rendezvous (src/ucp/rndv): formats in ucp_rndv.h. */
    UCP_AM_ID_RNDV_RTS,
    UCP_AM_ID_RNDV_RTR,
    UCP_AM_ID_RNDV_ATS,
    UCP_AM_ID_RNDV_ATP,
    UCP_AM_ID_RNDV_FRAG,
    UCP_AM_ID_RNDV_FRAG_ACK,
    UCP_AM_ID_RNDV_DATA,
    /* RMA and atomics over active messages (src/ucp/rma): formats in
     * ucp_rma.h. */
    UCP_AM_ID_RMA_PUT,
    UCP_AM_ID_RMA_GET_REQ,
    UCP_AM_ID_RMA_GET_REP,
    UCP_AM_ID_RMA_AMO_REQ,
    UCP_AM_ID_RMA_AMO_REP,
    UCP_AM_ID_RMA_ACK,
    /* Active messages and stream bytes (src/ucp/am, src/ucp/stream). */
    UCP_AM_ID_AM_SINGLE,       /* [word][uuid][dest ep][user hdr][data] */
    UCP_AM_ID_AM_FIRST,        /* [word][uuid][msg_id][length][dest ep]
                                  [user hdr][data]; middles: EAGER_MIDDLE */
    UCP_AM_ID_AM_RTS,          /* RTS, key, [dest ep][user hdr] */
    UCP_AM_ID_LAST
};

#define UCP_EAGER_SYNC_HDR   (3 * sizeof(uint64_t))
#define UCP_EAGER_FIRST_HDR  (5 * sizeof(uint64_t))
/* Set in a sync ack's id when the receiver dropped the message (larger
 * than its UCX_TAG_EAGER_MAX_SIZE): the send fails instead of waiting. */
#define UCP_SYNC_ACK_DROPPED (1ull << 63)
#define UCP_EAGER_MIDDLE_HDR (3 * sizeof(uint64_t))

/* ---- prototypes --------------------------------------------------------- */

/* ucp_request.c */
/** A request for an operation on @a worker: the caller's memory when @a param
 *  has UCP_OP_ATTR_FIELD_REQUEST, else one from the worker's free list (or a
 *  new one, initialised with the context's request_init). NULL: no memory. */
ucp_request_t *ucp_request_get(ucp_worker_h worker,
                               const ucp_request_param_t *param);
/** Give a library-owned request back to the free list (no-op for the
 *  application's memory). */
void ucp_request_put(ucp_request_t *req);
/** Complete an operation once: callback (unless the starting call still
 *  runs, the user freed it, or the worker is being destroyed). */
void ucp_request_complete(ucp_request_t *req, ucs_status_t status);
/** Which member of param->cb an operation takes. */
enum {
    UCP_REQ_CB_SEND        = 0,
    UCP_REQ_CB_TAG_RECV    = 1,
    UCP_REQ_CB_STREAM_RECV = 2,
    UCP_REQ_CB_AM_RECV     = 3
};
/** Take the completion callback (member UCP_REQ_CB_* @a recv of the union)
 *  and user data from @a param. */
void ucp_request_set_callback(ucp_request_t *req,
                              const ucp_request_param_t *param, int recv);
/** A receive's buffer: datatype state, memory type, and for device memory
 *  a host bounce buffer (ucp_memtype_stage_recv()). On error nothing is
 *  left to undo. */
ucs_status_t ucp_request_recv_buffer(ucp_request_t *req, void *buffer, size_t count,
                                     const ucp_request_param_t *param);
/** End of a starting call: NULL/error for an immediate completion (unless
 *  NO_IMM_CMPL), else the request pointer the application sees. */
ucs_status_ptr_t ucp_request_finish_call(ucp_request_t *req,
                                         const ucp_request_param_t *param);
/** The old (pre-nbx) calls: give the request @a ret (what the nbx form
 *  returned) the callback @a cb, or call it at once if the request has
 *  already completed. Returns @a ret. */
ucs_status_ptr_t ucp_request_set_nb_callback(ucp_worker_h worker,
                                             ucs_status_ptr_t ret,
                                             ucp_send_callback_t cb);
/** Free the worker's request objects (request_cleanup on each). */
void ucp_worker_release_requests(ucp_worker_h worker);

/* ucp_dt.c: contig, IOV and generic data at arbitrary packed offsets */
/** Begin using @a buffer as a send (@a recv 0) or receive; sets the length
 *  (the capacity for a receive). */
ucs_status_t ucp_dt_state_init(ucp_dt_state_t *state, const void *buffer,
                               size_t count, ucp_datatype_t datatype, int recv);
/** End of use (generic: finish); safe to call twice. */
void ucp_dt_state_finish(ucp_dt_state_t *state);
/** Pack [offset, offset + length) into @a dest; returns the bytes written. */
size_t ucp_dt_pack(ucp_dt_state_t *state, size_t offset, void *dest,
                   size_t length);
/** Unpack bytes that belong at @a offset; what exceeds the capacity is
 *  dropped (truncation is reported by the caller). */
ucs_status_t ucp_dt_unpack(ucp_dt_state_t *state, size_t offset,
                           const void *src, size_t length);

/* ucp_address.c: the worker address blob */
typedef struct ucp_address_entry {
    char                    tl_name[UCT_TL_NAME_MAX];
    char                    component_name[UCT_COMPONENT_NAME_MAX];
    uint8_t                 dev_type;
    const uct_device_addr_t *dev_addr;   /* points into the blob */
    size_t                  dev_addr_len;
    const uct_iface_addr_t  *iface_addr; /* points into the blob, or NULL */
    size_t                  iface_addr_len;
} ucp_address_entry_t;

#define UCP_ADDRESS_MAX_ENTRIES 64

typedef struct ucp_unpacked_address {
    uint8_t node_id[16];
    uint64_t            uuid;
    uint32_t            pid;
    uint64_t            pid_ns;
    unsigned            num_entries;
    ucp_address_entry_t entries[UCP_ADDRESS_MAX_ENTRIES];
} ucp_unpacked_address_t;

/** Pack the worker's address (UCP_WORKER_ADDRESS_FLAG_* in @a flags) into a
 *  malloc'ed buffer. */
ucs_status_t ucp_address_pack(ucp_worker_h worker, uint32_t flags,
                              void **buffer_p, size_t *length_p);
/** Length a blob claims, read from its header only (the header size when
 *  the header is not sane, for the unpacker to report). */
size_t ucp_address_length(const void *buffer);
/** Check and parse a blob; UCS_ERR_INVALID_ADDR with an error message when
 *  it is truncated or corrupt. Entries point into @a buffer. */
ucs_status_t ucp_address_unpack(const void *buffer, size_t length,
                                ucp_unpacked_address_t *addr);

/* ucp_ep.c */
/** Choose a transport for @a addr and connect (worker lock held). */
ucs_status_t ucp_ep_create_from_address(ucp_worker_h worker,
                                        const ucp_unpacked_address_t *addr,
                                        unsigned ep_flags, int loopback,
                                        ucp_ep_h *ep_p);
/** Append @a req to the ep's ordered send queue and move the queue. */
void ucp_ep_push(ucp_ep_h ep, ucp_request_t *req);
/** Move the send queue; returns non-zero when blocked by the transport. */
int ucp_ep_progress_queue(ucp_ep_h ep);
/** Destroy the eps closed since the last call (outside transport calls). */
void ucp_worker_destroy_zombies(ucp_worker_h worker);
/** Progress the eps whose transport has room again. */
unsigned ucp_worker_progress_ready(ucp_worker_h worker);
/** Fail an ep: its operations complete with @a status; with @a notify, the
 *  user's error handler is called from the next progress. */
void ucp_ep_set_failed(ucp_ep_h ep, ucs_status_t status, int notify);
/** Free an ep and its uct ep now. */
void ucp_ep_destroy_internal(ucp_ep_h ep);
/** A usable ep to the worker @a uuid, or NULL. */
ucp_ep_h ucp_worker_find_ep(ucp_worker_h worker, uint64_t uuid);
/** Acknowledge sync send @a sync_id to the peer of @a ep. */
ucs_status_t ucp_ep_send_ack(ucp_ep_h ep, uint64_t sync_id);
/* ucp_ctrl.c */
/** Send a control message [hdr][data] with active-message id @a am_id on
 *  @a ep: now when its queue is empty, else (or when the transport is busy)
 *  a copy queued behind what is there. UCS_ERR_EXCEEDS_LIMIT when it does
 *  not fit one segment; the ep's status when it failed. */
ucs_status_t ucp_ep_send_ctrl(ucp_ep_h ep, uint8_t am_id, const void *hdr,
                              size_t hdr_len, const void *data, size_t data_len);
/** Queue a flush of @a ep (close: destroy it afterwards); with @a parent it
 *  is an internal child of a worker flush. */
ucs_status_ptr_t ucp_ep_flush_internal(ucp_ep_h ep,
                                       const ucp_request_param_t *param,
                                       ucp_request_t *parent, int close);
/** uct error handler of every iface (arg: the ucp_worker_iface_t). */
/**
 * Open resource @a rsc_index of the worker's context as an iface with
 * @a params (the device fields are filled in) and query it into @a wiface
 * (iface, attr, worker, rsc_index). On failure wiface->iface is NULL.
 */
ucs_status_t ucp_worker_iface_open(ucp_worker_h worker, unsigned rsc_index,
                                   uct_iface_params_t *params,
                                   ucp_worker_iface_t *wiface);

/**
 * The first entry of @a addr that @a wiface can connect to: one of the same
 * transport (the address names the transport that packed it), with address
 * lengths of ours, that the iface calls reachable; NULL when none is.
 */
const ucp_address_entry_t *
ucp_worker_iface_reachable_entry(const ucp_worker_iface_t *wiface,
                                 const ucp_unpacked_address_t *addr);
/** Whether @a wiface reaches the peer's address entry @a e (one test of
 *  ucp_worker_iface_reachable_entry()). */
int ucp_worker_iface_reaches(const ucp_worker_iface_t *wiface,
                             const ucp_address_entry_t *e);

/** An ep of @a wiface to the peer's address entry @a entry (of wiface's
 *  transport). */
ucs_status_t ucp_worker_iface_ep_create(const ucp_worker_iface_t *wiface,
                                        const ucp_address_entry_t *entry, uct_ep_h *ep_p);

/**
 * An ep of @a wiface to the peer of @a addr: through the first entry of
 * the same transport, with addresses of our lengths, that the iface calls
 * reachable. NULL when there is none or the ep cannot be created.
 */
uct_ep_h ucp_worker_iface_connect(const ucp_worker_iface_t *wiface,
                                  const ucp_unpacked_address_t *addr);

ucs_status_t ucp_worker_iface_error(void *arg, uct_ep_h uct_ep,
                                    ucs_status_t status);
/** Probe peers that owe us an acknowledgement (error mode PEER). */
unsigned ucp_worker_keepalive(ucp_worker_h worker);
/** How long ucp_worker_wait() may sleep so that idle PEER-mode endpoints are
 *  still probed (UCX_KEEPALIVE_INTERVAL): ms, or -1 for no limit. */
int ucp_worker_keepalive_wait_ms(ucp_worker_h worker);
/** Probe one peer (UCT_SEND_FLAG_PEER_CHECK); non-zero when that failed the
 *  ep (its requests completed, the worker's lists changed). */
int ucp_ep_keepalive(ucp_ep_h ep);
/** Watch the peer's process when @a addr names one of this host and PID
 *  namespace (ucp_keepalive.c). */
void ucp_ep_peer_watch_init(ucp_ep_h ep, const ucp_unpacked_address_t *addr,
                            int same_host);
/** Look at a watched peer's process: fails the endpoint (and returns 1)
 *  when it has exited, or has been stopped for UCX_KEEPALIVE_TIMEOUT. */
int ucp_ep_peer_watch(ucp_ep_h ep, uint64_t now);

/* tag */
/** Install the tag protocols' active-message handlers on an iface. */
void ucp_tag_set_am_handlers(ucp_worker_iface_t *wiface);
/** Drop queued messages and cancel receives (worker destroy). */
void ucp_tag_worker_cleanup(ucp_worker_h worker);
/** Fail receives of messages still arriving from worker @a uuid. */
void ucp_tag_ep_failed(ucp_worker_h worker, uint64_t uuid, ucs_status_t status);

/* rma (src/ucp/rma) */
/** Install the RMA target and reply handlers on an iface. */
void ucp_rma_set_am_handlers(ucp_worker_iface_t *wiface);
/** New endpoint: no RMA outstanding. */
void ucp_rma_ep_init(ucp_ep_h ep);
/** Fail the RMA operations of a failed ep and resume its parked flushes. */
void ucp_rma_ep_failed(ucp_ep_h ep, ucs_status_t status);
/** A flush of @a req->ep reached the head of the queue: non-zero when RMA
 *  replies are still due (the flush is parked, ucp_ep_flush_resume() is
 *  called once they arrived). */
int ucp_rma_flush_park(ucp_request_t *req);
/** Continue a parked flush (@a status: the RMA outcome). */
void ucp_ep_flush_resume(ucp_request_t *req, ucs_status_t status);
/** ucp_mem_map(): make a region reachable by remote requests; *id_p gets
 *  its identity, carried in packed rkeys. */
ucs_status_t ucp_rma_region_add(ucp_context_h context, void *address,
                                size_t length, ucs_memory_type_t mem_type,
                                uint64_t *id_p);
/** ucp_mem_unmap(): no remote request reaches the region after this. */
void ucp_rma_region_remove(uint64_t id);
/** What an unpacked rkey says about the remote region. */
void ucp_rkey_region(ucp_rkey_h rkey, uint64_t *id_p, uint64_t *address_p,
                     uint64_t *length_p);
/** Tell the peer our address once per ep, so that it can answer. */
ucs_status_t ucp_tag_send_wireup(ucp_ep_h ep);

/* ucp_tag_send.c: the eager and rendezvous send path of tag, AM and stream */
/** What a send carries besides its data. */
typedef struct ucp_send_msg {
    uint64_t   word;       /* the tag, or UCP_AM_WORD() */
    const void *prefix;    /* AM user header (copied), or NULL */
    size_t     prefix_len;
    uint8_t    kind;       /* UCP_SEND_KIND_* */
    uint8_t    proto;      /* UCP_SEND_PROTO_* */
    int        sync;       /* tag sync send */
} ucp_send_msg_t;
/** Start a send of @a count elements at @a buffer on @a ep (takes the
 *  worker lock): NULL when done, a request, or an error pointer. */
ucs_status_ptr_t ucp_send_common(ucp_ep_h ep, const void *buffer, size_t count,
                                 const ucp_send_msg_t *msg,
                                 const ucp_request_param_t *param);
/** Whether @a req is a send posted while its ep was connecting. */
int ucp_send_is_deferred(const ucp_request_t *req);
/** Choose the protocol of a deferred send now that its ep has lanes, and
 *  queue it (or complete it with the error). */
void ucp_send_resubmit(ucp_request_t *req);

/* ucp_ep.c: endpoint objects */
/** A new ep of @a worker without lanes, on the worker's list. */
ucp_ep_h ucp_ep_alloc(ucp_worker_h worker, unsigned ep_flags);
/** Choose the ep's lanes for the peer @a addr and connect them. */
ucs_status_t ucp_ep_connect_lanes(ucp_ep_h ep, const ucp_unpacked_address_t *addr,
                                  int loopback);
/** Error mode, handler, user data and name from @a params. */
void ucp_ep_apply_params(ucp_ep_h ep, const ucp_ep_params_t *params);
/** The ep of @a worker with local id @a id (any state), or NULL. */
ucp_ep_h ucp_worker_find_ep_by_id(ucp_worker_h worker, uint64_t id);
/** The ep a message from worker @a uuid for our ep @a dest_ep (0: not
 *  known to the sender) belongs to, or NULL. */
ucp_ep_h ucp_worker_ep_of_msg(ucp_worker_h worker, uint64_t uuid,
                              uint64_t dest_ep);

/* ucp_am.c: active messages */
/** Install the AM handlers (single, first, rendezvous announcement). */
void ucp_am_set_am_handlers(ucp_worker_iface_t *wiface);
/** A middle fragment of an AM or stream message (rdesc->is_am set; offset
 *  and length already checked): placed, and the message delivered and
 *  @a rdesc freed when it was the last. */
void ucp_am_rdesc_fragment(ucp_worker_h worker, struct ucp_recv_desc *rdesc,
                           const void *data, size_t length);
/** Compute the worker's max_am_header (after the ifaces are open). */
void ucp_am_worker_init(ucp_worker_h worker);
void ucp_am_worker_cleanup(ucp_worker_h worker);

/* ucp_stream.c */
/** Stream bytes from the peer of @a ep arrived: fill posted receives, queue
 *  the rest. */
void ucp_stream_deliver(ucp_ep_h ep, const void *data, size_t length);
/** A rendezvous announcement (RTS and key, @a length bytes) of stream bytes
 *  of @a ep: they are fetched, in order, when a receive takes them. */
void ucp_stream_deliver_rts(ucp_ep_h ep, const void *rts, size_t length);
/** Complete the sender of rendezvous @a rts whose data nobody will fetch. */
void ucp_am_rndv_drop(ucp_worker_h worker, const void *rts);
/** A user ep to a worker whose stream bytes went to an internal ep takes
 *  them over. */
void ucp_stream_ep_adopt(ucp_ep_h ep);
/** Fail the ep's posted stream receives. */
void ucp_stream_ep_failed(ucp_ep_h ep, ucs_status_t status);
/** Free what the ep's stream holds. */
void ucp_stream_ep_cleanup(ucp_ep_h ep);

/* ucp_sockaddr.c: listeners and client/server endpoints */
/** ucp_ep_create() with a connection request (server side). */
ucs_status_t ucp_sa_ep_accept(ucp_worker_h worker, const ucp_ep_params_t *params,
                              ucp_ep_h *ep_p);
/** ucp_ep_create() with a socket address (client side). */
ucs_status_t ucp_sa_ep_connect(ucp_worker_h worker, const ucp_ep_params_t *params,
                               ucp_ep_h *ep_p);
/** Socket addresses of a client/server ep (ucp_ep_query()). */
ucs_status_t ucp_sa_ep_query(ucp_ep_h ep, ucp_ep_attr_t *attr);
/** Close the ep's handshake socket. */
void ucp_sa_ep_cleanup(ucp_ep_h ep);
/** Accept, read and answer handshakes; from worker progress. */
unsigned ucp_sa_progress(ucp_worker_h worker);
/** Make the next progress look at the sockets (before a wait). */
void ucp_sa_arm(ucp_worker_h worker);
/** Close every listener and socket (worker destroy). */
void ucp_sa_worker_cleanup(ucp_worker_h worker);

/* ucp_info.c */
/** The ep's lanes as transport/device names (ucp_ep_query()). */
ucs_status_t ucp_ep_query_transports(ucp_ep_h ep, ucp_transports_t *transports);

/* context */
/** Default memory-type lookup: everything is host memory. */
ucs_memory_type_t ucp_memtype_host_lookup(const void *buffer, size_t length);

/* ucp_memtype.c: device memory on the eager paths (staging via cuda_copy) */
/** Choose the context's memory-type lookup: the global memtype cache when
 *  the cuda_cpy md is present (opened for detection only when UCX_TLS
 *  excludes cuda_copy, so device memory is refused, never read as host). */
void ucp_memtype_context_init(ucp_context_h context);
void ucp_memtype_context_cleanup(ucp_context_h context);
/** Open the worker's cuda_copy iface/ep when the context selected it (a
 *  failure only leaves device memory unsupported). */
ucs_status_t ucp_memtype_worker_init(ucp_worker_h worker);
void ucp_memtype_worker_cleanup(ucp_worker_h worker);
/** Memory type of a datatype's data: contig from the lookup (or @a param),
 *  IOV from its first device element, generic always host. For device
 *  memory it also orders the request after the device work the calling
 *  thread queued for it (ucp_memtype_fence): call it once per request, in
 *  the posting thread. */
ucs_memory_type_t ucp_memtype_of_dt(ucp_worker_h worker, const ucp_dt_state_t *dt,
                                    const ucp_request_param_t *param);
/** Wait for the device work the calling thread queued and did not wait for,
 *  before a request touches device memory at @a buffer (uct_md_mem_fence);
 *  nothing without a domain that orders. */
void ucp_memtype_fence(ucp_context_h context, const void *buffer, size_t length);
/** Start an asynchronous cuda_copy of @a length bytes (any direction):
 *  UCS_OK (done), UCS_INPROGRESS (@a comp fires from worker progress) or an
 *  error (UCS_ERR_UNSUPPORTED without cuda_copy, with an error message). */
ucs_status_t ucp_memtype_copy_start(ucp_worker_h worker, void *dst,
                                    const void *src, size_t length,
                                    uct_completion_t *comp);
/** The same copy, waited for. */
ucs_status_t ucp_memtype_copy(ucp_worker_h worker, void *dst, const void *src,
                              size_t length);
/** Send from device memory (contig or IOV): copy it (synchronously) into a
 *  contiguous host bounce buffer that replaces the datatype until the
 *  request completes. */
ucs_status_t ucp_memtype_stage_send(ucp_request_t *req,
                                    ucs_memory_type_t mem_type);
/** Receive into device memory: data lands in a contiguous host bounce
 *  buffer, scattered to the user's buffer at completion. */
ucs_status_t ucp_memtype_stage_recv(ucp_request_t *req,
                                    ucs_memory_type_t mem_type);
/** Undo a receive's staging of a contiguous buffer without copying (the
 *  rendezvous moves the data itself); 0 when nothing was undone. */
int ucp_memtype_unstage_contig(ucp_request_t *req);
/** The user's device buffer behind a contiguous receive bounce, or NULL. */
void *ucp_memtype_bounce_target(const ucp_request_t *req);
/** At completion: copy a received message to the device (synchronously),
 *  free the bounce buffer; returns the (possibly failed) status. */
ucs_status_t ucp_memtype_unstage(ucp_request_t *req, ucs_status_t status);
/** A buffer owned by @a req, freed when the request completes. */
void *ucp_request_scratch_alloc(ucp_request_t *req, size_t length);

END_C_DECLS

#endif
