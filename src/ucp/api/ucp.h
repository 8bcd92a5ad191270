/**
 * @file ucp.h
 * The UCP API: the interface MPI libraries and language bindings use.
 *
 * Names, signatures, struct layouts and numeric values follow upstream UCX so
 * that programs built against upstream's headers (UCX >= 1.13) run on this
 * library unchanged. The layouts are those of UCX 1.13; docs/abi.md says how
 * this is checked and what differs. Only functions this library implements
 * are declared here; older calls kept for compatibility are in ucp_compat.h.
 *
 * Rules that hold for the whole API
 * ---------------------------------
 * Parameter and attribute structs start with a field_mask (op_attr_mask for
 * ucp_request_param_t). The library reads only input fields whose bit is
 * set, and writes only output fields whose bit is set. A field_mask bit this
 * header does not define (a program built against a newer upstream may set
 * one) is ignored: the field behind it is neither read nor written, and the
 * call succeeds as far as the known bits allow. (Value flags are different:
 * an unknown bit in ucp_params_t::features is refused.) The caller owns every
 * struct it passes; nothing keeps a pointer to one after the call returns
 * unless the function says so.
 *
 * Threads. A context may be used by several threads at once only for calls
 * that say so. A worker's thread mode (ucp_worker_params_t::thread_mode)
 * governs the worker and everything that belongs to it -- its endpoints, its
 * requests, its received messages:
 *  - UCS_THREAD_MODE_SINGLE: one thread uses it, never concurrently;
 *  - UCS_THREAD_MODE_SERIALIZED: any thread, but one call at a time (the
 *    application serialises);
 *  - UCS_THREAD_MODE_MULTI: any threads concurrently.
 * ucp_worker_signal() may be called from any thread at any time.
 *
 * Non-blocking operations and requests. A call that returns ucs_status_ptr_t
 * gives one of:
 *  - NULL (UCS_OK): the operation completed inside the call; no callback is
 *    called and there is nothing to free;
 *  - UCS_PTR_IS_ERR(ptr): it failed inside the call; UCS_PTR_STATUS(ptr) is
 *    the error; no callback is called;
 *  - otherwise a request: the operation runs on. It completes during a later
 *    ucp_worker_progress() on its worker, which then calls the completion
 *    callback, if one was given, exactly once. ucp_request_check_status()
 *    tells whether it has completed. The application gives the request back
 *    with ucp_request_free() exactly once, before or after completion; after
 *    that, no callback is called for it. The pointer is to the
 *    ucp_params_t::request_size bytes the application reserved; the library's
 *    own part of the request lies just before it.
 * Callbacks run on the thread that progresses the worker. They may start new
 * non-blocking operations and free requests, but must not progress, flush or
 * destroy the worker nor call any blocking function.
 * A request the application provides (the *_nbr calls, or
 * UCP_OP_ATTR_FIELD_REQUEST) is a pointer P such that the
 * ucp_context_attr_t::request_size bytes before P belong to the library for
 * the life of the operation; the application's own request_size bytes start
 * at P. The library never frees such a request: it must not be passed to
 * ucp_request_free(), and its memory may be reused once the operation has
 * completed.
 *
 * Buffers. A send buffer must not change, and a receive buffer must not be
 * read, until the operation has completed. Buffers may lie in any memory
 * type the context supports (ucp_context_attr_t::memory_types); the library
 * finds out which unless the caller says (UCP_OP_ATTR_FIELD_MEMORY_TYPE).
 */
#ifndef UCP_H_
#define UCP_H_

#include <ucp/api/ucp_def.h>
#include <ucp/api/ucp_compat.h>
#include <ucp/api/ucp_version.h>
#include <ucs/config/types.h>
#include <ucs/memory/memory_type.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/type/cpu_set.h>
#include <ucs/type/status.h>
#include <ucs/type/thread_mode.h>

#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>

BEGIN_C_DECLS


/* ======================================================================== */
/* Datatypes                                                                 */
/* ======================================================================== */

/** Classes of ucp_datatype_t, in its lowest UCP_DATATYPE_SHIFT bits. */
enum ucp_dt_type {
    /** Contiguous elements; the size of one is in the upper bits
     *  (ucp_dt_make_contig()). */
    UCP_DATATYPE_CONTIG     = 0,
    /** Reserved for strided data; no operation accepts it. */
    UCP_DATATYPE_STRIDED    = 1,
    /** A scatter/gather list: the buffer is an array of ucp_dt_iov_t and
     *  the count is the number of entries (ucp_dt_make_iov()). */
    UCP_DATATYPE_IOV        = 2,
    /** Packed and unpacked by application callbacks
     *  (ucp_dt_create_generic()). */
    UCP_DATATYPE_GENERIC    = 7,
    /** Number of low bits that hold the class. */
    UCP_DATATYPE_SHIFT      = 3,
    /** Mask of those bits. */
    UCP_DATATYPE_CLASS_MASK = UCS_MASK(UCP_DATATYPE_SHIFT)
};

/** Datatype of contiguous elements of @a _elem_size bytes each; a count is
 *  then a number of elements. ucp_dt_make_contig(1) counts bytes. */
#define ucp_dt_make_contig(_elem_size) \
    (((ucp_datatype_t)(_elem_size) << UCP_DATATYPE_SHIFT) | UCP_DATATYPE_CONTIG)

/** Datatype of a scatter/gather list of ucp_dt_iov_t entries. */
#define ucp_dt_make_iov() ((ucp_datatype_t)UCP_DATATYPE_IOV)

/** One entry of a scatter/gather list. Entries are used in array order. */
typedef struct ucp_dt_iov {
    void   *buffer; /**< start of the piece */
    size_t length;  /**< its length in bytes; 0 is allowed */
} ucp_dt_iov_t;

/**
 * Callbacks that define a generic datatype (ucp_dt_create_generic()). The
 * library calls them from the operation that uses the datatype or from
 * worker progress, on the thread that progresses the worker. Data is packed
 * and unpacked in pieces whose offsets may come in any order, and a state
 * lives from start_pack/start_unpack until finish.
 */
typedef struct ucp_generic_dt_ops {
    /** Begin packing @a count elements from @a buffer for a send; returns a
     *  state for the other callbacks. @a context is the one given to
     *  ucp_dt_create_generic(). */
    void   *(*start_pack)(void *context, const void *buffer, size_t count);

    /** Begin unpacking into @a buffer, room for @a count elements, for a
     *  receive; returns a state. */
    void   *(*start_unpack)(void *context, void *buffer, size_t count);

    /** Total packed size in bytes of the data a state describes. */
    size_t (*packed_size)(void *state);

    /** Pack the bytes starting at packed offset @a offset into @a dest,
     *  at most @a max_length of them; return how many were written. */
    size_t (*pack)(void *state, size_t offset, void *dest, size_t max_length);

    /** Unpack @a length packed bytes from @a src, which belong at packed
     *  offset @a offset; return UCS_OK or an error that fails the receive. */
    ucs_status_t (*unpack)(void *state, size_t offset, const void *src,
                           size_t length);

    /** End of use of a state, also after an error or cancellation; free it. */
    void   (*finish)(void *state);
} ucp_generic_dt_ops_t;

/**
 * Create a generic datatype from packing callbacks (e.g. an MPI datatype
 * engine). Thread safe.
 *
 * @param ops         the callbacks; copied.
 * @param context     passed to start_pack and start_unpack as is.
 * @param datatype_p  receives the datatype; destroy it with ucp_dt_destroy()
 *                    once no operation uses it.
 * @return UCS_OK, or UCS_ERR_NO_MEMORY.
 */
ucs_status_t ucp_dt_create_generic(const ucp_generic_dt_ops_t *ops,
                                   void *context, ucp_datatype_t *datatype_p);

/**
 * Destroy a datatype made by ucp_dt_create_generic(). Contiguous and IOV
 * datatypes need no destruction; passing one does nothing.
 *
 * @param datatype  the datatype; no operation may still be using it.
 */
void ucp_dt_destroy(ucp_datatype_t datatype);

/** Bits of ucp_datatype_attr_t::field_mask. */
enum ucp_datatype_attr_field {
    UCP_DATATYPE_ATTR_FIELD_PACKED_SIZE = UCS_BIT(0), /**< packed_size is asked */
    UCP_DATATYPE_ATTR_FIELD_BUFFER      = UCS_BIT(1), /**< buffer is set */
    UCP_DATATYPE_ATTR_FIELD_COUNT       = UCS_BIT(2)  /**< count is set */
};

/** What ucp_dt_query() reports of a datatype applied to a buffer. */
typedef struct ucp_datatype_attr {
    uint64_t   field_mask;  /**< ucp_datatype_attr_field bits */
    size_t     packed_size; /**< out: bytes the data occupies packed */
    const void *buffer;     /**< in: the data (IOV: the ucp_dt_iov_t array) */
    size_t     count;       /**< in: elements (IOV: entries); 1 if not set */
} ucp_datatype_attr_t;

/**
 * Query a datatype: with UCP_DATATYPE_ATTR_FIELD_PACKED_SIZE, the number of
 * bytes @a attr->count elements at @a attr->buffer occupy on the wire (a
 * contiguous type needs no buffer; an IOV type reads its entries; a generic
 * type runs its start_pack, packed_size and finish callbacks).
 *
 * @param datatype  any datatype.
 * @param attr      in: field_mask, buffer, count; out: packed_size.
 * @return UCS_OK; UCS_ERR_INVALID_PARAM when @a attr is NULL or an IOV or
 *         generic type comes without its buffer.
 */
ucs_status_t ucp_dt_query(ucp_datatype_t datatype, ucp_datatype_attr_t *attr);


/* ======================================================================== */
/* Requests and operation parameters                                         */
/* ======================================================================== */

/**
 * Bits of ucp_request_param_t::op_attr_mask: which fields are set
 * (UCP_OP_ATTR_FIELD_*) and how the operation should complete
 * (UCP_OP_ATTR_FLAG_*).
 */
typedef enum {
    UCP_OP_ATTR_FIELD_REQUEST       = UCS_BIT(0),  /**< request */
    UCP_OP_ATTR_FIELD_CALLBACK      = UCS_BIT(1),  /**< cb */
    UCP_OP_ATTR_FIELD_USER_DATA     = UCS_BIT(2),  /**< user_data */
    UCP_OP_ATTR_FIELD_DATATYPE      = UCS_BIT(3),  /**< datatype */
    UCP_OP_ATTR_FIELD_FLAGS         = UCS_BIT(4),  /**< flags */
    UCP_OP_ATTR_FIELD_REPLY_BUFFER  = UCS_BIT(5),  /**< reply_buffer */
    UCP_OP_ATTR_FIELD_MEMORY_TYPE   = UCS_BIT(6),  /**< memory_type */
    UCP_OP_ATTR_FIELD_RECV_INFO     = UCS_BIT(7),  /**< recv_info */
    UCP_OP_ATTR_FIELD_MEMH          = UCS_BIT(8),  /**< memh */

    /** Never complete inside the call: always return a request (or an
     *  error). The callback may then run before the call returns. */
    UCP_OP_ATTR_FLAG_NO_IMM_CMPL    = UCS_BIT(16),

    /** Release the local buffer as early as possible, even if that delays
     *  delivery (e.g. copy rather than wait for the peer). A hint. */
    UCP_OP_ATTR_FLAG_FAST_CMPL      = UCS_BIT(17),

    /** Complete inside the call or fail with UCS_ERR_NO_RESOURCE; never
     *  return a request. */
    UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL = UCS_BIT(18),

    /** Favour the bandwidth of many operations in flight over the latency
     *  of one. A hint. */
    UCP_OP_ATTR_FLAG_MULTI_SEND     = UCS_BIT(19)
} ucp_op_attr_t;

/** Sender tag and length of a tagged message, as matched by a receive or
 *  seen by a probe. */
struct ucp_tag_recv_info {
    ucp_tag_t sender_tag; /**< the full tag the sender used */
    size_t    length;     /**< message size in bytes (for a truncated
                               receive: the size that was sent) */
};

