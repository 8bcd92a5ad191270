/**
 * @file perf_ucp.h
 * The UCP driver's state, shared by its files: perf_ucp.c (setup, wire-up,
 * the tag tests, waiting), perf_ucp_am.c (the active-message and stream
 * tests), perf_ucp_rma.c (ucp_put_bw, ucp_get_bw), and perf_ucp_proto.c
 * (which protocol carried the data). Internal to ucx_perftest.
 */
#ifndef PERF_UCP_H_
#define PERF_UCP_H_

#include "perftest.h"
#include "perf_memory.h"
#include "perf_oob.h"

#include <ucp/api/ucp.h>

#define PERF_UCP_TAG_DATA   0x7065726644415441ull /* "perfDATA" */
#define PERF_UCP_TAG_ACK    0x7065726641434b21ull /* "perfACK!" */
#define PERF_UCP_TAG_MASK   UINT64_MAX
#define PERF_UCP_SEED_DATA  0x5a
#define PERF_UCP_SEED_STALE 0xc3
#define PERF_UCP_RX_WINDOW  32    /**< tag_bw: receives kept posted */
#define PERF_UCP_TX_WINDOW  128   /**< tag_bw: unfinished sends at most */
#define PERF_UCP_CHECK_SPINS 4096 /**< progress calls between two checks */
#define PERF_UCP_CLOSE_TIMEOUT 2.0 /**< seconds an endpoint close may take */
#define PERF_UCP_AM_ID      0x7066   /**< ucp_am tests: the messages' id */
#define PERF_UCP_AM_QUEUE   256      /**< -V: rendezvous messages waiting (> TX window) */

typedef struct perf_ucp_ctx perf_ucp_ctx_t;
typedef struct perf_ucp_side perf_ucp_side_t;

/**
 * How a two-sided test moves its data messages (acks and the end of a run
 * are always tag messages): tag, active messages or stream.
 */
typedef struct perf_ucp_data_ops {
    uint64_t     features;                         /**< UCP_FEATURE_* beyond TAG */
    /** After the worker exists: install handlers, allocate headers. */
    ucs_status_t (*init)(perf_ucp_side_t *side);
    void         (*cleanup)(perf_ucp_side_t *side); /**< undo init; may be NULL */
    /** Send one data message from the send buffer. */
    ucs_status_t (*send)(perf_ucp_side_t *side);
    /** Make room for one data message in the receive buffer. */
    ucs_status_t (*post_recv)(perf_ucp_side_t *side);
    /** Work deferred out of callbacks; NULL when there is none. */
    void         (*poll)(perf_ucp_side_t *side);
} perf_ucp_data_ops_t;

/** One end of the test. */
struct perf_ucp_side {
    perf_ucp_ctx_t *ctx;
    int            index;        /**< PERF_SIDE_SEND (initiator) or PERF_SIDE_RECV */
    ucp_worker_h   worker;
    ucp_ep_h       ep;
    ucp_address_t  *address;
    size_t         address_length;
    perf_mem_buf_t sbuf;         /**< holds the test pattern; every send reads it */
    perf_mem_buf_t rbuf;         /**< every data receive writes it */
    uint64_t       ack_value;    /**< payload of acks */
    uint64_t       ack_rx_value; /**< where acks land */

    /* Counters: written by completions, read by the loops. */
    uint64_t       rx_posted;    /**< data receives posted */
    uint64_t       rx_count;     /**< ... of which completed */
    uint64_t       tx_posted;    /**< sends started */
    uint64_t       tx_completed; /**< ... of which completed */
    uint64_t       replies;      /**< responder: pongs or acks sent */
    uint64_t       data_sent;    /**< responder of a *_bibw test: data messages sent */
    uint64_t       acks_posted;  /**< initiator: ack receives posted */
    uint64_t       acks;         /**< initiator: acks received */
    ucs_status_t   async_status; /**< first failed operation */

    /* One-sided tests (perf_ucp_rma.c). */
    ucp_mem_h      memh;         /**< responder: its exposed buffer */
    void           *rkey_buffer; /**< responder: the packed rkey */
    size_t         rkey_length;
    ucp_rkey_h     rkey;         /**< initiator: the responder's buffer */
    uint64_t       remote_addr;

    /* Active-message tests (perf_ucp_am.c). */
    void           *am_header;   /**< -H bytes of the test pattern */
    void           *am_queue[PERF_UCP_AM_QUEUE]; /**< -V: rendezvous not fetched yet */
    size_t         am_queue_len[PERF_UCP_AM_QUEUE];
    unsigned       am_head, am_tail;
    int            am_fetching;  /**< -V: a fetch into rbuf is in flight */

