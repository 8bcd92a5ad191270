/**
 * @file cuda_ipc.h
 * The cuda_ipc transport: zero-copy access to another process's device
 * memory on the same host, for every allocation kind the driver can export
 * (legacy IPC handle, VMM POSIX-fd chunks, memory pool with POSIX-fd
 * handles). Component and md "cuda_ipc", transport "cuda_ipc", device "cuda".
 *
 * Exporter (md): mem_reg records the range; mkey_pack exports it through a
 * process-wide export cache (cuda_ipc_export.c) and packs a self-describing
 * key (cuda_ipc_rkey.h). Memory that cannot be exported packs as kind NONE.
 *
 * Importer (component rkey_unpack + iface): unpack checks the key and
 * whether this process may import it (same boot id, same user; NONE is
 * UCS_ERR_UNREACHABLE); the first put/get maps the memory (cuda_ipc_import.c)
 * and caches the mapping per peer, device and buffer; copies run on a
 * non-blocking stream per iface and complete from progress.
 */
#ifndef UCT_CUDA_IPC_H_
#define UCT_CUDA_IPC_H_

#include "cuda_common.h"
#include "cuda_perf.h"
#include "cuda_ipc_rkey.h"

#include <ucs/datastruct/hmap.h>

#include <string.h>
#include <sys/types.h>

BEGIN_C_DECLS

#define UCT_CUDA_IPC_NAME    "cuda_ipc"

/* Fabric handles (CUDA >= 12.3); where the toolkit lacks them, VMM memory
 * with only a fabric handle type is not exportable. */
#if CUDA_VERSION >= 12030
#  define UCT_CUDA_IPC_HAVE_FABRIC   1
#  define UCT_CUDA_IPC_HANDLE_FABRIC CU_MEM_HANDLE_TYPE_FABRIC
#else
#  define UCT_CUDA_IPC_HAVE_FABRIC   0
#  define UCT_CUDA_IPC_HANDLE_FABRIC 0
#endif
#define UCT_CUDA_IPC_MAX_IOV 16

/** How fds reach the importer (UCX_CUDA_IPC_FD_TRANSFER). */
typedef enum uct_cuda_ipc_fd_transfer {
    UCT_CUDA_IPC_FD_TRANSFER_AUTO,
    UCT_CUDA_IPC_FD_TRANSFER_PIDFD,
    UCT_CUDA_IPC_FD_TRANSFER_SOCKET,
    UCT_CUDA_IPC_FD_TRANSFER_LAST
} uct_cuda_ipc_fd_transfer_t;

typedef struct uct_cuda_ipc_md_config {
    uct_md_config_t super;
    int             exportable_default_pool; /**< UCX_CUDA_IPC_EXPORTABLE_DEFAULT_POOL */
} uct_cuda_ipc_md_config_t;

typedef struct uct_cuda_ipc_md {
    uct_md_t super;
} uct_cuda_ipc_md_t;

/** Registration: the range; exported when packed. */
typedef struct uct_cuda_ipc_memh {
    void   *address;
    size_t length;
} uct_cuda_ipc_memh_t;

/** An unpacked key (uct_rkey_t points to it). */
typedef struct uct_cuda_ipc_rkey {
    uct_cuda_ipc_key_t key;
} uct_cuda_ipc_rkey_t;

extern uct_component_t uct_cuda_ipc_component;

/* ---- export (cuda_ipc_export.c) ---------------------------------------- */

/**
 * Describe [address, address + length) as a key another process can import:
 * finds the exportable object(s) around it and exports them, or reuses the
 * export cached for the same allocation (same base and buffer id). Memory
 * that cannot be exported gives kind NONE and UCS_OK.
 *
 * Exported fds stay open until the allocation is freed (ucm free event), a
 * new allocation at the same address replaces the entry, or the process
 * exits. Thread safe. Needs a current context for first exports.
 */
ucs_status_t uct_cuda_ipc_export(const void *address, size_t length,
                                 uct_cuda_ipc_key_t *key);

/**
 * A duplicate of fd @a fd if it is one this process exported and still
 * holds (the caller closes it), else -1. Thread safe.
 */
int uct_cuda_ipc_export_fd_dup(int fd);

/** Number of cached export entries (tests, diagnostics). Thread safe. */
size_t uct_cuda_ipc_export_cache_size(void);

/** Number of driver exports made so far (tests: cache hits add none). */
uint64_t uct_cuda_ipc_export_count(void);

/** Number of peer buffers mapped so far by every iface of the process
 *  (tests: cache hits add none). Thread safe. */
uint64_t uct_cuda_ipc_import_count(void);

/** The UUID of device @a ordinal (cached), as put in keys; zero when unknown. */
void uct_cuda_ipc_device_uuid(int ordinal, uint8_t uuid[16]);

