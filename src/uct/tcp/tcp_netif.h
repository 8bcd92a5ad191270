/**
 * @file tcp_netif.h
 * Network interfaces the tcp transport can use: one device per interface
 * that is up and has an address of an allowed family (UCX_TCP_AF_PRIO; "lo"
 * included, so that tests and single-host jobs work on any machine), and the
 * facts about a device the performance model needs.
 *
 * Thread safety: every function reads the system afresh and keeps no state.
 */
#ifndef UCT_TCP_NETIF_H_
#define UCT_TCP_NETIF_H_

#include "tcp_addr.h"

#include <uct/api/uct_def.h>

#include <netinet/in.h>

BEGIN_C_DECLS

/** Name of one usable interface. */
typedef struct uct_tcp_netif_name {
    char name[UCT_DEVICE_NAME_MAX];
} uct_tcp_netif_name_t;

/** Address families an iface may use, most preferred first. */
typedef struct uct_tcp_af_prio {
    sa_family_t af[2]; /**< AF_INET, AF_INET6 */
    unsigned count;    /**< 1 or 2 */
} uct_tcp_af_prio_t;

/**
 * Parse UCX_TCP_AF_PRIO's value ("inet", "inet6", or both in order).
 * @return UCS_OK, or UCS_ERR_INVALID_PARAM (logged, naming the bad entry)
 *         for an empty list, an unknown family or one named twice.
 */
ucs_status_t uct_tcp_af_prio_parse(const char *const *names, unsigned count,
                                   uct_tcp_af_prio_t *prio_p);

/**
 * List the interfaces that are up and carry an address of a family in
 * @a prio, each once, in the order the kernel reports them.
 *
 * @param names_p  receives an array the caller frees with free() (NULL when
 *                 there are none).
 * @param count_p  its length.
 * @return UCS_OK, UCS_ERR_IO_ERROR when getifaddrs() fails, UCS_ERR_NO_MEMORY.
 */
ucs_status_t uct_tcp_netif_list(const uct_tcp_af_prio_t *prio,
                                uct_tcp_netif_name_t **names_p, unsigned *count_p);

/**
 * The address an iface on interface @a name listens on: of the first family
 * in @a prio the interface has; for IPv6 a global (or unique local) address
 * before a link-local one, which keeps its scope id.
 *
 * @param addr_p  receives the address (port 0).
 * @return UCS_OK, UCS_ERR_NO_DEVICE when the interface is unknown, down or
 *         has no address of those families, UCS_ERR_IO_ERROR when
 *         getifaddrs() fails.
 */
ucs_status_t uct_tcp_netif_addr(const char *name, const uct_tcp_af_prio_t *prio,
                                uct_tcp_sockaddr_t *addr_p);

/**
 * Whether the kernel sends packets for @a remote out of interface @a name
 * (the routing table's choice, found by connecting a UDP socket, which
 * sends nothing, and looking up the device of the source address it gets).
 * An iface pairs with a peer address only through the device its route
 * takes, so that UCX_NET_DEVICES also decides the path and traffic meant
 * for one interface never leaves by another.
 *
 * @param local  the iface's own address: the source address is usually
 *               this one, which spares a getifaddrs() call.
 * @return 1 when routed through @a name, 0 when through another device or
 *         not routable at all.
 */
int uct_tcp_netif_routes_via(const char *name, const uct_tcp_sockaddr_t *local,
                             const uct_tcp_sockaddr_t *remote);

/**
 * Link speed of @a name in bytes per second from
 * /sys/class/net/<name>/speed, or 0 when the kernel does not know it
 * (loopback, most virtual devices, a link that is down).
 */
double uct_tcp_netif_bandwidth(const char *name);

/**
 * Identity of this process's loopback network: a hash of the boot id (the
 * machine instance) and the network namespace. Two ifaces can talk over
 * 127.0.0.0/8 only when their ids are equal. Computed on every call, since
 * a process may move to another namespace (setns) or fork into one.
 */
uint64_t uct_tcp_netif_loopback_id(void);

END_C_DECLS

#endif
