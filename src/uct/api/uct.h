/**
 * @file uct.h
 * UCT: the transport layer. One-sided (put/get) and active-message
 * primitives over memory domains (md) and interfaces (iface).
 *
 * Objects and their owners:
 *   component  -- a family of transports sharing a memory domain type
 *                 (self, posix, tcp, cuda_copy, cuda_ipc); static, never freed.
 *   md         -- a memory domain: registers memory, packs/unpacks remote keys,
 *                 detects memory types. Opened from a component.
 *   worker     -- a progress engine; owns nothing but the list of things to
 *                 progress. Not thread safe unless created with
 *                 UCS_THREAD_MODE_MULTI (the caller then serialises anyway).
 *   iface      -- a transport instance on a device, bound to a worker and an md.
 *   ep         -- a connection from an iface to a peer iface (or peer ep).
 *
 * Threading: every call on an iface, its eps and its worker must be
 * serialised by the caller (ucp does it per worker). Components, mds and
 * rkeys may be used from any thread.
 *
 * Naming, flag values and call shapes follow upstream UCX's uct.h so that
 * code reads the same; only the subset this project implements is declared.
 */
#ifndef UCT_H_
#define UCT_H_

#include <uct/api/uct_def.h>
#include <ucs/config/types.h>
#include <ucs/type/linear_func.h>
#include <ucs/type/thread_mode.h>

#include <stdio.h>

BEGIN_C_DECLS

/* ------------------------------------------------------------------------ */
/* Capabilities                                                              */
/* ------------------------------------------------------------------------ */

/** @name Interface capability flags (uct_iface_attr_t::cap.flags) */
/** @{ */
#define UCT_IFACE_FLAG_AM_SHORT               UCS_BIT(0)
#define UCT_IFACE_FLAG_AM_BCOPY               UCS_BIT(1)
#define UCT_IFACE_FLAG_AM_ZCOPY               UCS_BIT(2)
#define UCT_IFACE_FLAG_PENDING                UCS_BIT(3)
#define UCT_IFACE_FLAG_PUT_SHORT              UCS_BIT(4)
#define UCT_IFACE_FLAG_PUT_BCOPY              UCS_BIT(5)
#define UCT_IFACE_FLAG_PUT_ZCOPY              UCS_BIT(6)
#define UCT_IFACE_FLAG_GET_SHORT              UCS_BIT(8)
#define UCT_IFACE_FLAG_GET_BCOPY              UCS_BIT(9)
#define UCT_IFACE_FLAG_GET_ZCOPY              UCS_BIT(10)
#define UCT_IFACE_FLAG_ATOMIC_CPU             UCS_BIT(30)
#define UCT_IFACE_FLAG_ATOMIC_DEVICE          UCS_BIT(31)
#define UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE UCS_BIT(38)
#define UCT_IFACE_FLAG_EP_CHECK               UCS_BIT(39)
#define UCT_IFACE_FLAG_CONNECT_TO_IFACE       UCS_BIT(40)
#define UCT_IFACE_FLAG_CONNECT_TO_EP          UCS_BIT(41)
#define UCT_IFACE_FLAG_CB_SYNC                UCS_BIT(44)
/** @} */

/** @name Interface event capabilities (uct_iface_attr_t::cap.event_flags) */
/** @{ */
#define UCT_IFACE_FLAG_EVENT_SEND_COMP        UCS_BIT(0)
#define UCT_IFACE_FLAG_EVENT_RECV             UCS_BIT(1)
#define UCT_IFACE_FLAG_EVENT_FD               UCS_BIT(3)
/** @} */

/** Events uct_iface_event_arm() can wait for. */
enum uct_iface_event_types {
    UCT_EVENT_SEND_COMP = UCS_BIT(0),
    UCT_EVENT_RECV      = UCS_BIT(1)
};

/** Flags passed to an active-message handler. */
enum uct_cb_param_flags {
    /** @a data lives in a transport descriptor: returning UCS_INPROGRESS
     *  keeps it until uct_iface_release_desc(). */
    UCT_CB_PARAM_FLAG_DESC = UCS_BIT(0)
};

/** Flags of uct_iface_set_am_handler(). */
enum uct_cb_flags {
    UCT_CB_FLAG_RESERVED = UCS_BIT(1),
    UCT_CB_FLAG_ASYNC    = UCS_BIT(2) /**< not supported: handlers run from progress */
};

