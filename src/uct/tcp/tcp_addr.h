/**
 * @file tcp_addr.h
 * An IP socket address of either family, as the tcp transport holds its own
 * listening address, a peer's and an accepted connection's. IPv4 and IPv6
 * differ only here and on the wire (tcp_wire.h); the rest of the transport
 * passes uct_tcp_sockaddr_t around without looking inside.
 *
 * Thread safety: pure functions.
 */
#ifndef UCT_TCP_ADDR_H_
#define UCT_TCP_ADDR_H_

#include <ucs/sys/compiler_def.h>
#include <ucs/type/status.h>

#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>

BEGIN_C_DECLS

/** Bytes of an address on the wire: an IPv6 address, or IPv4 and zeros. */
#define UCT_TCP_WIRE_ADDR_LEN 16

/** Room uct_tcp_sockaddr_str() needs: "[v6%ifname]:port" and the NUL. */
#define UCT_TCP_SOCKADDR_STRLEN (INET6_ADDRSTRLEN + 32)

/** An AF_INET or AF_INET6 socket address; @a sa.sa_family tells which. */
typedef union uct_tcp_sockaddr {
    struct sockaddr sa;
    struct sockaddr_in in;
    struct sockaddr_in6 in6;
} uct_tcp_sockaddr_t;

/** Whether @a a and @a b are the same family, address and port. */
int uct_tcp_sockaddr_equal(const uct_tcp_sockaddr_t *a, const uct_tcp_sockaddr_t *b);

/** Length to pass to bind() and connect() for @a addr. */
static inline socklen_t uct_tcp_sockaddr_len(const uct_tcp_sockaddr_t *addr)
{
    return (addr->sa.sa_family == AF_INET6) ? sizeof(addr->in6) : sizeof(addr->in);
}

/** Port of @a addr, network byte order. */
static inline uint16_t uct_tcp_sockaddr_port(const uct_tcp_sockaddr_t *addr)
{
    return (addr->sa.sa_family == AF_INET6) ? addr->in6.sin6_port : addr->in.sin_port;
}

/** Set the port of @a addr (@a port in network byte order). */
static inline void uct_tcp_sockaddr_set_port(uct_tcp_sockaddr_t *addr, uint16_t port)
{
    if (addr->sa.sa_family == AF_INET6) {
        addr->in6.sin6_port = port;
    } else {
        addr->in.sin_port = port;
    }
}

/** Whether @a addr is 127.0.0.0/8 or ::1: a name of this host only. */
int uct_tcp_sockaddr_is_loopback(const uct_tcp_sockaddr_t *addr);

/** Whether @a addr is an IPv6 link-local address (fe80::/10), whose meaning
 * depends on the interface (the scope id) it is used on. */
int uct_tcp_sockaddr_is_link_local(const uct_tcp_sockaddr_t *addr);

/**
 * Whether an iface could listen on @a addr: not a wildcard, multicast or
 * broadcast address, not IPv4's reserved class E nor an IPv4-mapped IPv6
 * address (such a peer advertises IPv4 itself).
 */
int uct_tcp_sockaddr_is_unicast(const uct_tcp_sockaddr_t *addr);

/** "a.b.c.d:port" or "[v6%scope]:port" of @a addr into @a buf (at least
 * UCT_TCP_SOCKADDR_STRLEN bytes for a full IPv6 form); returns @a buf. */
const char *uct_tcp_sockaddr_str(const uct_tcp_sockaddr_t *addr, char *buf, size_t max);

/**
 * Wire form of @a addr's address (not its port): the family tag of
 * tcp_wire.h and 16 bytes, IPv4 in the first four and zeros after.
 */
void uct_tcp_sockaddr_to_wire(const uct_tcp_sockaddr_t *addr, uint8_t *family_p,
                              uint8_t bytes[UCT_TCP_WIRE_ADDR_LEN]);

/**
 * Rebuild a peer's socket address from its wire form and port.
 *
 * @param scope_id  interface index for a link-local IPv6 peer: the local
 *                  interface the iface is bound to, since the peer's own
 *                  index means nothing here.
 * @return UCS_OK, or UCS_ERR_INVALID_ADDR for an unknown family, non-zero
 *         padding after an IPv4 address, or an address that is not unicast.
 */
ucs_status_t uct_tcp_sockaddr_from_wire(uint8_t family,
                                        const uint8_t bytes[UCT_TCP_WIRE_ADDR_LEN],
                                        uint16_t port, uint32_t scope_id,
                                        uct_tcp_sockaddr_t *addr_p);

END_C_DECLS

#endif
