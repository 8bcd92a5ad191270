/**
 * @file uct_md.h
 * Base of every memory domain: an ops table and its component. Transports
 * embed uct_md_t as the first member of their md structure.
 */
#ifndef UCT_MD_H_
#define UCT_MD_H_

#include <uct/base/uct_component.h>
#include <ucs/sys/topo_device.h>

BEGIN_C_DECLS

typedef struct uct_md_ops {
    void         (*close)(uct_md_h md);
    ucs_status_t (*query)(uct_md_h md, uct_md_attr_t *md_attr);
    /* Optional entries may be NULL: the public call returns UCS_ERR_UNSUPPORTED
     * (detect_memory_type: UCS_ERR_INVALID_ADDR). */
    ucs_status_t (*mem_alloc)(uct_md_h md, size_t *length_p, void **address_p,
                              ucs_memory_type_t mem_type, ucs_sys_device_t sys_dev,
                              unsigned flags, const char *alloc_name,
                              uct_mem_h *memh_p);
    ucs_status_t (*mem_free)(uct_md_h md, uct_mem_h memh);
    ucs_status_t (*mem_reg)(uct_md_h md, void *address, size_t length, unsigned flags,
                            uct_mem_h *memh_p);
    ucs_status_t (*mem_dereg)(uct_md_h md, uct_mem_h memh);
    ucs_status_t (*mkey_pack)(uct_md_h md, uct_mem_h memh, void *rkey_buffer);
    ucs_status_t (*detect_memory_type)(uct_md_h md, const void *address, size_t length,
                                       ucs_memory_type_t *mem_type_p);
    ucs_status_t (*mem_query)(uct_md_h md, const void *address, size_t length,
                              uct_md_mem_attr_t *mem_attr);
    ucs_status_t (*mem_fence)(uct_md_h md, const void *address, size_t length);
} uct_md_ops_t;

/** Base of every md (transports embed it first). */
typedef struct uct_md {
    const uct_md_ops_t *ops;
    uct_component_t    *component;
} uct_md_t;

/** Options every md has (component tables extend it). */
struct uct_md_config {
    int reserved; /**< no common option yet; keeps the struct non-empty */
};

/** Options every iface has (transport tables extend it, first member). */
struct uct_iface_config {
    size_t max_bcopy;   /**< UCX_<TL>_MAX_BCOPY / SEG_SIZE where a transport uses it */
};

END_C_DECLS

#endif
