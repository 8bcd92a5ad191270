/**
 * @file ucp_def.h
 * Handle types, callback types and the endpoint parameters of the UCP API.
 *
 * Everything here is part of the binary interface shared with upstream UCX
 * (layout of UCX 1.13, see docs/abi.md): struct tags, field order, field types
 * and enum values must not change. New fields are only ever appended at the
 * end of a struct and guarded by a new field_mask bit.
 *
 * The handle types are opaque: the struct behind each one is private to
 * libucp and may change freely.
 */
#ifndef UCP_DEF_H_
#define UCP_DEF_H_

#include <ucs/config/types.h>
#include <ucs/memory/memory_type.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/type/status.h>

#include <stddef.h>
#include <stdint.h>

BEGIN_C_DECLS

/** Longest name, including its terminating '\0', that a context, worker or
 *  endpoint reports in its attributes (longer names are cut). */
#define UCP_ENTITY_NAME_MAX 32


/* ---- opaque handles ---------------------------------------------------- */

/**
 * A UCP context: the transports and memory domains one application uses,
 * created by ucp_init() and destroyed by ucp_cleanup().
 */
typedef struct ucp_context *ucp_context_h;

/**
 * Configuration of a UCP context, read from UCX_* environment variables by
 * ucp_config_read(). Opaque; the caller owns it and frees it with
 * ucp_config_release().
 */
typedef struct ucp_config ucp_config_t;

/**
 * A worker: one progress engine with its own transport interfaces, created
 * by ucp_worker_create(). Requests, endpoints and received messages belong
 * to exactly one worker.
 */
typedef struct ucp_worker *ucp_worker_h;

/**
 * A connection from a worker to one remote worker, created by
 * ucp_ep_create() from the remote worker's address.
 */
typedef struct ucp_ep *ucp_ep_h;

/**
 * A worker address: an opaque byte string of the length ucp_worker_get_address()
 * reports. It may be copied and sent to another process as is.
 */
typedef struct ucp_address ucp_address_t;

/**
 * A connection request a listener received from a client: handed to the
 * listener's connection handler, then given to ucp_ep_create()
 * (UCP_EP_PARAM_FIELD_CONN_REQUEST) or refused with ucp_listener_reject().
 */
typedef struct ucp_conn_request *ucp_conn_request_h;

/** A listener: accepts clients on a socket address (ucp_listener_create()). */
typedef struct ucp_listener *ucp_listener_h;

/** One lane of an endpoint, as ucp_ep_query() reports it. */
typedef struct {
    const char *transport_name; /**< the transport (UCX_TLS name) */
    const char *device_name;    /**< its device */
} ucp_transport_entry_t;

/** Caller-provided room for an endpoint's lanes (ucp_ep_attr_t). */
typedef struct {
    /** Array of @a num_entries elements of @a entry_size bytes each. */
    ucp_transport_entry_t *entries;
    /** In: elements in @a entries; out: elements written. */
    unsigned              num_entries;
    /** sizeof(ucp_transport_entry_t) of the caller's build. */
    size_t                entry_size;
} ucp_transports_t;

/** What an active-message handler learns besides the data (ucp.h). */
typedef struct ucp_am_recv_param ucp_am_recv_param_t;

/** A memory region registered by ucp_mem_map(). */
typedef struct ucp_mem *ucp_mem_h;

/** A remote memory key, made by ucp_ep_rkey_unpack() from a peer's packed key. */
typedef struct ucp_rkey *ucp_rkey_h;

/**
 * A message that ucp_tag_probe_nb() took out of the unexpected queue; receive
 * it with ucp_tag_msg_recv_nb() or ucp_tag_msg_recv_nbx(). The library's
 * receive descriptor is named struct ucp_recv_desc.
 */
typedef struct ucp_recv_desc *ucp_tag_message_h;


/* ---- scalar types ------------------------------------------------------ */

/** A message tag; receives select messages by (tag & mask) == (wanted & mask). */
typedef uint64_t ucp_tag_t;