/** Flags of uct_ep_flush() / uct_iface_flush(). */
enum uct_flush_flags {
    UCT_FLUSH_FLAG_LOCAL  = 0,       /**< wait for local completion of all operations */
    UCT_FLUSH_FLAG_CANCEL = UCS_BIT(0) /**< cancel outstanding operations (ep close) */
};

/** Flags of uct_ep_am_bcopy(). */
enum uct_msg_flags {
    UCT_SEND_FLAG_SIGNALED = UCS_BIT(0), /**< wake a receiver blocked on the event fd */
    UCT_SEND_FLAG_PEER_CHECK = UCS_BIT(1)
};

/** What an md can do (uct_md_attr_t::cap.flags). */
enum {
    UCT_MD_FLAG_ALLOC      = UCS_BIT(0),  /**< uct_md_mem_alloc() works */
    UCT_MD_FLAG_REG        = UCS_BIT(1),  /**< uct_md_mem_reg() works */
    UCT_MD_FLAG_NEED_MEMH  = UCS_BIT(2),  /**< zcopy needs a registered memh */
    UCT_MD_FLAG_NEED_RKEY  = UCS_BIT(3),  /**< remote access needs an rkey */
    UCT_MD_FLAG_RKEY_PTR   = UCS_BIT(6),  /**< uct_rkey_ptr() works */
    UCT_MD_FLAG_EXPORTABLE = UCS_BIT(12)  /**< packed keys let another process map the memory */
};

/** Flags of uct_md_mem_reg() / uct_md_mem_alloc(). */
enum uct_md_mem_flags {
    UCT_MD_MEM_FLAG_NONBLOCK    = UCS_BIT(0),
    UCT_MD_MEM_FLAG_FIXED       = UCS_BIT(1),
    UCT_MD_MEM_FLAG_LOCK        = UCS_BIT(2),
    UCT_MD_MEM_FLAG_HIDE_ERRORS = UCS_BIT(3),
    UCT_MD_MEM_ACCESS_REMOTE_PUT = UCS_BIT(5),
    UCT_MD_MEM_ACCESS_REMOTE_GET = UCS_BIT(6),
    UCT_MD_MEM_ACCESS_LOCAL_READ  = UCS_BIT(8),
    UCT_MD_MEM_ACCESS_LOCAL_WRITE = UCS_BIT(9),
    UCT_MD_MEM_ACCESS_ALL = UCT_MD_MEM_ACCESS_REMOTE_PUT | UCT_MD_MEM_ACCESS_REMOTE_GET |
                            UCT_MD_MEM_ACCESS_LOCAL_READ | UCT_MD_MEM_ACCESS_LOCAL_WRITE
};

/** Kind of device a transport resource sits on. */
typedef enum {
    UCT_DEVICE_TYPE_NET,  /**< network interface */
    UCT_DEVICE_TYPE_SHM,  /**< shared memory */
    UCT_DEVICE_TYPE_ACC,  /**< accelerator (GPU) */
    UCT_DEVICE_TYPE_SELF, /**< loopback within the process */
    UCT_DEVICE_TYPE_LAST
} uct_device_type_t;

/* ------------------------------------------------------------------------ */
/* Query structures                                                          */
/* ------------------------------------------------------------------------ */

/** A memory domain a component offers (uct_component_attr_t::md_resources). */
typedef struct uct_md_resource_desc {
    char md_name[UCT_MD_NAME_MAX];
} uct_md_resource_desc_t;

enum uct_component_attr_field {
    UCT_COMPONENT_ATTR_FIELD_NAME              = UCS_BIT(0),
    UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT = UCS_BIT(1),
    UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES      = UCS_BIT(2),
    UCT_COMPONENT_ATTR_FIELD_FLAGS             = UCS_BIT(3)
};

typedef struct uct_component_attr {
    uint64_t               field_mask;
    char                   name[UCT_COMPONENT_NAME_MAX];
    unsigned               md_resource_count;
    /** Array of md_resource_count entries, allocated by the caller (fill
     *  md_resource_count by a first query). */
    uct_md_resource_desc_t *md_resources;
    uint64_t               flags;
} uct_component_attr_t;

/** A transport on a device (uct_md_query_tl_resources()). */
typedef struct uct_tl_resource_desc {
    char              tl_name[UCT_TL_NAME_MAX];     /**< "self", "posix", "tcp", ... */
    char              dev_name[UCT_DEVICE_NAME_MAX]; /**< "memory", "lo", "eth0", "GPU0" */
    uct_device_type_t dev_type;
    uint8_t           sys_device;                   /**< reserved; 0xff = unknown */
} uct_tl_resource_desc_t;

