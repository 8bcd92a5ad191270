#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "tcp_netif.h"

#include <ucs/debug/log.h>
#include <ucs/sys/sys.h>

#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

ucs_status_t uct_tcp_af_prio_parse(const char *const *names, unsigned count,
                                   uct_tcp_af_prio_t *prio_p)
{
    sa_family_t af;
    unsigned i, j;

    prio_p->count = 0;
    for (i = 0; i < count; ++i) {
        if (!strcmp(names[i], "inet")) {
            af = AF_INET;
        } else if (!strcmp(names[i], "inet6")) {
            af = AF_INET6;
        } else {
            ucs_error("tcp: UCX_TCP_AF_PRIO: unknown address family '%s' "
                      "(expected inet, inet6 or both, comma-separated)",
                      names[i]);
            return UCS_ERR_INVALID_PARAM;
        }
        for (j = 0; j < prio_p->count; ++j) {
            if (prio_p->af[j] == af) {
                ucs_error("tcp: UCX_TCP_AF_PRIO: '%s' is listed twice", names[i]);
                return UCS_ERR_INVALID_PARAM;
            }
        }
        prio_p->af[prio_p->count++] = af;
    }

    if (prio_p->count == 0) {
        ucs_error("tcp: UCX_TCP_AF_PRIO is empty: name inet, inet6 or both");
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

static int uct_tcp_netif_af_allowed(const uct_tcp_af_prio_t *prio, sa_family_t af)
{
    unsigned i;

    for (i = 0; i < prio->count; ++i) {
        if (prio->af[i] == af) {
            return 1;
        }
    }
    return 0;
}

/* An entry names a usable device when it is an address of an allowed family
 * on an interface that is up. IFF_RUNNING is not required: a cable may come
 * back, and a veth whose peer is down still accepts a listener. */
static int uct_tcp_netif_usable(const struct ifaddrs *ifa, const uct_tcp_af_prio_t *prio)
{
    return (ifa->ifa_addr != NULL) &&
           uct_tcp_netif_af_allowed(prio, ifa->ifa_addr->sa_family) &&
           (ifa->ifa_flags & IFF_UP) && (ifa->ifa_name != NULL) &&
           (strlen(ifa->ifa_name) < UCT_DEVICE_NAME_MAX);
}

static ucs_status_t uct_tcp_netif_getifaddrs(struct ifaddrs **ifaddrs_p)
{
    int err;

    if (getifaddrs(ifaddrs_p) < 0) {
        err = errno;
        ucs_error("tcp: getifaddrs() failed: %s", strerror(err));
        return (err == ENOMEM) ? UCS_ERR_NO_MEMORY : UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

ucs_status_t uct_tcp_netif_list(const uct_tcp_af_prio_t *prio,
                                uct_tcp_netif_name_t **names_p, unsigned *count_p)
{
    uct_tcp_netif_name_t *names = NULL, *tmp;
    struct ifaddrs *ifaddrs, *ifa;
    unsigned count = 0, i;
    ucs_status_t status;

    status = uct_tcp_netif_getifaddrs(&ifaddrs);
    if (status != UCS_OK) {
        return status;
    }

    for (ifa = ifaddrs; ifa != NULL; ifa = ifa->ifa_next) {
        if (!uct_tcp_netif_usable(ifa, prio)) {
            continue;
        }

        /* An interface with several addresses is one device. */
        for (i = 0; i < count; ++i) {
            if (!strcmp(names[i].name, ifa->ifa_name)) {
                break;
            }
        }
        if (i < count) {
            continue;
        }

        tmp = realloc(names, (count + 1) * sizeof(*names));
        if (tmp == NULL) {
            status = UCS_ERR_NO_MEMORY;
            goto err_free;
        }
        names = tmp;
        snprintf(names[count].name, sizeof(names[count].name), "%s", ifa->ifa_name);
        ++count;
    }

    freeifaddrs(ifaddrs);
    *names_p = names;
    *count_p = count;
    return UCS_OK;

err_free:
    free(names);
    freeifaddrs(ifaddrs);
    return status;
}

/* Rank of an address of interface @a name within family @a af: 2 for a
 * usable global one, 1 for link-local IPv6, 0 for none of ours. */
static int uct_tcp_netif_addr_rank(const struct ifaddrs *ifa, const char *name,
                                   sa_family_t af)
{
    uct_tcp_sockaddr_t sa;

    if ((ifa->ifa_addr == NULL) || (ifa->ifa_addr->sa_family != af) ||
        !(ifa->ifa_flags & IFF_UP) || (ifa->ifa_name == NULL) ||
        strcmp(ifa->ifa_name, name)) {
        return 0;
    }
    memset(&sa, 0, sizeof(sa));
    memcpy(&sa, ifa->ifa_addr, (af == AF_INET6) ? sizeof(sa.in6) : sizeof(sa.in));
    if (!uct_tcp_sockaddr_is_unicast(&sa)) {
        return 0;
    }
    return uct_tcp_sockaddr_is_link_local(&sa) ? 1 : 2;
}

ucs_status_t uct_tcp_netif_addr(const char *name, const uct_tcp_af_prio_t *prio,
                                uct_tcp_sockaddr_t *addr_p)
{
    const struct ifaddrs *best = NULL;
    struct ifaddrs *ifaddrs, *ifa;
    int best_rank = 0, rank;
    ucs_status_t status;
    unsigned i;

    status = uct_tcp_netif_getifaddrs(&ifaddrs);
    if (status != UCS_OK) {
        return status;
    }

    for (i = 0; (i < prio->count) && (best == NULL); ++i) {
        for (ifa = ifaddrs; ifa != NULL; ifa = ifa->ifa_next) {
            rank = uct_tcp_netif_addr_rank(ifa, name, prio->af[i]);
            if (rank > best_rank) {
                best      = ifa;
                best_rank = rank;
            }
        }
    }

    if (best != NULL) {
        memset(addr_p, 0, sizeof(*addr_p));
        memcpy(addr_p, best->ifa_addr,
               (best->ifa_addr->sa_family == AF_INET6) ? sizeof(addr_p->in6)
                                                       : sizeof(addr_p->in));
        uct_tcp_sockaddr_set_port(addr_p, 0);
        status = UCS_OK;
    } else {
        status = UCS_ERR_NO_DEVICE;
    }

    freeifaddrs(ifaddrs);
    return status;
}

static int uct_tcp_netif_same_host_addr(const struct sockaddr *a,
                                        const uct_tcp_sockaddr_t *b)
{
    if (a->sa_family != b->sa.sa_family) {
        return 0;
    }
    if (a->sa_family == AF_INET) {
        return ((const struct sockaddr_in *)a)->sin_addr.s_addr == b->in.sin_addr.s_addr;
    }
    return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr, &b->in6.sin6_addr,
                   sizeof(b->in6.sin6_addr));
}

/* The device that carries address @a src: getifaddrs() is the portable way
 * to map an address back to its interface. */
static int uct_tcp_netif_addr_is_on(const char *name, const uct_tcp_sockaddr_t *src)
{
    struct ifaddrs *ifaddrs, *ifa;
    int found = 0;

    if (uct_tcp_netif_getifaddrs(&ifaddrs) != UCS_OK) {
        return 0;
    }
    for (ifa = ifaddrs; (ifa != NULL) && !found; ifa = ifa->ifa_next) {
        found = (ifa->ifa_addr != NULL) && !strcmp(ifa->ifa_name, name) &&
                uct_tcp_netif_same_host_addr(ifa->ifa_addr, src);
    }
    freeifaddrs(ifaddrs);
    return found;
}

int uct_tcp_netif_routes_via(const char *name, const uct_tcp_sockaddr_t *local,
                             const uct_tcp_sockaddr_t *remote)
{
    char rbuf[UCT_TCP_SOCKADDR_STRLEN];
    uct_tcp_sockaddr_t dst = *remote, src;
    socklen_t len          = sizeof(src);
    int fd, ok;

    fd = socket(dst.sa.sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return 0;
    }
    /* Any non-zero port: a UDP connect only looks up the route. */
    uct_tcp_sockaddr_set_port(&dst, 9);
    ok = (connect(fd, &dst.sa, uct_tcp_sockaddr_len(&dst)) == 0) &&
         (getsockname(fd, &src.sa, &len) == 0);
    close(fd);
    if (!ok) {
        ucs_debug("tcp %s: no route to %s: %s", name,
                  uct_tcp_sockaddr_str(remote, rbuf, sizeof(rbuf)), strerror(errno));
        return 0;
    }

    ok = uct_tcp_netif_same_host_addr(&src.sa, local) ||
         uct_tcp_netif_addr_is_on(name, &src);
    if (!ok) {
        ucs_debug("tcp %s: %s is routed through another interface", name,
                  uct_tcp_sockaddr_str(remote, rbuf, sizeof(rbuf)));
    }
    return ok;
}

double uct_tcp_netif_bandwidth(const char *name)
{
    char path[128];
    long mbps = -1;
    FILE *f;

    if (strchr(name, '/') != NULL) {
        return 0;
    }

    snprintf(path, sizeof(path), "/sys/class/net/%s/speed", name);
    f = fopen(path, "r");
    if (f == NULL) {
        return 0;
    }
    /* Reading fails with EINVAL on devices without a speed; -1 means the
     * same for a link that is down. */
    if (fscanf(f, "%ld", &mbps) != 1) {
        mbps = -1;
    }
    fclose(f);

    return (mbps > 0) ? (mbps * 1e6 / 8.0) : 0;
}

/* FNV-1a: a stable, dependency-free 64-bit hash; collisions between two
 * machines only matter if both also use the same loopback port. */
static uint64_t uct_tcp_netif_hash(uint64_t hash, const void *data, size_t length)
{
    const uint8_t *p = data;
    size_t i;

    for (i = 0; i < length; ++i) {
        hash ^= p[i];
        hash *= 0x100000001b3ull;
    }
    return hash;
}

uint64_t uct_tcp_netif_loopback_id(void)
{
    uint64_t hash = 0xcbf29ce484222325ull;
    uint8_t boot_id[16];
    struct stat st;
    uint64_t ino;

    if (ucs_sys_get_boot_id(boot_id) == UCS_OK) {
        hash = uct_tcp_netif_hash(hash, boot_id, sizeof(boot_id));
    } else {
        /* Without a boot id, fall back to the host name: weaker, but two
         * hosts rarely share both a name and a namespace inode. */
        hash = uct_tcp_netif_hash(hash, ucs_sys_get_host_name(),
                                  strlen(ucs_sys_get_host_name()));
    }

    ino = (stat("/proc/self/ns/net", &st) == 0) ? (uint64_t)st.st_ino : 0;
    return uct_tcp_netif_hash(hash, &ino, sizeof(ino));
}
