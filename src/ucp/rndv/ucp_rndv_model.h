/**
 * @file ucp_rndv_model.h
 * The performance model behind UCX_RNDV_THRESH=auto: the time each tag
 * protocol takes to put a message in the receiver's buffer, built from
 * what the endpoint's transports report (uct_iface_estimate_perf), and the
 * size from which a sender chooses rendezvous (docs/rendezvous.md,
 * "Thresholds from the model").
 *
 * A sender knows its own buffer -- host, device that exports (cuda_ipc key),
 * device that does not -- but not the receiver's. It chooses rendezvous from
 * the smallest size where
 *   - rendezvous is faster for every receiver of its own kind (host for
 *     host data; device of either exportability for device data), or
 *   - rendezvous costs every receiver at most UCP_RNDV_MODEL_SLACK more
 *     and is faster for at least one.
 * The second rule is what sends large host messages by rendezvous towards
 * a peer that may receive them in device memory. Larger messages keep
 * rendezvous even where the model would have eager catch up again: eager
 * stages a whole message in one bounce buffer, a cost in memory the model
 * does not charge.
 */
#ifndef UCP_RNDV_MODEL_H_
#define UCP_RNDV_MODEL_H_

#include <ucs/type/linear_func.h>
#include <uct/api/v2/uct_v2.h>

#include <stddef.h>

BEGIN_C_DECLS

/** What a sender knows of its buffer. */
typedef enum {
    UCP_RNDV_KIND_HOST,
    UCP_RNDV_KIND_DEVICE_EXPORT, /**< device memory with a cuda_ipc key */
    UCP_RNDV_KIND_DEVICE,        /**< device memory that does not export */
    UCP_RNDV_KIND_LAST
} ucp_rndv_kind_t;

/** Protocols the model times. */
typedef enum {
    UCP_RNDV_MODEL_EAGER,         /**< eager, device data staged through host memory */
    UCP_RNDV_MODEL_GET,           /**< receiver reads the sender's buffer (cuda_ipc,
                                       or the host lane between host buffers) */
    UCP_RNDV_MODEL_PUT,           /**< sender writes the receiver's buffer (cuda_ipc) */
    UCP_RNDV_MODEL_PIPE_CUDA,     /**< device fragments, read by the receiver */
    UCP_RNDV_MODEL_PIPE_AM,       /**< host fragments sent as active messages */
    UCP_RNDV_MODEL_PIPE_HOST_GET, /**< host fragments read over the host lane */
    UCP_RNDV_MODEL_LAST
} ucp_rndv_model_proto_t;

/** Most a receiver may lose to rendezvous under the second rule (5 %). */
#define UCP_RNDV_MODEL_SLACK 0.05

/**
 * UCP's own costs, beyond the transports', measured on an H200 host
 * (docs/rendezvous.md, "Thresholds from the model"):
 * - a control message: looking up the request, its state change; host to
 *   host, rendezvous took 1.07 us more than eager at 1 KiB for its RTS and
 *   RTR, of which the transport accounts for ~0.3 us;
 * - an eager message received into device memory, beyond the copy itself
 *   (staging buffer, memory-type lookup): host to device eager took 2.0 us
 *   more than host to host eager plus cuda_copy's host-to-device copy.
 */
#define UCP_RNDV_MODEL_CTRL_COST 0.4e-6

/**
 * Host data sent as active messages between host buffers is copied twice,
 * into the transport's buffer and out of it, on the two processes' cores.
 * The transport's bandwidth is that of one copy; the share of the second
 * copy that does not overlap the first is charged on top. Measured on the
 * 2-core CI VM, whose two cores share their caches: eager host -> host
 * streamed at 0.6x the memcpy speed for 1-16 MiB, a single read of the
 * peer's buffer (cma) at 0.8-1.3x (docs/rendezvous.md).
 */
#define UCP_RNDV_MODEL_SECOND_COPY 0.5
#define UCP_RNDV_MODEL_RECV_STAGE_COST 2.0e-6

/** Cost of one step: c seconds plus m seconds per byte. */
typedef ucs_linear_func_t ucp_rndv_cost_t;

