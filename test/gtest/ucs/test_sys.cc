#include <ucs/sys/sys.h>

#include <gtest/gtest.h>

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
