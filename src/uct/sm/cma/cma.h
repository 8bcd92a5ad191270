/**
 * @file cma.h
 * The cma transport: single-copy reads and writes of another process's
 * host memory on the same kernel, through process_vm_readv/writev ("cross
 * memory attach"). It offers get and put zcopy only, no active messages:
 * ucp uses it as a rendezvous lane beside a messaging transport (posix),
 * so that a large host message is copied once, by the kernel, instead of
 * twice through a shared FIFO.
 *
 * Component "cma", md "cma", transport "cma", device "memory".
 *
 * Every operation is synchronous: it has completed when the call returns.
 *
 * Who may read whom is the kernel's ptrace access check (same user, and
 * with Yama's ptrace_scope 1 only a descendant or a declared tracer; some
 * container profiles forbid the calls). So reachability is not guessed from
 * the address: the iface address names a probe byte in the peer, and
 * uct_iface_is_reachable() reads it. A peer we may not read is unreachable
 * and ucp keeps its other protocols.
 *
 * Addresses and keys start with a magic and a version; a key carries the
 * pid of the process whose memory it names, and an ep refuses a key of
 * another process. A remote range that is not mapped in the peer fails the
 * operation with UCS_ERR_INVALID_ADDR; it never touches other memory.
 */
#ifndef UCT_CMA_H_
#define UCT_CMA_H_

#include <uct/base/uct_blob.h>
#include <uct/base/uct_iface.h>

#include <stdint.h>
#include <sys/types.h>

BEGIN_C_DECLS

#define UCT_CMA_NAME            "cma"
#define UCT_CMA_DEV_NAME        "memory"
#define UCT_CMA_MAX_IOV         16

#define UCT_CMA_ADDR_VERSION    1
#define UCT_CMA_DEV_ADDR_MAGIC  0x76644d43u /* "CMdv" */
#define UCT_CMA_IFACE_ADDR_MAGIC 0x66694d43u /* "CMif" */
#define UCT_CMA_RKEY_MAGIC      0x6b724d43u /* "CMrk" */
/** Value of the probe byte a peer reads to check its access. */
#define UCT_CMA_PROBE_VALUE     0xc3u

/** Start of every address and packed key (magic UCT_CMA_*_MAGIC, version
 *  UCT_CMA_ADDR_VERSION). */
typedef uct_blob_hdr_t uct_cma_blob_hdr_t;

/** Device address: which kernel and PID namespace (pids mean the same). */
typedef struct uct_cma_device_addr {
    uct_cma_blob_hdr_t hdr;
    uint64_t           node_id;
} UCS_S_PACKED uct_cma_device_addr_t;

/** Iface address: the process and the address of its probe byte. */
typedef struct uct_cma_iface_addr {
    uct_cma_blob_hdr_t hdr;
    uint64_t           pid;
    uint64_t           probe;
} UCS_S_PACKED uct_cma_iface_addr_t;

/** Packed key: memory of process @a pid on node @a node_id. */
typedef struct uct_cma_packed_rkey {
    uct_cma_blob_hdr_t hdr;
    uint64_t           node_id;
    uint64_t           pid;
} UCS_S_PACKED uct_cma_packed_rkey_t;

/** Options of the cma transport (UCX_CMA_*). */
typedef struct uct_cma_iface_config {
    uct_iface_config_t super;
    size_t             bandwidth; /**< UCS_MEMUNITS_AUTO: measured */
    size_t             max_chunk; /**< bytes per system call */
} uct_cma_iface_config_t;

typedef struct uct_cma_iface {
    uct_base_iface_t super;
    double           bandwidth;   /**< bytes/s for the performance model */
    size_t           max_chunk;   /**< bytes per system call */
} uct_cma_iface_t;

typedef struct uct_cma_ep {
    uct_base_ep_t super;
    pid_t         pid;       /**< the peer */
    size_t        max_chunk; /**< of the iface */
} uct_cma_ep_t;

extern uct_component_t uct_cma_component;

/** Kernel (boot id) and PID namespace of this process, hashed. */
static inline uint64_t uct_cma_node_id(void)
{
    return uct_blob_node_id();
}

static inline void uct_cma_blob_hdr_init(uct_cma_blob_hdr_t *hdr, uint32_t magic)
{
    uct_blob_hdr_init(hdr, magic, UCT_CMA_ADDR_VERSION);
}

static inline int uct_cma_blob_hdr_is_valid(const uct_cma_blob_hdr_t *hdr,
                                            uint32_t magic)
{
    return uct_blob_hdr_is_valid(hdr, magic, UCT_CMA_ADDR_VERSION);
}

/** The status for an errno of process_vm_readv/writev. */
ucs_status_t uct_cma_errno_status(int err);

/**
 * Whether this process may read process @a pid's memory: reads one byte at
 * @a probe (the peer's probe byte) and checks its value.
 */
int uct_cma_can_access(pid_t pid, uint64_t probe);

/* Endpoint operations (cma_ep.c). */
ucs_status_t uct_cma_ep_create(const uct_ep_params_t *params, uct_ep_h *ep_p);
void uct_cma_ep_destroy(uct_ep_h ep);
ucs_status_t uct_cma_ep_put_zcopy(uct_ep_h ep, const uct_iov_t *iov, size_t iovcnt,
                                  uint64_t remote_addr, uct_rkey_t rkey,
                                  uct_completion_t *comp);
ucs_status_t uct_cma_ep_get_zcopy(uct_ep_h ep, const uct_iov_t *iov, size_t iovcnt,
                                  uint64_t remote_addr, uct_rkey_t rkey,
                                  uct_completion_t *comp);
ucs_status_t uct_cma_ep_pending_add(uct_ep_h ep, uct_pending_req_t *req,
                                    unsigned flags);
ucs_status_t uct_cma_ep_flush(uct_ep_h ep, unsigned flags, uct_completion_t *comp);
ucs_status_t uct_cma_ep_fence(uct_ep_h ep, unsigned flags);

END_C_DECLS

#endif
