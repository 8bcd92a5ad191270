/**
 * @file cuda_perf.h
 * The cost model of the CUDA transports (uct_iface_estimate_perf()): what
 * a copy costs by direction -- host to device, device to host, device to
 * device on one GPU or between two. UCP derives its rendezvous thresholds
 * from these figures (docs/rendezvous.md, "Thresholds from the model").
 */
#ifndef UCT_CUDA_PERF_H_
#define UCT_CUDA_PERF_H_

#include <uct/base/uct_iface.h>

BEGIN_C_DECLS

/** Directions of a copy, each with its own cost. */
typedef enum {
    UCT_CUDA_PERF_H2D,      /**< host memory to device memory */
    UCT_CUDA_PERF_D2H,      /**< device memory to host memory */
    UCT_CUDA_PERF_D2D,      /**< both on one GPU */
    UCT_CUDA_PERF_D2D_PEER, /**< device memory of two GPUs */
    UCT_CUDA_PERF_DIR_LAST
} uct_cuda_perf_dir_t;

/** A transport's figures, seconds and bytes per second. */
typedef struct {
    double pre;                         /**< CPU time to issue a copy */
    double post;                        /**< CPU time to see it complete */
    double lat[UCT_CUDA_PERF_DIR_LAST]; /**< issue to data in place, less pre */
    double bw[UCT_CUDA_PERF_DIR_LAST];
} uct_cuda_perf_t;

/** Measured defaults (docs/performance.md, "Model inputs"). */
extern const uct_cuda_perf_t uct_cuda_copy_perf_default;
extern const uct_cuda_perf_t uct_cuda_ipc_perf_default;

/**
 * @a perf = @a defaults, then the user's UCX_<prefix>LAT and UCX_<prefix>BW:
 * @a lat_cfg (seconds) replaces every direction's latency, @a bw_cfg
 * (bytes/s) every bandwidth, unless it is UCS_MEMUNITS_AUTO / negative.
 *
 * @return UCS_OK, or UCS_ERR_INVALID_PARAM for a bandwidth of 0 (logged,
 *         naming the variable).
 */
ucs_status_t uct_cuda_perf_init(uct_cuda_perf_t *perf, const uct_cuda_perf_t *defaults,
                                double lat_cfg, size_t bw_cfg, const char *prefix);

/**
 * Fill @a perf_attr's estimate of a put or get (short, bcopy or zcopy) from
 * @a perf. The direction comes from the memory types (put: local to remote;
 * get: remote to local; device when not given) and, for two device
 * buffers, from their system devices (peer unless both are given and
 * equal). Other operations are left as the query gave them.
 */
void uct_cuda_perf_estimate(const uct_cuda_perf_t *perf, uct_perf_attr_t *perf_attr);

END_C_DECLS

#endif