/**
 * A datatype descriptor. The lowest UCP_DATATYPE_SHIFT bits hold the class
 * (enum ucp_dt_type in ucp.h); the rest is class-specific: the element size
 * for contiguous data, a pointer to the library's descriptor for generic
 * datatypes (whose allocations are 8-byte aligned, so the low bits are free).
 */
typedef uint64_t ucp_datatype_t;

/** Sender tag and size of a received or probed tagged message. */
typedef struct ucp_tag_recv_info ucp_tag_recv_info_t;


/* ---- memory attributes ------------------------------------------------- */

/** Which fields of ucp_mem_attr_t the caller asks ucp_mem_query() to fill. */
enum ucp_mem_attr_field {
    UCP_MEM_ATTR_FIELD_ADDRESS  = UCS_BIT(0), /**< ucp_mem_attr_t::address */
    UCP_MEM_ATTR_FIELD_LENGTH   = UCS_BIT(1), /**< ucp_mem_attr_t::length */
    UCP_MEM_ATTR_FIELD_MEM_TYPE = UCS_BIT(2)  /**< ucp_mem_attr_t::mem_type */
};

/** Attributes of a registered memory region, filled by ucp_mem_query(). */
typedef struct ucp_mem_attr {
    /** In: bits of enum ucp_mem_attr_field. Only those fields are written. */
    uint64_t          field_mask;

    /** Out: start of the region (the address the library chose, if it
     *  allocated the memory). */
    void              *address;

    /** Out: size of the region in bytes. */
    size_t            length;

    /** Out: the kind of memory the region lies in. */
    ucs_memory_type_t mem_type;
} ucp_mem_attr_t;


/* ---- error handling ---------------------------------------------------- */

/** What an endpoint does when its peer fails. */
typedef enum {
    /** No failure detection: a dead peer may leave requests pending forever.
     *  The fastest protocols are allowed. */
    UCP_ERR_HANDLING_MODE_NONE,

    /** Detect a failed or unreachable peer: outstanding requests on the
     *  endpoint complete with an error status and the endpoint's error
     *  handler is called once. Protocols that cannot recover are avoided. */
    UCP_ERR_HANDLING_MODE_PEER
} ucp_err_handling_mode_t;


/* ---- callbacks --------------------------------------------------------- */

/**
 * Called by the library on every request object it creates, once, before the
 * first use (ucp_params_t::request_init). @a request points to the
 * ucp_params_t::request_size bytes reserved for the application.
 */
typedef void (*ucp_request_init_callback_t)(void *request);

/**
 * Called on every request object before the library frees its memory
 * (ucp_params_t::request_cleanup), typically at ucp_cleanup().
 */
typedef void (*ucp_request_cleanup_callback_t)(void *request);

/**
 * Completion of a send or flush request started by one of the *_nb calls.
 * Runs inside ucp_worker_progress() (or, for an error, inside the call that
 * detected it) on the thread that progresses the worker. @a request is still
 * valid; the callback may call ucp_request_free() on it.
 */
typedef void (*ucp_send_callback_t)(void *request, ucs_status_t status);

/**
 * Completion of an operation started by one of the *_nbx calls with
 * UCP_OP_ATTR_FIELD_CALLBACK. @a user_data is ucp_request_param_t::user_data,
 * or NULL when UCP_OP_ATTR_FIELD_USER_DATA was not set. Same calling rules as
 * ucp_send_callback_t.
 */
typedef void (*ucp_send_nbx_callback_t)(void *request, ucs_status_t status,
                                        void *user_data);

/**
 * Called once when an endpoint created with UCP_ERR_HANDLING_MODE_PEER
 * fails. @a arg is the endpoint's user_data when UCP_EP_PARAM_FIELD_USER_DATA
 * was given (it takes precedence), otherwise ucp_err_handler_t::arg. After
 * this call the endpoint accepts no new operations; the application closes it
 * with ucp_ep_close_nbx() and UCP_EP_CLOSE_FLAG_FORCE. Runs from worker
 * progress.
 */
