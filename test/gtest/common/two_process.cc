#include "two_process.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <time.h>
#include <unistd.h>

namespace ucx_test {

static double now_sec()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

oob_channel::oob_channel(int fd, double timeout_sec) :
    m_fd(fd), m_deadline(now_sec() + timeout_sec)
{
}

oob_channel::~oob_channel()
{
    close(m_fd);
}

bool oob_channel::wait_ready(short events)
{
    struct pollfd pfd;
    int timeout_ms, ret;

    for (;;) {
        timeout_ms = (int)((m_deadline - now_sec()) * 1000.0);
        if (timeout_ms <= 0) {
            return false;
        }
        pfd.fd      = m_fd;
        pfd.events  = events;
        pfd.revents = 0;
        ret         = poll(&pfd, 1, timeout_ms);
        if (ret > 0) {
            /* POLLHUP still lets us read what the peer sent before dying. */
            return (pfd.revents & (events | POLLHUP)) != 0;
        }
        if ((ret < 0) && (errno != EINTR)) {
            return false;
        }
    }
}

bool oob_channel::send(const void *buf, size_t len)
{
    const char *p = static_cast<const char *>(buf);
    ssize_t n;

    while (len > 0) {
        if (!wait_ready(POLLOUT)) {
            return false;
        }
        n = ::send(m_fd, p, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) {
                continue;
            }
            return false;
        }
        p   += n;
        len -= n;
    }
    return true;
}

bool oob_channel::recv(void *buf, size_t len)
{
    char *p = static_cast<char *>(buf);
    ssize_t n;

    while (len > 0) {
        if (!wait_ready(POLLIN)) {
            return false;
        }
        n = ::recv(m_fd, p, len, 0);
        if (n == 0) {
            return false; /* peer closed or died */
        }
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) {
                continue;
            }
            return false;
        }
        p   += n;
        len -= n;
    }
    return true;
}

bool oob_channel::send_blob(const std::string &blob)
{
    uint64_t len = blob.size();
    return send(&len, sizeof(len)) && send(blob.data(), blob.size());
}

bool oob_channel::recv_blob(std::string &blob)
{
    uint64_t len;

    /* An absurd length means a protocol bug in the test, not a real blob. */
    if (!recv(&len, sizeof(len)) || (len > (1ull << 30))) {
        return false;
    }
    blob.resize(len);
    return (len == 0) || recv(&blob[0], len);
}

bool oob_channel::send_fd(int fd)
{
    char cbuf[CMSG_SPACE(sizeof(int))] = {};
    char byte                          = 'F';
    struct iovec iov                   = {&byte, 1};
    struct msghdr msg                  = {};
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

    return wait_ready(POLLOUT) && (sendmsg(m_fd, &msg, MSG_NOSIGNAL) == 1);
}

int oob_channel::recv_fd()
{
    char cbuf[CMSG_SPACE(sizeof(int))] = {};
    char byte;
    struct iovec iov  = {&byte, 1};
    struct msghdr msg = {};
    struct cmsghdr *cmsg;
    int fd;

    msg.msg_iov        = &iov;
    msg.msg_iovlen     = 1;
    msg.msg_control    = cbuf;
    msg.msg_controllen = sizeof(cbuf);
    if (!wait_ready(POLLIN) || (recvmsg(m_fd, &msg, MSG_CMSG_CLOEXEC) != 1)) {
        return -1;
    }
    cmsg = CMSG_FIRSTHDR(&msg);
    if ((cmsg == NULL) || (cmsg->cmsg_type != SCM_RIGHTS)) {
        return -1;
    }
    memcpy(&fd, CMSG_DATA(cmsg), sizeof(int));
    return fd;
}

bool oob_channel::barrier()
{
    char out = 'B', in = 0;
    return send(&out, 1) && recv(&in, 1) && (in == 'B');
}

