#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "tcp_addr.h"
#include "tcp_wire.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>

int uct_tcp_sockaddr_is_loopback(const uct_tcp_sockaddr_t *addr)
{
    if (addr->sa.sa_family == AF_INET6) {
        return IN6_IS_ADDR_LOOPBACK(&addr->in6.sin6_addr);
    }
    return (ntohl(addr->in.sin_addr.s_addr) >> 24) == IN_LOOPBACKNET;
}

int uct_tcp_sockaddr_equal(const uct_tcp_sockaddr_t *a, const uct_tcp_sockaddr_t *b)
{
    if (a->sa.sa_family != b->sa.sa_family) {
        return 0;
    }
    if (a->sa.sa_family == AF_INET6) {
        return (a->in6.sin6_port == b->in6.sin6_port) &&
               !memcmp(&a->in6.sin6_addr, &b->in6.sin6_addr, sizeof(a->in6.sin6_addr));
    }
    return (a->in.sin_port == b->in.sin_port) &&
           (a->in.sin_addr.s_addr == b->in.sin_addr.s_addr);
}

int uct_tcp_sockaddr_is_link_local(const uct_tcp_sockaddr_t *addr)
{
    return (addr->sa.sa_family == AF_INET6) &&
           IN6_IS_ADDR_LINKLOCAL(&addr->in6.sin6_addr);
}

int uct_tcp_sockaddr_is_unicast(const uct_tcp_sockaddr_t *addr)
{
    const struct in6_addr *a6;
    uint32_t host;

    if (addr->sa.sa_family == AF_INET6) {
        a6 = &addr->in6.sin6_addr;
        return !IN6_IS_ADDR_UNSPECIFIED(a6) && !IN6_IS_ADDR_MULTICAST(a6) &&
               !IN6_IS_ADDR_V4MAPPED(a6) && !IN6_IS_ADDR_V4COMPAT(a6);
    }
    if (addr->sa.sa_family != AF_INET) {
        return 0;
    }
    host = ntohl(addr->in.sin_addr.s_addr);
    return (host != INADDR_ANY) && !IN_MULTICAST(host) && !IN_BADCLASS(host) &&
           (host != INADDR_BROADCAST);
}

const char *uct_tcp_sockaddr_str(const uct_tcp_sockaddr_t *addr, char *buf, size_t max)
{
    char ip[INET6_ADDRSTRLEN], scope[IF_NAMESIZE + 2] = "";
    unsigned port = ntohs(uct_tcp_sockaddr_port(addr));

    if (addr->sa.sa_family == AF_INET6) {
        if (inet_ntop(AF_INET6, &addr->in6.sin6_addr, ip, sizeof(ip)) == NULL) {
            snprintf(ip, sizeof(ip), "?");
        }
        if (addr->in6.sin6_scope_id != 0) {
            scope[0] = '%';
            if (if_indextoname(addr->in6.sin6_scope_id, scope + 1) == NULL) {
                snprintf(scope, sizeof(scope), "%%%u", (unsigned)addr->in6.sin6_scope_id);
            }
        }
        snprintf(buf, max, "[%s%s]:%u", ip, scope, port);
    } else {
        if (inet_ntop(AF_INET, &addr->in.sin_addr, ip, sizeof(ip)) == NULL) {
            snprintf(ip, sizeof(ip), "?");
        }
        snprintf(buf, max, "%s:%u", ip, port);
    }
    return buf;
}

void uct_tcp_sockaddr_to_wire(const uct_tcp_sockaddr_t *addr, uint8_t *family_p,
                              uint8_t bytes[UCT_TCP_WIRE_ADDR_LEN])
{
    memset(bytes, 0, UCT_TCP_WIRE_ADDR_LEN);
    if (addr->sa.sa_family == AF_INET6) {
        *family_p = UCT_TCP_ADDR_FAMILY_INET6;
        memcpy(bytes, &addr->in6.sin6_addr, sizeof(addr->in6.sin6_addr));
    } else {
        *family_p = UCT_TCP_ADDR_FAMILY_INET4;
        memcpy(bytes, &addr->in.sin_addr, sizeof(addr->in.sin_addr));
    }
}

ucs_status_t uct_tcp_sockaddr_from_wire(uint8_t family,
                                        const uint8_t bytes[UCT_TCP_WIRE_ADDR_LEN],
                                        uint16_t port, uint32_t scope_id,
                                        uct_tcp_sockaddr_t *addr_p)
{
    static const uint8_t zeros[UCT_TCP_WIRE_ADDR_LEN] = {0};
    const size_t in4_len                              = sizeof(addr_p->in.sin_addr);

    memset(addr_p, 0, sizeof(*addr_p));
    switch (family) {
    case UCT_TCP_ADDR_FAMILY_INET4:
        /* Padding must be zero: a blob that differs only there would
         * otherwise name the same peer in two ways. */
        if (memcmp(bytes + in4_len, zeros, UCT_TCP_WIRE_ADDR_LEN - in4_len) != 0) {
            return UCS_ERR_INVALID_ADDR;
        }
        addr_p->in.sin_family = AF_INET;
        memcpy(&addr_p->in.sin_addr, bytes, in4_len);
        addr_p->in.sin_port = port;
        break;
    case UCT_TCP_ADDR_FAMILY_INET6:
        addr_p->in6.sin6_family = AF_INET6;
        memcpy(&addr_p->in6.sin6_addr, bytes, sizeof(addr_p->in6.sin6_addr));
        addr_p->in6.sin6_port = port;
        if (uct_tcp_sockaddr_is_link_local(addr_p)) {
            addr_p->in6.sin6_scope_id = scope_id;
        }
        break;
    default:
        return UCS_ERR_INVALID_ADDR;
    }

    return uct_tcp_sockaddr_is_unicast(addr_p) ? UCS_OK : UCS_ERR_INVALID_ADDR;
}
