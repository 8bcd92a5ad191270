#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "mm_seg.h"

#include <ucs/debug/log.h>
#include <ucs/sys/sys.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Older C libraries lack the newer memfd flag; the kernel ABI value is fixed. */
#ifndef MFD_CLOEXEC
#  define MFD_CLOEXEC      0x0001u
#endif
#ifndef MFD_NOEXEC_SEAL
#  define MFD_NOEXEC_SEAL  0x0008u
#endif

static size_t uct_mm_seg_round_up(size_t length)
{
    size_t page = ucs_get_page_size();

    return (length + page - 1) / page * page;
}

static int uct_mm_memfd_create(const char *name)
{
    int fd;

    /* Ask for a non-executable file first: kernels >= 6.3 warn otherwise.
     * Older kernels reject the flag with EINVAL; retry without it. */
    fd = (int)syscall(SYS_memfd_create, name, MFD_CLOEXEC | MFD_NOEXEC_SEAL);
    if ((fd < 0) && (errno == EINVAL)) {
        fd = (int)syscall(SYS_memfd_create, name, MFD_CLOEXEC);
    }
    return fd;
}

ucs_status_t uct_mm_seg_create(const char *name, size_t length, unsigned flags,
                               uct_mm_seg_t *seg)
{
    int mmap_flags = MAP_SHARED;
    ucs_status_t status;
    struct stat st;
    void *address;
    int fd;

    if (length == 0) {
        return UCS_ERR_INVALID_PARAM;
    }

    length = uct_mm_seg_round_up(length);
    fd     = uct_mm_memfd_create(name);
    if (fd < 0) {
        ucs_error("posix: memfd_create(%s) failed: %m", name);
        return UCS_ERR_SHMEM_SEGMENT;
    }

    /* Peers reach the file through /proc, which already demands the same
     * user; the mode makes that explicit for anyone inspecting it. */
    if ((fchmod(fd, S_IRUSR | S_IWUSR) != 0) || (fstat(fd, &st) != 0)) {
        ucs_error("posix: fchmod/fstat of memfd %s failed: %m", name);
        status = UCS_ERR_SHMEM_SEGMENT;
        goto err_close;
    }

    if (ftruncate(fd, (off_t)length) != 0) {
        ucs_error("posix: ftruncate(%s, %zu) failed: %m", name, length);
        status = (errno == ENOMEM) ? UCS_ERR_NO_MEMORY : UCS_ERR_SHMEM_SEGMENT;
        goto err_close;
    }

    if (flags & UCT_MM_SEG_FLAG_POPULATE) {
        mmap_flags |= MAP_POPULATE;
    }
    address = mmap(NULL, length, PROT_READ | PROT_WRITE, mmap_flags, fd, 0);
    if (address == MAP_FAILED) {
        ucs_error("posix: mmap of %s (%zu bytes) failed: %m", name, length);
        status = (errno == ENOMEM) ? UCS_ERR_NO_MEMORY : UCS_ERR_SHMEM_SEGMENT;
        goto err_close;
    }

    seg->address = address;
    seg->length  = length;
    seg->fd      = fd;
    seg->inode   = (uint64_t)st.st_ino;
    ucs_debug("posix: created segment %s fd %d inode %llu at %p length %zu", name,
              fd, (unsigned long long)seg->inode, address, length);
    return UCS_OK;

err_close:
    close(fd);
    return status;
}

void uct_mm_seg_destroy(uct_mm_seg_t *seg)
{
    munmap(seg->address, seg->length);
    close(seg->fd);
    seg->fd = -1;
}

/* Whether @a st describes the memory file a peer named. */
static int uct_mm_seg_is_expected(const struct stat *st, uint64_t inode)
{
    return S_ISREG(st->st_mode) && ((uint64_t)st->st_ino == inode);
}

/*
 * Open the peer's file through /proc. stat() follows the magic link without
 * opening anything, so a garbage fd number that names a terminal or a device
 * is refused before open() could have a side effect.
 * @return a descriptor, or -errno (-EINVAL: the fd is not the named file).
 */
static int uct_mm_seg_open_proc(pid_t pid, int fd, uint64_t inode)
{
    char path[64];
    struct stat st;
    int ret;

    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
    if (stat(path, &st) != 0) {
        return -errno;
    }
    if (!uct_mm_seg_is_expected(&st, inode)) {
        return -EINVAL;
    }
    ret = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    return (ret < 0) ? -errno : ret;
}

/* Duplicate the peer's descriptor with pidfd_getfd(), where /proc is not
 * usable (not mounted, or hidepid). Needs ptrace attach permission.
 * @return a descriptor or -errno. */
static int uct_mm_seg_open_pidfd(pid_t pid, int fd)
{
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_getfd)
    int pidfd, newfd;

    pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0) {
        return -errno;
    }
    newfd = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
    if (newfd < 0) {
        newfd = -errno;
    }
    close(pidfd);
    return newfd;
#else
    (void)pid;
    (void)fd;
    return -ENOSYS;
#endif
}

