/**
 * @file tcp_md.h
 * The tcp component and its memory domain. TCP moves bytes through the
 * kernel, so sends take user buffers with UCT_MEM_HANDLE_NULL. The md lists
 * the devices, owns the "tcp" transport, and registers host memory that
 * peers may read with get zcopy (tcp_get.h): a registration is an entry in
 * the md's table under a random token, and its packed key names the token
 * and the range, so that a get request is served only from memory the user
 * registered, whatever bytes a peer sends.
 */
#ifndef UCT_TCP_MD_H_
#define UCT_TCP_MD_H_

#include "tcp_netif.h"

#include <uct/base/uct_md.h>
#include <ucs/config/types.h>
#include <ucs/datastruct/hmap.h>

BEGIN_C_DECLS

/** Name of the component, its only md and its transport. */
#define UCT_TCP_NAME "tcp"

/** Options of the md (UCX_TCP_AF_PRIO): which address families its devices
 * and ifaces use. */
typedef struct uct_tcp_md_config {
    uct_md_config_t super;
    ucs_config_names_array_t af_prio;
} uct_tcp_md_config_t;

/**
 * Registered memory a peer may read. Responses being sent from it hold a
 * reference: a region deregistered while one is in flight is marked dead and
 * freed by the last reference, and the response stops (tcp_get.c), so the
 * socket never reads memory the user has released.
 */
typedef struct uct_tcp_md_region {
    ucs_hmap_elem_t hash;   /**< in uct_tcp_md_t::regions, by token */
    uint64_t        token;
    uint64_t        base;
    uint64_t        length;
    unsigned        refs;   /**< responses reading it */
    int             dead;   /**< deregistered; freed at refs == 0 */
} uct_tcp_md_region_t;

/** The tcp memory domain: the base, which it embeds, the families and the
 *  registered regions. */
typedef struct uct_tcp_md {
    uct_md_t super;
    uct_tcp_af_prio_t af_prio;
    ucs_hmap_t        regions;    /**< uct_tcp_md_region_t by token */
    uint64_t          token_next; /**< next token: random start, then +1 */
} uct_tcp_md_t;

/**
 * The live region of @a md with @a token that contains [address, +length),
 * with a reference taken; NULL when there is none (an unknown or stale
 * token, a range outside the registration).
 */
uct_tcp_md_region_t *uct_tcp_md_region_get(uct_tcp_md_t *md, uint64_t token,
                                           uint64_t address, uint64_t length);

/** Drop a reference of uct_tcp_md_region_get(); frees a dead region. */
void uct_tcp_md_region_put(uct_tcp_md_region_t *region);

/** The component, registered when libuct loads. */
extern uct_component_t uct_tcp_component;

/**
 * uct_tl_t::query_devices of the tcp transport: one device of type
 * UCT_DEVICE_TYPE_NET per interface that is up and has an address of a
 * family in the md's UCX_TCP_AF_PRIO.
 * The caller frees the array with free().
 */
ucs_status_t uct_tcp_query_devices(uct_md_h md, uct_tl_device_resource_t **devices_p,
                                   unsigned *num_devices_p);

END_C_DECLS

#endif
