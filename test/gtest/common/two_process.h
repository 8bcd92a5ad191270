/**
 * @file two_process.h
 * Tests that need two real processes (shared memory, CUDA IPC, fd passing):
 * fork a child, connect both sides with a socketpair for out-of-band
 * exchange, and turn a child's crash, failed assertion or hang into a test
 * failure with a reason -- never into a hung test run.
 */
#ifndef UCX_TEST_TWO_PROCESS_H_
#define UCX_TEST_TWO_PROCESS_H_

#include <functional>
#include <string>
#include <sys/types.h>

namespace ucx_test {

/**
 * One end of the out-of-band channel. Every call waits at most until the
 * channel's deadline, and fails (returns false, or -1) when the peer is
 * gone, so a dead peer shows up as an error instead of a hang.
 */
class oob_channel {
public:
    oob_channel(int fd, double timeout_sec);
    ~oob_channel();

    /** Send/receive exactly @a len bytes. */
    bool send(const void *buf, size_t len);
    bool recv(void *buf, size_t len);

    /** Length-prefixed messages (addresses, rkeys). */
    bool send_blob(const std::string &blob);
    bool recv_blob(std::string &blob);

    /** Pass a file descriptor with SCM_RIGHTS; recv_fd returns -1 on error. */
    bool send_fd(int fd);
    int recv_fd();

    /** Both sides wait until the other has arrived. */
    bool barrier();

    int fd() const { return m_fd; }

private:
    bool wait_ready(short events);

    int    m_fd;
    double m_deadline;
};

/** Outcome of a two-process run. */
struct two_process_result {
    bool        ok;     /**< both sides finished and the child reported success */
    std::string error;  /**< why not, for the failure message */
};

typedef std::function<void(oob_channel &)> process_fn_t;

/**
 * Run @a child in a forked process and @a parent in this one.
 *
 * The child's exit status is 0 only when its function returned without a
 * googletest failure. If the whole run exceeds @a timeout_sec the child is
 * killed (SIGKILL) and the parent's channel is shut down so that a blocked
 * receive returns.
 */
two_process_result run_two_processes_raw(const process_fn_t &parent,
                                         const process_fn_t &child,
                                         double timeout_sec);

/** As run_two_processes_raw(), adding a googletest failure when not ok. */
void run_two_processes(const process_fn_t &parent, const process_fn_t &child,
                       double timeout_sec = 60.0);

} // namespace ucx_test

#endif