/**
 * Parameters of the *_nbx operations. Read during the call only; the caller
 * may reuse the struct as soon as the call returns. A field is read only when
 * its UCP_OP_ATTR_FIELD_* bit is set; otherwise its default applies.
 */
typedef struct {
    /** Bits of ucp_op_attr_t. */
    uint32_t          op_attr_mask;

    /** Operation flags (UCP_OP_ATTR_FIELD_FLAGS): ucp_ep_close_flags_t for
     *  ucp_ep_close_nbx(); 0 for the others. */
    uint32_t          flags;

    /** Request memory provided by the application (see the rules at the top
     *  of this file); the call returns this pointer when the operation does
     *  not complete at once. Default: the library allocates the request. */
    void              *request;

    /** Completion callback; which member depends on the operation. Default:
     *  none (poll with ucp_request_check_status()). */
    union {
        /** Sends, flushes and closes. */
        ucp_send_nbx_callback_t         send;
        /** Tag receives (ucp_tag_recv_nbx(), ucp_tag_msg_recv_nbx()). */
        ucp_tag_recv_nbx_callback_t     recv;
        /** Stream receives (ucp_stream_recv_nbx()). */
        ucp_stream_recv_nbx_callback_t  recv_stream;
        /** Active-message data receives (ucp_am_recv_data_nbx()). */
        ucp_am_recv_data_nbx_callback_t recv_am;
    } cb;

    /** Datatype of the buffer. Default ucp_dt_make_contig(1): count is in
     *  bytes. */
    ucp_datatype_t    datatype;

    /** Passed to the callback as user_data. Default NULL. */
    void              *user_data;

    /** Where an operation that returns a value (remote atomics) stores it.
     *  Not used by the operations declared here. */
    void              *reply_buffer;

    /** Memory type of the buffer, when the caller knows it, which spares the
     *  library the lookup. Must be right if given. A value the library does
     *  not know (newer upstream headers number UCS_MEMORY_TYPE_UNKNOWN
     *  differently) means "find out", like UCS_MEMORY_TYPE_UNKNOWN. */
    ucs_memory_type_t memory_type;

    /** Where a receive that completes inside the call reports what it
     *  received (UCP_OP_ATTR_FIELD_RECV_INFO); written only when the call
     *  returns NULL. */
    union {
        /** Stream and active-message receives: bytes received. */
        size_t              *length;
        /** Tag receives: sender tag and length. */
        ucp_tag_recv_info_t *tag_info;
    } recv_info;

    /** Registration of the buffer from ucp_mem_map(), which spares the
     *  library registering it. It must cover the whole buffer. */
    ucp_mem_h         memh;
} ucp_request_param_t;

/**
 * State of a request.
 *
 * @param request  a request returned by a non-blocking call (or a request the
 *                 application provided), not yet freed.
 * @return UCS_INPROGRESS while the operation runs, otherwise its completion
 *         status. Does not progress the worker.
 */
ucs_status_t ucp_request_check_status(void *request);

/**
 * Give a request back to the library, whatever its state. An operation not
 * yet complete continues, but its callback will not be called. Call exactly
 * once per request the library allocated; never on application-provided
 * request memory.
 *
 * @param request  the request.
 */
void ucp_request_free(void *request);

/**
 * Try to cancel an operation. Afterwards the request is either completed
 * normally or canceled, and its callback is called (from this call or from
 * a later progress) with UCS_OK or UCS_ERR_CANCELED accordingly. Receives
 * not yet matched can always be canceled; a send that has started may not
 * be. The request must still be freed with ucp_request_free().
 *
 * @param worker   the worker of the operation.
 * @param request  the request.
 */
void ucp_request_cancel(ucp_worker_h worker, void *request);


/* ======================================================================== */
/* Context                                                                   */
/* ======================================================================== */

/** Bits of ucp_params_t::field_mask: which fields the caller set. */
enum ucp_params_field {
    UCP_PARAM_FIELD_FEATURES          = UCS_BIT(0), /**< features */
    UCP_PARAM_FIELD_REQUEST_SIZE      = UCS_BIT(1), /**< request_size */
    UCP_PARAM_FIELD_REQUEST_INIT      = UCS_BIT(2), /**< request_init */
    UCP_PARAM_FIELD_REQUEST_CLEANUP   = UCS_BIT(3), /**< request_cleanup */
    UCP_PARAM_FIELD_TAG_SENDER_MASK   = UCS_BIT(4), /**< tag_sender_mask */
    UCP_PARAM_FIELD_MT_WORKERS_SHARED = UCS_BIT(5), /**< mt_workers_shared */
    UCP_PARAM_FIELD_ESTIMATED_NUM_EPS = UCS_BIT(6), /**< estimated_num_eps */
    UCP_PARAM_FIELD_ESTIMATED_NUM_PPN = UCS_BIT(7), /**< estimated_num_ppn */
    UCP_PARAM_FIELD_NAME              = UCS_BIT(8)  /**< name */
};

/**
 * Capabilities a context is asked for (ucp_params_t::features). Ask only for
 * what the application uses: transports are chosen to serve these. A
 * feature this library cannot provide makes ucp_init() fail with
 * UCS_ERR_UNSUPPORTED and an error message naming it.
 */
enum ucp_feature {
    UCP_FEATURE_TAG    = UCS_BIT(0), /**< tag matching send/receive */
    UCP_FEATURE_RMA    = UCS_BIT(1), /**< remote memory access (put/get) */
    UCP_FEATURE_AMO32  = UCS_BIT(2), /**< 32-bit remote atomics */
    UCP_FEATURE_AMO64  = UCS_BIT(3), /**< 64-bit remote atomics */
    UCP_FEATURE_WAKEUP = UCS_BIT(4), /**< event-driven progress: ucp_worker_arm(),
                                          ucp_worker_wait(), ucp_worker_get_efd() */
    UCP_FEATURE_STREAM = UCS_BIT(5), /**< byte stream per endpoint */
    UCP_FEATURE_AM     = UCS_BIT(6)  /**< active messages */
};

/**
 * Parameters of ucp_init(). Read during the call only.
 */
typedef struct ucp_params {
    /** Bits of enum ucp_params_field. */
    uint64_t                       field_mask;

    /** Bits of enum ucp_feature. Required: ucp_init() fails with
     *  UCS_ERR_INVALID_PARAM without it. */
    uint64_t                       features;

    /** Bytes the application wants reserved in every request, starting at
     *  the request pointer the API hands out (default 0). MPI libraries
     *  keep their own request state there. */
    size_t                         request_size;

    /** Called once on each request object the library creates, before its
     *  first use -- not again when the object is reused after
     *  ucp_request_free(). Default: none. */
    ucp_request_init_callback_t    request_init;

    /** Called on each request object before the library frees its memory.
     *  Default: none. */
    ucp_request_cleanup_callback_t request_cleanup;

    /** Bits of a tag that identify the sender. Messages whose tags agree on
     *  these bits are matched in the order they were sent, also across
     *  wildcard receives. Default 0. */
    uint64_t                       tag_sender_mask;

    /** Non-zero when several threads will use different workers of this
     *  context at the same time (the context's shared state is then locked).
     *  Default 0. */
    int                            mt_workers_shared;

    /** Expected number of endpoints per worker, a tuning hint. */
    size_t                         estimated_num_eps;

    /** Expected number of processes on this node, a tuning hint. */
    size_t                         estimated_num_ppn;

    /** Name for logs and ucp_context_query(); copied. */
    const char                     *name;
} ucp_params_t;

/** Bits of ucp_context_attr_t::field_mask. */
enum ucp_context_attr_field {
    UCP_ATTR_FIELD_REQUEST_SIZE = UCS_BIT(0), /**< request_size */
    UCP_ATTR_FIELD_THREAD_MODE  = UCS_BIT(1), /**< thread_mode */
    UCP_ATTR_FIELD_MEMORY_TYPES = UCS_BIT(2), /**< memory_types */
    UCP_ATTR_FIELD_NAME         = UCS_BIT(3)  /**< name */
};

/** Attributes of a context, filled by ucp_context_query(). */
typedef struct ucp_context_attr {
    /** In: bits of enum ucp_context_attr_field to fill. */
    uint64_t          field_mask;

    /** Out: bytes of library data in front of every request -- what an
     *  application-provided request (the *_nbr calls,
     *  UCP_OP_ATTR_FIELD_REQUEST) must have room for before its pointer. */
    size_t            request_size;

    /** Out: the most concurrent use the context allows
     *  (UCS_THREAD_MODE_MULTI when mt_workers_shared was set). */
    ucs_thread_mode_t thread_mode;

    /** Out: bit UCS_BIT(t) set for each ucs_memory_type_t t that
     *  operations may use as buffers. */
    uint64_t          memory_types;

    /** Out: the context's name, '\0'-terminated. */
    char              name[UCP_ENTITY_NAME_MAX];
} ucp_context_attr_t;

/**
 * Create a context; normally called through ucp_init(), which passes the API
 * version of the headers the program was built with.
 *
 * When that version has another major number than this library's, or a newer
 * minor number, a warning naming both versions is printed and the call
 * carries on.
 *
 * @param api_major_version  UCP_API_MAJOR of the caller's headers.
 * @param api_minor_version  UCP_API_MINOR of the caller's headers.
 * @param params             what the context must provide; read only.
 * @param config             configuration from ucp_config_read(), or NULL to
 *                           read the environment now; the caller keeps it
 *                           and may release it as soon as this returns.
 * @param context_p          receives the context; the caller destroys it with
 *                           ucp_cleanup().
 * @return UCS_OK; UCS_ERR_INVALID_PARAM for missing features or bad values;
 *         UCS_ERR_UNSUPPORTED for a feature no transport offers;
 *         UCS_ERR_NO_DEVICE when UCX_TLS leaves no usable transport;
 *         UCS_ERR_NO_MEMORY.
 */
ucs_status_t ucp_init_version(unsigned api_major_version,
                              unsigned api_minor_version,
                              const ucp_params_t *params,
                              const ucp_config_t *config,
                              ucp_context_h *context_p);

/**
 * Create a context for the API version of these headers: see
 * ucp_init_version(). Inline so that the version compiled into the program
 * reaches the library.
 */
static inline ucs_status_t ucp_init(const ucp_params_t *params,
                                    const ucp_config_t *config,
                                    ucp_context_h *context_p)
{
    return ucp_init_version(UCP_API_MAJOR, UCP_API_MINOR, params, config,
                            context_p);
}

/**
 * Destroy a context. Every worker of it must have been destroyed first;
 * memory regions still mapped are unmapped, with a warning. Not thread safe
 * with any other use of the context.
 *
 * @param context_p  the context; not to be used again.
 */
void ucp_cleanup(ucp_context_h context_p);

/**
 * Read attributes of a context. Thread safe.
 *
 * @param context_p  the context.
 * @param attr       in: field_mask; out: the fields it names.
 * @return UCS_OK.
 */
ucs_status_t ucp_context_query(ucp_context_h context_p,
                               ucp_context_attr_t *attr);

/**
 * Print what a context uses: its memory domains and the transport resources
 * selected, one per line. The line format is upstream's, because MPI
 * libraries parse it to learn which transports are present.
 *
 * @param context  the context.
 * @param stream   where to print.
 */
void ucp_context_print_info(const ucp_context_h context, FILE *stream);


/* ======================================================================== */
/* Worker                                                                    */
/* ======================================================================== */

