#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "perf_oob.h"
#include "perf_time.h"
#include "perf_wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Frame: magic, type, length (each u32, little-endian), then the payload. */
#define PERF_OOB_MAGIC      0x31545055u /* "UPT1" */
#define PERF_OOB_HDR_SIZE   12
#define PERF_OOB_MAX_LENGTH (1u << 20)

static void perf_oob_put32(uint8_t *p, uint32_t value)
{
    p[0] = (uint8_t)value;
    p[1] = (uint8_t)(value >> 8);
    p[2] = (uint8_t)(value >> 16);
    p[3] = (uint8_t)(value >> 24);
}

static uint32_t perf_oob_get32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

static void perf_oob_set_error(perf_oob_t *oob, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void perf_oob_set_error(perf_oob_t *oob, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(oob->error, sizeof(oob->error), fmt, ap);
    va_end(ap);
}

/* Latency of the small control messages matters more than throughput. */
static void perf_oob_set_nodelay(int fd)
{
    int one = 1;

    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void perf_oob_format_addr(const struct sockaddr *sa, char *buf, size_t max)
{
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;

    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *sin = (const struct sockaddr_in*)sa;
        inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
        port = ntohs(sin->sin_port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6*)sa;
        inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host));
        port = ntohs(sin6->sin6_port);
    }
    snprintf(buf, max, "%s:%u", host, port);
}

ucs_status_t perf_oob_listen(uint16_t port, int ipv6, int *fd_p, char *error,
                             size_t max)
{
    struct sockaddr_storage ss;
    socklen_t sslen;
    int fd, one = 1;

    memset(&ss, 0, sizeof(ss));
    if (ipv6) {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6*)&ss;
        sin6->sin6_family = AF_INET6;
        sin6->sin6_addr   = in6addr_any;
        sin6->sin6_port   = htons(port);
        sslen             = sizeof(*sin6);
    } else {
        struct sockaddr_in *sin = (struct sockaddr_in*)&ss;
        sin->sin_family      = AF_INET;
        sin->sin_addr.s_addr = htonl(INADDR_ANY);
        sin->sin_port        = htons(port);
        sslen                = sizeof(*sin);
    }

    fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(error, max, "socket() failed: %s", strerror(errno));
        return UCS_ERR_IO_ERROR;
    }
    /* A server restarted right after the previous one must not have to
     * wait for TIME_WAIT to expire. */
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));

    if (bind(fd, (struct sockaddr*)&ss, sslen) < 0) {
        snprintf(error, max, "cannot listen on port %u: %s%s", port, strerror(errno),
                 (errno == EADDRINUSE) ? " (another server running? choose a port "
                                         "with -p)" : "");
        close(fd);
        return UCS_ERR_IO_ERROR;
    }
    if (listen(fd, 1) < 0) {
        snprintf(error, max, "listen() on port %u failed: %s", port, strerror(errno));
        close(fd);
        return UCS_ERR_IO_ERROR;
    }
    *fd_p = fd;
    return UCS_OK;
}

/* Wait until @a fd has @a events; timeout <= 0 waits forever. */
static ucs_status_t perf_oob_poll(int fd, short events, double timeout)
{
    uint64_t deadline = perf_time_mono_ns() + (uint64_t)(timeout * 1e9);
    struct pollfd pfd;
    int ret, wait_ms;
    uint64_t now;

    for (;;) {
        if (timeout > 0) {
            now = perf_time_mono_ns();
            if (now >= deadline) {
                return UCS_ERR_TIMED_OUT;
            }
            wait_ms = (int)((deadline - now + 999999) / 1000000);
        } else {
            wait_ms = -1;
        }
        pfd.fd      = fd;
        pfd.events  = events;
        pfd.revents = 0;
        ret         = poll(&pfd, 1, wait_ms);
        if (ret > 0) {
            return UCS_OK;
        } else if ((ret < 0) && (errno != EINTR)) {
            return UCS_ERR_IO_ERROR;
        }
    }
}

ucs_status_t perf_oob_accept(int listen_fd, double accept_timeout, double timeout,
                             perf_oob_t *oob)
{
    struct sockaddr_storage ss;
    socklen_t sslen = sizeof(ss);
    ucs_status_t status;
    int fd;

    memset(oob, 0, sizeof(*oob));
    oob->fd      = -1;
    oob->timeout = timeout;

    status = perf_oob_poll(listen_fd, POLLIN, accept_timeout);
    if (status == UCS_ERR_TIMED_OUT) {
        perf_oob_set_error(oob, "no client connected within %g s", accept_timeout);
        return status;
    } else if (status != UCS_OK) {
        perf_oob_set_error(oob, "waiting for a connection failed: %s", strerror(errno));
        return status;
    }

    fd = accept4(listen_fd, (struct sockaddr*)&ss, &sslen, SOCK_CLOEXEC);
    if (fd < 0) {
        perf_oob_set_error(oob, "accept() failed: %s", strerror(errno));
        return UCS_ERR_IO_ERROR;
    }
    perf_oob_set_nodelay(fd);
    oob->fd = fd;
    perf_oob_format_addr((struct sockaddr*)&ss, oob->peer_name, sizeof(oob->peer_name));
    return UCS_OK;
}