typedef struct uct_md_attr {
    struct {
        uint64_t max_alloc;        /**< largest allocation */
        size_t   max_reg;          /**< largest registration */
        uint64_t flags;            /**< UCT_MD_FLAG_* */
        uint64_t reg_mem_types;    /**< bit mask of ucs_memory_type_t it registers */
        uint64_t detect_mem_types; /**< memory types uct_md_detect_memory_type() recognises */
        uint64_t alloc_mem_types;  /**< memory types uct_md_mem_alloc() gives */
        uint64_t access_mem_types; /**< memory types its transports can read/write */
    } cap;
    ucs_linear_func_t reg_cost;    /**< registration cost in seconds (c + m * bytes) */
    char              component_name[UCT_COMPONENT_NAME_MAX];
    size_t            rkey_packed_size; /**< bytes uct_md_mkey_pack() writes */
} uct_md_attr_t;

/** Memory attributes returned by uct_md_mem_query(). */
enum uct_md_mem_attr_field {
    UCT_MD_MEM_ATTR_FIELD_MEM_TYPE     = UCS_BIT(0),
    UCT_MD_MEM_ATTR_FIELD_SYS_DEV      = UCS_BIT(1),
    UCT_MD_MEM_ATTR_FIELD_BASE_ADDRESS = UCS_BIT(2),
    UCT_MD_MEM_ATTR_FIELD_ALLOC_LENGTH = UCS_BIT(3)
};

typedef struct uct_md_mem_attr {
    uint64_t          field_mask;
    ucs_memory_type_t mem_type;
    uint8_t           sys_dev;      /**< system device (ucs/sys/topo_device.h) of
                                         device memory; 0xff = unknown */
    void              *base_address;
    size_t            alloc_length;
} uct_md_mem_attr_t;

/** Per-operation limits in uct_iface_attr_t. */
typedef struct uct_iface_op_caps {
    size_t max_short;       /**< put/get: data bytes; am: header + data bytes */
    size_t max_bcopy;
    size_t min_zcopy;
    size_t max_zcopy;
    size_t opt_zcopy_align;
    size_t align_mtu;
    size_t max_hdr;         /**< am only: header bytes of am_zcopy */
    size_t max_iov;
} uct_iface_op_caps_t;

/** Bandwidth in bytes/second: dedicated to one process, plus shared by all. */
typedef struct uct_ppn_bandwidth {
    double dedicated;
    double shared;
} uct_ppn_bandwidth_t;

typedef struct uct_iface_attr {
    struct {
        uct_iface_op_caps_t put;
        uct_iface_op_caps_t get;
        uct_iface_op_caps_t am;
        uint64_t            flags;       /**< UCT_IFACE_FLAG_* */
        uint64_t            event_flags; /**< UCT_IFACE_FLAG_EVENT_* */
    } cap;
    size_t              device_addr_len;
    size_t              iface_addr_len;
    size_t              ep_addr_len;
    /* The performance model read by protocol selection in ucp. */
    double              overhead;  /**< CPU time per operation, seconds */
    uct_ppn_bandwidth_t bandwidth; /**< bytes/second */
    ucs_linear_func_t   latency;   /**< seconds, as a function of the number of eps */
    uint8_t             priority;  /**< tie-breaker between equal devices */
    size_t              max_num_eps;
} uct_iface_attr_t;

/* ------------------------------------------------------------------------ */
/* Parameters                                                                */
/* ------------------------------------------------------------------------ */

enum uct_iface_params_field {
    UCT_IFACE_PARAM_FIELD_DEVICE        = UCS_BIT(1),  /**< open_mode device: tl + dev name */
    UCT_IFACE_PARAM_FIELD_STATS_ROOT    = UCS_BIT(3),
    UCT_IFACE_PARAM_FIELD_RX_HEADROOM   = UCS_BIT(4),
    UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG   = UCS_BIT(5),
    UCT_IFACE_PARAM_FIELD_ERR_HANDLER       = UCS_BIT(6),
    UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS = UCS_BIT(7)
};

typedef struct uct_iface_params {
    uint64_t field_mask;
    struct {
        const char *tl_name;  /**< transport, from uct_tl_resource_desc_t */
        const char *dev_name; /**< device, from uct_tl_resource_desc_t */
    } device;
    void                *stats_root;        /**< unused, kept for shape */
    size_t              rx_headroom;        /**< unused bytes before received data */
    void                *err_handler_arg;
    uct_error_handler_t err_handler;        /**< peer failure on an ep of this iface */
    uint32_t            err_handler_flags;
} uct_iface_params_t;