/** Bits of ucp_worker_params_t::field_mask. */
enum ucp_worker_params_field {
    UCP_WORKER_PARAM_FIELD_THREAD_MODE  = UCS_BIT(0), /**< thread_mode */
    UCP_WORKER_PARAM_FIELD_CPU_MASK     = UCS_BIT(1), /**< cpu_mask */
    UCP_WORKER_PARAM_FIELD_EVENTS       = UCS_BIT(2), /**< events */
    UCP_WORKER_PARAM_FIELD_USER_DATA    = UCS_BIT(3), /**< user_data */
    UCP_WORKER_PARAM_FIELD_EVENT_FD     = UCS_BIT(4), /**< event_fd */
    UCP_WORKER_PARAM_FIELD_FLAGS        = UCS_BIT(5), /**< flags */
    UCP_WORKER_PARAM_FIELD_NAME         = UCS_BIT(6), /**< name */
    UCP_WORKER_PARAM_FIELD_AM_ALIGNMENT = UCS_BIT(7), /**< am_alignment */
    UCP_WORKER_PARAM_FIELD_CLIENT_ID    = UCS_BIT(8)  /**< client_id */
};

/** Bits of ucp_worker_params_t::flags. */
typedef enum {
    /** Do not warn at ucp_worker_destroy() about requests the application
     *  never freed. */
    UCP_WORKER_FLAG_IGNORE_REQUEST_LEAK = UCS_BIT(0)
} ucp_worker_flags_t;

/** Bits of ucp_worker_attr_t::address_flags: what the address reported by
 *  ucp_worker_query() contains. */
typedef enum {
    /** Only what a peer on another host needs (network transports),
     *  leaving out shared memory and other node-local transports. */
    UCP_WORKER_ADDRESS_FLAG_NET_ONLY = UCS_BIT(0)
} ucp_worker_address_flags_t;

/** Parameters of ucp_worker_create(). Read during the call only. */
typedef struct ucp_worker_params {
    /** Bits of enum ucp_worker_params_field. */
    uint64_t          field_mask;

    /** How many threads may use the worker at once (see the rules at the
     *  top of this file). Default UCS_THREAD_MODE_SINGLE. A mode the library
     *  cannot give is refused with UCS_ERR_UNSUPPORTED. */
    ucs_thread_mode_t thread_mode;

    /** CPUs the worker's internal threads and interrupts should favour. */
    ucs_cpu_set_t     cpu_mask;

    /** Bits of ucp_wakeup_event_t: events that wake the worker when armed.
     *  Default: all of the context's features. */
    unsigned          events;

    /** Opaque value stored with the worker. */
    void              *user_data;

    /** A file descriptor (e.g. an epoll set) the worker adds its own event
     *  descriptors to, instead of exposing them via ucp_worker_get_efd(). The
     *  caller keeps ownership. */
    int               event_fd;

    /** Bits of ucp_worker_flags_t. */
    uint64_t          flags;

    /** Name for logs and ucp_worker_query(); copied. */
    const char        *name;

    /** Alignment, in bytes, of active-message data handed to receive
     *  callbacks (active messages arrive in a later version). */
    size_t            am_alignment;

    /** Identifier sent to servers by client/server connection
     *  establishment; stored, not used by this library. */
    uint64_t          client_id;
} ucp_worker_params_t;

/** Bits of ucp_worker_attr_t::field_mask. */
enum ucp_worker_attr_field {
    UCP_WORKER_ATTR_FIELD_THREAD_MODE     = UCS_BIT(0), /**< thread_mode */
    UCP_WORKER_ATTR_FIELD_ADDRESS         = UCS_BIT(1), /**< address, address_length */
    UCP_WORKER_ATTR_FIELD_ADDRESS_FLAGS   = UCS_BIT(2), /**< address_flags (input) */
    UCP_WORKER_ATTR_FIELD_MAX_AM_HEADER   = UCS_BIT(3), /**< max_am_header */
    UCP_WORKER_ATTR_FIELD_NAME            = UCS_BIT(4), /**< name */
    UCP_WORKER_ATTR_FIELD_MAX_INFO_STRING = UCS_BIT(5)  /**< max_debug_string */
};

/** Attributes of a worker, filled by ucp_worker_query(). */
typedef struct ucp_worker_attr {
    /** In: bits of enum ucp_worker_attr_field to fill. */
    uint64_t          field_mask;

    /** Out: the thread mode the worker actually has. */
    ucs_thread_mode_t thread_mode;

    /** In: bits of ucp_worker_address_flags_t shaping @a address, read when
     *  UCP_WORKER_ATTR_FIELD_ADDRESS_FLAGS is set. */
    uint32_t          address_flags;

    /** Out: the worker's address, allocated by the library; free it with
     *  ucp_worker_release_address(). */
    ucp_address_t     *address;

    /** Out: size of @a address in bytes. */
    size_t            address_length;

    /** Out: largest user header an active message may carry. */
    size_t            max_am_header;

    /** Out: the worker's name, '\0'-terminated. */
    char              name[UCP_ENTITY_NAME_MAX];

    /** Out: longest debug string the library writes about a request. */
    size_t            max_debug_string;
} ucp_worker_attr_t;

/**
 * Create a worker. Thread safe with other calls on the same context when the
 * context was created with mt_workers_shared, otherwise not.
 *
 * @param context   the context the worker belongs to.
 * @param params    how to create it; read only.
 * @param worker_p  receives the worker; destroy it with ucp_worker_destroy().
 * @return UCS_OK; UCS_ERR_UNSUPPORTED for a thread mode the library does not
 *         support; UCS_ERR_NO_DEVICE when no transport interface could be
 *         opened; UCS_ERR_NO_MEMORY.
 */
ucs_status_t ucp_worker_create(ucp_context_h context,
                               const ucp_worker_params_t *params,
                               ucp_worker_h *worker_p);

/**
 * Destroy a worker. Endpoints still open are closed forcibly and requests not
 * completed are completed with UCS_ERR_CANCELED without callbacks; a warning
 * lists requests the application never freed (unless
 * UCP_WORKER_FLAG_IGNORE_REQUEST_LEAK). Nothing of the worker may be used
 * afterwards, and no other thread may be using it during the call.
 *
 * @param worker  the worker.
 */
void ucp_worker_destroy(ucp_worker_h worker);

/**
 * Read attributes of a worker.
 *
 * @param worker  the worker.
 * @param attr    in: field_mask (and address_flags); out: the fields named.
 * @return UCS_OK; UCS_ERR_NO_MEMORY when the address could not be allocated.
 */
ucs_status_t ucp_worker_query(ucp_worker_h worker,
                              ucp_worker_attr_t *attr);

/**
 * Progress all communication of a worker: poll its transports, complete
 * requests and call their callbacks.
 *
 * @param worker  the worker.
 * @return how many events were handled; 0 means nothing happened, which is
 *         the moment to call ucp_worker_arm() before sleeping.
 */
unsigned ucp_worker_progress(ucp_worker_h worker);

/**
 * Get the worker's address: everything a peer needs to create an endpoint to
 * it with ucp_ep_create(). The bytes may be copied and sent to the peer by
 * any means (MPI exchanges them out of band).
 *
 * @param worker            the worker.
 * @param address_p         receives the address, owned by the caller: free it
 *                          with ucp_worker_release_address().
 * @param address_length_p  receives its size in bytes.
 * @return UCS_OK, or UCS_ERR_NO_MEMORY.
 */
ucs_status_t ucp_worker_get_address(ucp_worker_h worker,
                                    ucp_address_t **address_p,
                                    size_t *address_length_p);

/**
 * Free an address from ucp_worker_get_address() or ucp_worker_query().
 *
 * @param worker   the worker it came from.
 * @param address  the address; not to be used again.
 */
void ucp_worker_release_address(ucp_worker_h worker, ucp_address_t *address);

/**
 * Get a file descriptor that becomes readable when the worker, armed with
 * ucp_worker_arm(), has an event. Poll it with poll(), select() or epoll;
 * the library owns it and closes it at ucp_worker_destroy(). Needs
 * UCP_FEATURE_WAKEUP.
 *
 * @param worker  the worker.
 * @param fd      receives the descriptor.
 * @return UCS_OK; UCS_ERR_UNSUPPORTED without UCP_FEATURE_WAKEUP or when the
 *         worker was created with UCP_WORKER_PARAM_FIELD_EVENT_FD.
 */
ucs_status_t ucp_worker_get_efd(ucp_worker_h worker, int *fd);

/**
 * Prepare to sleep: arrange for the worker's event descriptor to signal the
 * next event. Use it when ucp_worker_progress() returned 0:
 * progress until idle, arm, and sleep on the descriptor only if arm returned
 * UCS_OK.
 *
 * @param worker  the worker.
 * @return UCS_OK: armed, sleeping is safe; UCS_ERR_BUSY: events are already
 *         pending, call ucp_worker_progress() again instead of sleeping.
 */
ucs_status_t ucp_worker_arm(ucp_worker_h worker);

/**
 * Block until the worker has an event or ucp_worker_signal() is called;
 * ucp_worker_arm() plus a wait on the event descriptor in one call. Needs
 * UCP_FEATURE_WAKEUP. Call ucp_worker_progress() afterwards.
 *
 * @param worker  the worker.
 * @return UCS_OK once woken; UCS_ERR_UNSUPPORTED without UCP_FEATURE_WAKEUP;
 *         UCS_ERR_IO_ERROR when waiting failed.
 */
ucs_status_t ucp_worker_wait(ucp_worker_h worker);

/**
 * Wake the worker: make a pending or future ucp_worker_wait() return and the
 * event descriptor readable. Safe from any thread at any time, also from a
 * thread that does not own the worker.
 *
 * @param worker  the worker.
 * @return UCS_OK, or UCS_ERR_IO_ERROR.
 */
ucs_status_t ucp_worker_signal(ucp_worker_h worker);

/**
 * Order remote memory accesses: operations started on the worker after this
 * call take effect at their targets after those started before it. Unlike a
 * flush it does not wait for anything. Tagged messages are ordered per
 * endpoint anyway and need no fence.
 *
 * @param worker  the worker.
 * @return UCS_OK.
 */
ucs_status_t ucp_worker_fence(ucp_worker_h worker);

/**
 * Start flushing a worker: the request completes once every operation
 * started on any of its endpoints before this call has completed remotely.
 *
 * @param worker  the worker.
 * @param flags   reserved, pass 0.
 * @param cb      called on completion, with the status.
 * @return NULL when nothing was outstanding, an error pointer, or a request
 *         (see the rules at the top of this file).
 */
ucs_status_ptr_t ucp_worker_flush_nb(ucp_worker_h worker, unsigned flags,
                                     ucp_send_callback_t cb);

/**
 * Start flushing a worker, like ucp_worker_flush_nb(), with the completion
 * described by @a param (callback, user data, request memory, immediate
 * completion flags).
 *
 * @param worker  the worker.
 * @param param   operation parameters; read during the call only.
 * @return NULL, an error pointer, or a request.
 */
ucs_status_ptr_t ucp_worker_flush_nbx(ucp_worker_h worker,
                                      const ucp_request_param_t *param);


/* ======================================================================== */
/* Endpoint                                                                  */
/* ======================================================================== */

/** Bits of ucp_ep_params_t::field_mask. */
enum ucp_ep_params_field {
    UCP_EP_PARAM_FIELD_REMOTE_ADDRESS    = UCS_BIT(0), /**< address */
    UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE = UCS_BIT(1), /**< err_mode */
    UCP_EP_PARAM_FIELD_ERR_HANDLER       = UCS_BIT(2), /**< err_handler */
    UCP_EP_PARAM_FIELD_USER_DATA         = UCS_BIT(3), /**< user_data */
    UCP_EP_PARAM_FIELD_SOCK_ADDR         = UCS_BIT(4), /**< sockaddr (refused) */
    UCP_EP_PARAM_FIELD_FLAGS             = UCS_BIT(5), /**< flags */
    UCP_EP_PARAM_FIELD_CONN_REQUEST      = UCS_BIT(6), /**< conn_request (refused) */
    UCP_EP_PARAM_FIELD_NAME              = UCS_BIT(7), /**< name */
    UCP_EP_PARAM_FIELD_LOCAL_SOCK_ADDR   = UCS_BIT(8)  /**< local_sockaddr (refused) */
};