ucs_status_t perf_oob_connect(const char *host, uint16_t port, int ipv6, double retry,
                              double timeout, perf_oob_t *oob)
{
    uint64_t deadline = perf_time_mono_ns() + (uint64_t)(retry * 1e9);
    struct addrinfo hints, *res, *ai;
    char service[16];
    int fd = -1, ret, err = 0;

    memset(oob, 0, sizeof(*oob));
    oob->fd      = -1;
    oob->timeout = timeout;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family   = ipv6 ? AF_INET6 : AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    /* A host name with only an IPv4 address (often "localhost") is still
     * reachable over IPv6 as a mapped address: the server's IPv6 socket
     * accepts both. */
    hints.ai_flags    = ipv6 ? AI_V4MAPPED : 0;
    snprintf(service, sizeof(service), "%u", port);
    ret = getaddrinfo(host, service, &hints, &res);
    if (ret != 0) {
        perf_oob_set_error(oob, "cannot resolve '%s': %s", host, gai_strerror(ret));
        return UCS_ERR_INVALID_ADDR;
    }

    for (;;) {
        for (ai = res; ai != NULL; ai = ai->ai_next) {
            fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
            if (fd < 0) {
                err = errno;
                continue;
            }
            if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
                perf_oob_format_addr(ai->ai_addr, oob->peer_name,
                                     sizeof(oob->peer_name));
                goto connected;
            }
            err = errno;
            close(fd);
            fd = -1;
        }
        /* Only a refused connection is worth retrying: the server may be
         * starting. Anything else (no route, bad host) will not improve. */
        if ((err != ECONNREFUSED) || (perf_time_mono_ns() >= deadline)) {
            break;
        }
        usleep(50000);
    }

    freeaddrinfo(res);
    perf_oob_set_error(oob, "cannot connect to %s:%u: %s%s", host, port, strerror(err),
                       (err == ECONNREFUSED) ?
                       " (is a server running? start one there with the same options "
                       "and no host name)" : "");
    return (err == ECONNREFUSED) ? UCS_ERR_UNREACHABLE : UCS_ERR_IO_ERROR;

connected:
    freeaddrinfo(res);
    perf_oob_set_nodelay(fd);
    oob->fd = fd;
    return UCS_OK;
}

void perf_oob_init_fd(perf_oob_t *oob, int fd, double timeout, const char *peer_name)
{
    memset(oob, 0, sizeof(*oob));
    oob->fd      = fd;
    oob->timeout = timeout;
    snprintf(oob->peer_name, sizeof(oob->peer_name), "%s", peer_name);
}

void perf_oob_close(perf_oob_t *oob)
{
    if (oob->fd >= 0) {
        close(oob->fd);
        oob->fd = -1;
    }
}

static ucs_status_t perf_oob_write_all(perf_oob_t *oob, const void *data, size_t length)
{
    const char *p = data;
    ssize_t ret;

    while (length > 0) {
        ret = send(oob->fd, p, length, MSG_NOSIGNAL);
        if (ret < 0) {
            if (errno == EINTR) {
                continue;
            }
            perf_oob_set_error(oob, "lost the connection to %s: %s", oob->peer_name,
                               strerror(errno));
            return UCS_ERR_CONNECTION_RESET;
        }
        p      += ret;
        length -= (size_t)ret;
    }
    return UCS_OK;
}

static ucs_status_t perf_oob_read_all(perf_oob_t *oob, void *data, size_t length)
{
    char *p = data;
    ucs_status_t status;
    ssize_t ret;

    while (length > 0) {
        status = perf_oob_poll(oob->fd, POLLIN, oob->timeout);
        if (status == UCS_ERR_TIMED_OUT) {
            perf_oob_set_error(oob, "timed out after %.0f s waiting for %s (raise "
                               "--timeout if the peer is slow)", oob->timeout,
                               oob->peer_name);
            return status;
        } else if (status != UCS_OK) {
            perf_oob_set_error(oob, "waiting for %s failed: %s", oob->peer_name,
                               strerror(errno));
            return status;
        }
        ret = recv(oob->fd, p, length, 0);
        if (ret == 0) {
            perf_oob_set_error(oob, "%s closed the connection", oob->peer_name);
            return UCS_ERR_CONNECTION_RESET;
        } else if (ret < 0) {
            if (errno == EINTR) {
                continue;
            }
            perf_oob_set_error(oob, "lost the connection to %s: %s", oob->peer_name,
                               strerror(errno));
            return UCS_ERR_CONNECTION_RESET;
        }
        p      += ret;
        length -= (size_t)ret;
    }
    return UCS_OK;
}