enum uct_ep_params_field {
    UCT_EP_PARAM_FIELD_IFACE      = UCS_BIT(0),
    UCT_EP_PARAM_FIELD_USER_DATA  = UCS_BIT(1),
    UCT_EP_PARAM_FIELD_DEV_ADDR   = UCS_BIT(2),
    UCT_EP_PARAM_FIELD_IFACE_ADDR = UCS_BIT(3)
};

/**
 * Endpoint creation. With DEV_ADDR + IFACE_ADDR the ep connects to a remote
 * iface at once (CONNECT_TO_IFACE). With IFACE alone it is created
 * unconnected; uct_ep_get_address() + uct_ep_connect_to_ep() complete it
 * (CONNECT_TO_EP).
 */
typedef struct uct_ep_params {
    uint64_t                field_mask;
    uct_iface_h             iface;
    void                    *user_data;
    const uct_device_addr_t *dev_addr;
    const uct_iface_addr_t  *iface_addr;
} uct_ep_params_t;

/* ------------------------------------------------------------------------ */
/* Components and memory domains                                             */
/* ------------------------------------------------------------------------ */

/**
 * List every transport component of this build (modules loaded on demand).
 *
 * @param components_p      receives an array the caller frees with
 *                          uct_release_component_list().
 * @param num_components_p  its length.
 */
ucs_status_t uct_query_components(uct_component_h **components_p,
                                  unsigned *num_components_p);

/** Free the array from uct_query_components(). */
void uct_release_component_list(uct_component_h *components);

/** Fill the fields of @a component_attr selected by its field_mask. */
ucs_status_t uct_component_query(uct_component_h component,
                                 uct_component_attr_t *component_attr);

/**
 * Read an md's configuration (UCX_<PREFIX>_... and UCX_... variables).
 * Release with uct_config_release(). A bad value fails with an error that
 * names the variable.
 */
ucs_status_t uct_md_config_read(uct_component_h component, const char *env_prefix,
                                const char *filename, uct_md_config_t **config_p);

/** Open memory domain @a md_name (from uct_component_query()). */
ucs_status_t uct_md_open(uct_component_h component, const char *md_name,
                         const uct_md_config_t *config, uct_md_h *md_p);

/** Close an md; every iface and registration on it must be gone. */
void uct_md_close(uct_md_h md);

/** Capabilities of an md. */
ucs_status_t uct_md_query(uct_md_h md, uct_md_attr_t *md_attr);

/**
 * Transports and devices reachable through an md. The caller frees the
 * array with uct_release_tl_resource_list().
 */
ucs_status_t uct_md_query_tl_resources(uct_md_h md,
                                       uct_tl_resource_desc_t **resources_p,
                                       unsigned *num_resources_p);

void uct_release_tl_resource_list(uct_tl_resource_desc_t *resources);

/** Register memory for zero-copy and remote access. */
ucs_status_t uct_md_mem_reg(uct_md_h md, void *address, size_t length,
                            unsigned flags, uct_mem_h *memh_p);

/** Undo uct_md_mem_reg(). */
ucs_status_t uct_md_mem_dereg(uct_md_h md, uct_mem_h memh);

/**
 * Allocate memory of @a mem_type owned by the md (e.g. exportable shared
 * memory, or IPC-capable device memory for staging fragments).
 *
 * @param length_p  in: bytes wanted; out: bytes given (may be rounded up).
 * @param address_p receives the address.
 * @param memh_p    receives the registration of the new memory.
 */
ucs_status_t uct_md_mem_alloc(uct_md_h md, size_t *length_p, void **address_p,
                              ucs_memory_type_t mem_type, unsigned flags,
                              const char *alloc_name, uct_mem_h *memh_p);

/**
 * As uct_md_mem_alloc(), on device @a sys_dev (a GPU; a ucs_sys_device_t of
 * ucs/sys/topo_device.h, as uct_md_mem_attr_t::sys_dev):
 * device memory of that GPU whatever context is current.
 * UCS_SYS_DEVICE_ID_UNKNOWN, host memory, or an md with one device: the
 * same as uct_md_mem_alloc(). (Upstream gave uct_md_mem_alloc() itself a
 * device argument after 1.13; this keeps 1.13's signature.)
 */