typedef void (*ucp_err_handler_cb_t)(void *arg, ucp_ep_h ep,
                                     ucs_status_t status);

/** An endpoint's error handler and its argument. */
typedef struct ucp_err_handler {
    ucp_err_handler_cb_t cb;  /**< the handler, may be NULL */
    void                 *arg; /**< passed to @a cb, unless the endpoint
                                        also has user_data, which wins */
} ucp_err_handler_t;

/**
 * Completion of a tag receive started by ucp_tag_recv_nb() or
 * ucp_tag_msg_recv_nb(). @a info tells the matched sender tag and the length
 * actually received; it is valid only during the call. On
 * UCS_ERR_MESSAGE_TRUNCATED the data up to the buffer size was written.
 */
typedef void (*ucp_tag_recv_callback_t)(void *request, ucs_status_t status,
                                        ucp_tag_recv_info_t *info);

/**
 * Completion of a tag receive started by ucp_tag_recv_nbx() or
 * ucp_tag_msg_recv_nbx(). Like ucp_tag_recv_callback_t, with the
 * caller's user_data.
 */
typedef void (*ucp_tag_recv_nbx_callback_t)(void *request, ucs_status_t status,
                                            const ucp_tag_recv_info_t *tag_info,
                                            void *user_data);


/* ---- stream, active-message and listener callbacks --------------------- */

/** Completion of ucp_stream_recv_nb(): @a length bytes were received. */
typedef void (*ucp_stream_recv_callback_t)(void *request, ucs_status_t status,
                                           size_t length);

/** Completion of ucp_stream_recv_nbx(); @a length is in bytes and a whole
 *  number of the datatype's elements; valid when @a status is UCS_OK. */
typedef void (*ucp_stream_recv_nbx_callback_t)(void *request, ucs_status_t status,
                                               size_t length, void *user_data);

/** Completion of ucp_am_recv_data_nbx(): @a length bytes were placed. */
typedef void (*ucp_am_recv_data_nbx_callback_t)(void *request,
                                                ucs_status_t status,
                                                size_t length, void *user_data);

/**
 * Active-message handler of the old interface (ucp_worker_set_am_handler()).
 * @a data (@a length bytes) is valid during the call; with
 * UCP_CB_PARAM_FLAG_DATA in @a flags the handler may keep it by returning
 * UCS_INPROGRESS and free it later with ucp_am_data_release(). @a reply_ep
 * is the endpoint to the sender when it asked for one (UCP_AM_SEND_REPLY),
 * else NULL.
 */
typedef ucs_status_t (*ucp_am_callback_t)(void *arg, void *data, size_t length,
                                          ucp_ep_h reply_ep, unsigned flags);

/**
 * Active-message handler (ucp_worker_set_am_recv_handler()). The user
 * header (@a header, @a header_length bytes) is valid during the call only.
 * What @a data is depends on @a param->recv_attr:
 *  - UCP_AM_RECV_ATTR_FLAG_RNDV: a descriptor of a message still at the
 *    sender (@a length bytes); receive it with ucp_am_recv_data_nbx() or
 *    drop it with ucp_am_data_release(), in the handler or later (return
 *    UCS_INPROGRESS to keep it past the call);
 *  - UCP_AM_RECV_ATTR_FLAG_DATA: the data, which the handler may keep by
 *    returning UCS_INPROGRESS (released by ucp_am_data_release());
 *  - neither: the data, valid during the call only.
 * Any other return value ends the library's interest in @a data.
 */
typedef ucs_status_t (*ucp_am_recv_callback_t)(void *arg, const void *header,
                                               size_t header_length,
                                               void *data, size_t length,
                                               const ucp_am_recv_param_t *param);

/** Called by a listener with a new endpoint to a client (the older
 *  accept handler: the library creates the endpoint itself). */
typedef void (*ucp_listener_accept_callback_t)(ucp_ep_h ep, void *arg);

