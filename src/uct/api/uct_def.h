/**
 * @file uct_def.h
 * Handle and callback types of the UCT (transport) API.
 */
#ifndef UCT_DEF_H_
#define UCT_DEF_H_

#include <ucs/type/status.h>
#include <ucs/memory/memory_type.h>
#include <ucs/type/callback.h>

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

BEGIN_C_DECLS

#define UCT_COMPONENT_NAME_MAX 16
#define UCT_TL_NAME_MAX        10
#define UCT_MD_NAME_MAX        16
#define UCT_DEVICE_NAME_MAX    32
#define UCT_AM_ID_BITS         5
#define UCT_AM_ID_MAX          UCS_BIT(UCT_AM_ID_BITS) /**< active message ids are 0..31 */

typedef struct uct_component    *uct_component_h;
typedef struct uct_md           *uct_md_h;
typedef struct uct_worker       *uct_worker_h;
typedef struct uct_iface        *uct_iface_h;
typedef struct uct_ep           *uct_ep_h;
typedef struct uct_md_config    uct_md_config_t;
typedef struct uct_iface_config uct_iface_config_t;
typedef void                    *uct_mem_h;
typedef uintptr_t               uct_rkey_t;

/* Addresses are opaque byte strings whose length the iface reports. */
typedef struct uct_device_addr  uct_device_addr_t;
typedef struct uct_iface_addr   uct_iface_addr_t;
typedef struct uct_ep_addr      uct_ep_addr_t;

/** Forward declaration; progress is driven by the caller, async may be NULL. */
typedef struct ucs_async_context ucs_async_context_t;

#define UCT_MEM_HANDLE_NULL NULL
#define UCT_INVALID_RKEY    ((uintptr_t)(-1))

/**
 * Completion of a non-blocking operation. The caller sets @a count to the
 * number of operations that report to it and @a func; each finishing
 * operation decrements count, and func runs when it reaches zero. @a status
 * keeps the first error.
 */
typedef struct uct_completion uct_completion_t;
typedef void (*uct_completion_callback_t)(uct_completion_t *self);

struct uct_completion {
    uct_completion_callback_t func;
    int                       count;
    ucs_status_t              status;
};

/**
 * An operation waiting for resources (uct_ep_pending_add). When resources
 * return, @a func is called: UCS_OK removes the request, UCS_INPROGRESS keeps
 * it (partial progress), UCS_ERR_NO_RESOURCE keeps it and stops dispatch.
 */
typedef struct uct_pending_req uct_pending_req_t;
typedef ucs_status_t (*uct_pending_callback_t)(uct_pending_req_t *self);

struct uct_pending_req {
    uct_pending_callback_t func;
    char                   priv[40]; /**< transport-owned list linkage */
};

/** Called for each request removed by uct_ep_pending_purge(). */
typedef void (*uct_pending_purge_callback_t)(uct_pending_req_t *self, void *arg);

/**
 * Active-message handler. @a data / @a length is the payload (header
 * included for am_short: the 8-byte header comes first). The data is valid
 * only during the call unless UCT_CB_PARAM_FLAG_DESC is set and the handler
 * returns UCS_INPROGRESS, which keeps the descriptor until
 * uct_iface_release_desc(data - rx_headroom) (the headroom requested in
 * uct_iface_params_t, 0 when none was asked for).
 */
typedef ucs_status_t (*uct_am_callback_t)(void *arg, void *data, size_t length,
                                          unsigned flags);

/** Fills @a dest with the message (bcopy); returns the packed length. */
typedef size_t (*uct_pack_callback_t)(void *dest, void *arg);

/** Consumes data arriving for get_bcopy. */
typedef void (*uct_unpack_callback_t)(void *arg, const void *data, size_t length);

/** Transport error on an endpoint (peer failure); the ep must be destroyed. */
typedef ucs_status_t (*uct_error_handler_t)(void *arg, uct_ep_h ep,
                                            ucs_status_t status);

/** One element of a scatter/gather list for zcopy operations. */
typedef struct uct_iov {
    void     *buffer;  /**< start of the data */
    size_t   length;   /**< bytes per element */
    uct_mem_h memh;    /**< registration of buffer, or UCT_MEM_HANDLE_NULL */
    size_t   stride;   /**< distance between elements (0 when count == 1) */
    unsigned count;    /**< number of elements */
} uct_iov_t;

/** A remote key after unpacking: @a rkey is used in put/get, @a handle frees it. */
typedef struct uct_rkey_bundle {
    uct_rkey_t rkey;
    void       *handle;
    void       *type;
} uct_rkey_bundle_t;

END_C_DECLS

#endif
