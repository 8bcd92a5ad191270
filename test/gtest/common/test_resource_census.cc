/**
 * @file test_resource_census.cc
 * The fd-limit tests lean on fd_exhaustion: it must leave exactly the
 * spare fds it promises, whether the process's fd numbers have holes or
 * not, and give everything back.
 */
#include "resource_census.h"

#include <gtest/gtest.h>

#include <vector>

using namespace ucx_test;

namespace {

/** How many fds can be opened before EMFILE, at most @a cap (all closed
 *  again after); -1 if an open failed for another reason. */
int openable_fds(int cap)
{
    std::vector<int> fds;
    int              fd, count;

    while (((int)fds.size() < cap) && ((fd = open("/dev/null", O_RDONLY)) >= 0)) {
        fds.push_back(fd);
    }
    count = ((int)fds.size() == cap) || (errno == EMFILE) ? (int)fds.size() : -1;
    for (int f : fds) {
        close(f);
    }
    return count;
}

void expect_exact_spares(const char *what)
{
    struct rlimit before;
    ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &before));
    int fds_before = resource_census::take().fds;
    if ((before.rlim_max != RLIM_INFINITY) &&
        ((rlim_t)highest_open_fd() + 1 + 3 > before.rlim_max)) {
        GTEST_SKIP() << what << ": fd " << highest_open_fd()
                     << " is open just below the hard RLIMIT_NOFILE (" << before.rlim_max
                     << "): no room for spares above it";
    }

    for (unsigned spare = 0; spare <= 3; ++spare) {
        fd_exhaustion no_fds(spare);
        ASSERT_TRUE(no_fds.ok()) << what << ", " << spare << " spare";
        EXPECT_EQ((int)spare, openable_fds(64)) << what << ", " << spare << " spare";
        no_fds.release();

        struct rlimit after;
        ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &after));
        EXPECT_EQ(before.rlim_cur, after.rlim_cur) << what;
        EXPECT_EQ(fds_before, resource_census::take().fds) << what;
    }
}

} // namespace

TEST(fd_exhaustion, leaves_exactly_the_spares_asked_for_with_holes)
{
    /* Holes: two fds opened, the lower closed. */
    int a = open("/dev/null", O_RDONLY), b = open("/dev/null", O_RDONLY);
    ASSERT_GE(a, 0);
    ASSERT_GE(b, 0);
    close(a);
    expect_exact_spares("fd table with a hole");
    close(b);
}

TEST(fd_exhaustion, leaves_exactly_the_spares_asked_for_without_holes)
{
    /* Every number up to one above the old top taken, or, where the top
     * sat at the soft limit, up to the limit. */
    std::vector<int> fillers;
    int              top = highest_open_fd();
    for (int fd; (fd = open("/dev/null", O_RDONLY)) >= 0;) {
        fillers.push_back(fd);
        if (fd > top) {
            break;
        }
    }
    expect_exact_spares("fd table without holes");
    for (int fd : fillers) {
        close(fd);
    }
}
