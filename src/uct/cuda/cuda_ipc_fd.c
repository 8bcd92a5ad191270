#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "cuda_ipc.h"

#include <ucs/sys/sys.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

/*
 * Getting an exporter's file descriptor (VMM chunk, memory pool) into the
 * importer.
 *
 * pidfd: pidfd_open(exporter pid) + pidfd_getfd(fd number). Needs the same
 * PID namespace (the pid in the key must mean the same process) and ptrace
 * permission over the exporter (same user, and the Yama policy allows it,
 * e.g. the importer is the exporter's parent).
 *
 * socket: the exporter serves its exported fds over a unix socket in the
 * abstract namespace, named after its pid namespace and pid. A client sends
 * the fd number it wants; the server answers with that fd (SCM_RIGHTS) only
 * if the client's uid (SO_PEERCRED) is the exporter's and the fd is one the
 * export cache registered and still holds (duplicated under the cache's
 * lock, so a number closed and reused meanwhile is never sent) -- never an
 * arbitrary fd of the process. One server thread per exporting process,
 * started on the first export of an fd, blocking in accept(); requests are
 * tiny and answered in order (a silent client times out after 1 s).
 */

#ifndef SYS_pidfd_open
#  define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#  define SYS_pidfd_getfd 438
#endif

typedef struct {
    int32_t fd;
} uct_cuda_ipc_fd_request_t;

typedef struct {
    int32_t status; /* 0: the fd follows in the same message */
} uct_cuda_ipc_fd_reply_t;

static pthread_once_t uct_cuda_ipc_fd_server_once = PTHREAD_ONCE_INIT;
static ucs_status_t uct_cuda_ipc_fd_server_status = UCS_ERR_NO_DEVICE;
static pid_t uct_cuda_ipc_fd_server_pid;

const char *uct_cuda_ipc_fd_transfer_names[] = {
    [UCT_CUDA_IPC_FD_TRANSFER_AUTO]   = "auto",
    [UCT_CUDA_IPC_FD_TRANSFER_PIDFD]  = "pidfd",
    [UCT_CUDA_IPC_FD_TRANSFER_SOCKET] = "socket",
    [UCT_CUDA_IPC_FD_TRANSFER_LAST]   = NULL
};

static socklen_t uct_cuda_ipc_fd_sockaddr(uint64_t pid_ns, uint32_t pid,
                                          struct sockaddr_un *addr)
{
    int len;

    memset(addr, 0, sizeof(*addr));
    addr->sun_family = AF_UNIX;
    /* sun_path[0] = 0: abstract namespace, nothing on the file system. */
    len = snprintf(addr->sun_path + 1, sizeof(addr->sun_path) - 1,
                   "ucx-cuda-ipc-%llx-%u", (unsigned long long)pid_ns, pid);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len);
}

static void uct_cuda_ipc_fd_serve(int conn)
{
    uct_cuda_ipc_fd_reply_t reply = {-1};
    uct_cuda_ipc_fd_request_t req;
    char cbuf[CMSG_SPACE(sizeof(int))];
    struct ucred cred;
    socklen_t cred_len = sizeof(cred);
    struct msghdr msg;
    struct cmsghdr *cmsg;
    struct timeval timeout = {1, 0};
    struct iovec iov;
    int send_fd = -1;

    /* A client that connects and says nothing must not stall the others. */
    (void)setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    (void)setsockopt(conn, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    if ((recv(conn, &req, sizeof(req), MSG_WAITALL) != sizeof(req)) ||
        (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) != 0)) {
        return;
    }

    if (cred.uid != getuid()) {
        ucs_debug("cuda_ipc: fd server: refusing uid %u", cred.uid);
    } else if ((send_fd = uct_cuda_ipc_export_fd_dup(req.fd)) < 0) {
        ucs_debug("cuda_ipc: fd server: fd %d is not exported", req.fd);
    } else {
        reply.status = 0;
    }

    memset(&msg, 0, sizeof(msg));
    iov.iov_base   = &reply;
    iov.iov_len    = sizeof(reply);
    msg.msg_iov    = &iov;
    msg.msg_iovlen = 1;
    if (send_fd >= 0) {
        memset(cbuf, 0, sizeof(cbuf));
        msg.msg_control    = cbuf;
        msg.msg_controllen = sizeof(cbuf);
        cmsg               = CMSG_FIRSTHDR(&msg);
        cmsg->cmsg_level   = SOL_SOCKET;
        cmsg->cmsg_type    = SCM_RIGHTS;
        cmsg->cmsg_len     = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cmsg), &send_fd, sizeof(int));
    }
    (void)sendmsg(conn, &msg, MSG_NOSIGNAL);
    if (send_fd >= 0) {
        close(send_fd);
    }
}