/** Bits of ucp_ep_params_t::flags. */
enum ucp_ep_params_flags_field {
    /** Connect through a client/server socket address. Not supported:
     *  refused with UCS_ERR_UNSUPPORTED. */
    UCP_EP_PARAMS_FLAGS_CLIENT_SERVER  = UCS_BIT(0),

    /** Do not use loopback when the remote address is this worker's own:
     *  an endpoint to oneself then goes through the regular transports. */
    UCP_EP_PARAMS_FLAGS_NO_LOOPBACK    = UCS_BIT(1),

    /** Send the worker's client_id to the server (client/server only;
     *  refused with UCS_ERR_UNSUPPORTED). */
    UCP_EP_PARAMS_FLAGS_SEND_CLIENT_ID = UCS_BIT(2)
};

/** Bits of ucp_request_param_t::flags for ucp_ep_close_nbx(). */
typedef enum {
    /** Close at once, without flushing: outstanding operations on the
     *  endpoint complete with an error and the peer is not told. Needed for
     *  an endpoint whose peer has failed. */
    UCP_EP_CLOSE_FLAG_FORCE = UCS_BIT(0)
} ucp_ep_close_flags_t;

/** The @a mode argument of ucp_ep_close_nb(). */
enum ucp_ep_close_mode {
    /** As UCP_EP_CLOSE_FLAG_FORCE. */
    UCP_EP_CLOSE_MODE_FORCE = 0,
    /** Complete every operation started on the endpoint, tell the peer,
     *  then release the endpoint. */
    UCP_EP_CLOSE_MODE_FLUSH = 1
};

/** Bits of ucp_ep_attr_t::field_mask. */
enum ucp_ep_attr_field {
    UCP_EP_ATTR_FIELD_NAME            = UCS_BIT(0), /**< name */
    UCP_EP_ATTR_FIELD_LOCAL_SOCKADDR  = UCS_BIT(1), /**< local_sockaddr */
    UCP_EP_ATTR_FIELD_REMOTE_SOCKADDR = UCS_BIT(2), /**< remote_sockaddr */
    UCP_EP_ATTR_FIELD_TRANSPORTS      = UCS_BIT(3), /**< transports */
    UCP_EP_ATTR_FIELD_USER_DATA       = UCS_BIT(4)  /**< user_data */
};

/** Attributes of an endpoint, filled by ucp_ep_query(). */
typedef struct ucp_ep_attr {
    /** In: bits of enum ucp_ep_attr_field to fill. */
    uint64_t                field_mask;

    /** Out: the endpoint's name, '\0'-terminated. */
    char                    name[UCP_ENTITY_NAME_MAX];

    /** Out: local socket address of a client/server connection. Endpoints
     *  of this library never have one (see ucp_ep_query()). */
    struct sockaddr_storage local_sockaddr;

    /** Out: remote socket address of a client/server connection; likewise
     *  never available here. */
    struct sockaddr_storage remote_sockaddr;

    /** In: room for entries (entries, num_entries, entry_size); out: the
     *  transports and devices the endpoint's lanes use, num_entries set to
     *  how many were written. Names stay valid while the endpoint lives. */
    ucp_transports_t        transports;

    /** Out: the endpoint's user data (UCP_EP_PARAM_FIELD_USER_DATA). */
    void                    *user_data;
} ucp_ep_attr_t;

/**
 * Create an endpoint to the worker whose address is params->address
 * (UCP_EP_PARAM_FIELD_REMOTE_ADDRESS, required). The address is checked: a
 * truncated or corrupt one, or one with no transport in common with this
 * worker, fails the call with an error message. The connection may complete
 * lazily: operations can be started on the endpoint at once.
 *
 * Client/server fields and flags (sockaddr, conn_request, local_sockaddr,
 * UCP_EP_PARAMS_FLAGS_CLIENT_SERVER, ..._SEND_CLIENT_ID) are refused with
 * UCS_ERR_UNSUPPORTED.
 *
 * @param worker  the worker the endpoint belongs to.
 * @param params  how to create it; it and the address may be freed when the
 *                call returns.
 * @param ep_p    receives the endpoint; close it with ucp_ep_close_nbx().
 * @return UCS_OK; UCS_ERR_INVALID_PARAM when no address is given;
 *         UCS_ERR_INVALID_ADDR for a truncated or corrupt address;
 *         UCS_ERR_UNREACHABLE when no transport reaches the peer;
 *         UCS_ERR_UNSUPPORTED; UCS_ERR_NO_MEMORY.
 */
ucs_status_t ucp_ep_create(ucp_worker_h worker, const ucp_ep_params_t *params,
                           ucp_ep_h *ep_p);

/**
 * Start closing an endpoint. The caller must not use @a ep once this is
 * called, whatever it returns.
 *
 * @param ep    the endpoint.
 * @param mode  a value of enum ucp_ep_close_mode.
 * @return NULL when closed at once, an error pointer (the endpoint's
 *         resources are released all the same), or a request to progress,
 *         check and free.
 */
ucs_status_ptr_t ucp_ep_close_nb(ucp_ep_h ep, unsigned mode);

/**
 * Start closing an endpoint, flushing it first unless param->flags (with
 * UCP_OP_ATTR_FIELD_FLAGS) has UCP_EP_CLOSE_FLAG_FORCE. The caller must not
 * use @a ep once this is called, whatever it returns.
 *
 * @param ep     the endpoint.
 * @param param  completion and flags; read during the call only.
 * @return NULL, an error pointer (resources released all the same), or a
 *         request.
 */
ucs_status_ptr_t ucp_ep_close_nbx(ucp_ep_h ep,
                                  const ucp_request_param_t *param);

/**
 * Start flushing an endpoint: the request completes once every operation
 * started on it before this call has completed remotely.
 *
 * @param ep     the endpoint.
 * @param flags  reserved, pass 0.
 * @param cb     called on completion, with the status.
 * @return NULL when nothing was outstanding, an error pointer, or a request.
 */
ucs_status_ptr_t ucp_ep_flush_nb(ucp_ep_h ep, unsigned flags,
                                 ucp_send_callback_t cb);

/**
 * Start flushing an endpoint, like ucp_ep_flush_nb(), with the completion
 * described by @a param.
 *
 * @param ep     the endpoint.
 * @param param  operation parameters; read during the call only.
 * @return NULL, an error pointer, or a request.
 */
ucs_status_ptr_t ucp_ep_flush_nbx(ucp_ep_h ep, const ucp_request_param_t *param);

/**
 * Read attributes of an endpoint.
 *
 * @param ep    the endpoint.
 * @param attr  in: field_mask; out: the fields named.
 * @return UCS_OK; UCS_ERR_UNSUPPORTED when a socket address is asked for
 *         (endpoints here are made from worker addresses, never sockets).
 */
ucs_status_t ucp_ep_query(ucp_ep_h ep, ucp_ep_attr_t *attr);


/* ======================================================================== */
/* Tag matching                                                              */
/* ======================================================================== */

/**
 * Start sending a tagged message. Messages from one endpoint with the same
 * tag are matched at the receiver in the order they were sent.
 *
 * @param ep        destination endpoint.
 * @param buffer    the data (@a count elements of @a datatype).
 * @param count     number of elements.
 * @param datatype  datatype of the elements.
 * @param tag       the message's tag.
 * @param cb        called on completion, i.e. when @a buffer may be reused.
 * @return NULL when the send completed inside the call (no callback), an
 *         error pointer, or a request.
 */
ucs_status_ptr_t ucp_tag_send_nb(ucp_ep_h ep, const void *buffer, size_t count,
                                 ucp_datatype_t datatype, ucp_tag_t tag,
                                 ucp_send_callback_t cb);

/**
 * Start sending a tagged message into an application-provided request, with
 * no callback: the blocking-send pattern of MPI.
 *
 * @param ep        destination endpoint.
 * @param buffer    the data.
 * @param count     number of elements.
 * @param datatype  datatype of the elements.
 * @param tag       the message's tag.
 * @param req       request memory: ucp_context_attr_t::request_size bytes
 *                  must be free before it (see the rules at the top).
 * @return UCS_OK when the send completed inside the call; UCS_INPROGRESS
 *         when it continues in @a req (poll it with
 *         ucp_request_check_status()); or an error.
 */
ucs_status_t ucp_tag_send_nbr(ucp_ep_h ep, const void *buffer, size_t count,
                              ucp_datatype_t datatype, ucp_tag_t tag, void *req);

/**
 * Start a synchronous tagged send: completes only once the receiver has
 * matched the message with a receive (not necessarily received all of it).
 * Never completes inside the call.
 *
 * @param ep        destination endpoint.
 * @param buffer    the data.
 * @param count     number of elements.
 * @param datatype  datatype of the elements.
 * @param tag       the message's tag.
 * @param cb        called on completion.
 * @return an error pointer or a request.
 */
ucs_status_ptr_t ucp_tag_send_sync_nb(ucp_ep_h ep, const void *buffer,
                                      size_t count, ucp_datatype_t datatype,
                                      ucp_tag_t tag, ucp_send_callback_t cb);

/**
 * Start sending a tagged message, with completion, datatype, memory type and
 * request memory described by @a param.
 *
 * @param ep      destination endpoint.
 * @param buffer  the data.
 * @param count   number of elements of param->datatype (bytes by default).
 * @param tag     the message's tag.
 * @param param   operation parameters; read during the call only.
 * @return NULL, an error pointer, or a request.
 */
ucs_status_ptr_t ucp_tag_send_nbx(ucp_ep_h ep, const void *buffer, size_t count,
                                  ucp_tag_t tag,
                                  const ucp_request_param_t *param);

/**
 * Synchronous variant of ucp_tag_send_nbx(): completes once the receiver
 * has matched the message. Never completes inside the call.
 *
 * @param ep      destination endpoint.
 * @param buffer  the data.
 * @param count   number of elements.
 * @param tag     the message's tag.
 * @param param   operation parameters; read during the call only.
 * @return an error pointer or a request.
 */
ucs_status_ptr_t ucp_tag_send_sync_nbx(ucp_ep_h ep, const void *buffer,
                                       size_t count, ucp_tag_t tag,
                                       const ucp_request_param_t *param);

/**
 * Post a tagged receive. It matches the first message, from any endpoint of
 * the worker, with (sender_tag & tag_mask) == (tag & tag_mask), whether it
 * already arrived (unexpected) or arrives later. A message longer than the
 * buffer completes the receive with UCS_ERR_MESSAGE_TRUNCATED.
 *
 * @param worker    the worker.
 * @param buffer    where the data goes.
 * @param count     room in elements of @a datatype.
 * @param datatype  datatype of the elements.
 * @param tag       the wanted tag.
 * @param tag_mask  bits of the tag that must match (0: any message).
 * @param cb        called on completion with the sender tag and length.
 * @return an error pointer or a request: this call always returns a request
 *         when it succeeds, even if the data is already there -- the
 *         callback has then been called before it returns.
 */
ucs_status_ptr_t ucp_tag_recv_nb(ucp_worker_h worker, void *buffer,
                                 size_t count, ucp_datatype_t datatype,
                                 ucp_tag_t tag, ucp_tag_t tag_mask,
                                 ucp_tag_recv_callback_t cb);

/**
 * Post a tagged receive into an application-provided request, with no
 * callback. Matching as ucp_tag_recv_nb().
 *
 * @param worker    the worker.
 * @param buffer    where the data goes.
 * @param count     room in elements.
 * @param datatype  datatype of the elements.
 * @param tag       the wanted tag.
 * @param tag_mask  bits of the tag that must match.
 * @param req       request memory, as for ucp_tag_send_nbr(); ucp_request_test()
 *                  on it reports the sender tag and length once complete.
 * @return UCS_OK when posted (completion is seen through @a req), or an error.
 */
ucs_status_t ucp_tag_recv_nbr(ucp_worker_h worker, void *buffer, size_t count,
                              ucp_datatype_t datatype, ucp_tag_t tag,
                              ucp_tag_t tag_mask, void *req);

