#include "two_process.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <signal.h>
#include <unistd.h>

using namespace ucx_test;

TEST(two_process, exchanges_blobs_both_ways)
{
    run_two_processes(
        [](oob_channel &ch) {
            std::string reply;
            ASSERT_TRUE(ch.send_blob("ping from parent"));
            ASSERT_TRUE(ch.recv_blob(reply));
            EXPECT_EQ("pong from child", reply);
        },
        [](oob_channel &ch) {
            std::string msg;
            ASSERT_TRUE(ch.recv_blob(msg));
            EXPECT_EQ("ping from parent", msg);
            ASSERT_TRUE(ch.send_blob("pong from child"));
        });
}

TEST(two_process, passes_a_file_descriptor)
{
    run_two_processes(
        [](oob_channel &ch) {
            int p[2];
            ASSERT_EQ(0, pipe(p));
            ASSERT_TRUE(ch.send_fd(p[1]));
            close(p[1]);
            char c = 0;
            ASSERT_EQ(1, read(p[0], &c, 1));
            EXPECT_EQ('x', c);
            close(p[0]);
        },
        [](oob_channel &ch) {
            int fd = ch.recv_fd();
            ASSERT_GE(fd, 0);
            ASSERT_EQ(1, write(fd, "x", 1));
            close(fd);
        });
}

TEST(two_process, child_crash_is_a_failure_not_a_hang)
{
    two_process_result r = run_two_processes_raw(
        [](oob_channel &ch) {
            std::string msg;
            /* The child dies before answering: the receive must fail. */
            EXPECT_FALSE(ch.recv_blob(msg));
        },
        /* SIGABRT rather than SIGSEGV: sanitizer builds turn a SEGV into
         * an exit(1) report, which would hide what this test checks. */
        [](oob_channel &) { abort(); }, 20.0);
    EXPECT_FALSE(r.ok);
    EXPECT_NE(std::string::npos, r.error.find("signal 6")) << r.error;
}

TEST(two_process, child_nonzero_exit_is_a_failure)
{
    two_process_result r = run_two_processes_raw(
        [](oob_channel &) {}, [](oob_channel &) { _exit(3); }, 20.0);
    EXPECT_FALSE(r.ok);
    EXPECT_NE(std::string::npos, r.error.find("status 3")) << r.error;
}

TEST(two_process, hung_child_is_killed_at_the_timeout)
{
    auto start = std::chrono::steady_clock::now();
    two_process_result r = run_two_processes_raw(
        [](oob_channel &ch) {
            std::string msg;
            EXPECT_FALSE(ch.recv_blob(msg)); /* returns once the watchdog fires */
        },
        [](oob_channel &) { sleep(60); }, 1.0);
    double elapsed = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - start).count();
    EXPECT_FALSE(r.ok);
    EXPECT_NE(std::string::npos, r.error.find("timed out")) << r.error;
    EXPECT_LT(elapsed, 10.0);
}

TEST(two_process, parent_that_stops_early_releases_a_waiting_child)
{
    /* The parent returns without its side of the barrier (as after a failed
     * assertion): the child's wait must end at once, not at the timeout. */
    two_process_result r = run_two_processes_raw(
        [](oob_channel &) {},
        [](oob_channel &ch) { _exit(ch.barrier() ? 0 : 4); }, 30.0);
    EXPECT_FALSE(r.ok);
    EXPECT_NE(std::string::npos, r.error.find("status 4")) << r.error;
}
