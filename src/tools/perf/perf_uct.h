/**
 * @file perf_uct.h
 * Internals of the UCT driver, shared by its two files:
 *   perf_uct.c      finding the transport, opening md / worker / ifaces,
 *                   buffers, wire-up with the peer, teardown;
 *   perf_uct_run.c  the timed loops of each test and the responder.
 *
 * A "side" is one end of the test: the initiator (sends, measures) or the
 * responder (receives, replies). A process has one side, or both with -l;
 * the loops are written so that the same code serves both cases: the
 * responder's work is a step function that the responder's own wait loop
 * calls, and that the initiator's wait loop calls too when both sides live
 * in this process.
 */
#ifndef PERF_UCT_H_
#define PERF_UCT_H_

#include "perftest.h"
#include "perf_memory.h"
#include "perf_oob.h"

#include <uct/api/uct.h>

/* Active-message ids the tests use. */
#define PERF_UCT_AM_DATA   1  /**< a test message (ping, pong, stream element) */
#define PERF_UCT_AM_CREDIT 2  /**< responder -> initiator: messages received so far */
#define PERF_UCT_AM_FIN    3  /**< initiator -> responder: one-sided test finished */

/* Every data message starts with its sequence number. */
#define PERF_UCT_HDR_SIZE  sizeof(uint64_t)

/* Seeds of the buffer patterns: what is sent, and what a destination held
 * before (so that a one-sided transfer that did not happen is caught). */
#define PERF_UCT_SEED_DATA  0x5a
#define PERF_UCT_SEED_STALE 0xc3

typedef struct perf_uct_ctx perf_uct_ctx_t;

/** One end of the test. */
typedef struct perf_uct_side {
    perf_uct_ctx_t    *ctx;
    int               index;        /**< PERF_SIDE_SEND (initiator) or PERF_SIDE_RECV */
    uct_iface_h       iface;
    uct_ep_h          ep;
    perf_mem_buf_t    buf;          /**< source of sends, target of put, source of get */
    int               md_allocated; /**< buf came from uct_md_mem_alloc() */
    uct_mem_h         memh;
    uct_iov_t         iov[PERF_MAX_SG]; /**< zcopy: the message as the sg list asks */
    size_t            iovcnt;
    uct_rkey_bundle_t rkey;         /**< the peer's buffer (one-sided tests) */
    int               have_rkey;
    uint64_t          remote_addr;

    /* Counters: written by am handlers and completions, read by the loops. */
    uint64_t          rx_count;     /**< data messages received */
    uint64_t          credit;       /**< initiator: the responder's reported count */
    uint64_t          tx_count;     /**< responder: replies sent (am_lat) */
    uint64_t          reported;     /**< responder: last count reported (am_bw) */
    uint64_t          fin;          /**< responder: the initiator said it is done */
    uint64_t          posted;       /**< operations that took a completion */
    uint64_t          completed;    /**< ... of which completed */
    uint64_t          pack_seq;     /**< sequence number for the bcopy pack callback */
    uct_completion_t  comp;         /**< shared by every zcopy/flush of the side */

    /* Validation (-V). */
    uint64_t          bad;          /**< messages or buffers with wrong data */
    char              bad_what[160]; /**< the first problem, for the user */

    /* This side's wire-up data, packed for the peer. */
    void              *dev_addr;
    void              *iface_addr;
    void              *ep_addr;
    void              *rkey_buf;
} perf_uct_side_t;

/** Responder work done between progress calls (send replies, credits). */
typedef void (*perf_uct_step_func_t)(perf_uct_side_t *side);

/** The driver's state for one run. */
struct perf_uct_ctx {
    perf_run_t             *run;
    const perf_params_t    *params;
    uct_component_h        *components;   /**< from uct_query_components() */
    unsigned               num_components;
    uct_component_h        component;     /**< of the md below */
    uct_md_h               md;
    uct_md_attr_t          md_attr;
    uct_tl_resource_desc_t resource;      /**< transport and device in use */
    uct_iface_config_t     *iface_config;
    uct_worker_h           worker;
    uct_iface_attr_t       iface_attr;
    perf_layout_t          layout;        /**< AUTO resolved for this size */
    int                    loopback;      /**< both sides in this process */
    int                    oob_ctl;       /**< one-sided test over a transport without
                                               am (cuda_ipc, cuda_copy): its end is an
                                               out-of-band exchange instead of an am */
    perf_uct_side_t        sides[PERF_SIDE_LAST];
    perf_uct_step_func_t   resp_step;     /**< NULL when the responder is remote */
    uint64_t               total;         /**< warm-up + measured iterations */
    uint64_t               credit_step;   /**< am_bw: report after this many messages */
    ucs_status_t           async_status;  /**< first transport error (error handler) */
    perf_oob_state_t       oob_state;     /**< whether lock-step exchanges go on */
    uint64_t               activity;      /**< perf_uct_check(): counters at the last check */
};

/** Whether side @a index lives in this process. */
static inline int perf_uct_side_is_local(const perf_uct_ctx_t *ctx, int index)
{
    return (ctx->run->role & ((index == PERF_SIDE_SEND) ? PERF_ROLE_INITIATOR :
                                                          PERF_ROLE_RESPONDER)) != 0;
}

/**
 * Choose the layout for the test and size and check that the iface can do
 * it; on failure set the run's error ("tcp/lo does not support put zcopy",
 * "65536 bytes exceed the am bcopy limit of posix/memory (8256)").
 */
ucs_status_t perf_uct_select_layout(perf_uct_ctx_t *ctx);

/** Install the test's am handlers on a local side's iface. */
ucs_status_t perf_uct_set_handlers(perf_uct_side_t *side);

/**
 * Run the test: the initiator's loop, the responder's loop, or the
 * initiator's with the responder stepped in between (loopback). The
 * initiator fills ctx->run->result.
 */
ucs_status_t perf_uct_run_test(perf_uct_ctx_t *ctx);

/**
 * Check the peer, the transport and the deadline; called by wait loops
 * every few thousand spins. @a deadline_p is 0 on the first call of a wait.
 * The deadline bounds a stall, not a run: it moves whenever any counter of
 * a local side (messages, credits, completions) moved since the last check.
 */
ucs_status_t perf_uct_check(perf_uct_ctx_t *ctx, const char *what, uint64_t *deadline_p);

#endif