ucs_status_t uct_md_mem_alloc_on_device(uct_md_h md, size_t *length_p,
                                        void **address_p, ucs_memory_type_t mem_type,
                                        uint8_t sys_dev, unsigned flags,
                                        const char *alloc_name, uct_mem_h *memh_p);

/** Free memory from uct_md_mem_alloc(). */
ucs_status_t uct_md_mem_free(uct_md_h md, uct_mem_h memh);

/**
 * Which memory type @a address is (UCS_ERR_INVALID_ADDR if this md does not
 * recognise it).
 */
ucs_status_t uct_md_detect_memory_type(uct_md_h md, const void *address,
                                       size_t length, ucs_memory_type_t *mem_type_p);

/** Attributes of a memory range (fields selected by mem_attr->field_mask). */
ucs_status_t uct_md_mem_query(uct_md_h md, const void *address, size_t length,
                              uct_md_mem_attr_t *mem_attr);

/**
 * Serialise a remote key for @a memh into @a rkey_buffer
 * (uct_md_attr_t::rkey_packed_size bytes). The format is versioned and
 * self-describing, never a raw struct.
 */
ucs_status_t uct_md_mkey_pack(uct_md_h md, uct_mem_h memh, void *rkey_buffer);

/**
 * Turn a packed remote key (from a peer) into a usable rkey. A truncated or
 * corrupt buffer is UCS_ERR_INVALID_PARAM; memory this process cannot reach
 * is UCS_ERR_UNREACHABLE. Never crashes on bad input.
 */
ucs_status_t uct_rkey_unpack(uct_component_h component, const void *rkey_buffer,
                             uct_rkey_bundle_t *rkey_ob);

/** Local pointer through which remote memory can be accessed directly, if any. */
ucs_status_t uct_rkey_ptr(uct_component_h component, uct_rkey_bundle_t *rkey_ob,
                          uint64_t remote_addr, void **addr_p);

/**
 * The physical device the memory of an unpacked rkey lives on, as a
 * 16-byte id that is the same in every process of the host (a GPU's UUID):
 * two keys with equal ids name memory on the same device.
 *
 * @return UCS_OK; UCS_ERR_UNSUPPORTED when the component cannot tell (or
 *         the key does not say, e.g. an older key format).
 */
ucs_status_t uct_rkey_device_id(uct_component_h component, uct_rkey_t rkey,
                                uint8_t id[16]);

/** Release an unpacked rkey. */
ucs_status_t uct_rkey_release(uct_component_h component,
                              const uct_rkey_bundle_t *rkey_ob);

/* ------------------------------------------------------------------------ */
/* Configuration                                                             */
/* ------------------------------------------------------------------------ */

/**
 * Read the configuration of transport @a tl_name on @a md. Release with
 * uct_config_release().
 */
ucs_status_t uct_md_iface_config_read(uct_md_h md, const char *tl_name,
                                      const char *env_prefix, const char *filename,
                                      uct_iface_config_t **config_p);

/** Free an md or iface configuration. */
void uct_config_release(void *config);

/** Set one value ("NAME", without UCX_) of an md or iface configuration. */
ucs_status_t uct_config_modify(void *config, const char *name, const char *value);

/* ------------------------------------------------------------------------ */
/* Worker                                                                    */
/* ------------------------------------------------------------------------ */

/**
 * Create a progress engine. @a async may be NULL (progress is driven by
 * uct_worker_progress()).
 */
ucs_status_t uct_worker_create(ucs_async_context_t *async,
                               ucs_thread_mode_t thread_mode,
                               uct_worker_h *worker_p);

/** Destroy a worker; its ifaces must be closed first. */
void uct_worker_destroy(uct_worker_h worker);

/**
 * Progress every iface and registered callback of the worker once.
 *
 * @return the number of events handled (0: nothing happened).
 */
unsigned uct_worker_progress(uct_worker_h worker);

/**
 * Add a callback to the worker's progress loop. Safe to call from within
 * progress (takes effect on the next round). @a id_p receives a handle for
 * removal.
 */
void uct_worker_progress_register_safe(uct_worker_h worker, ucs_callback_t func,
                                       void *arg, unsigned flags, int *id_p);

/** Remove a callback added by uct_worker_progress_register_safe(); sets *id_p to -1. */
void uct_worker_progress_unregister_safe(uct_worker_h worker, int *id_p);

