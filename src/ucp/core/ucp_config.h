/**
 * @file ucp_config.h
 * The UCP context configuration behind ucp_config_read() and friends (see
 * ucp.h for their contracts). Its table, "UCP context", is registered when
 * libucp is loaded, so `ucx_info -c` lists it.
 *
 * Variables:
 *   UCX_TLS  transports a context may use: "all" (default), "a,b" or "^a,b".
 *            Names: self, posix (alias shm, sm), tcp, cuda_copy, cuda_ipc
 *            (alias cuda), or any transport name a component reports.
 *   UCX_PROTO_INFO  print the protocol chosen per message size and memory
 *            type when an endpoint is created.
 *   UCX_RNDV_*  rendezvous: threshold, scheme, fragment memory type, size,
 *            pool size and pipeline depth (docs/rendezvous.md).
 *   UCX_TAG_EAGER_MAX_SIZE  largest tag message the eager protocols send
 *            or accept; larger ones take rendezvous (docs/ucp.md).
 */
#ifndef UCP_CONFIG_H_
#define UCP_CONFIG_H_

#include <ucp/api/ucp_def.h>
#include <ucs/config/parser.h>
#include <uct/api/uct.h>

BEGIN_C_DECLS

/** UCX_RNDV_SCHEME: which rendezvous protocol the receiver picks. */
typedef enum ucp_rndv_scheme {
    UCP_RNDV_SCHEME_AUTO,
    UCP_RNDV_SCHEME_GET_ZCOPY,
    UCP_RNDV_SCHEME_PUT_ZCOPY,
    UCP_RNDV_SCHEME_PIPELINE,
    UCP_RNDV_SCHEME_LAST
} ucp_rndv_scheme_t;

/** UCX_RNDV_FRAG_MEM_TYPE(S): where pipeline fragments live. */
typedef enum ucp_rndv_frag_type {
    UCP_RNDV_FRAG_TYPE_AUTO,  /* not set: the other spelling, else cuda */
    UCP_RNDV_FRAG_TYPE_HOST,
    UCP_RNDV_FRAG_TYPE_CUDA,
    UCP_RNDV_FRAG_TYPE_LAST
} ucp_rndv_frag_type_t;

extern const char *ucp_rndv_scheme_names[];

/** Options of a UCP context; filled and owned through the ucp_config_* API. */
struct ucp_config {
    ucs_config_allow_list_t tls;        /**< UCX_TLS */
    int                     proto_info; /**< UCX_PROTO_INFO */
    size_t                  rndv_thresh;     /**< UCX_RNDV_THRESH (or AUTO) */
    unsigned                rndv_scheme;     /**< UCX_RNDV_SCHEME */
    unsigned                rndv_frag_type;  /**< UCX_RNDV_FRAG_MEM_TYPE */
    unsigned                rndv_frag_types; /**< UCX_RNDV_FRAG_MEM_TYPES */
    size_t                  rndv_frag_size[UCS_MEMORY_TYPE_LAST];
    unsigned                rndv_frag_pool;  /**< UCX_RNDV_FRAG_POOL_SIZE */
    unsigned                rndv_depth;      /**< UCX_RNDV_PIPELINE_DEPTH */
    int                     rndv_one_copier; /**< UCX_RNDV_SAME_GPU_ONE_COPIER */
    int                     rndv_whole_pieces; /**< UCX_RNDV_SAME_GPU_WHOLE_PIECES */
    int                     rndv_split_alone; /**< UCX_RNDV_SPLIT_ONLY_ALONE */
    int rndv_stage_overlap;                   /**< UCX_RNDV_AM_STAGE_OVERLAP */
    int rndv_staged_get;                      /**< UCX_RNDV_PIPELINE_HOST_GET */
    size_t rndv_host_get_ramp;                /**< UCX_RNDV_PIPELINE_HOST_GET_RAMP */
    size_t                  rndv_same_gpu_host_max; /**< UCX_RNDV_SAME_GPU_HOST_MAX */
    size_t                  rndv_host_get_max; /**< UCX_RNDV_HOST_GET_MAX */
    size_t                  tag_eager_max;   /**< UCX_TAG_EAGER_MAX_SIZE (or INF) */
    double                  keepalive_interval; /**< UCX_KEEPALIVE_INTERVAL, s */
    unsigned                keepalive_num_eps;  /**< UCX_KEEPALIVE_NUM_EPS */
    double                  keepalive_timeout;  /**< UCX_KEEPALIVE_TIMEOUT, s */
    ucs_config_allow_list_t devices[UCT_DEVICE_TYPE_LAST]; /**< UCX_{NET,SHM,ACC,SELF}_DEVICES,
                                             by uct_device_type_t */
    unsigned                max_rndv_rails;     /**< UCX_MAX_RNDV_RAILS */
    size_t                  min_rndv_chunk_size; /**< UCX_MIN_RNDV_CHUNK_SIZE */
    unsigned                max_eager_rails;    /**< UCX_MAX_EAGER_RAILS */
};