/**
 * Post a tagged receive with completion described by @a param. Matching as
 * ucp_tag_recv_nb().
 *
 * @param worker    the worker.
 * @param buffer    where the data goes.
 * @param count     room in elements of param->datatype (bytes by default).
 * @param tag       the wanted tag.
 * @param tag_mask  bits of the tag that must match.
 * @param param     operation parameters; read during the call only.
 * @return NULL when the message was already there and is received (then
 *         *param->recv_info.tag_info, if given, is filled); an error pointer;
 *         or a request.
 */
ucs_status_ptr_t ucp_tag_recv_nbx(ucp_worker_h worker, void *buffer,
                                  size_t count, ucp_tag_t tag,
                                  ucp_tag_t tag_mask,
                                  const ucp_request_param_t *param);

/**
 * Look for an arrived message matching @a tag / @a tag_mask without
 * receiving it. Does not progress the worker: a polling loop must call
 * ucp_worker_progress() too.
 *
 * @param worker    the worker.
 * @param tag       the wanted tag.
 * @param tag_mask  bits of the tag that must match.
 * @param remove    non-zero: take the message out of the unexpected queue, so
 *                  no other receive can match it; the caller must then receive
 *                  it with ucp_tag_msg_recv_nb() or ucp_tag_msg_recv_nbx().
 *                  0: leave it there; the result only says whether one exists
 *                  and must not be passed to ucp_tag_msg_recv_*.
 * @param info      filled with the message's sender tag and length when one
 *                  is found.
 * @return NULL when no matching message has arrived, otherwise its handle.
 */
ucp_tag_message_h ucp_tag_probe_nb(ucp_worker_h worker, ucp_tag_t tag,
                                   ucp_tag_t tag_mask, int remove,
                                   ucp_tag_recv_info_t *info);

/**
 * Receive a message taken out by ucp_tag_probe_nb(..., remove=1).
 *
 * @param worker    the worker.
 * @param buffer    where the data goes.
 * @param count     room in elements of @a datatype.
 * @param datatype  datatype of the elements.
 * @param message   the handle; consumed by this call.
 * @param cb        called on completion.
 * @return an error pointer or a request (always a request on success, as
 *         for ucp_tag_recv_nb()).
 */
ucs_status_ptr_t ucp_tag_msg_recv_nb(ucp_worker_h worker, void *buffer,
                                     size_t count, ucp_datatype_t datatype,
                                     ucp_tag_message_h message,
                                     ucp_tag_recv_callback_t cb);

/**
 * Receive a message taken out by ucp_tag_probe_nb(..., remove=1), with
 * completion described by @a param.
 *
 * @param worker   the worker.
 * @param buffer   where the data goes.
 * @param count    room in elements of param->datatype (bytes by default).
 * @param message  the handle; consumed by this call.
 * @param param    operation parameters; read during the call only.
 * @return NULL when received inside the call, an error pointer, or a
 *         request.
 */
ucs_status_ptr_t ucp_tag_msg_recv_nbx(ucp_worker_h worker, void *buffer,
                                      size_t count, ucp_tag_message_h message,
                                      const ucp_request_param_t *param);


/* ======================================================================== */
/* Memory registration and remote keys                                       */
/* ======================================================================== */

/** Bits of ucp_mem_map_params_t::field_mask. */
enum ucp_mem_map_params_field {
    UCP_MEM_MAP_PARAM_FIELD_ADDRESS     = UCS_BIT(0), /**< address */
    UCP_MEM_MAP_PARAM_FIELD_LENGTH      = UCS_BIT(1), /**< length */
    UCP_MEM_MAP_PARAM_FIELD_FLAGS       = UCS_BIT(2), /**< flags */
    UCP_MEM_MAP_PARAM_FIELD_PROT        = UCS_BIT(3), /**< prot */
    UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE = UCS_BIT(4)  /**< memory_type */
};

/** Bits of ucp_mem_map_params_t::flags. */
enum {
    /** Register lazily, e.g. page by page on first access, where the
     *  transport allows it. A hint. */
    UCP_MEM_MAP_NONBLOCK = UCS_BIT(0),
    /** The library allocates the memory (of @a length bytes, of
     *  @a memory_type); freed by ucp_mem_unmap(). */
    UCP_MEM_MAP_ALLOCATE = UCS_BIT(1),
    /** With UCP_MEM_MAP_ALLOCATE: allocate exactly at @a address. */
    UCP_MEM_MAP_FIXED    = UCS_BIT(2)
};

/** Bits of ucp_mem_map_params_t::prot: who may access the region. */
enum {
    UCP_MEM_MAP_PROT_LOCAL_READ   = UCS_BIT(0), /**< local reads */
    UCP_MEM_MAP_PROT_LOCAL_WRITE  = UCS_BIT(1), /**< local writes */
    UCP_MEM_MAP_PROT_REMOTE_READ  = UCS_BIT(8), /**< remote reads */
    UCP_MEM_MAP_PROT_REMOTE_WRITE = UCS_BIT(9)  /**< remote writes */
};

/** Parameters of ucp_mem_map(). Read during the call only. */
typedef struct ucp_mem_map_params {
    /** Bits of enum ucp_mem_map_params_field. */
    uint64_t          field_mask;

    /** Start of the memory to register; with UCP_MEM_MAP_ALLOCATE a hint
     *  (or, with UCP_MEM_MAP_FIXED, the exact place) for the allocation. */
    void              *address;

    /** Length in bytes; required. Zero gives a valid handle that maps
     *  nothing. */
    size_t            length;

    /** Bits of the UCP_MEM_MAP_* flags. Default 0. */
    unsigned          flags;

    /** Bits of the UCP_MEM_MAP_PROT_* flags. Default: local and remote read
     *  and write. */
    unsigned          prot;

    /** Memory type of the region, when known; otherwise (or for a value the
     *  library does not know) it is detected. For UCP_MEM_MAP_ALLOCATE: the
     *  type to allocate, host by default. */
    ucs_memory_type_t memory_type;
} ucp_mem_map_params_t;

/** Values of ucp_mem_advise_params_t::advice. */
typedef enum ucp_mem_advice {
    UCP_MADV_NORMAL   = 0, /**< no particular access pattern */
    UCP_MADV_WILLNEED      /**< the range will be accessed soon: map it now */
} ucp_mem_advice_t;

/** Bits of ucp_mem_advise_params_t::field_mask. */
enum ucp_mem_advise_params_field {
    UCP_MEM_ADVISE_PARAM_FIELD_ADDRESS = UCS_BIT(0), /**< address */
    UCP_MEM_ADVISE_PARAM_FIELD_LENGTH  = UCS_BIT(1), /**< length */
    UCP_MEM_ADVISE_PARAM_FIELD_ADVICE  = UCS_BIT(2)  /**< advice */
};

/** Parameters of ucp_mem_advise(); all three fields are required. */
typedef struct ucp_mem_advise_params {
    uint64_t         field_mask; /**< bits of enum ucp_mem_advise_params_field */
    void             *address;   /**< start of the range, inside the region */
    size_t           length;     /**< its length in bytes */
    ucp_mem_advice_t advice;     /**< what to expect */
} ucp_mem_advise_params_t;

/**
 * Register memory with every transport of the context (or allocate and
 * register it, with UCP_MEM_MAP_ALLOCATE), so that it can be packed into a
 * remote key and used without registration cost. Thread safe when the
 * context was created with mt_workers_shared.
 *
 * @param context  the context.
 * @param params   what to register; read during the call only.
 * @param memh_p   receives the handle; release it with ucp_mem_unmap().
 * @return UCS_OK (also for a zero length, see ucp_mem_map_params_t::length);
 *         UCS_ERR_INVALID_PARAM for a missing length, or a missing address
 *         without UCP_MEM_MAP_ALLOCATE; UCS_ERR_UNSUPPORTED for a memory type
 *         no transport can register; UCS_ERR_NO_MEMORY.
 */
ucs_status_t ucp_mem_map(ucp_context_h context,
                         const ucp_mem_map_params_t *params,
                         ucp_mem_h *memh_p);

/**
 * Deregister a region, and free it if the library allocated it. Remote keys
 * unpacked from it elsewhere become invalid. No operation may still be using
 * it. Thread safe when the context was created with mt_workers_shared.
 *
 * @param context  the context it was mapped with.
 * @param memh     the handle; not to be used again.
 * @return UCS_OK, or UCS_ERR_INVALID_PARAM for a handle of another context.
 */
ucs_status_t ucp_mem_unmap(ucp_context_h context, ucp_mem_h memh);

/**
 * Read attributes of a region. Thread safe.
 *
 * @param memh  the handle.
 * @param attr  in: field_mask; out: the fields named.
 * @return UCS_OK.
 */
ucs_status_t ucp_mem_query(const ucp_mem_h memh, ucp_mem_attr_t *attr);

/**
 * Tell the library how part of a region will be used. Advice only: it may
 * do nothing.
 *
 * @param context  the context.
 * @param memh     the region.
 * @param params   the range and the advice.
 * @return UCS_OK; UCS_ERR_INVALID_PARAM when the range is outside the region
 *         or a field is missing.
 */
ucs_status_t ucp_mem_advise(ucp_context_h context, ucp_mem_h memh,
                            ucp_mem_advise_params_t *params);

/**
 * Pack what a peer needs to access a region: a remote key buffer to send to
 * it, to be turned into a ucp_rkey_h there by ucp_ep_rkey_unpack(). Thread
 * safe when the context was created with mt_workers_shared.
 *
 * @param context        the context.
 * @param memh           the region.
 * @param rkey_buffer_p  receives the buffer, owned by the caller: free it
 *                       with ucp_rkey_buffer_release().
 * @param size_p         receives its size in bytes.
 * @return UCS_OK, or UCS_ERR_NO_MEMORY.
 */
ucs_status_t ucp_rkey_pack(ucp_context_h context, ucp_mem_h memh,
                           void **rkey_buffer_p, size_t *size_p);

/** Bits of ucp_memh_pack_params_t::field_mask. */
enum ucp_memh_pack_params_field {
    UCP_MEMH_PACK_PARAM_FIELD_FLAGS = UCS_BIT(0) /**< flags is set */
};

/** Flags of ucp_memh_pack(). */
enum ucp_memh_pack_flags {
    /** Pack the handle for a peer's local use of the same physical memory
     *  (ucp_mem_map with an exported buffer). Not supported here. */
    UCP_MEMH_PACK_FLAG_EXPORT = UCS_BIT(0)
};

/** Parameters of ucp_memh_pack(). */
typedef struct ucp_memh_pack_params {
    uint64_t field_mask; /**< ucp_memh_pack_params_field bits */
    uint64_t flags;      /**< ucp_memh_pack_flags */
} ucp_memh_pack_params_t;

/** Parameters of ucp_memh_buffer_release(). */
typedef struct ucp_memh_buffer_release_params {
    uint64_t field_mask; /**< no fields yet: 0 */
} ucp_memh_buffer_release_params_t;

/**
 * Pack a memory handle for peers: without flags, the remote key buffer of
 * ucp_rkey_pack() (a peer makes it a key with ucp_ep_rkey_unpack()).
 *
 * @param memh           the region.
 * @param params         flags; NULL for none.
 * @param buffer_p       receives the buffer: free it with
 *                       ucp_memh_buffer_release().
 * @param buffer_size_p  receives its size in bytes.
 * @return UCS_OK; UCS_ERR_UNSUPPORTED for UCP_MEMH_PACK_FLAG_EXPORT (this
 *         library has no exported memory handles); UCS_ERR_INVALID_PARAM;
 *         UCS_ERR_NO_MEMORY.
 */
ucs_status_t ucp_memh_pack(ucp_mem_h memh, const ucp_memh_pack_params_t *params,
                           void **buffer_p, size_t *buffer_size_p);

/**
 * Free a buffer from ucp_memh_pack().
 *
 * @param buffer  the buffer.
 * @param params  no fields yet; may be NULL.
 */
void ucp_memh_buffer_release(void *buffer,
                             const ucp_memh_buffer_release_params_t *params);