ucs_status_t perf_oob_send(perf_oob_t *oob, perf_oob_msg_t type, const void *data,
                           size_t length)
{
    uint8_t hdr[PERF_OOB_HDR_SIZE];
    ucs_status_t status;

    if (length > PERF_OOB_MAX_LENGTH) {
        perf_oob_set_error(oob, "message of %zu bytes is too long", length);
        return UCS_ERR_EXCEEDS_LIMIT;
    }
    perf_oob_put32(hdr, PERF_OOB_MAGIC);
    perf_oob_put32(hdr + 4, (uint32_t)type);
    perf_oob_put32(hdr + 8, (uint32_t)length);
    status = perf_oob_write_all(oob, hdr, sizeof(hdr));
    if ((status == UCS_OK) && (length > 0)) {
        status = perf_oob_write_all(oob, data, length);
    }
    return status;
}

void perf_oob_send_error(perf_oob_t *oob, const char *text)
{
    (void)perf_oob_send(oob, PERF_OOB_ERROR, text, strlen(text));
}

ucs_status_t perf_oob_recv(perf_oob_t *oob, perf_oob_msg_t *type_p, void **data_p,
                           size_t *length_p)
{
    uint8_t hdr[PERF_OOB_HDR_SIZE];
    ucs_status_t status;
    uint32_t length, type;
    char *data;

    *data_p   = NULL;
    *length_p = 0;
    status    = perf_oob_read_all(oob, hdr, sizeof(hdr));
    if (status != UCS_OK) {
        return status;
    }

    type   = perf_oob_get32(hdr + 4);
    length = perf_oob_get32(hdr + 8);
    if ((perf_oob_get32(hdr) != PERF_OOB_MAGIC) || (length > PERF_OOB_MAX_LENGTH) ||
        (type < PERF_OOB_HELLO) || (type > PERF_OOB_ERROR)) {
        perf_oob_set_error(oob, "%s is not a compatible " PERF_PROGRAM_NAME
                           " (unexpected data on the connection; upstream's "
                           PERF_PROGRAM_NAME " cannot talk to this one)",
                           oob->peer_name);
        return UCS_ERR_INVALID_PARAM;
    }

    data = malloc(length + 1);
    if (data == NULL) {
        perf_oob_set_error(oob, "out of memory receiving %u bytes", length);
        return UCS_ERR_NO_MEMORY;
    }
    status = perf_oob_read_all(oob, data, length);
    if (status != UCS_OK) {
        free(data);
        return status;
    }
    data[length] = '\0';

    if (type == PERF_OOB_ERROR) {
        perf_oob_set_error(oob, "%s", data);
        free(data);
        return UCS_ERR_REJECTED;
    }

    *type_p   = (perf_oob_msg_t)type;
    *data_p   = data;
    *length_p = length;
    return UCS_OK;
}