/**
 * Inputs of the model, one endpoint's worth. Costs run from issue to data
 * in place, the issuing CPU time included.
 */
typedef struct ucp_rndv_model {
    ucp_rndv_cost_t ctrl;    /**< a control message: RTS, RTR, ATP, FRAG */
    ucp_rndv_cost_t am;      /**< active-message data, one segment's fixed cost */
    double am_seg_c;         /**< cost of each further segment */
    size_t am_seg;           /**< segment size */
    int cuda;                /**< device memory is staged by cuda_copy */
    ucp_rndv_cost_t d2h;     /**< cuda_copy: device -> pageable host, waited for */
    ucp_rndv_cost_t h2d;     /**< cuda_copy: pageable host -> device */
    double recv_stage;       /**< eager into device memory, beyond h2d */
    ucp_rndv_cost_t d2d;     /**< cuda_copy: into a device fragment */
    int ipc;                 /**< a cuda_ipc lane reaches the peer */
    ucp_rndv_cost_t ipc_d2d; /**< cuda_ipc between device buffers */
    ucp_rndv_cost_t ipc_d2h; /**< cuda_ipc, device buffer to host buffer */
    ucp_rndv_cost_t ipc_h2d; /**< cuda_ipc, host buffer to device buffer */
    int host_rma;            /**< a host lane reaches the peer */
    ucp_rndv_cost_t host_get; /**< host lane: read a host buffer of the peer */
    size_t frag_host;        /**< pipeline fragment sizes */
    size_t frag_cuda;
    int frag_cuda_on; /**< device fragments can be used */
    int staged_get;   /**< device data may be read through host fragments
                           over the host lane (UCX_RNDV_PIPELINE_HOST_GET) */
} ucp_rndv_model_t;

/**
 * Fill @a model from the transports: @a am_iface carries control messages
 * and eager data (segments of @a am_seg bytes); @a copy_iface (cuda_copy),
 * @a ipc_iface (cuda_ipc) and @a host_iface (the host lane, which reads
 * a peer's host memory) may be NULL. Fragment sizes, whether device
 * fragments can be used and whether device data may be read through host
 * fragments come from the caller.
 *
 * @return UCS_OK, or the error of a transport's estimate (logged).
 */
ucs_status_t ucp_rndv_model_build(ucp_rndv_model_t *model, uct_iface_h am_iface,
                                  size_t am_seg, uct_iface_h copy_iface,
                                  uct_iface_h ipc_iface, uct_iface_h host_iface,
                                  size_t frag_host, size_t frag_cuda, int frag_cuda_on,
                                  int staged_get);

/**
 * Time, in seconds, for @a proto to move @a size bytes from a sender of
 * kind @a s to a receiver of kind @a r; INFINITY where the protocol cannot
 * serve the pair with the transports of @a model.
 */
double ucp_rndv_model_time(const ucp_rndv_model_t *model, ucp_rndv_model_proto_t proto,
                           ucp_rndv_kind_t s, ucp_rndv_kind_t r, size_t size);

/**
 * The protocol the receiver's rules pick for rendezvous between the kinds
 * (get when the sender exports, else put when the receiver does, else a
 * pipeline), and its time for @a size bytes.
 */
double ucp_rndv_model_rndv_time(const ucp_rndv_model_t *model, ucp_rndv_kind_t s,
                                ucp_rndv_kind_t r, size_t size,
                                ucp_rndv_model_proto_t *proto_p);

/**
 * The automatic threshold for a sender of kind @a s: the smallest size at
 * which the rules above choose rendezvous (1: at every size), or SIZE_MAX
 * (eager at every size; UCX_TAG_EAGER_MAX_SIZE may still force it).
 */
size_t ucp_rndv_model_thresh(const ucp_rndv_model_t *model, ucp_rndv_kind_t s);

/** Name of @a proto / @a kind, for UCX_PROTO_INFO and logs. */
const char *ucp_rndv_model_proto_name(ucp_rndv_model_proto_t proto);
const char *ucp_rndv_model_kind_name(ucp_rndv_kind_t kind);

END_C_DECLS

#endif
