#include <ucs/sys/sys.h>

#include <gtest/gtest.h>

#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <algorithm>
#include <fstream>
#include <string>

TEST(ucs_sys, boot_id_matches_the_kernel_and_is_stable)
{
    uint8_t id1[16], id2[16];
    std::string text;
    char hex[40];

    ASSERT_EQ(UCS_OK, ucs_sys_get_boot_id(id1));
    ASSERT_EQ(UCS_OK, ucs_sys_get_boot_id(id2));
    EXPECT_EQ(0, memcmp(id1, id2, sizeof(id1)));

    std::ifstream("/proc/sys/kernel/random/boot_id") >> text;
    text.erase(std::remove(text.begin(), text.end(), '-'), text.end());
    for (int i = 0; i < 16; ++i) {
        snprintf(hex + 2 * i, 3, "%02x", id1[i]);
    }
    EXPECT_EQ(text, std::string(hex));
}

/* The node id a forked child computes from its own network namespace, after
 * entering a new one when @a new_netns; false when the child could not. The
 * child mixes afresh (ucs_sys_node_id_mix): the id of ucs_sys_get_node_id()
 * is read once per process and a child inherits it. */
static bool child_node_id(bool new_netns, uint8_t id[16])
{
    int fds[2];
    if (pipe(fds) != 0) {
        return false;
    }
    pid_t pid = fork();
    if (pid == 0) {
        uint8_t boot[16], got[16];
        struct stat st;
        if ((new_netns && (unshare(CLONE_NEWNET) != 0)) ||
            (stat("/proc/self/ns/net", &st) != 0) ||
            (ucs_sys_get_boot_id(boot) != UCS_OK)) {
            _exit(1);
        }
        ucs_sys_node_id_mix(boot, st.st_dev, st.st_ino, got);
        _exit((write(fds[1], got, sizeof(got)) == (ssize_t)sizeof(got)) ? 0 : 1);
    }
    close(fds[1]);
    bool ok = (read(fds[0], id, 16) == 16);
    close(fds[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    return ok && WIFEXITED(st) && (WEXITSTATUS(st) == 0);
}

/* Emulated hosts are network namespaces on one kernel: one boot id, so the
 * node id must tell them apart, and must not tell apart two processes of
 * one namespace. */
TEST(ucs_sys, node_id_differs_between_network_namespaces_only)
{
    uint8_t mine[16], again[16], sibling[16], other_ns[16];

    ASSERT_EQ(UCS_OK, ucs_sys_get_node_id(mine));
    ASSERT_EQ(UCS_OK, ucs_sys_get_node_id(again));
    EXPECT_EQ(0, memcmp(mine, again, sizeof(mine)));
    ASSERT_TRUE(child_node_id(false, sibling));
    EXPECT_EQ(0, memcmp(mine, sibling, sizeof(mine)));
    if (!child_node_id(true, other_ns)) {
        GTEST_SKIP() << "cannot create a network namespace here (needs root or "
                        "user namespaces)";
    }
    EXPECT_NE(0, memcmp(mine, other_ns, sizeof(mine)));
}

TEST(ucs_sys, pid_namespace_and_host_are_known)
{
    EXPECT_NE(0u, ucs_sys_get_pid_ns());
    EXPECT_GT(strlen(ucs_sys_get_host_name()), 0u);
    EXPECT_GE(ucs_get_page_size(), 4096u);
}

TEST(ucs_sys, time_is_monotonic)
{
    uint64_t t1 = ucs_get_time_ns();
    uint64_t t2 = ucs_get_time_ns();
    EXPECT_LE(t1, t2);
}

TEST(ucs_sys, object_dir_of_libucs_is_its_build_dir)
{
    char dir[4096];
    ASSERT_EQ(UCS_OK, ucs_sys_get_object_dir((const void *)ucs_get_time_ns,
                                             dir, sizeof(dir)));
    std::string d(dir);
    EXPECT_NE(std::string::npos, d.find("src/ucs/.libs")) << d;
    EXPECT_EQ(UCS_ERR_BUFFER_TOO_SMALL,
              ucs_sys_get_object_dir((const void *)ucs_get_time_ns, dir, 4));
}