/** Whether @a uuid is the all-zero "unknown" (a version 1 key, no driver). */
static inline int uct_cuda_ipc_uuid_unknown(const uint8_t uuid[16])
{
    static const uint8_t zero[16] = {0};

    return !memcmp(uuid, zero, sizeof(zero));
}

/** Boot id, uid and pid namespace of this process, as put in keys. */
void uct_cuda_ipc_fill_owner(uct_cuda_ipc_key_t *key);

/* ---- fd transfer (cuda_ipc_fd.c) --------------------------------------- */

extern const char *uct_cuda_ipc_fd_transfer_names[];

/**
 * Start this process's fd server (once; a forked child gets none), so that
 * importers that cannot use pidfd_getfd can ask for exported fds.
 * @return UCS_OK when it is listening.
 */
ucs_status_t uct_cuda_ipc_fd_server_ensure(void);

/**
 * Get a copy of fd @a remote_fd of the exporter of @a key, by the path
 * @a mode allows (auto: pidfd_getfd when the PID namespace is shared and it
 * works, else the exporter's socket). @return the new fd (caller closes),
 * or -1 with errno set: EMFILE/ENFILE when this process (or the system) has
 * no fd number to spare -- logged at error level with RLIMIT_NOFILE --,
 * anything else when the exporter cannot be reached or refuses (debug).
 */
int uct_cuda_ipc_fd_fetch(const uct_cuda_ipc_key_t *key, int remote_fd,
                          uct_cuda_ipc_fd_transfer_t mode);

/** Whether errno value @a err means "out of file descriptors". */
int uct_cuda_ipc_fd_is_exhausted(int err);

/* ---- import (cuda_ipc_import.c) ----------------------------------------- */

/** Limits and policy of an importer's mapping cache. */
typedef struct uct_cuda_ipc_cache_config {
    int                        enable;       /**< 0: map per operation */
    unsigned                   max_regions;  /**< mappings kept (unused ones evicted) */
    size_t                     max_size;     /**< bytes mapped kept */
    uct_cuda_ipc_fd_transfer_t fd_transfer;
} uct_cuda_ipc_cache_config_t;

struct uct_cuda_ipc_cache;

/** One imported object, mapped in this process. */
typedef struct uct_cuda_ipc_mapping {
    ucs_hmap_elem_t             hash_elem;    /**< in the cache's table, by
                                                   exporter + remote base */
    struct uct_cuda_ipc_cache   *cache;       /**< owner */
    uct_cuda_ipc_kind_t         kind;
    uint32_t                    pid;          /**< exporter */
    uint64_t                    pid_ns;
    uint64_t                    remote_base;
    uint64_t                    length;
    uint64_t                    buffer_id;
    CUdeviceptr                 local_base;
    int                         local_gpu;    /**< the memory is on the
                                                   importer's GPU (by UUID) */
    int                         peer_gpu;     /**< on another GPU of this
                                                   process that ours accesses
                                                   peer-to-peer */
    unsigned                    refcount;     /**< operations in flight + the cache's 1 */
    int                         cached;       /**< still findable in the cache */
    struct uct_cuda_ipc_pool_import *pool;    /**< POOL: the imported pool */
    struct uct_cuda_ipc_mapping *prev, *next; /**< LRU list, most recent first */
} uct_cuda_ipc_mapping_t;

/** An imported pool, kept while pointers imported from it are mapped (a
 *  peer that creates and destroys pools must not make the list grow). */
typedef struct uct_cuda_ipc_pool_import {
    uint32_t                        pid;
    uint64_t                        pid_ns;
    uint64_t                        pool_id;
    CUmemoryPool                    pool;
    unsigned                        mappings; /**< live mappings from it */
    struct uct_cuda_ipc_pool_import *next;
} uct_cuda_ipc_pool_import_t;

/** The mapping cache of one importer (iface): one peer device context. */
typedef struct uct_cuda_ipc_cache {
    uct_cuda_ipc_cache_config_t config;
    CUdevice                    device;
    uint8_t                     device_uuid[16]; /**< zero: unknown */
    ucs_hmap_t                  map;      /**< cached mappings by exporter + base */
    uct_cuda_ipc_mapping_t      *head, *tail;
    unsigned                    num_regions;
    size_t                      total_size;
    uct_cuda_ipc_pool_import_t  *pools;
    uint64_t                    imports;  /**< driver imports made (tests) */
    uint64_t                    hits;
} uct_cuda_ipc_cache_t;

ucs_status_t uct_cuda_ipc_cache_init(uct_cuda_ipc_cache_t *cache,
                                     const uct_cuda_ipc_cache_config_t *config,
                                     CUdevice device);

/** Unmap everything (operations must be complete). */
void uct_cuda_ipc_cache_cleanup(uct_cuda_ipc_cache_t *cache);

