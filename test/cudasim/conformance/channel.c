#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

/* The conformance program's channel (a socketpair, SCM_RIGHTS, pidfd) and
 * its transcript output. */
#include "conformance.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open  434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

int sock = -1;
int is_exporter;
const char *tag = "";
static char text[MAX_TEXT];
static size_t text_len;

/* ---- output ---- */

void out(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (!is_exporter) {
        printf("[%s] %s\n", tag, line);
        return;
    }
    n = snprintf(text + text_len, sizeof(text) - text_len, "[%s] %s\n", tag,
                 line);
    if ((n > 0) && ((size_t)n < sizeof(text) - text_len)) {
        text_len += (size_t)n;
    }
}

const char *res(CUresult r)
{
    const char *name = NULL;

    if (cuGetErrorName(r, &name) != CUDA_SUCCESS) {
        return "(unknown CUresult)";
    }
    return name;
}

/* ---- the channel ---- */

void die(const char *what)
{
    fprintf(stderr, "conformance: %s: %s\n", what, strerror(errno));
    fflush(stdout);
    exit(2);
}

static void xwrite(const void *buf, size_t len)
{
    const char *p = buf;
    ssize_t n;

    while (len > 0) {
        n = send(sock, p, len, MSG_NOSIGNAL);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if (n <= 0) {
            die("send");
        }
        p   += n;
        len -= (size_t)n;
    }
}

void xread(void *buf, size_t len)
{
    char *p = buf;
    ssize_t n;

    while (len > 0) {
        n = recv(sock, p, len, 0);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if (n <= 0) {
            errno = (n == 0) ? EPIPE : errno;
            die("recv (peer gone?)");
        }
        p   += n;
        len -= (size_t)n;
    }
}

void send_msg(msg_type_t type, const void *payload, uint32_t len)
{
    uint32_t hdr[2] = {type, len};

    xwrite(hdr, sizeof(hdr));
    if (len > 0) {
        xwrite(payload, len);
    }
}

uint32_t recv_msg(msg_type_t expect, void *payload, uint32_t max)
{
    uint32_t hdr[2];

    xread(hdr, sizeof(hdr));
    if ((hdr[0] != expect) || (hdr[1] > max)) {
        errno = EPROTO;
        die("unexpected message");
    }
    if (hdr[1] > 0) {
        xread(payload, hdr[1]);
    }
    return hdr[1];
}

/* Exporter: ship the collected lines. Importer: print them. */
void flush_text(void)
{
    send_msg(MSG_TEXT, text, (uint32_t)text_len);
    text_len = 0;
}

void print_peer_text(void)
{
    static char buf[MAX_TEXT + 1];
    uint32_t len = recv_msg(MSG_TEXT, buf, MAX_TEXT);

    fwrite(buf, 1, len, stdout);
}

void send_fd(int fd)
{
    char cbuf[CMSG_SPACE(sizeof(int))] = {0};
    char byte = 'F';
    struct iovec iov = {&byte, 1};
    struct msghdr msg = {0};
    struct cmsghdr *cmsg;

    msg.msg_iov        = &iov;
    msg.msg_iovlen     = 1;
    msg.msg_control    = cbuf;
    msg.msg_controllen = sizeof(cbuf);
    cmsg               = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level   = SOL_SOCKET;
    cmsg->cmsg_type    = SCM_RIGHTS;
    cmsg->cmsg_len     = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
    if (sendmsg(sock, &msg, MSG_NOSIGNAL) != 1) {
        die("sendmsg(SCM_RIGHTS)");
    }
}

int recv_fd(void)
{
    char cbuf[CMSG_SPACE(sizeof(int))] = {0};
    char byte;
    struct iovec iov = {&byte, 1};
    struct msghdr msg = {0};
    struct cmsghdr *cmsg;
    int fd;

    msg.msg_iov        = &iov;
    msg.msg_iovlen     = 1;
    msg.msg_control    = cbuf;
    msg.msg_controllen = sizeof(cbuf);
    if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1) {
        die("recvmsg(SCM_RIGHTS)");
    }
    cmsg = CMSG_FIRSTHDR(&msg);
    if ((cmsg == NULL) || (cmsg->cmsg_type != SCM_RIGHTS)) {
        return -1;
    }
    memcpy(&fd, CMSG_DATA(cmsg), sizeof(int));
    return fd;
}

/* The importer takes a copy of the exporter's fd number @a remote_fd. */
int pidfd_fetch(pid_t pid, int remote_fd)
{
    int pidfd, fd;

    pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0) {
        return -1;
    }
    fd = (int)syscall(SYS_pidfd_getfd, pidfd, remote_fd, 0);
    close(pidfd);
    return fd;
}