static std::string describe_status(int status)
{
    char buf[128];

    if (WIFSIGNALED(status)) {
        snprintf(buf, sizeof(buf), "child killed by signal %d (%s)",
                 WTERMSIG(status), strsignal(WTERMSIG(status)));
    } else if (WIFEXITED(status)) {
        snprintf(buf, sizeof(buf), "child exited with status %d",
                 WEXITSTATUS(status));
    } else {
        snprintf(buf, sizeof(buf), "child ended with raw status 0x%x", status);
    }
    return buf;
}

two_process_result run_two_processes_raw(const process_fn_t &parent,
                                         const process_fn_t &child,
                                         double timeout_sec)
{
    two_process_result result = {false, ""};
    double deadline           = now_sec() + timeout_sec;
    std::atomic<bool> timed_out(false);
    std::mutex lock;
    std::condition_variable done_cv;
    bool done = false;
    int fds[2], status;
    pid_t pid, ret;

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
        result.error = std::string("socketpair: ") + strerror(errno);
        return result;
    }

    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0) {
        result.error = std::string("fork: ") + strerror(errno);
        close(fds[0]);
        close(fds[1]);
        return result;
    }

    if (pid == 0) {
        int code;
        close(fds[0]);
        {
            oob_channel chan(fds[1], timeout_sec);
            try {
                child(chan);
                code = ::testing::Test::HasFailure() ? 1 : 0;
            } catch (...) {
                code = 2;
            }
        }
        fflush(stdout);
        fflush(stderr);
        /* _exit: the child must not run the parent's atexit handlers or
         * report googletest results of its own. */
        _exit(code);
    }

    close(fds[1]);

    /* Watchdog: on timeout, kill the child and cut the channel so that the
     * parent's blocked receive returns instead of hanging the suite. */
    std::thread watchdog([&]() {
        std::unique_lock<std::mutex> guard(lock);
        while (!done) {
            double left = deadline - now_sec();
            if (left <= 0) {
                timed_out = true;
                kill(pid, SIGKILL);
                shutdown(fds[0], SHUT_RDWR);
                return;
            }
            done_cv.wait_for(guard, std::chrono::milliseconds(
                                            (long)(left * 1000) + 1));
        }
    });

    {
        oob_channel chan(fds[0], timeout_sec);
        try {
            parent(chan);
        } catch (...) {
            result.error = "parent threw an exception";
        }

        /* The parent says no more: a child still waiting for it (the
         * parent failed an assertion mid-protocol) sees the end of the
         * channel and fails now instead of at the timeout. */
        shutdown(fds[0], SHUT_WR);

        /* Reap the child within the remaining time. */
        for (;;) {
            ret = waitpid(pid, &status, WNOHANG);
            if (ret == pid) {
                break;
            }
            if ((ret < 0) && (errno != EINTR)) {
                status = -1;
                break;
            }
            if (now_sec() > deadline) {
                timed_out = true;
                kill(pid, SIGKILL);
                waitpid(pid, &status, 0);
                break;
            }
            usleep(1000);
        }

        std::lock_guard<std::mutex> guard(lock);
        done = true;
        done_cv.notify_all();
    }
    watchdog.join();

    if (timed_out) {
        char buf[96];
        snprintf(buf, sizeof(buf), "timed out after %.1f s; child killed",
                 timeout_sec);
        result.error = buf;
    } else if (status == -1) {
        result.error = "waitpid failed";
    } else if (!WIFEXITED(status) || (WEXITSTATUS(status) != 0)) {
        result.error = describe_status(status);
    } else if (result.error.empty()) {
        result.ok = true;
    }
    return result;
}

void run_two_processes(const process_fn_t &parent, const process_fn_t &child,
                       double timeout_sec)
{
    two_process_result result = run_two_processes_raw(parent, child, timeout_sec);
    if (!result.ok) {
        ADD_FAILURE() << "two-process test failed: " << result.error;
    }
}

} // namespace ucx_test
