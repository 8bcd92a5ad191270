/**
 * @file cuda_copy.h
 * The cuda_copy transport: copies between host and device memory, and
 * between device buffers, inside one process. Used by eager protocols
 * (device data to and from host bounce buffers) and by staging.
 *
 * Component and md "cuda_cpy", transport "cuda_copy", device "cuda".
 * "Remote" addresses are local pointers (rkeys carry nothing); every copy
 * goes through cuMemcpyAsync with unified addressing, so any direction
 * works with one call. Zero-copy operations run on one non-blocking stream
 * per iface and complete from progress (cuEventQuery); short and bcopy
 * operations finish before they return.
 */
#ifndef UCT_CUDA_COPY_H_
#define UCT_CUDA_COPY_H_

#include "cuda_common.h"
#include "cuda_perf.h"

BEGIN_C_DECLS

#define UCT_CUDA_COPY_COMPONENT_NAME "cuda_cpy"
#define UCT_CUDA_COPY_TL_NAME        "cuda_copy"
#define UCT_CUDA_COPY_MAX_IOV        16

/** Registration of a memory range, or an allocation of the md. */
typedef struct uct_cuda_copy_memh {
    void              *address;
    size_t            length;
    int               host_registered; /**< we called cuMemHostRegister: unregister */
    ucs_memory_type_t alloc_type;      /**< uct_md_mem_alloc(): what to free;
                                            UNKNOWN for a registration */
    int               retained_dev;    /**< allocated in this device's primary
                                            context, retained until freed; -1 */
} uct_cuda_copy_memh_t;

typedef struct uct_cuda_copy_iface_config {
    uct_iface_config_t super;  /**< super.max_bcopy: UCX_CUDA_COPY_MAX_BCOPY */
    size_t             max_short;
    size_t             htod_memop_max;
    size_t             batch_copy_max;
    double             perf_lat;   /**< UCX_CUDA_COPY_LAT, or UCS_CONFIG_TIME_AUTO */
    size_t             perf_bw;    /**< UCX_CUDA_COPY_BW, or UCS_MEMUNITS_AUTO */
} uct_cuda_copy_iface_config_t;

/** Upper bound of UCX_CUDA_COPY_HTOD_MEMOP_MAX: one write per 4 bytes. */
#define UCT_CUDA_COPY_MEMOP_LIMIT 512

/** Devices a cuda_copy iface can run copies on (ordinals below it). */
#define UCT_CUDA_COPY_MAX_DEVICES 64

typedef struct uct_cuda_copy_iface {
    uct_base_iface_t super;
    CUcontext        ctx;       /**< current at open (home) */
    uct_cuda_queue_t queue;     /**< the home context's stream */
    uct_cuda_kernel_t kernel;   /**< batched device copies on the home queue */
    int              home;      /**< device of ctx */
    int              num_devices;
    /* Memory that only its own device may access (VMM, pools) must be
     * copied by that device: copies of another device's memory run on a
     * stream of its primary context, opened on first use. */
    uint64_t         others;    /**< bit d: queues[d] is open */
    uct_cuda_queue_t *queues[UCT_CUDA_COPY_MAX_DEVICES];
    CUcontext        ctxs[UCT_CUDA_COPY_MAX_DEVICES];
    size_t           max_short;
    size_t           max_bcopy;
    /* Host-to-device copies up to this size are stream memory writes
     * (0: never). */
    size_t           htod_memop_max;
    uint64_t         memop_copies; /**< copies done that way (tests) */
    uint32_t         memop_refused; /**< bit k: the driver refused writes to
                                         memory of ucs_memtype_alloc_kind_t k */
    void             *bounce;   /**< max_bcopy bytes, pinned when possible */
    int              bounce_pinned;
    uint64_t         id;        /**< unique in the process (addresses) */
    uct_cuda_perf_t  perf;      /**< cost model (uct_iface_estimate_perf) */
} uct_cuda_copy_iface_t;

typedef struct uct_cuda_copy_ep {
    uct_base_ep_t super;
} uct_cuda_copy_ep_t;

/** Address blob of the cuda_copy iface: the process it lives in. */
typedef struct uct_cuda_copy_iface_addr {
    uint32_t magic;
    uint32_t reserved;
    uint64_t proc_id;
} UCS_S_PACKED uct_cuda_copy_iface_addr_t;

#define UCT_CUDA_COPY_ADDR_MAGIC 0x43704375u /* "uCpC" */

extern uct_component_t uct_cuda_copy_component;

/** Kernel launches of the iface's home queue and the copies they carried
 *  (tests). */
void uct_cuda_copy_iface_batch_stats(uct_iface_h iface, uint64_t *launches,
                                     uint64_t *copies);

/** Identity of this process (boot id, pid namespace, pid). */
uint64_t uct_cuda_copy_proc_id(void);

/**
 * The stream queue that should run a copy between @a dst and @a src: the
 * one of the device whose memory is involved (@a dst's; @a src's when only
 * @a src is VMM or pool memory, which other devices may not reach), the
 * home queue for host and managed memory or when only one device exists.
 * @a ctx_p receives that queue's context. NULL when the device's context
 * or stream cannot be had (logged).
 */
uct_cuda_queue_t *uct_cuda_copy_iface_queue(uct_cuda_copy_iface_t *iface,
                                            const void *dst, const void *src,
                                            size_t length, CUcontext *ctx_p);

/**
 * Flush every stream of @a iface: UCS_OK when none has work; else
 * UCS_INPROGRESS and @a comp (if given) completes once all work queued so
 * far has ended (its count is raised by the number of busy streams - 1).
 */
ucs_status_t uct_cuda_copy_iface_flush_queues(uct_cuda_copy_iface_t *iface,
                                              uct_completion_t *comp);

/**
 * How many host-to-device copies @a iface (a cuda_copy iface) made as stream
 * memory writes instead of cuMemcpyAsync. For tests.
 */
uint64_t uct_cuda_copy_iface_memop_copies(uct_iface_h iface);

ucs_status_t uct_cuda_copy_ep_create(const uct_ep_params_t *params, uct_ep_h *ep_p);
void uct_cuda_copy_ep_destroy(uct_ep_h ep);
ucs_status_t uct_cuda_copy_ep_put_short(uct_ep_h ep, const void *buffer,
                                        unsigned length, uint64_t remote_addr,
                                        uct_rkey_t rkey);
ssize_t uct_cuda_copy_ep_put_bcopy(uct_ep_h ep, uct_pack_callback_t pack_cb,
                                   void *arg, uint64_t remote_addr, uct_rkey_t rkey);
ucs_status_t uct_cuda_copy_ep_get_bcopy(uct_ep_h ep, uct_unpack_callback_t unpack_cb,
                                        void *arg, size_t length,
                                        uint64_t remote_addr, uct_rkey_t rkey,
                                        uct_completion_t *comp);
ucs_status_t uct_cuda_copy_ep_put_zcopy(uct_ep_h ep, const uct_iov_t *iov,
                                        size_t iovcnt, uint64_t remote_addr,
                                        uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t uct_cuda_copy_ep_get_zcopy(uct_ep_h ep, const uct_iov_t *iov,
                                        size_t iovcnt, uint64_t remote_addr,
                                        uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t uct_cuda_copy_ep_flush(uct_ep_h ep, unsigned flags,
                                    uct_completion_t *comp);

END_C_DECLS

#endif