/**
 * Free a buffer from ucp_rkey_pack().
 *
 * @param rkey_buffer  the buffer; anything else is undefined behaviour.
 */
void ucp_rkey_buffer_release(void *rkey_buffer);

/**
 * Make a remote key from a buffer a peer packed with ucp_rkey_pack(). The
 * key may be used only with @a ep, the endpoint to that peer.
 *
 * @param ep           endpoint to the peer that owns the memory.
 * @param rkey_buffer  the packed key, unchanged; may be freed afterwards.
 * @param rkey_p       receives the key; destroy it with ucp_rkey_destroy().
 * @return UCS_OK; UCS_ERR_INVALID_PARAM for a corrupt buffer;
 *         UCS_ERR_UNREACHABLE when no transport of @a ep can use it;
 *         UCS_ERR_NO_MEMORY.
 */
ucs_status_t ucp_ep_rkey_unpack(ucp_ep_h ep, const void *rkey_buffer,
                                ucp_rkey_h *rkey_p);

/** Parameters of ucp_rkey_compare(). */
typedef struct ucp_rkey_compare_params {
    uint64_t field_mask; /**< no fields yet: must be 0 */
} ucp_rkey_compare_params_t;

/**
 * Order two remote keys unpacked on @a worker: @a result is 0 when both
 * were unpacked from the same packed key (the same registration of one
 * peer, reached through the same transport), else negative or positive,
 * consistently (a total order, e.g. for a cache of keys).
 *
 * @param worker  the worker of both keys' endpoints.
 * @param rkey1   a key.
 * @param rkey2   a key.
 * @param params  field_mask must be 0.
 * @param result  receives the order.
 * @return UCS_OK; UCS_ERR_INVALID_PARAM for a NULL argument or a field_mask
 *         with unknown bits.
 */
ucs_status_t ucp_rkey_compare(ucp_worker_h worker, ucp_rkey_h rkey1, ucp_rkey_h rkey2,
                              const ucp_rkey_compare_params_t *params, int *result);

/**
 * Get a local pointer through which this process can load and store the
 * remote memory at @a raddr directly (shared memory peers only).
 *
 * @param rkey    the remote key.
 * @param raddr   an address inside the remote region.
 * @param addr_p  receives the local pointer, valid until the key is
 *                destroyed.
 * @return UCS_OK; UCS_ERR_UNREACHABLE when the memory cannot be mapped into
 *         this process; UCS_ERR_INVALID_PARAM when @a raddr is outside the
 *         region.
 */
ucs_status_t ucp_rkey_ptr(ucp_rkey_h rkey, uint64_t raddr, void **addr_p);

/**
 * Destroy a remote key. No operation may still be using it; pointers from
 * ucp_rkey_ptr() become invalid.
 *
 * @param rkey  the key.
 */
void ucp_rkey_destroy(ucp_rkey_h rkey);


/* ======================================================================== */
/* Remote memory access and atomics                                          */
/* ======================================================================== */
/*
 * Operations on a region another process mapped with ucp_mem_map() and
 * described by a key from ucp_ep_rkey_unpack(). The target process must call
 * ucp_worker_progress(): its worker checks every request against its
 * registered regions and executes it. Operations of one endpoint are applied
 * in the order they were issued. Local completion (the request's callback,
 * NULL from the call) means the source buffer may be reused; a flush of the
 * endpoint or worker completes once every earlier operation was applied
 * remotely, and reports the first error of an implicit (nbi) operation.
 */

/** Atomic operations of ucp_atomic_post(); the remote value is not
 *  returned. */
typedef enum {
    UCP_ATOMIC_POST_OP_ADD, /**< remote += value */
    UCP_ATOMIC_POST_OP_AND, /**< remote &= value */
    UCP_ATOMIC_POST_OP_OR,  /**< remote |= value */
    UCP_ATOMIC_POST_OP_XOR, /**< remote ^= value */
    UCP_ATOMIC_POST_OP_LAST
} ucp_atomic_post_op_t;

/** Atomic operations of ucp_atomic_fetch_nb(): the previous remote value is
 *  returned in the result. */
typedef enum {
    UCP_ATOMIC_FETCH_OP_FADD,  /**< fetch, then add */
    UCP_ATOMIC_FETCH_OP_SWAP,  /**< fetch, then store */
    UCP_ATOMIC_FETCH_OP_CSWAP, /**< fetch, then store if equal */
    UCP_ATOMIC_FETCH_OP_FAND,  /**< fetch, then and */
    UCP_ATOMIC_FETCH_OP_FOR,   /**< fetch, then or */
    UCP_ATOMIC_FETCH_OP_FXOR,  /**< fetch, then xor */
    UCP_ATOMIC_FETCH_OP_LAST
} ucp_atomic_fetch_op_t;

/** Atomic operations of ucp_atomic_op_nbx(). */
typedef enum {
    UCP_ATOMIC_OP_ADD,   /**< result = remote; remote += operand */
    UCP_ATOMIC_OP_SWAP,  /**< result = remote; remote = operand */
    UCP_ATOMIC_OP_CSWAP, /**< result = remote; if (remote == operand)
                              remote = reply_buffer's value */
    UCP_ATOMIC_OP_AND,   /**< result = remote; remote &= operand */
    UCP_ATOMIC_OP_OR,    /**< result = remote; remote |= operand */
    UCP_ATOMIC_OP_XOR,   /**< result = remote; remote ^= operand */
    UCP_ATOMIC_OP_LAST
} ucp_atomic_op_t;

/**
 * Write @a length bytes to remote memory, without a request: completion is
 * learned from a later flush.
 *
 * @param ep           endpoint to the owner of the memory.
 * @param buffer       source (host or device memory); reusable on return
 *                     when UCS_OK, else after the next flush.
 * @param length       bytes to write.
 * @param remote_addr  address in the remote region.
 * @param rkey         key of that region, unpacked on @a ep.
 * @return UCS_OK (done locally), UCS_INPROGRESS (queued), or an error:
 *         UCS_ERR_INVALID_PARAM when the range is outside the key's region.
 */
ucs_status_t ucp_put_nbi(ucp_ep_h ep, const void *buffer, size_t length,
                         uint64_t remote_addr, ucp_rkey_h rkey);

/**
 * Write to remote memory; @a cb is called once @a buffer may be reused.
 *
 * @param ep           endpoint to the owner of the memory.
 * @param buffer       source.
 * @param length       bytes to write.
 * @param remote_addr  address in the remote region.
 * @param rkey         key of that region, unpacked on @a ep.
 * @param cb           completion callback (not called when NULL is
 *                     returned).
 * @return NULL (done), a request to free with ucp_request_free(), or an
 *         error pointer.
 */
ucs_status_ptr_t ucp_put_nb(ucp_ep_h ep, const void *buffer, size_t length,
                            uint64_t remote_addr, ucp_rkey_h rkey,
                            ucp_send_callback_t cb);

/**
 * Write @a count elements of param->datatype (contiguous only; bytes by
 * default) to remote memory.
 *
 * @param ep           endpoint to the owner of the memory.
 * @param buffer       source.
 * @param count        number of elements.
 * @param remote_addr  address in the remote region.
 * @param rkey         key of that region, unpacked on @a ep.
 * @param param        callback, user data, request memory, flags.
 * @return NULL (done), a request, or an error pointer.
 */
ucs_status_ptr_t ucp_put_nbx(ucp_ep_h ep, const void *buffer, size_t count,
                             uint64_t remote_addr, ucp_rkey_h rkey,
                             const ucp_request_param_t *param);

/**
 * Read @a length bytes of remote memory, without a request: the data is in
 * @a buffer after the next flush completes.
 *
 * @param ep           endpoint to the owner of the memory.
 * @param buffer       destination (host or device memory).
 * @param length       bytes to read.
 * @param remote_addr  address in the remote region.
 * @param rkey         key of that region, unpacked on @a ep.
 * @return UCS_INPROGRESS (queued) or an error.
 */
ucs_status_t ucp_get_nbi(ucp_ep_h ep, void *buffer, size_t length,
                         uint64_t remote_addr, ucp_rkey_h rkey);

/**
 * Read remote memory; @a cb is called once the data is in @a buffer.
 *
 * @param ep           endpoint to the owner of the memory.
 * @param buffer       destination.
 * @param length       bytes to read.
 * @param remote_addr  address in the remote region.
 * @param rkey         key of that region, unpacked on @a ep.
 * @param cb           completion callback.
 * @return NULL (done), a request, or an error pointer.
 */
ucs_status_ptr_t ucp_get_nb(ucp_ep_h ep, void *buffer, size_t length,
                            uint64_t remote_addr, ucp_rkey_h rkey,
                            ucp_send_callback_t cb);

/**
 * Read @a count elements of param->datatype (contiguous only) of remote
 * memory.
 *
 * @param ep           endpoint to the owner of the memory.
 * @param buffer       destination.
 * @param count        number of elements.
 * @param remote_addr  address in the remote region.
 * @param rkey         key of that region, unpacked on @a ep.
 * @param param        callback, user data, request memory, flags.
 * @return NULL (done), a request, or an error pointer.
 */
ucs_status_ptr_t ucp_get_nbx(ucp_ep_h ep, void *buffer, size_t count,
                             uint64_t remote_addr, ucp_rkey_h rkey,
                             const ucp_request_param_t *param);

/**
 * Apply an atomic operation to a 4- or 8-byte remote value, without a
 * request: a later flush tells that it was applied.
 *
 * @param ep           endpoint to the owner of the memory.
 * @param opcode       the operation.
 * @param value        the operand (its low 32 bits when @a op_size is 4).
 * @param op_size      4 or 8.
 * @param remote_addr  address of the value, aligned to @a op_size.
 * @param rkey         key of the region, unpacked on @a ep.
 * @return UCS_OK or UCS_INPROGRESS; UCS_ERR_INVALID_PARAM for a bad size,
 *         opcode or range.
 */
ucs_status_t ucp_atomic_post(ucp_ep_h ep, ucp_atomic_post_op_t opcode,
                             uint64_t value, size_t op_size,
                             uint64_t remote_addr, ucp_rkey_h rkey);

/**
 * Apply an atomic operation to a remote value and return its previous value.
 *
 * @param ep           endpoint to the owner of the memory.
 * @param opcode       the operation.
 * @param value        the operand; for CSWAP, the value compared with.
 * @param result       receives the previous remote value (a uint32_t or
 *                     uint64_t as @a op_size says); for CSWAP it holds the
 *                     value stored when the comparison succeeds.
 * @param op_size      4 or 8.
 * @param remote_addr  address of the value, aligned to @a op_size.
 * @param rkey         key of the region, unpacked on @a ep.
 * @param cb           completion callback.
 * @return NULL (done), a request, or an error pointer.
 */
ucs_status_ptr_t ucp_atomic_fetch_nb(ucp_ep_h ep, ucp_atomic_fetch_op_t opcode,
                                     uint64_t value, void *result,
                                     size_t op_size, uint64_t remote_addr,
                                     ucp_rkey_h rkey, ucp_send_callback_t cb);

/**
 * Apply an atomic operation to one remote element of param->datatype
 * (ucp_dt_make_contig(4) or (8)). With param->reply_buffer the previous
 * remote value is returned there; CSWAP requires it and takes the value to
 * store from it.
 *
 * @param ep           endpoint to the owner of the memory.
 * @param opcode       the operation.
 * @param buffer       the operand.
 * @param count        1.
 * @param remote_addr  address of the value, aligned to its size.
 * @param rkey         key of the region, unpacked on @a ep.
 * @param param        datatype, reply buffer, callback, flags.
 * @return NULL (done), a request, or an error pointer.
 */
ucs_status_ptr_t ucp_atomic_op_nbx(ucp_ep_h ep, ucp_atomic_op_t opcode,
                                   const void *buffer, size_t count,
                                   uint64_t remote_addr, ucp_rkey_h rkey,
                                   const ucp_request_param_t *param);


/* ======================================================================== */
/* Client/server connection establishment                                    */
/* ======================================================================== */