static void *uct_cuda_ipc_fd_server_thread(void *arg)
{
    int lfd = (int)(intptr_t)arg;
    int conn;

    for (;;) {
        conn = accept(lfd, NULL, NULL);
        if (conn < 0) {
            if (errno == EINTR) {
                continue;
            }
            ucs_debug("cuda_ipc: fd server stops: %m");
            close(lfd);
            return NULL;
        }
        uct_cuda_ipc_fd_serve(conn);
        close(conn);
    }
}

static void uct_cuda_ipc_fd_server_start(void)
{
    struct sockaddr_un addr;
    pthread_attr_t attr;
    pthread_t thread;
    socklen_t len;
    int lfd;

    len = uct_cuda_ipc_fd_sockaddr(ucs_sys_get_pid_ns(), (uint32_t)getpid(), &addr);
    lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (lfd < 0) {
        ucs_debug("cuda_ipc: fd server socket: %m");
        return;
    }
    if ((bind(lfd, (struct sockaddr*)&addr, len) != 0) || (listen(lfd, 64) != 0)) {
        ucs_debug("cuda_ipc: fd server bind/listen: %m");
        close(lfd);
        return;
    }

    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&thread, &attr, uct_cuda_ipc_fd_server_thread,
                       (void*)(intptr_t)lfd) != 0) {
        ucs_debug("cuda_ipc: fd server thread could not start");
        close(lfd);
    } else {
        uct_cuda_ipc_fd_server_status = UCS_OK;
        uct_cuda_ipc_fd_server_pid    = getpid();
        ucs_debug("cuda_ipc: fd server listening as @%s", addr.sun_path + 1);
    }
    pthread_attr_destroy(&attr);
}

ucs_status_t uct_cuda_ipc_fd_server_ensure(void)
{
    pthread_once(&uct_cuda_ipc_fd_server_once, uct_cuda_ipc_fd_server_start);
    if (uct_cuda_ipc_fd_server_pid != getpid()) {
        return UCS_ERR_NO_DEVICE; /* a forked child has no server thread */
    }
    return uct_cuda_ipc_fd_server_status;
}

/* The fd, or -errno. */
static int uct_cuda_ipc_fd_fetch_pidfd(uint32_t pid, int remote_fd)
{
    int pidfd, fd;

    pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
    if (pidfd < 0) {
        fd = -errno;
        ucs_debug("cuda_ipc: pidfd_open(%u): %m", pid);
        return fd;
    }
    fd = (int)syscall(SYS_pidfd_getfd, pidfd, remote_fd, 0);
    if (fd < 0) {
        fd = -errno;
        ucs_debug("cuda_ipc: pidfd_getfd(%u, %d): %m", pid, remote_fd);
    }
    close(pidfd);
    return fd;
}