/* ------------------------------------------------------------------------ */
/* Interface                                                                 */
/* ------------------------------------------------------------------------ */

/** Open transport params->device.tl_name on device params->device.dev_name. */
ucs_status_t uct_iface_open(uct_md_h md, uct_worker_h worker,
                            const uct_iface_params_t *params,
                            const uct_iface_config_t *config, uct_iface_h *iface_p);

/** Close an iface; its eps must be destroyed first. */
void uct_iface_close(uct_iface_h iface);

/** Capabilities and performance model of an iface. */
ucs_status_t uct_iface_query(uct_iface_h iface, uct_iface_attr_t *iface_attr);

/** Write the device address (device_addr_len bytes). */
ucs_status_t uct_iface_get_device_address(uct_iface_h iface, uct_device_addr_t *addr);

/** Write the iface address (iface_addr_len bytes). */
ucs_status_t uct_iface_get_address(uct_iface_h iface, uct_iface_addr_t *addr);

/**
 * Whether this iface can reach a peer with these addresses (same host for
 * shared memory, same process for self, ...). @a iface_addr may be NULL.
 * Malformed addresses give 0, never a crash.
 */
int uct_iface_is_reachable(const uct_iface_h iface, const uct_device_addr_t *dev_addr,
                           const uct_iface_addr_t *iface_addr);

/**
 * Install the handler of active messages with id @a id (0..UCT_AM_ID_MAX-1).
 * A message for an id without a handler is dropped with a warning.
 */
ucs_status_t uct_iface_set_am_handler(uct_iface_h iface, uint8_t id,
                                      uct_am_callback_t cb, void *arg, uint32_t flags);

/**
 * Release a descriptor kept by an am handler that returned UCS_INPROGRESS.
 * @a desc is the handler's data pointer minus the iface's rx_headroom.
 */
void uct_iface_release_desc(void *desc);

/**
 * File descriptor that becomes readable when an armed event happens, for
 * blocking waits (poll/epoll). Owned by the iface.
 */
ucs_status_t uct_iface_event_fd_get(uct_iface_h iface, int *fd_p);

/**
 * Arm the event fd for @a events (UCT_EVENT_*). UCS_ERR_BUSY means events are
 * already pending: progress instead of waiting. An iface that reports
 * UCT_IFACE_FLAG_EVENT_SEND_COMP without UCT_IFACE_FLAG_EVENT_FD has no fd to
 * wake a sleeper (a copy engine's completions are seen only by polling): it
 * answers UCS_ERR_BUSY while operations are in flight, UCS_OK when none is.
 */
ucs_status_t uct_iface_event_arm(uct_iface_h iface, unsigned events);

/** Progress this iface only. @return events handled. */
unsigned uct_iface_progress(uct_iface_h iface);

/** Complete every operation started on the iface (UCS_INPROGRESS: comp is called later). */
ucs_status_t uct_iface_flush(uct_iface_h iface, unsigned flags, uct_completion_t *comp);

/** Order operations issued after the fence after those issued before it. */
ucs_status_t uct_iface_fence(uct_iface_h iface, unsigned flags);

/* ------------------------------------------------------------------------ */
/* Endpoint                                                                  */
/* ------------------------------------------------------------------------ */

/** Create an endpoint (see uct_ep_params_t). */
ucs_status_t uct_ep_create(const uct_ep_params_t *params, uct_ep_h *ep_p);

/** Destroy an endpoint; outstanding operations are cancelled. */
void uct_ep_destroy(uct_ep_h ep);

/** Write the ep address (ep_addr_len bytes) for uct_ep_connect_to_ep() on the peer. */
ucs_status_t uct_ep_get_address(uct_ep_h ep, uct_ep_addr_t *addr);

/** Connect an ep created without a peer address to the peer's ep. */
ucs_status_t uct_ep_connect_to_ep(uct_ep_h ep, const uct_device_addr_t *dev_addr,
                                  const uct_ep_addr_t *ep_addr);

/**
 * Operation table every iface carries. The inline calls below dispatch
 * through it, so a send is one indirect call.
 */
