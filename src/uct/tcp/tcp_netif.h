/**
 * @file tcp_netif.h
 * Network interfaces the tcp transport can use: one device per interface
 * that is up and has an IPv4 address ("lo" included, so that tests and
 * single-host jobs work on any machine), and the facts about a device the
 * performance model needs.
 *
 * Thread safety: every function reads the system afresh and keeps no state.
 */
#ifndef UCT_TCP_NETIF_H_
#define UCT_TCP_NETIF_H_

#include <uct/api/uct_def.h>

#include <netinet/in.h>

BEGIN_C_DECLS

/** Name of one usable interface. */
typedef struct uct_tcp_netif_name {
    char name[UCT_DEVICE_NAME_MAX];
} uct_tcp_netif_name_t;

/**
 * List the interfaces that are up and carry an IPv4 address, each once, in
 * the order the kernel reports them.
 *
 * @param names_p  receives an array the caller frees with free() (NULL when
 *                 there are none).
 * @param count_p  its length.
 * @return UCS_OK, UCS_ERR_IO_ERROR when getifaddrs() fails, UCS_ERR_NO_MEMORY.
 */
ucs_status_t uct_tcp_netif_list(uct_tcp_netif_name_t **names_p, unsigned *count_p);

/**
 * The first IPv4 address of interface @a name, which must be up.
 *
 * @param addr_p  receives the address (port 0).
 * @return UCS_OK, UCS_ERR_NO_DEVICE when the interface is unknown, down or
 *         has no IPv4 address, UCS_ERR_IO_ERROR when getifaddrs() fails.
 */
ucs_status_t uct_tcp_netif_inaddr(const char *name, struct sockaddr_in *addr_p);

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

/** Whether @a in_addr (network byte order) is in 127.0.0.0/8. */
static inline int uct_tcp_in_addr_is_loopback(uint32_t in_addr)
{
    return (ntohl(in_addr) >> 24) == IN_LOOPBACKNET;
}

END_C_DECLS

#endif