/* The fd, or -errno (-EACCES: the exporter refused). */
static int uct_cuda_ipc_fd_fetch_socket(uint64_t pid_ns, uint32_t pid, int remote_fd)
{
    uct_cuda_ipc_fd_request_t req = {remote_fd};
    char cbuf[CMSG_SPACE(sizeof(int))];
    uct_cuda_ipc_fd_reply_t reply;
    struct sockaddr_un addr;
    struct cmsghdr *cmsg;
    struct msghdr msg;
    struct iovec iov;
    socklen_t len;
    int sock, fd = -ECONNREFUSED;

    len  = uct_cuda_ipc_fd_sockaddr(pid_ns, pid, &addr);
    sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (sock < 0) {
        fd = -errno;
        ucs_debug("cuda_ipc: socket(AF_UNIX): %m");
        return fd;
    }
    if (connect(sock, (struct sockaddr*)&addr, len) != 0) {
        fd = -errno;
        ucs_debug("cuda_ipc: connect to @%s: %m", addr.sun_path + 1);
        goto out;
    }
    if (send(sock, &req, sizeof(req), MSG_NOSIGNAL) != sizeof(req)) {
        goto out;
    }

    memset(&msg, 0, sizeof(msg));
    memset(cbuf, 0, sizeof(cbuf));
    iov.iov_base       = &reply;
    iov.iov_len        = sizeof(reply);
    msg.msg_iov        = &iov;
    msg.msg_iovlen     = 1;
    msg.msg_control    = cbuf;
    msg.msg_controllen = sizeof(cbuf);
    if (recvmsg(sock, &msg, MSG_WAITALL | MSG_CMSG_CLOEXEC) != sizeof(reply)) {
        goto out;
    }
    cmsg = CMSG_FIRSTHDR(&msg);
    if ((reply.status == 0) && (cmsg != NULL) && (cmsg->cmsg_level == SOL_SOCKET) &&
        (cmsg->cmsg_type == SCM_RIGHTS) && (cmsg->cmsg_len == CMSG_LEN(sizeof(int)))) {
        memcpy(&fd, CMSG_DATA(cmsg), sizeof(int));
    } else if ((reply.status == 0) && (msg.msg_flags & MSG_CTRUNC)) {
        /* Sent, but the kernel had no fd number for it in this process. */
        fd = -EMFILE;
        ucs_debug("cuda_ipc: fd %d of pid %u arrived with no room for it", remote_fd,
                  pid);
    } else {
        fd = -EACCES;
        ucs_debug("cuda_ipc: exporter %u refused fd %d", pid, remote_fd);
    }
out:
    close(sock);
    return fd;
}

int uct_cuda_ipc_fd_is_exhausted(int err)
{
    return (err == EMFILE) || (err == ENFILE);
}

/* Out of fds: say so at error level, naming the limit. */
static void uct_cuda_ipc_fd_log_exhausted(const uct_cuda_ipc_key_t *key,
                                          int remote_fd, const char *path, int err)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        rl.rlim_cur = RLIM_INFINITY;
    }
    ucs_error("cuda_ipc: cannot take fd %d of pid %u (%s): %s (RLIMIT_NOFILE "
              "soft limit %llu)", remote_fd, key->pid, path, strerror(err),
              (unsigned long long)rl.rlim_cur);
}

int uct_cuda_ipc_fd_fetch(const uct_cuda_ipc_key_t *key, int remote_fd,
                          uct_cuda_ipc_fd_transfer_t mode)
{
    int same_ns   = (key->pid_ns == ucs_sys_get_pid_ns());
    int fd        = -ENOENT;
    int exhausted = 0;

    if ((mode != UCT_CUDA_IPC_FD_TRANSFER_SOCKET) && same_ns) {
        fd = uct_cuda_ipc_fd_fetch_pidfd(key->pid, remote_fd);
        if (fd >= 0) {
            ucs_debug("cuda_ipc: fd %d of pid %u taken by pidfd_getfd", remote_fd,
                      key->pid);
            return fd;
        }
        if (uct_cuda_ipc_fd_is_exhausted(-fd)) {
            uct_cuda_ipc_fd_log_exhausted(key, remote_fd, "pidfd_getfd", -fd);
            exhausted = -fd;
        }
    }
    if (mode != UCT_CUDA_IPC_FD_TRANSFER_PIDFD) {
        fd = uct_cuda_ipc_fd_fetch_socket(key->pid_ns, key->pid, remote_fd);
        if (fd >= 0) {
            ucs_debug("cuda_ipc: fd %d of pid %u received over its socket",
                      remote_fd, key->pid);
            return fd;
        }
        if (uct_cuda_ipc_fd_is_exhausted(-fd) && !exhausted) {
            uct_cuda_ipc_fd_log_exhausted(key, remote_fd, "socket", -fd);
        }
    }
    /* The caller tells "no fd to spare" from "not reachable" by errno. */
    errno = exhausted ? exhausted : -fd;
    return -1;
}