typedef struct uct_iface_ops {
    ucs_status_t (*ep_am_short)(uct_ep_h ep, uint8_t id, uint64_t header,
                                const void *payload, unsigned length);
    ssize_t      (*ep_am_bcopy)(uct_ep_h ep, uint8_t id, uct_pack_callback_t pack_cb,
                                void *arg, unsigned flags);
    ucs_status_t (*ep_am_zcopy)(uct_ep_h ep, uint8_t id, const void *header,
                                unsigned header_length, const uct_iov_t *iov,
                                size_t iovcnt, unsigned flags, uct_completion_t *comp);
    ucs_status_t (*ep_put_short)(uct_ep_h ep, const void *buffer, unsigned length,
                                 uint64_t remote_addr, uct_rkey_t rkey);
    ssize_t      (*ep_put_bcopy)(uct_ep_h ep, uct_pack_callback_t pack_cb, void *arg,
                                 uint64_t remote_addr, uct_rkey_t rkey);
    ucs_status_t (*ep_put_zcopy)(uct_ep_h ep, const uct_iov_t *iov, size_t iovcnt,
                                 uint64_t remote_addr, uct_rkey_t rkey,
                                 uct_completion_t *comp);
    ucs_status_t (*ep_get_bcopy)(uct_ep_h ep, uct_unpack_callback_t unpack_cb, void *arg,
                                 size_t length, uint64_t remote_addr, uct_rkey_t rkey,
                                 uct_completion_t *comp);
    ucs_status_t (*ep_get_zcopy)(uct_ep_h ep, const uct_iov_t *iov, size_t iovcnt,
                                 uint64_t remote_addr, uct_rkey_t rkey,
                                 uct_completion_t *comp);
    ucs_status_t (*ep_pending_add)(uct_ep_h ep, uct_pending_req_t *req, unsigned flags);
    void         (*ep_pending_purge)(uct_ep_h ep, uct_pending_purge_callback_t cb,
                                     void *arg);
    ucs_status_t (*ep_flush)(uct_ep_h ep, unsigned flags, uct_completion_t *comp);
    ucs_status_t (*ep_fence)(uct_ep_h ep, unsigned flags);
    ucs_status_t (*ep_create)(const uct_ep_params_t *params, uct_ep_h *ep_p);
    void         (*ep_destroy)(uct_ep_h ep);
    ucs_status_t (*ep_get_address)(uct_ep_h ep, uct_ep_addr_t *addr);
    ucs_status_t (*ep_connect_to_ep)(uct_ep_h ep, const uct_device_addr_t *dev_addr,
                                     const uct_ep_addr_t *ep_addr);

    ucs_status_t (*iface_flush)(uct_iface_h iface, unsigned flags,
                                uct_completion_t *comp);
    ucs_status_t (*iface_fence)(uct_iface_h iface, unsigned flags);
    unsigned     (*iface_progress)(uct_iface_h iface);
    ucs_status_t (*iface_event_fd_get)(uct_iface_h iface, int *fd_p);
    ucs_status_t (*iface_event_arm)(uct_iface_h iface, unsigned events);
    void         (*iface_close)(uct_iface_h iface);
    ucs_status_t (*iface_query)(uct_iface_h iface, uct_iface_attr_t *iface_attr);
    ucs_status_t (*iface_get_device_address)(uct_iface_h iface, uct_device_addr_t *addr);
    ucs_status_t (*iface_get_address)(uct_iface_h iface, uct_iface_addr_t *addr);
    int          (*iface_is_reachable)(const uct_iface_h iface,
                                       const uct_device_addr_t *dev_addr,
                                       const uct_iface_addr_t *iface_addr);
} uct_iface_ops_t;

/** Public head of every iface; transports extend it. */
typedef struct uct_iface {
    uct_iface_ops_t ops;
} uct_iface_t;

/** Public head of every ep; transports extend it. */
typedef struct uct_ep {
    uct_iface_h iface;
} uct_ep_t;

/**
 * Send an active message of up to cap.am.max_short bytes (8-byte header
 * included) from the caller's buffer, which is free on return.
 * UCS_ERR_NO_RESOURCE: retry later or uct_ep_pending_add().
 */
static inline ucs_status_t uct_ep_am_short(uct_ep_h ep, uint8_t id, uint64_t header,
                                           const void *payload, unsigned length)
{
    return ep->iface->ops.ep_am_short(ep, id, header, payload, length);
}

/**
 * Send an active message packed by @a pack_cb into a transport buffer of up
 * to cap.am.max_bcopy bytes. @return the packed length, or a negative status
 * (UCS_ERR_NO_RESOURCE).
 */
static inline ssize_t uct_ep_am_bcopy(uct_ep_h ep, uint8_t id,
                                      uct_pack_callback_t pack_cb, void *arg,
                                      unsigned flags)
{
    return ep->iface->ops.ep_am_bcopy(ep, id, pack_cb, arg, flags);
}

