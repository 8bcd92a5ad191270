/**
 * @file uct_v2.h
 * Second-generation UCT calls: performance estimates per operation and
 * memory type, which UCP's protocol selection builds on. Names, constants
 * and field order follow upstream's uct_v2.h, so code written for it builds
 * here; only what this fork implements is declared.
 */
#ifndef UCT_V2_H_
#define UCT_V2_H_

#include <ucs/sys/compiler_def.h>
#include <ucs/memory/memory_type.h>
#include <ucs/sys/topo_device.h>
#include <uct/api/uct.h>

#include <stdint.h>

BEGIN_C_DECLS

/** @file uct_v2.h */

/**
 * @ingroup UCT_RESOURCE
 * @brief The operations an estimate can be asked for.
 */
typedef enum uct_ep_operation {
    UCT_EP_OP_AM_SHORT,     /**< Short active message */
    UCT_EP_OP_AM_BCOPY,     /**< Buffered active message */
    UCT_EP_OP_AM_ZCOPY,     /**< Zero-copy active message */
    UCT_EP_OP_PUT_SHORT,    /**< Short put */
    UCT_EP_OP_PUT_BCOPY,    /**< Buffered put */
    UCT_EP_OP_PUT_ZCOPY,    /**< Zero-copy put */
    UCT_EP_OP_GET_SHORT,    /**< Short get */
    UCT_EP_OP_GET_BCOPY,    /**< Buffered get */
    UCT_EP_OP_GET_ZCOPY,    /**< Zero-copy get */
    UCT_EP_OP_EAGER_SHORT,  /**< Tag matching short eager */
    UCT_EP_OP_EAGER_BCOPY,  /**< Tag matching bcopy eager */
    UCT_EP_OP_EAGER_ZCOPY,  /**< Tag matching zcopy eager */
    UCT_EP_OP_RNDV_ZCOPY,   /**< Tag matching rendezvous */
    UCT_EP_OP_ATOMIC_POST,  /**< Atomic post */
    UCT_EP_OP_ATOMIC_FETCH, /**< Atomic fetch */
    UCT_EP_OP_LAST
} uct_ep_operation_t;

/**
 * @ingroup UCT_RESOURCE
 * @brief Which fields of @ref uct_perf_attr_t are valid: the inputs set by
 * the caller and the outputs it asks for.
 */
enum uct_perf_attr_field {
    UCT_PERF_ATTR_FIELD_OPERATION          = UCS_BIT(0),  /**< operation */
    UCT_PERF_ATTR_FIELD_LOCAL_MEMORY_TYPE  = UCS_BIT(1),  /**< local_memory_type */
    UCT_PERF_ATTR_FIELD_REMOTE_MEMORY_TYPE = UCS_BIT(2),  /**< remote_memory_type */
    UCT_PERF_ATTR_FIELD_LOCAL_SYS_DEVICE   = UCS_BIT(3),  /**< local_sys_device */
    UCT_PERF_ATTR_FIELD_REMOTE_SYS_DEVICE  = UCS_BIT(4),  /**< remote_sys_device */
    UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD  = UCS_BIT(5),  /**< send_pre_overhead */
    UCT_PERF_ATTR_FIELD_SEND_POST_OVERHEAD = UCS_BIT(6),  /**< send_post_overhead */
    UCT_PERF_ATTR_FIELD_RECV_OVERHEAD      = UCS_BIT(7),  /**< recv_overhead */
    UCT_PERF_ATTR_FIELD_BANDWIDTH          = UCS_BIT(8),  /**< bandwidth */
    UCT_PERF_ATTR_FIELD_LATENCY            = UCS_BIT(9),  /**< latency */
    UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS   = UCS_BIT(10), /**< max_inflight_eps */
    UCT_PERF_ATTR_FIELD_FLAGS              = UCS_BIT(11)  /**< flags */
};

/**
 * @ingroup UCT_RESOURCE
 * @brief Properties reported in @ref uct_perf_attr_t::flags.
 */
typedef enum {
    /** Sends may wait for unrelated receives to complete. */
    UCT_PERF_ATTR_FLAGS_TX_RX_SHARED = UCS_BIT(0)
} uct_perf_attr_flags_t;

