/**
 * @file tcp_md.h
 * The tcp component and its memory domain. TCP moves bytes through the
 * kernel, so the md registers nothing and packs no remote keys: zcopy sends
 * take user buffers with UCT_MEM_HANDLE_NULL, and put/get are not offered
 * (active messages are all ucp needs over tcp). The md exists to list the
 * devices and to own the "tcp" transport.
 */
#ifndef UCT_TCP_MD_H_
#define UCT_TCP_MD_H_

#include "tcp_netif.h"

#include <uct/base/uct_md.h>
#include <ucs/config/types.h>

BEGIN_C_DECLS

/** Name of the component, its only md and its transport. */
#define UCT_TCP_NAME "tcp"

/** Options of the md (UCX_TCP_AF_PRIO): which address families its devices
 * and ifaces use. */
typedef struct uct_tcp_md_config {
    uct_md_config_t super;
    ucs_config_names_array_t af_prio;
} uct_tcp_md_config_t;

/** The tcp memory domain: the base, which it embeds, and the families. */
typedef struct uct_tcp_md {
    uct_md_t super;
    uct_tcp_af_prio_t af_prio;
} uct_tcp_md_t;

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