/** Called by a listener with a client's connection request, which the
 *  application accepts with ucp_ep_create() or refuses with
 *  ucp_listener_reject(). */
typedef void (*ucp_listener_conn_callback_t)(ucp_conn_request_h conn_request,
                                             void *arg);

/** Accept callback and its argument. */
typedef struct ucp_listener_accept_handler {
    ucp_listener_accept_callback_t cb;  /**< called with each new endpoint */
    void                           *arg; /**< its argument */
} ucp_listener_accept_handler_t;

/** Connection-request callback and its argument. */
typedef struct ucp_listener_conn_handler {
    ucp_listener_conn_callback_t cb;  /**< called with each request */
    void                         *arg; /**< its argument */
} ucp_listener_conn_handler_t;


/* ---- wakeup events ----------------------------------------------------- */

/**
 * Events that wake a worker armed with ucp_worker_arm()
 * (ucp_worker_params_t::events). Events of features the context was not
 * created with are ignored.
 */
typedef enum ucp_wakeup_event_types {
    UCP_WAKEUP_RMA      = UCS_BIT(0),  /**< a remote memory access completed */
    UCP_WAKEUP_AMO      = UCS_BIT(1),  /**< an atomic operation completed */
    UCP_WAKEUP_TAG_SEND = UCS_BIT(2),  /**< a tagged send completed */
    UCP_WAKEUP_TAG_RECV = UCS_BIT(3),  /**< a tagged message arrived */
    UCP_WAKEUP_TX       = UCS_BIT(10), /**< any send-side completion */
    UCP_WAKEUP_RX       = UCS_BIT(11), /**< any incoming data */
    UCP_WAKEUP_EDGE     = UCS_BIT(16)  /**< report each event once (edge
                                            triggered) rather than while it
                                            stays pending */
} ucp_wakeup_event_t;


/* ---- endpoint parameters ----------------------------------------------- */

/**
 * How to create an endpoint (ucp_ep_create()). Only the fields whose bits
 * (enum ucp_ep_params_field, ucp.h) are set in @a field_mask are read; the
 * library copies what it needs, so the struct and what it points to may be
 * freed once ucp_ep_create() returns.
 */
typedef struct ucp_ep_params {
    /** Bits of enum ucp_ep_params_field: the fields the caller set. */
    uint64_t                field_mask;

    /** Address of the remote worker, as its ucp_worker_get_address() gave
     *  it. One of address, sockaddr (with UCP_EP_PARAMS_FLAGS_CLIENT_SERVER)
     *  or conn_request is required. */
    const ucp_address_t     *address;

    /** Failure handling of the endpoint; UCP_ERR_HANDLING_MODE_NONE when
     *  not given. */
    ucp_err_handling_mode_t err_mode;

    /** Called when the endpoint fails (UCP_ERR_HANDLING_MODE_PEER only). */
    ucp_err_handler_t       err_handler;

    /** Opaque value stored with the endpoint; when set it is also the
     *  argument of the error handler, in place of err_handler.arg. */
    void                    *user_data;

    /** Bits of enum ucp_ep_params_flags_field. */
    unsigned                flags;

    /** A listener's socket address to connect to (client side of a
     *  client/server connection; copied). The endpoint can be used at once:
     *  operations wait in its queue until the server accepted. */
    ucs_sock_addr_t         sockaddr;

    /** A connection request from a listener's handler (server side); the
     *  request is consumed by the call, also when it fails. */
    ucp_conn_request_h      conn_request;

    /** Name of the endpoint for logs and ucp_ep_query(); copied, cut to
     *  UCP_ENTITY_NAME_MAX - 1 characters. */
    const char              *name;

    /** Local socket address the client binds before it connects
     *  (UCP_EP_PARAM_FIELD_LOCAL_SOCK_ADDR, with sockaddr). */
    ucs_sock_addr_t         local_sockaddr;
} ucp_ep_params_t;

END_C_DECLS

#endif