ucs_status_t uct_mm_seg_attach(pid_t pid, int fd, uint64_t inode, size_t length,
                               size_t max_length, uct_mm_seg_t *seg)
{
    ucs_status_t status;
    struct stat st;
    void *address;
    int seg_fd;

    if ((pid <= 0) || (fd < 0)) {
        return UCS_ERR_INVALID_ADDR;
    }

    /* pidfd_getfd is the way in where /proc is refused; it cannot help when
     * the descriptor was fine and we are out of fds, and its own error
     * would hide that cause. */
    seg_fd = uct_mm_seg_open_proc(pid, fd, inode);
    if ((seg_fd < 0) && (seg_fd != -EINVAL) && (seg_fd != -EMFILE) &&
        (seg_fd != -ENFILE)) {
        seg_fd = uct_mm_seg_open_pidfd(pid, fd);
    }
    if ((seg_fd == -EMFILE) || (seg_fd == -ENFILE)) {
        /* Our own limit, not the peer's absence: the caller must say so. */
        ucs_error("posix: cannot attach fd %d of pid %d: %s (RLIMIT_NOFILE)", fd,
                  (int)pid, strerror(-seg_fd));
        return UCS_ERR_EXCEEDS_LIMIT;
    } else if (seg_fd < 0) {
        ucs_debug("posix: cannot reach fd %d of pid %d: %s", fd, (int)pid,
                  strerror(-seg_fd));
        return (seg_fd == -EINVAL) ? UCS_ERR_INVALID_ADDR : UCS_ERR_UNREACHABLE;
    }

    /* Check again on the open file: the descriptor may have changed between
     * the stat and the open, and pidfd_getfd gives whatever the fd is. */
    if ((fstat(seg_fd, &st) != 0) || !uct_mm_seg_is_expected(&st, inode)) {
        ucs_debug("posix: fd %d of pid %d is not memory file %llu", fd, (int)pid,
                  (unsigned long long)inode);
        status = UCS_ERR_INVALID_ADDR;
        goto out_close;
    }

    if (length == 0) {
        if ((st.st_size <= 0) || ((uint64_t)st.st_size > max_length)) {
            status = UCS_ERR_INVALID_ADDR;
            goto out_close;
        }
        length = (size_t)st.st_size;
    } else if ((st.st_size < 0) || ((uint64_t)st.st_size < length)) {
        status = UCS_ERR_INVALID_ADDR;
        goto out_close;
    }

    address = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, seg_fd, 0);
    if (address == MAP_FAILED) {
        ucs_error("posix: mmap of fd %d of pid %d (%zu bytes) failed: %m", fd,
                  (int)pid, length);
        status = UCS_ERR_SHMEM_SEGMENT;
        goto out_close;
    }

    seg->address = address;
    seg->length  = length;
    seg->fd      = -1;
    seg->inode   = inode;
    status       = UCS_OK;

out_close:
    /* The mapping keeps the memory; the descriptor is not needed. */
    close(seg_fd);
    return status;
}

void uct_mm_seg_detach(uct_mm_seg_t *seg)
{
    munmap(seg->address, seg->length);
}

/* Without a pidfd: kill(0) also succeeds on a process that has exited but
 * was not reaped yet (a zombie), so /proc has the last word. */
static int uct_mm_peer_pid_alive(pid_t pid)
{
    ucs_sys_proc_stat_t st;
    ucs_status_t status;

    if ((kill(pid, 0) != 0) && (errno != EPERM)) {
        return 0;
    }
    status = ucs_sys_proc_stat(pid, &st);
    if (status == UCS_ERR_NO_ELEM) {
        return 0;
    } else if (status != UCS_OK) {
        return 1; /* no /proc to ask: trust kill() */
    }
    return !ucs_sys_proc_stat_exited(&st);
}

ucs_status_t uct_mm_peer_open(pid_t pid, uct_mm_peer_t *peer)
{
    if (pid <= 0) {
        return UCS_ERR_UNREACHABLE;
    }

    peer->pid = pid;
#ifdef SYS_pidfd_open
    peer->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (peer->pidfd >= 0) {
        return UCS_OK;
    }
    if (errno == ESRCH) {
        return UCS_ERR_UNREACHABLE;
    }
#endif
    peer->pidfd = -1;
    return uct_mm_peer_pid_alive(pid) ? UCS_OK : UCS_ERR_UNREACHABLE;
}

void uct_mm_peer_close(uct_mm_peer_t *peer)
{
    if (peer->pidfd >= 0) {
        close(peer->pidfd);
        peer->pidfd = -1;
    }
}

int uct_mm_peer_is_alive(const uct_mm_peer_t *peer)
{
    struct pollfd pfd;

    if (peer->pidfd < 0) {
        return uct_mm_peer_pid_alive(peer->pid);
    }

    /* A pidfd becomes readable when the process has exited (zombies too). */
    pfd.fd      = peer->pidfd;
    pfd.events  = POLLIN;
    pfd.revents = 0;
    return poll(&pfd, 1, 0) == 0;
}