/**
 * @ingroup UCT_RESOURCE
 * @brief The cost of one operation, as @ref uct_iface_estimate_perf
 * reports it.
 *
 * An operation of @e n bytes is modelled as: the sender's CPU spends
 * send_pre_overhead issuing it, the data arrives latency.c seconds later
 * plus n / bandwidth, the receiver's CPU spends recv_overhead taking it,
 * and the sender spends send_post_overhead completing it (time that does
 * not delay the data). Times are seconds, bandwidth bytes per second.
 */
typedef struct {
    uint64_t field_mask;                  /**< bits of @ref uct_perf_attr_field,
                                               set by the caller */
    uct_ep_operation_t operation;         /**< in: the operation */
    ucs_memory_type_t local_memory_type;  /**< in: memory type of the local buffer */
    ucs_memory_type_t remote_memory_type; /**< in: of the remote buffer (RMA) */
    ucs_sys_device_t local_sys_device;    /**< in: device of the local buffer, or
                                               UCS_SYS_DEVICE_ID_UNKNOWN */
    ucs_sys_device_t remote_sys_device;   /**< in: device of the remote buffer, or
                                               UCS_SYS_DEVICE_ID_UNKNOWN */
    double send_pre_overhead;             /**< out: CPU time to issue */
    double send_post_overhead;            /**< out: CPU time to complete */
    double recv_overhead;                 /**< out: receiver's CPU time */
    uct_ppn_bandwidth_t bandwidth;        /**< out: bytes per second */
    ucs_linear_func_t latency;            /**< out: fixed delay, by number of eps */
    size_t max_inflight_eps;              /**< out: eps with operations in flight */
    uint64_t flags;                       /**< out: @ref uct_perf_attr_flags_t */
} uct_perf_attr_t;

/**
 * @ingroup UCT_RESOURCE
 * @brief Estimate the cost of an operation on @a iface.
 *
 * Fills the output fields that @a perf_attr->field_mask names, for the
 * operation and memory types it gives (an input left out of the mask means
 * "any": a transport answers for its common case). Transports without a
 * model of their own answer from @ref uct_iface_query: overhead as the
 * send and receive overheads, its latency and bandwidth.
 *
 * @param [in]    iface      Interface to ask.
 * @param [inout] perf_attr  Inputs in, estimates out.
 *
 * @return UCS_OK; UCS_ERR_INVALID_PARAM for an operation or memory type out
 *         of range; UCS_ERR_UNSUPPORTED for an operation the interface does
 *         not offer.
 */
ucs_status_t uct_iface_estimate_perf(uct_iface_h iface, uct_perf_attr_t *perf_attr);

/**
 * @ingroup UCT_MD
 * @brief Order the transports' coming accesses to memory after the device
 *        work the calling thread has already queued for it.
 *
 * An extension of this fork (upstream has no such call). A device buffer
 * an application has just written with work it queued and did not wait for
 * (an asynchronous copy or memset on a default stream, as CuPy does) must
 * not be read, by this process or by a peer through a mapping, before that
 * work lands; nor may a buffer about to be received into be written before
 * work still queued on it (a pending memset would land over the message).
 * UCP calls this when a request takes device memory, in the posting thread.
 * For CUDA memory it waits for pending work on the calling thread's legacy
 * and per-thread default streams; when they are idle it costs one query
 * each. Work on the application's own streams is the application's to
 * order before it posts the request.
 *
 * @param [in] md       Memory domain that detects the memory type.
 * @param [in] address  Start of the memory; may be NULL when @a length is 0.
 * @param [in] length   Its length; 0 only asks whether the domain supports
 *                      the call, and waits for nothing.
 *
 * @return UCS_OK; UCS_ERR_UNSUPPORTED if the domain has nothing to order
 *         (host memory domains); UCS_ERR_IO_ERROR if the wait failed (the
 *         device context is broken).
 */
ucs_status_t uct_md_mem_fence(uct_md_h md, const void *address, size_t length);

END_C_DECLS

#endif