/**
 * The local mapping of the object of @a key: a cache hit (same exporter,
 * remote base, kind and buffer id), or a new import (a mapping of the same
 * base with another buffer id is stale and replaced). The returned mapping
 * holds a reference for the caller: release it with
 * uct_cuda_ipc_mapping_put() when the operation completes.
 * @return UCS_OK; UCS_ERR_EXCEEDS_LIMIT when this process had no fd to
 *         spare for the import (RLIMIT_NOFILE, logged at error level; the
 *         same key imports once fds are free again); UCS_ERR_UNREACHABLE
 *         when the import failed otherwise (logged at debug level).
 */
ucs_status_t uct_cuda_ipc_cache_get(uct_cuda_ipc_cache_t *cache,
                                    const uct_cuda_ipc_key_t *key,
                                    uct_cuda_ipc_mapping_t **mapping_p);

/** Drop a reference; unmaps a mapping that left the cache at zero. */
void uct_cuda_ipc_mapping_put(uct_cuda_ipc_cache_t *cache,
                              uct_cuda_ipc_mapping_t *mapping);

/* ---- iface / ep (cuda_ipc_iface.c, cuda_ipc_ep.c) ----------------------- */

typedef struct uct_cuda_ipc_iface_config {
    uct_iface_config_t super;
    int                cache_enable;
    unsigned           cache_max_regions;
    size_t             cache_max_size;
    int                fd_transfer;
    size_t             batch_copy_max;
    int                batch_peer;
    double             perf_lat;   /**< UCX_CUDA_IPC_LAT, or UCS_CONFIG_TIME_AUTO */
    size_t             perf_bw;    /**< UCX_CUDA_IPC_BW, or UCS_MEMUNITS_AUTO */
} uct_cuda_ipc_iface_config_t;

/** Streams of an iface: one per device the peer memory lives on. */
#define UCT_CUDA_IPC_MAX_PEER_DEVICES 16

typedef struct uct_cuda_ipc_iface {
    uct_base_iface_t     super;
    CUcontext            ctx;
    int                  device;         /**< ordinal of ctx's GPU */
    uct_cuda_queue_t     queues[UCT_CUDA_IPC_MAX_PEER_DEVICES];
    uint32_t             queues_created; /**< bit mask of queues[] made so far */
    uct_cuda_ipc_cache_t cache;
    uct_cuda_kernel_t    kernel;         /**< batched copies on ctx's GPU */
    size_t               batch_copy_max; /**< UCX_CUDA_IPC_BATCH_COPY_MAX */
    int                  batch_peer;     /**< UCX_CUDA_IPC_BATCH_PEER */
    uct_cuda_perf_t      perf;           /**< cost model (uct_iface_estimate_perf) */
} uct_cuda_ipc_iface_t;

/**
 * The stream + event queue for copies with memory of peer device
 * @a device (created on first use), or NULL if it cannot be created.
 */
uct_cuda_queue_t *uct_cuda_ipc_iface_queue(uct_cuda_ipc_iface_t *iface,
                                           uint32_t device);

/** Flush every stream of the iface (see uct_cuda_queue_flush()). */
ucs_status_t uct_cuda_ipc_iface_flush_all(uct_cuda_ipc_iface_t *iface,
                                          uct_completion_t *comp);

typedef struct uct_cuda_ipc_ep {
    uct_base_ep_t super;
} uct_cuda_ipc_ep_t;

/** Address of a cuda_ipc iface: who may import from whom. */
typedef struct uct_cuda_ipc_iface_addr {
    uint32_t magic;
    uint32_t uid;
    uint8_t node_id[16];
    uint64_t pid_ns;
} UCS_S_PACKED uct_cuda_ipc_iface_addr_t;

#define UCT_CUDA_IPC_ADDR_MAGIC 0x41504943u /* "CIPA" */

ucs_status_t uct_cuda_ipc_ep_create(const uct_ep_params_t *params, uct_ep_h *ep_p);
void uct_cuda_ipc_ep_destroy(uct_ep_h ep);
ucs_status_t uct_cuda_ipc_ep_put_zcopy(uct_ep_h ep, const uct_iov_t *iov,
                                       size_t iovcnt, uint64_t remote_addr,
                                       uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t uct_cuda_ipc_ep_get_zcopy(uct_ep_h ep, const uct_iov_t *iov,
                                       size_t iovcnt, uint64_t remote_addr,
                                       uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t uct_cuda_ipc_ep_flush(uct_ep_h ep, unsigned flags,
                                   uct_completion_t *comp);

/** Kernel launches of an iface and the copies they carried, for tests. */
void uct_cuda_ipc_iface_batch_stats(uct_iface_h iface, uint64_t *launches,
                                    uint64_t *copies);

/** Statistics of an iface's mapping cache, for tests (imports, hits, regions). */
void uct_cuda_ipc_iface_cache_stats(uct_iface_h iface, uint64_t *imports,
                                    uint64_t *hits, unsigned *regions);

END_C_DECLS

#endif