/** UCX_RNDV_HOST_GET_MAX=auto over one lane. */
#define UCP_RNDV_HOST_GET_MAX_ONE_LANE (4ul << 20)

/** Upper bound of UCX_MAX_RNDV_RAILS and UCX_MAX_EAGER_RAILS (upstream's). */
#define UCP_MAX_RAILS 4

/** The rendezvous settings a context keeps, resolved from ucp_config_t. */
typedef struct ucp_rndv_config {
    size_t               thresh;        /**< UCS_MEMUNITS_AUTO: per memory type */
    ucp_rndv_scheme_t    scheme;
    ucp_rndv_frag_type_t frag_type;     /**< HOST or CUDA */
    int                  frag_type_auto; /**< neither variable named a type */
    size_t               same_gpu_host_max; /**< same GPU, neither buffer
                                              exportable: host staging up to
                                              this size (0: never) */
    size_t               host_get_max;  /**< host -> host reads up to this size;
                                             UCS_MEMUNITS_AUTO: see
                                             ucp_rndv_host_get_max() */
    unsigned             max_rails;     /**< lanes one host read splits over */
    size_t               min_chunk;     /**< least bytes of a read per rail */
    size_t               frag_size[UCS_MEMORY_TYPE_LAST];
    unsigned             frag_pool_max; /**< fragments per worker and type */
    unsigned             depth;         /**< fragments in flight per message */
    int                  one_copier;    /**< same GPU: lower uuid copies */
    int                  whole_pieces;  /**< same GPU: no pieces below a
                                             fragment in the pipeline */
    int                  split_alone;   /**< pieces below a fragment only for
                                             a message alone in the pool */
    int stage_overlap;                  /**< device data as AM: two host
                                             fragments, copy beside send */
    int staged_get;                     /**< device data over a host lane:
                                             reads of host fragments */
    size_t host_get_ramp;               /**< first and last pieces of such
                                             reads (0: whole fragments) */
    size_t               eager_max;     /**< largest eager tag message sent or
                                             accepted (SIZE_MAX: no limit) */
} ucp_rndv_config_t;

/** Whether UCX_<kind>_DEVICES of @a config lets a context use device
 *  @a dev_name of kind @a type (ucp_devices.c). */
int ucp_devices_allowed(const struct ucp_config *config, uct_device_type_t type,
                        const char *dev_name);

/** Warn about each name in UCX_<kind>_DEVICES that no resource of
 *  @a seen (the resources the transports offered) carries. */
void ucp_devices_check_names(const struct ucp_config *config,
                             const uct_tl_resource_desc_t *seen,
                             unsigned num_seen);

/** Resolve the rendezvous options of @a config (the plural alias, auto
 *  values); UCS_ERR_INVALID_PARAM with an error naming the variable when a
 *  value is out of range. */
ucs_status_t ucp_config_rndv_resolve(const struct ucp_config *config,
                                     ucp_rndv_config_t *rndv);

/** The "UCP context" table describing struct ucp_config. */
extern ucs_config_table_entry_t ucp_config_table_entry;

END_C_DECLS

#endif