/** Bits of ucp_listener_params_t::field_mask. */
enum ucp_listener_params_field {
    UCP_LISTENER_PARAM_FIELD_SOCK_ADDR      = UCS_BIT(0), /**< sockaddr */
    UCP_LISTENER_PARAM_FIELD_ACCEPT_HANDLER = UCS_BIT(1), /**< accept_handler */
    UCP_LISTENER_PARAM_FIELD_CONN_HANDLER   = UCS_BIT(2)  /**< conn_handler */
};

/** How to create a listener (ucp_listener_create()). */
typedef struct ucp_listener_params {
    /** Bits of enum ucp_listener_params_field. */
    uint64_t                      field_mask;

    /** Address to listen on (required): IPv4 or IPv6, INADDR_ANY /
     *  in6addr_any for every interface, port 0 for one the kernel picks
     *  (ucp_listener_query() tells which). */
    ucs_sock_addr_t               sockaddr;

    /** The older handler: the library creates the server's endpoint and
     *  passes it. */
    ucp_listener_accept_handler_t accept_handler;

    /** Handler of connection requests (the application creates or refuses
     *  the endpoint). One of the two handlers is required. */
    ucp_listener_conn_handler_t   conn_handler;
} ucp_listener_params_t;

/** Bits of ucp_listener_attr_t::field_mask. */
enum ucp_listener_attr_field {
    UCP_LISTENER_ATTR_FIELD_SOCKADDR = UCS_BIT(0) /**< sockaddr */
};

/** Attributes of a listener (ucp_listener_query()). */
typedef struct ucp_listener_attr {
    /** In: bits of enum ucp_listener_attr_field to fill. */
    uint64_t                field_mask;
    /** Out: the address the listener is bound to, with its actual port. */
    struct sockaddr_storage sockaddr;
} ucp_listener_attr_t;

/** Bits of ucp_conn_request_attr_t::field_mask. */
enum ucp_conn_request_attr_field {
    UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR = UCS_BIT(0), /**< client_address */
    UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ID   = UCS_BIT(1)  /**< client_id */
};

/** Attributes of a connection request (ucp_conn_request_query()). */
typedef struct ucp_conn_request_attr {
    /** In: bits of enum ucp_conn_request_attr_field to fill. */
    uint64_t                field_mask;
    /** Out: the client's socket address as the server sees it. */
    struct sockaddr_storage client_address;
    /** Out: the client worker's client_id (UCP_WORKER_PARAM_FIELD_CLIENT_ID),
     *  sent when the client set UCP_EP_PARAMS_FLAGS_SEND_CLIENT_ID, else 0. */
    uint64_t                client_id;
} ucp_conn_request_attr_t;

/**
 * Listen for clients on a socket address. Connection requests are handled
 * from ucp_worker_progress() of @a worker (which ucp_worker_wait() also
 * wakes for). The handshake carries the worker addresses, so the endpoints
 * of both sides then use the best transports they share (shared memory on
 * one host, tcp between hosts), as endpoints created from worker addresses.
 *
 * @param worker       the worker that owns the listener and its endpoints.
 * @param params       address and handler.
 * @param listener_p   receives the listener.
 * @return UCS_OK; UCS_ERR_INVALID_PARAM for a missing address or handler, or
 *         a bad address family; UCS_ERR_BUSY when the address is in use;
 *         UCS_ERR_IO_ERROR for other socket errors (logged with the cause).
 */
ucs_status_t ucp_listener_create(ucp_worker_h worker,
                                 const ucp_listener_params_t *params,
                                 ucp_listener_h *listener_p);

/**
 * Stop listening and free the listener. Requests not yet accepted are
 * refused; endpoints already created are not affected.
 *
 * @param listener  the listener.
 */
void ucp_listener_destroy(ucp_listener_h listener);

/**
 * Query a listener.
 *
 * @param listener  the listener.
 * @param attr      in: field_mask; out: the fields named.
 * @return UCS_OK.
 */
ucs_status_t ucp_listener_query(ucp_listener_h listener, ucp_listener_attr_t *attr);

/**
 * Refuse a connection request: the client's endpoint fails with
 * UCS_ERR_REJECTED (its error handler runs when it has one). The request is
 * freed.
 *
 * @param listener      the listener that reported it.
 * @param conn_request  the request.
 * @return UCS_OK.
 */
ucs_status_t ucp_listener_reject(ucp_listener_h listener,
                                 ucp_conn_request_h conn_request);

/**
 * Query a connection request (before it is accepted or rejected).
 *
 * @param conn_request  the request.
 * @param attr          in: field_mask; out: the fields named.
 * @return UCS_OK.
 */
ucs_status_t ucp_conn_request_query(ucp_conn_request_h conn_request,
                                    ucp_conn_request_attr_t *attr);


/* ======================================================================== */
/* Stream                                                                    */
/* ======================================================================== */

/** Bits of ucp_request_param_t::flags for ucp_stream_recv_nbx(). */
typedef enum {
    /** Complete only when the whole buffer is filled (else as soon as any
     *  data is there). */
    UCP_STREAM_RECV_FLAG_WAITALL = UCS_BIT(0)
} ucp_stream_recv_flags_t;

/** An endpoint with stream data to receive (ucp_stream_worker_poll()). */
typedef struct ucp_stream_poll_ep {
    ucp_ep_h ep;           /**< the endpoint */
    void     *user_data;   /**< its user data */
    unsigned flags;        /**< reserved, 0 */
    uint8_t  reserved[16]; /**< reserved */
} ucp_stream_poll_ep_t;

/**
 * Send bytes on the endpoint's stream: they arrive in order after the bytes
 * of earlier stream sends on the same endpoint, with no message boundaries.
 * Host and GPU memory (detected, or param->memory_type).
 *
 * @param ep      the endpoint.
 * @param buffer  data.
 * @param count   elements of param->datatype (default: bytes).
 * @param param   callback, datatype, flags.
 * @return NULL (done, buffer reusable), a request, or an error pointer.
 */
ucs_status_ptr_t ucp_stream_send_nbx(ucp_ep_h ep, const void *buffer, size_t count,
                                     const ucp_request_param_t *param);

/**
 * Receive stream bytes of the endpoint into @a buffer. Without
 * UCP_STREAM_RECV_FLAG_WAITALL it completes as soon as any whole elements
 * are there, with their length; with it, when the buffer is full.
 *
 * @param ep      the endpoint.
 * @param buffer  where the bytes go (host or GPU memory).
 * @param count   elements of param->datatype the buffer holds.
 * @param length  when the call completes at once (returns NULL): the bytes
 *                received.
 * @param param   callback (cb.recv_stream), datatype, flags, recv_info.
 * @return NULL (done), a request, or an error pointer.
 */
ucs_status_ptr_t ucp_stream_recv_nbx(ucp_ep_h ep, void *buffer, size_t count,
                                     size_t *length,
                                     const ucp_request_param_t *param);

/**
 * Take the next chunk of received stream bytes without copying.
 *
 * @param ep      the endpoint.
 * @param length  receives the chunk's length.
 * @return the data (give it back with ucp_stream_data_release()), NULL when
 *         nothing is there, or an error pointer.
 */
ucs_status_ptr_t ucp_stream_recv_data_nb(ucp_ep_h ep, size_t *length);

/**
 * Give back a chunk from ucp_stream_recv_data_nb().
 *
 * @param ep    the endpoint it came from.
 * @param data  the chunk.
 */
void ucp_stream_data_release(ucp_ep_h ep, void *data);

/**
 * Find endpoints that have stream data to receive.
 *
 * @param worker    the worker.
 * @param poll_eps  room for @a max_eps entries.
 * @param max_eps   size of @a poll_eps.
 * @param flags     0.
 * @return the number of entries written, or a negative ucs_status_t.
 */
ssize_t ucp_stream_worker_poll(ucp_worker_h worker, ucp_stream_poll_ep_t *poll_eps,
                               size_t max_eps, unsigned flags);

/**
 * State of a stream receive request.
 *
 * @param request   the request.
 * @param length_p  on completion: the bytes received.
 * @return UCS_INPROGRESS, or the completion status.
 */
ucs_status_t ucp_stream_recv_request_test(void *request, size_t *length_p);

/** ucp_stream_send_nbx() with the old callback and flags (0). */
ucs_status_ptr_t ucp_stream_send_nb(ucp_ep_h ep, const void *buffer, size_t count,
                                    ucp_datatype_t datatype, ucp_send_callback_t cb,
                                    unsigned flags);

/** ucp_stream_recv_nbx() with the old callback; @a flags are
 *  ucp_stream_recv_flags_t. */
ucs_status_ptr_t ucp_stream_recv_nb(ucp_ep_h ep, void *buffer, size_t count,
                                    ucp_datatype_t datatype,
                                    ucp_stream_recv_callback_t cb, size_t *length,
                                    unsigned flags);


/* ======================================================================== */
/* Active messages                                                           */
/* ======================================================================== */

/** Bits of ucp_am_handler_param_t::flags. */
enum ucp_am_cb_flags {
    /** The handler gets whole messages. This library always delivers whole
     *  messages; the flag is accepted for compatibility. */
    UCP_AM_FLAG_WHOLE_MSG       = UCS_BIT(0),
    /** Eager data passed to the handler may always be kept
     *  (UCP_AM_RECV_ATTR_FLAG_DATA is set): it is in memory of the library
     *  that lives until ucp_am_data_release(). */
    UCP_AM_FLAG_PERSISTENT_DATA = UCS_BIT(1)
};

/** Bits of ucp_request_param_t::flags for ucp_am_send_nbx(). */
enum ucp_send_am_flags {
    /** Give the receiver an endpoint to the sender (param->reply_ep). */
    UCP_AM_SEND_FLAG_REPLY       = UCS_BIT(0),
    /** Send the data with the message, whatever its size. */
    UCP_AM_SEND_FLAG_EAGER       = UCS_BIT(1),
    /** Announce the data and let the receiver fetch it (rendezvous). */
    UCP_AM_SEND_FLAG_RNDV        = UCS_BIT(2),
    /** The header may be reused when the call returns (this library always
     *  copies it). */
    UCP_AM_SEND_FLAG_COPY_HEADER = UCS_BIT(3),
    UCP_AM_SEND_REPLY            = UCP_AM_SEND_FLAG_REPLY /**< old name */
};

/** Flags passed to a ucp_am_callback_t. */
enum ucp_cb_param_flags {
    UCP_CB_PARAM_FLAG_DATA = UCS_BIT(0) /**< the data may be kept */
};

/** Bits of ucp_am_recv_param_t::recv_attr. */
typedef enum {
    UCP_AM_RECV_ATTR_FIELD_REPLY_EP = UCS_BIT(0),  /**< reply_ep is set */
    UCP_AM_RECV_ATTR_FLAG_DATA      = UCS_BIT(16), /**< data may be kept */
    UCP_AM_RECV_ATTR_FLAG_RNDV      = UCS_BIT(17)  /**< data is a rendezvous
                                                        descriptor */
} ucp_am_recv_attr_t;

/** Bits of ucp_am_handler_param_t::field_mask. */
enum ucp_am_handler_param_field {
    UCP_AM_HANDLER_PARAM_FIELD_ID    = UCS_BIT(0), /**< id */
    UCP_AM_HANDLER_PARAM_FIELD_FLAGS = UCS_BIT(1), /**< flags */
    UCP_AM_HANDLER_PARAM_FIELD_CB    = UCS_BIT(2), /**< cb */
    UCP_AM_HANDLER_PARAM_FIELD_ARG   = UCS_BIT(3)  /**< arg */
};

/** An active-message handler to install (ucp_worker_set_am_recv_handler()). */
typedef struct ucp_am_handler_param {
    uint64_t               field_mask; /**< bits of ucp_am_handler_param_field */
    unsigned               id;         /**< message id (required), < 65536 */
    uint32_t               flags;      /**< bits of ucp_am_cb_flags */
    ucp_am_recv_callback_t cb;         /**< the handler; NULL removes it */
    void                   *arg;       /**< its first argument */
} ucp_am_handler_param_t;