    /* Validation (-V). */
    uint64_t       bad;
    char           bad_what[160];
};

typedef void (*perf_ucp_step_func_t)(perf_ucp_side_t *side);

struct perf_ucp_ctx {
    perf_run_t           *run;
    const perf_params_t  *params;
    ucp_context_h        context;
    int                  loopback;
    int                  validate;
    int                  sync;        /**< tag_sync_lat, tag_sync_bw */
    const perf_ucp_data_ops_t *ops;   /**< how data messages move */
    uint64_t             total;       /**< warm-up + measured iterations */
    unsigned             rx_window;   /**< tag_bw responder: receives kept posted */
    perf_ucp_side_t      sides[PERF_SIDE_LAST];
    int                  bidir;       /**< *_bibw: the responder streams back */
    perf_ucp_step_func_t resp_step;   /**< NULL when the responder is remote */
    perf_ucp_step_func_t init_step;   /**< *_bibw: the initiator's receives; else NULL */
    perf_oob_state_t oob_state;
    uint64_t             activity;
    char                 tls[PERF_NAME_MAX];
};

/** Progress every local worker (and the local responder's step). */
void perf_ucp_progress(perf_ucp_ctx_t *ctx);

/** Progress until *@a counter >= @a target, watching peer, errors, deadline. */
ucs_status_t perf_ucp_wait(perf_ucp_ctx_t *ctx, const uint64_t *counter,
                           uint64_t target, const char *what);

/** Wait for every send of @a side to complete. */
ucs_status_t perf_ucp_drain(perf_ucp_side_t *side);

/** Record the run's error "@a what failed: <status>" and return @a status. */
ucs_status_t perf_ucp_op_failed(perf_ucp_side_t *side, const char *what,
                                ucs_status_t status);

/** Record a validation failure of @a side (the first one is described). */
void perf_ucp_record_bad(perf_ucp_side_t *side, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/** Note the first asynchronous failure of @a side. */
void perf_ucp_set_async(perf_ucp_side_t *side, ucs_status_t status);

/** Start a tag send of @a length bytes (counted in the side's tx counters). */
ucs_status_t perf_ucp_send(perf_ucp_side_t *side, const void *buffer, size_t length,
                           ucp_tag_t tag, int sync);

/**
 * A data message of @a length bytes has arrived (or failed with @a status):
 * count it and, with -V, check its length and its bytes, which are in host
 * memory @a host_data or, when that is NULL, in the side's receive buffer.
 */
void perf_ucp_rx_complete(perf_ucp_side_t *side, ucs_status_t status, size_t length,
                          const void *host_data);

/** Tag messages (perf_ucp.c), active messages and stream (perf_ucp_am.c). */
extern const perf_ucp_data_ops_t perf_ucp_tag_ops;
extern const perf_ucp_data_ops_t perf_ucp_am_ops;
extern const perf_ucp_data_ops_t perf_ucp_stream_ops;

/** Post the receive of one ack (counted in side->acks). */
ucs_status_t perf_ucp_post_ack(perf_ucp_side_t *side);

/** Set @a param's memory type for a buffer of @a kind: host buffers say
 *  so; GPU buffers leave it to libucp's detection, as applications do. */
void perf_ucp_param_mem_type(ucp_request_param_t *param, const perf_mem_kind_t *kind);

/** UCP features the test needs (TAG, plus RMA for one-sided tests). */
uint64_t perf_ucp_rma_features(const perf_ucp_ctx_t *ctx);

/** Why this libucp cannot run the one-sided test, or NULL when it can. */
const char *perf_ucp_rma_unavailable(void);

/**
 * One-sided tests: expose the responder's buffer and give the initiator its
 * address and rkey. Both sides call it, also after a failure (@a status),
 * so that the lock-step exchange stays in step.
 */
ucs_status_t perf_ucp_rma_wireup(perf_ucp_ctx_t *ctx, ucs_status_t status);

/** One-sided tests: run as ctx->run->role. */
ucs_status_t perf_ucp_rma_run(perf_ucp_ctx_t *ctx);

/** One-sided tests: release rkeys and memory handles (idempotent). */
void perf_ucp_rma_cleanup(perf_ucp_ctx_t *ctx);

/**
 * Fill run->result.proto with "protocol/transport" from libucp's
 * per-worker counters of the initiator, or "-" where this libucp has no
 * counters or they are all zero.
 */
void perf_ucp_proto_describe(perf_ucp_ctx_t *ctx);

#endif