ucs_status_t perf_oob_recv_expect(perf_oob_t *oob, perf_oob_msg_t type, void **data_p,
                                  size_t *length_p)
{
    perf_oob_msg_t got;
    ucs_status_t status;

    status = perf_oob_recv(oob, &got, data_p, length_p);
    if (status != UCS_OK) {
        return status;
    }
    if (got != type) {
        perf_oob_set_error(oob, "protocol error: %s sent message type %d where %d "
                           "was expected", oob->peer_name, (int)got, (int)type);
        free(*data_p);
        *data_p = NULL;
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

ucs_status_t perf_oob_exchange(perf_oob_t *oob, const char *local_error,
                               const void *data, size_t length, void **data_p,
                               size_t *length_p)
{
    ucs_status_t status;
    size_t peer_length;
    void *peer_data;
    double timeout;

    if (local_error != NULL) {
        status = perf_oob_send(oob, PERF_OOB_ERROR, local_error, strlen(local_error));
    } else {
        status = perf_oob_send(oob, PERF_OOB_BLOB, data, length);
    }
    if (status != UCS_OK) {
        return status;
    }

    /* After a failure of our own the peer's report only adds detail, and a
     * peer on a host that vanished never sends one: wait briefly. */
    timeout = oob->timeout;
    if ((local_error != NULL) &&
        ((timeout <= 0) || (timeout > PERF_OOB_ERROR_WAIT_S))) {
        oob->timeout = PERF_OOB_ERROR_WAIT_S;
    }
    status       = perf_oob_recv_expect(oob, PERF_OOB_BLOB, &peer_data, &peer_length);
    oob->timeout = timeout;
    if (status != UCS_OK) {
        /* The peer's own failure is the more useful message even when we
         * failed too, so UCS_ERR_REJECTED wins. */
        return status;
    }
    if (local_error != NULL) {
        free(peer_data);
        return UCS_ERR_CANCELED;
    }

    if (data_p != NULL) {
        *data_p   = peer_data;
        *length_p = peer_length;
    } else {
        free(peer_data);
    }
    return UCS_OK;
}

ucs_status_t perf_oob_check_peer(perf_oob_t *oob)
{
    struct pollfd pfd = {.fd = oob->fd, .events = POLLIN};
    uint8_t hdr[PERF_OOB_HDR_SIZE];
    perf_oob_msg_t type;
    ucs_status_t status;
    size_t length;
    ssize_t ret;
    void *data;

    if ((poll(&pfd, 1, 0) <= 0) || !(pfd.revents & (POLLIN | POLLHUP | POLLERR))) {
        return UCS_OK;
    }

    /*
     * Peek, do not consume: a peer that finished its part of the run may
     * already have sent the next step's message, which the caller reads
     * later. Only a closed connection or an ERROR ends the run here.
     */
    ret = recv(oob->fd, hdr, sizeof(hdr), MSG_PEEK | MSG_DONTWAIT);
    if (ret == 0) {
        perf_oob_set_error(oob, "%s closed the connection during the test",
                           oob->peer_name);
        return UCS_ERR_CONNECTION_RESET;
    } else if ((ret < (ssize_t)sizeof(hdr)) ||
               (perf_oob_get32(hdr + 4) != PERF_OOB_ERROR)) {
        return UCS_OK;
    }

    status = perf_oob_recv(oob, &type, &data, &length);
    if (status == UCS_OK) {
        free(data);
    }
    return (status == UCS_OK) ? UCS_ERR_REJECTED : status;
}

ucs_status_t perf_run_exchange(perf_run_t *run, perf_oob_state_t *state,
                               const void *data, size_t length,
                               void **peer_data_p, size_t *peer_length_p)
{
    perf_oob_t *oob         = run->oob;
    const char *local_error = (run->error[0] != '\0') ? run->error : NULL;
    ucs_status_t status;

    switch (*state) {
    case PERF_OOB_STATE_CLOSED:
        return UCS_ERR_CANCELED;
    case PERF_OOB_STATE_PEER_WAITING:
        if (local_error != NULL) {
            perf_oob_send_error(oob, local_error);
        } else {
            (void)perf_oob_send(oob, PERF_OOB_BLOB, data, length);
        }
        *state = PERF_OOB_STATE_CLOSED;
        return UCS_ERR_CANCELED;
    case PERF_OOB_STATE_OK:
        break;
    }

    status = perf_oob_exchange(oob, local_error, data, length, peer_data_p,
                               peer_length_p);
    if (status == UCS_ERR_REJECTED) {
        perf_run_set_error(run, "%s: %s", oob->peer_name, oob->error);
    } else if ((status != UCS_OK) && (status != UCS_ERR_CANCELED)) {
        perf_run_set_error(run, "%s", oob->error);
    }
    if (status != UCS_OK) {
        *state = PERF_OOB_STATE_CLOSED;
    }
    return status;
}

ucs_status_t perf_run_finish(perf_run_t *run, perf_oob_state_t *state,
                             uint64_t *bad, char *bad_what, size_t bad_what_size,
                             ucs_status_t status)
{
    perf_wire_out_t out = {0};
    char what[256];
    ucs_status_t xstatus;
    perf_wire_in_t in;
    uint64_t peer_bad;
    size_t length;
    void *data;

    perf_wire_put_u64(&out, *bad);
    perf_wire_put_str(&out, bad_what);
    xstatus = perf_run_exchange(run, state, out.data, out.length, &data, &length);
    perf_wire_free(&out);
    if (xstatus != UCS_OK) {
        return (status != UCS_OK) ? status : xstatus;
    }

    if (run->role == PERF_ROLE_INITIATOR) {
        perf_wire_in_init(&in, data, length);
        peer_bad = perf_wire_get_u64(&in);
        perf_wire_get_str(&in, what, sizeof(what));
        if (!in.failed && (peer_bad > 0) && (*bad == 0)) {
            *bad = peer_bad;
            snprintf(bad_what, bad_what_size, "%s", what);
        }
    }
    free(data);
    return status;
}