/** What a handler learns about a message besides header and data. */
struct ucp_am_recv_param {
    uint64_t recv_attr; /**< bits of ucp_am_recv_attr_t */
    ucp_ep_h reply_ep;  /**< endpoint to the sender (FIELD_REPLY_EP) */
};

/**
 * Install (or with cb NULL remove) the handler of active messages with
 * param->id. Messages of an id without handler are dropped with a warning
 * (a rendezvous one releases its sender).
 *
 * @param worker  the worker.
 * @param param   id, handler, argument, flags.
 * @return UCS_OK; UCS_ERR_INVALID_PARAM without id or with id >= 65536.
 */
ucs_status_t ucp_worker_set_am_recv_handler(ucp_worker_h worker,
                                            const ucp_am_handler_param_t *param);

/**
 * Send an active message: a user header (at most the worker's
 * max_am_header bytes, copied) and data (host or GPU memory of any kind,
 * contiguous or IOV). Small data travels with the header; large data is
 * announced and fetched by the receiver (ucp_am_recv_data_nbx()) through the
 * same rendezvous protocols as tag messages. param->flags: ucp_send_am_flags.
 *
 * @param ep             the endpoint.
 * @param id             message id the receiver's handler is installed for.
 * @param header         user header, or NULL when @a header_length is 0.
 * @param header_length  its length.
 * @param buffer         data.
 * @param count          elements of param->datatype (default bytes).
 * @param param          callback, datatype, memory type, flags.
 * @return NULL (done), a request, or an error pointer (UCS_ERR_EXCEEDS_LIMIT
 *         for a header over the limit).
 */
ucs_status_ptr_t ucp_am_send_nbx(ucp_ep_h ep, unsigned id, const void *header,
                                 size_t header_length, const void *buffer,
                                 size_t count, const ucp_request_param_t *param);

/**
 * Receive the data of an active message into @a buffer: a rendezvous
 * descriptor (UCP_AM_RECV_ATTR_FLAG_RNDV) is fetched from the sender; kept
 * eager data (UCP_AM_RECV_ATTR_FLAG_DATA) is copied and released. The
 * descriptor is consumed either way.
 *
 * @param worker     the worker whose handler got @a data_desc.
 * @param data_desc  the handler's data argument.
 * @param buffer     destination (host or GPU memory).
 * @param count      elements of param->datatype it holds.
 * @param param      callback (cb.recv_am), datatype, memory type, recv_info.
 * @return NULL (done), a request, or an error pointer
 *         (UCS_ERR_MESSAGE_TRUNCATED when the buffer is too small).
 */
ucs_status_ptr_t ucp_am_recv_data_nbx(ucp_worker_h worker, void *data_desc,
                                      void *buffer, size_t count,
                                      const ucp_request_param_t *param);

/**
 * Give back data or a rendezvous descriptor a handler kept (returned
 * UCS_INPROGRESS for). A rendezvous message released without being received
 * completes its send.
 *
 * @param worker  the worker.
 * @param data    the handler's data argument.
 */
void ucp_am_data_release(ucp_worker_h worker, void *data);

/**
 * The old handler interface: install @a cb for @a id (flags:
 * UCP_AM_FLAG_WHOLE_MSG); NULL removes it.
 *
 * @return UCS_OK, or UCS_ERR_INVALID_PARAM for an id >= 65536.
 */
ucs_status_t ucp_worker_set_am_handler(ucp_worker_h worker, uint16_t id,
                                       ucp_am_callback_t cb, void *arg,
                                       uint32_t flags);

/** ucp_am_send_nbx() without header, with the old callback; @a flags:
 *  UCP_AM_SEND_REPLY. */
ucs_status_ptr_t ucp_am_send_nb(ucp_ep_h ep, uint16_t id, const void *buffer,
                                size_t count, ucp_datatype_t datatype,
                                ucp_send_callback_t cb, unsigned flags);


/* ======================================================================== */
/* Diagnostics and queries used by bindings                                  */
/* ======================================================================== */

/** Bits of ucp_request_attr_t::field_mask. */
typedef enum {
    UCP_REQUEST_ATTR_FIELD_INFO_STRING      = UCS_BIT(0), /**< debug_string */
    UCP_REQUEST_ATTR_FIELD_INFO_STRING_SIZE = UCS_BIT(1), /**< debug_string_size */
    UCP_REQUEST_ATTR_FIELD_STATUS           = UCS_BIT(2), /**< status */
    UCP_REQUEST_ATTR_FIELD_MEM_TYPE         = UCS_BIT(3)  /**< mem_type */
} ucp_req_attr_field;

/** Attributes of a request (ucp_request_query()). */
typedef struct {
    uint64_t          field_mask;        /**< in: bits of ucp_req_attr_field */
    char              *debug_string;     /**< in: room for a description */
    size_t            debug_string_size; /**< in: its size */
    ucs_status_t      status;            /**< out: UCS_INPROGRESS or the result */
    ucs_memory_type_t mem_type;          /**< out: memory type of its buffer */
} ucp_request_attr_t;

/**
 * Query a request.
 *
 * @param request  a request returned by a non-blocking call.
 * @param attr     in: field_mask (and the string room); out: the fields named.
 * @return UCS_OK; UCS_ERR_INVALID_PARAM for INFO_STRING without room.
 */
ucs_status_t ucp_request_query(void *request, ucp_request_attr_t *attr);

/** Whether a request has completed (non-zero) or is in progress (0). */
int ucp_request_is_completed(void *request);

/** A request object the application may pass to the *_nbr calls' successors
 *  (UCP_OP_ATTR_FIELD_REQUEST is preferred); free it with ucp_request_free().
 *  NULL when out of memory. */
void *ucp_request_alloc(ucp_worker_h worker);

/** Complete information about a tag receive request: like
 *  ucp_request_test(). */
ucs_status_t ucp_tag_recv_request_test(void *request, ucp_tag_recv_info_t *info);

/**
 * Print the worker's transports, address and state.
 *
 * @param worker  the worker.
 * @param stream  where to print.
 */
void ucp_worker_print_info(ucp_worker_h worker, FILE *stream);

/** Print an endpoint's lanes and protocol thresholds. */
void ucp_ep_print_info(ucp_ep_h ep, FILE *stream);

/** Print a registered region (address, length, memory type). */
void ucp_mem_print_info(const char *mem_spec, ucp_context_h context, FILE *stream);

/** Bits of ucp_lib_attr_t::field_mask. */
enum ucp_lib_attr_field {
    UCP_LIB_ATTR_FIELD_MAX_THREAD_LEVEL = UCS_BIT(0) /**< max_thread_level */
};

/** Attributes of the library (ucp_lib_query()). */
typedef struct ucp_lib_attr {
    uint64_t          field_mask;       /**< in: bits of ucp_lib_attr_field */
    ucs_thread_mode_t max_thread_level; /**< out: UCS_THREAD_MODE_MULTI */
} ucp_lib_attr_t;

/** Query the library. @return UCS_OK. */
ucs_status_t ucp_lib_query(ucp_lib_attr_t *attr);

/** Bits of ucp_worker_address_attr_t::field_mask. */
enum ucp_worker_address_attr_field {
    UCP_WORKER_ADDRESS_ATTR_FIELD_UID = UCS_BIT(0) /**< worker_uid */
};

/** What a worker address tells (ucp_worker_address_query()). */
typedef struct ucp_worker_address_attr {
    uint64_t field_mask; /**< in: bits of ucp_worker_address_attr_field */
    uint64_t worker_uid; /**< out: the worker's unique id */
} ucp_worker_address_attr_t;

/**
 * Query a worker address (of any worker).
 *
 * @return UCS_OK; UCS_ERR_INVALID_ADDR for a corrupt address.
 */
ucs_status_t ucp_worker_address_query(ucp_address_t *address,
                                      ucp_worker_address_attr_t *attr);

/** Bits of ucp_ep_evaluate_perf_param_t::field_mask. */
typedef enum ucp_ep_perf_param_field {
    UCP_EP_PERF_PARAM_FIELD_MESSAGE_SIZE = UCS_BIT(0) /**< message_size */
} ucp_ep_perf_param_field_t;

/** Bits of ucp_ep_evaluate_perf_attr_t::field_mask. */
typedef enum ucp_ep_perf_attr_field {
    UCP_EP_PERF_ATTR_FIELD_ESTIMATED_TIME = UCS_BIT(0) /**< estimated_time */
} ucp_ep_perf_attr_field_t;

/** Input of ucp_ep_evaluate_perf(). */
typedef struct {
    uint64_t field_mask;   /**< bits of ucp_ep_perf_param_field_t */
    size_t   message_size; /**< bytes of a host-memory tag message */
} ucp_ep_evaluate_perf_param_t;

/** Output of ucp_ep_evaluate_perf(). */
typedef struct {
    uint64_t field_mask;     /**< bits of ucp_ep_perf_attr_field_t */
    double   estimated_time; /**< seconds, from the transports' estimates */
} ucp_ep_evaluate_perf_attr_t;

/**
 * Estimate the time a host-memory tag message of param->message_size bytes
 * takes on @a ep, from the performance model that chooses its protocols.
 *
 * @return UCS_OK; UCS_ERR_INVALID_PARAM without message size.
 */
ucs_status_t ucp_ep_evaluate_perf(ucp_ep_h ep,
                                  const ucp_ep_evaluate_perf_param_t *param,
                                  ucp_ep_evaluate_perf_attr_t *attr);

/** Wait (spinning, then yielding) until the 64-bit word at @a address may
 *  have changed; for applications that poll memory a peer writes. */
void ucp_worker_wait_mem(ucp_worker_h worker, void *address);


/* ======================================================================== */
/* Configuration and version                                                 */
/* ======================================================================== */

/**
 * Read the UCP configuration from the environment.
 *
 * Variables are named UCX_<NAME>, or UCX_<env_prefix>_<NAME> when
 * @a env_prefix is given (the prefixed form wins). Each value is checked: a
 * malformed one fails the call with an error message naming the variable, the
 * value and the accepted forms. UCX_* variables that no component knows are
 * reported once, at warning level, with the closest known name.
 *
 * @param env_prefix  optional extra prefix, may be NULL.
 * @param filename    a configuration file to read before the environment, or
 *                    NULL for the default search (UCX_CONFIG_FILE).
 * @param config_p    receives the new configuration, owned by the caller.
 * @return UCS_OK, UCS_ERR_INVALID_PARAM for a bad value, UCS_ERR_NO_MEMORY.
 */
ucs_status_t ucp_config_read(const char *env_prefix, const char *filename,
                             ucp_config_t **config_p);

/**
 * Free a configuration returned by ucp_config_read().
 *
 * @param config  may be NULL.
 */
void ucp_config_release(ucp_config_t *config);

/**
 * Change one value of a configuration, as if UCX_<name>=<value> were set.
 *
 * @param config  configuration to change.
 * @param name    variable name without the UCX_ prefix, e.g. "TLS".
 * @param value   new value, checked like an environment value.
 * @return UCS_OK; UCS_ERR_NO_ELEM for an unknown name; UCS_ERR_INVALID_PARAM
 *         for a malformed value (the old value is kept).
 */
ucs_status_t ucp_config_modify(ucp_config_t *config, const char *name,
                               const char *value);

/**
 * Print a configuration.
 *
 * @param config       configuration to print.
 * @param stream       output stream.
 * @param title        optional header line text.
 * @param print_flags  what to print (ucs_config_print_flags_t).
 */
void ucp_config_print(const ucp_config_t *config, FILE *stream,
                      const char *title, ucs_config_print_flags_t print_flags);

/**
 * Version of the library actually loaded (which may differ from the
 * headers the program was built with).
 */
void ucp_get_version(unsigned *major_version, unsigned *minor_version,
                     unsigned *release_number);

/** The loaded library's version as "major.minor.release". */
const char *ucp_get_version_string(void);

END_C_DECLS

#endif