/**
 * Send an active message from the user's buffers without copying them into
 * a transport buffer. UCS_OK: done, buffers free. UCS_INPROGRESS: buffers
 * stay in use until @a comp completes.
 */
static inline ucs_status_t uct_ep_am_zcopy(uct_ep_h ep, uint8_t id, const void *header,
                                           unsigned header_length, const uct_iov_t *iov,
                                           size_t iovcnt, unsigned flags,
                                           uct_completion_t *comp)
{
    return ep->iface->ops.ep_am_zcopy(ep, id, header, header_length, iov, iovcnt,
                                      flags, comp);
}

/** Write a small buffer to remote memory. */
static inline ucs_status_t uct_ep_put_short(uct_ep_h ep, const void *buffer,
                                            unsigned length, uint64_t remote_addr,
                                            uct_rkey_t rkey)
{
    return ep->iface->ops.ep_put_short(ep, buffer, length, remote_addr, rkey);
}

/** Write data packed by @a pack_cb to remote memory; returns length or error. */
static inline ssize_t uct_ep_put_bcopy(uct_ep_h ep, uct_pack_callback_t pack_cb,
                                       void *arg, uint64_t remote_addr, uct_rkey_t rkey)
{
    return ep->iface->ops.ep_put_bcopy(ep, pack_cb, arg, remote_addr, rkey);
}

/** Write the user's buffers to remote memory (UCS_INPROGRESS: see @a comp). */
static inline ucs_status_t uct_ep_put_zcopy(uct_ep_h ep, const uct_iov_t *iov,
                                            size_t iovcnt, uint64_t remote_addr,
                                            uct_rkey_t rkey, uct_completion_t *comp)
{
    return ep->iface->ops.ep_put_zcopy(ep, iov, iovcnt, remote_addr, rkey, comp);
}

/** Read remote memory, handing the data to @a unpack_cb. */
static inline ucs_status_t uct_ep_get_bcopy(uct_ep_h ep, uct_unpack_callback_t unpack_cb,
                                            void *arg, size_t length,
                                            uint64_t remote_addr, uct_rkey_t rkey,
                                            uct_completion_t *comp)
{
    return ep->iface->ops.ep_get_bcopy(ep, unpack_cb, arg, length, remote_addr, rkey,
                                       comp);
}

/** Read remote memory into the user's buffers (UCS_INPROGRESS: see @a comp). */
static inline ucs_status_t uct_ep_get_zcopy(uct_ep_h ep, const uct_iov_t *iov,
                                            size_t iovcnt, uint64_t remote_addr,
                                            uct_rkey_t rkey, uct_completion_t *comp)
{
    return ep->iface->ops.ep_get_zcopy(ep, iov, iovcnt, remote_addr, rkey, comp);
}

/**
 * Queue @a req to run when the ep has resources again. UCS_ERR_BUSY means
 * resources are available now: the caller should retry its send instead.
 */
static inline ucs_status_t uct_ep_pending_add(uct_ep_h ep, uct_pending_req_t *req,
                                              unsigned flags)
{
    return ep->iface->ops.ep_pending_add(ep, req, flags);
}

/** Remove every pending request of the ep, calling @a cb for each. */
static inline void uct_ep_pending_purge(uct_ep_h ep, uct_pending_purge_callback_t cb,
                                        void *arg)
{
    ep->iface->ops.ep_pending_purge(ep, cb, arg);
}

/**
 * Complete every operation started on the ep. UCS_OK: all done.
 * UCS_INPROGRESS: @a comp is called when they are. UCS_ERR_NO_RESOURCE: try
 * again later.
 */
static inline ucs_status_t uct_ep_flush(uct_ep_h ep, unsigned flags,
                                        uct_completion_t *comp)
{
    return ep->iface->ops.ep_flush(ep, flags, comp);
}

/** Order operations after the fence after those before it. */
static inline ucs_status_t uct_ep_fence(uct_ep_h ep, unsigned flags)
{
    return ep->iface->ops.ep_fence(ep, flags);
}

/** Mark one operation of @a comp finished with @a status; runs func at zero. */
static inline void uct_invoke_completion(uct_completion_t *comp, ucs_status_t status)
{
    if ((status != UCS_OK) && (comp->status == UCS_OK)) {
        comp->status = status;
    }
    if (--comp->count == 0) {
        comp->func(comp);
    }
}

END_C_DECLS

#endif
