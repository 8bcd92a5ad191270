/**
 * @file self.h
 * The self transport: loopback within one process. Active messages are
 * delivered synchronously, from inside the send call, to the handler of the
 * destination iface (an iface of this process, found by its address); put
 * and get are memcpy, since "remote" memory is this process's own.
 *
 * Component "self", md "self", transport "self", device "memory".
 *
 * Addresses name the process (a hash of boot id, PID namespace and pid, so
 * an address from another process, or from the parent of a fork, is
 * unreachable) and the iface (a process-unique number). Every address and
 * packed key starts with a magic and a version, so garbage is rejected.
 */
#ifndef UCT_SELF_H_
#define UCT_SELF_H_

#include <uct/base/uct_blob.h>
#include <uct/base/uct_iface.h>
#include <ucs/datastruct/mpool.h>

BEGIN_C_DECLS

#define UCT_SELF_NAME            "self"
#define UCT_SELF_DEV_NAME        "memory"
#define UCT_SELF_MAX_IOV         16

#define UCT_SELF_ADDR_VERSION    1
#define UCT_SELF_DEV_ADDR_MAGIC  0x76644c53u /* "SLdv" */
#define UCT_SELF_IFACE_ADDR_MAGIC 0x66694c53u /* "SLif" */
#define UCT_SELF_RKEY_MAGIC      0x6b724c53u /* "SLrk" */

/** Start of every address and packed key (magic UCT_SELF_*_MAGIC, version
 *  UCT_SELF_ADDR_VERSION). */
typedef uct_blob_hdr_t uct_self_blob_hdr_t;

/** Device address: which process. */
typedef struct uct_self_device_addr {
    uct_self_blob_hdr_t hdr;
    uint64_t            proc_id;
} UCS_S_PACKED uct_self_device_addr_t;

/** Iface address: which process and which iface in it. */
typedef struct uct_self_iface_addr {
    uct_self_blob_hdr_t hdr;
    uint64_t            proc_id;
    uint64_t            iface_id;
} UCS_S_PACKED uct_self_iface_addr_t;

/** Packed remote key: the memory is reachable only from the same process. */
typedef struct uct_self_packed_rkey {
    uct_self_blob_hdr_t hdr;
    uint64_t            proc_id;
} UCS_S_PACKED uct_self_packed_rkey_t;

typedef struct uct_self_iface_config {
    uct_iface_config_t super; /**< super.max_bcopy is UCX_SELF_SEG_SIZE */
} uct_self_iface_config_t;

typedef struct uct_self_iface {
    uct_base_iface_t super;
    uint64_t         id;           /**< unique within the process */
    size_t           seg_size;     /**< largest am: header + payload */
    ucs_mpool_t      desc_mp;      /**< receive descriptors, see desc layout */
    uct_recv_desc_t  release_desc; /**< stored in front of every descriptor */
    ucs_list_link_t  list;         /**< in the process-wide iface registry */
} uct_self_iface_t;

typedef struct uct_self_ep {
    uct_base_ep_t    super;
    uct_self_iface_t *peer;        /**< destination iface (may be our own) */
} uct_self_ep_t;

extern uct_component_t uct_self_component;

/** Identity of this process, as carried in addresses and rkeys. */
uint64_t uct_self_proc_id(void);

/** Fill @a hdr for a blob of kind @a magic. */
static inline void uct_self_blob_hdr_init(uct_self_blob_hdr_t *hdr, uint32_t magic)
{
    uct_blob_hdr_init(hdr, magic, UCT_SELF_ADDR_VERSION);
}

/** Whether @a hdr is a well-formed header of a blob of kind @a magic. */
static inline int uct_self_blob_hdr_is_valid(const uct_self_blob_hdr_t *hdr,
                                             uint32_t magic)
{
    return uct_blob_hdr_is_valid(hdr, magic, UCT_SELF_ADDR_VERSION);
}

/**
 * The self iface of this process with address @a addr, or NULL when the
 * address is malformed, from another process or names no open iface.
 */
uct_self_iface_t *uct_self_iface_lookup(const uct_self_iface_addr_t *addr);

/* Endpoint operations (self_ep.c). */
ucs_status_t uct_self_ep_create(const uct_ep_params_t *params, uct_ep_h *ep_p);
void uct_self_ep_destroy(uct_ep_h ep);
ucs_status_t uct_self_ep_am_short(uct_ep_h ep, uint8_t id, uint64_t header,
                                  const void *payload, unsigned length);
ssize_t uct_self_ep_am_bcopy(uct_ep_h ep, uint8_t id, uct_pack_callback_t pack_cb,
                             void *arg, unsigned flags);
ucs_status_t uct_self_ep_am_zcopy(uct_ep_h ep, uint8_t id, const void *header,
                                  unsigned header_length, const uct_iov_t *iov,
                                  size_t iovcnt, unsigned flags,
                                  uct_completion_t *comp);
ucs_status_t uct_self_ep_put_short(uct_ep_h ep, const void *buffer, unsigned length,
                                   uint64_t remote_addr, uct_rkey_t rkey);
ssize_t uct_self_ep_put_bcopy(uct_ep_h ep, uct_pack_callback_t pack_cb, void *arg,
                              uint64_t remote_addr, uct_rkey_t rkey);
ucs_status_t uct_self_ep_put_zcopy(uct_ep_h ep, const uct_iov_t *iov, size_t iovcnt,
                                   uint64_t remote_addr, uct_rkey_t rkey,
                                   uct_completion_t *comp);
ucs_status_t uct_self_ep_get_bcopy(uct_ep_h ep, uct_unpack_callback_t unpack_cb,
                                   void *arg, size_t length, uint64_t remote_addr,
                                   uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t uct_self_ep_get_zcopy(uct_ep_h ep, const uct_iov_t *iov, size_t iovcnt,
                                   uint64_t remote_addr, uct_rkey_t rkey,
                                   uct_completion_t *comp);
ucs_status_t uct_self_ep_pending_add(uct_ep_h ep, uct_pending_req_t *req,
                                     unsigned flags);
ucs_status_t uct_self_ep_flush(uct_ep_h ep, unsigned flags, uct_completion_t *comp);
ucs_status_t uct_self_ep_fence(uct_ep_h ep, unsigned flags);

END_C_DECLS

#endif
