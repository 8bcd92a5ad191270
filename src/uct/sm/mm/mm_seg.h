/**
 * @file mm_seg.h
 * Shared-memory segments of the posix transport, and the liveness of the
 * process that owns one.
 *
 * Lifetime choice: a segment is an anonymous memory file (memfd_create),
 * never a name in /dev/shm. It lives as long as some process holds its file
 * descriptor or a mapping of it, so the kernel frees it when the owner and
 * every attached peer are gone, whether they exited, crashed or were killed
 * with SIGKILL: there is no file that could be left behind. The owner keeps
 * the descriptor open; a peer on the same host attaches by opening
 * /proc/<owner pid>/fd/<fd> (which needs the same user, like ptrace read
 * access) or, when /proc is not usable, with pidfd_getfd(). The inode number
 * travels with the pid and fd so that a recycled fd number, or a garbage
 * address, can never attach the wrong file. The file mode is 0600.
 *
 * Thread safety: every function is thread safe; a segment object itself
 * belongs to one caller.
 */
#ifndef UCT_MM_SEG_H_
#define UCT_MM_SEG_H_

#include <ucs/type/status.h>

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

BEGIN_C_DECLS

/** A mapped segment, created here or attached from a peer. */
typedef struct uct_mm_seg {
    void     *address; /**< start of the mapping */
    size_t   length;   /**< bytes mapped (a multiple of the page size) */
    int      fd;       /**< creator: the memfd peers attach through; attacher: -1 */
    uint64_t inode;    /**< inode of the memory file, names it together with pid and fd */
} uct_mm_seg_t;

/** uct_mm_seg_create() flag: fault every page in now (no page faults later
 *  on the fast path; for FIFOs, not for user allocations). */
#define UCT_MM_SEG_FLAG_POPULATE 1u

/**
 * Create a segment of at least @a length bytes (rounded up to pages), mode
 * 0600, mapped read-write and zero-filled.
 *
 * @param name    shown in /proc/<pid>/maps as "/memfd:<name>", for admins.
 * @param length  bytes wanted.
 * @param flags   UCT_MM_SEG_FLAG_*.
 * @param seg     filled on success; release with uct_mm_seg_destroy().
 * @return UCS_OK, UCS_ERR_INVALID_PARAM (length 0), UCS_ERR_NO_MEMORY,
 *         UCS_ERR_SHMEM_SEGMENT (logged with errno).
 */
ucs_status_t uct_mm_seg_create(const char *name, size_t length, unsigned flags,
                               uct_mm_seg_t *seg);

/** Unmap a created segment and close its descriptor (peers keep their mappings). */
void uct_mm_seg_destroy(uct_mm_seg_t *seg);

/**
 * Map a peer's segment.
 *
 * @param pid         owner process (in this PID namespace).
 * @param fd          the owner's descriptor of the segment.
 * @param inode       inode the file must have; anything else is refused.
 * @param length      bytes to map from the start; the file must be at least
 *                    this long. 0 maps the whole file.
 * @param max_length  with @a length 0: largest file accepted, so that a
 *                    garbage address cannot make us map something huge.
 * @param seg         filled on success; release with uct_mm_seg_detach().
 * @return UCS_OK; UCS_ERR_UNREACHABLE when the process or descriptor cannot
 *         be reached (gone, other user, other host); UCS_ERR_INVALID_ADDR
 *         when the descriptor is not the named memory file or is too short;
 *         UCS_ERR_SHMEM_SEGMENT when mapping fails. Never crashes on garbage.
 */
ucs_status_t uct_mm_seg_attach(pid_t pid, int fd, uint64_t inode, size_t length,
                               size_t max_length, uct_mm_seg_t *seg);

/** Unmap a segment from uct_mm_seg_attach(). */
void uct_mm_seg_detach(uct_mm_seg_t *seg);

/**
 * A handle on a peer process that tells whether it is still alive: a pidfd
 * where the kernel has them (exact, immune to pid reuse, sees zombies as
 * dead), kill(pid, 0) otherwise.
 */
typedef struct uct_mm_peer {
    pid_t pid;
    int   pidfd; /**< -1 when pidfd_open() is not available */
} uct_mm_peer_t;

/**
 * Start watching @a pid. Open it before attaching the peer's segment: the
 * attach then proves that the pidfd names the segment's owner.
 *
 * @return UCS_OK, or UCS_ERR_UNREACHABLE when no such process exists.
 */
ucs_status_t uct_mm_peer_open(pid_t pid, uct_mm_peer_t *peer);

/** Stop watching. */
void uct_mm_peer_close(uct_mm_peer_t *peer);

/**
 * Whether the peer process still runs. One system call (poll or kill):
 * slow path only.
 */
int uct_mm_peer_is_alive(const uct_mm_peer_t *peer);

END_C_DECLS

#endif
