#include <ucs/sys/module.h>
#include <ucs/config/global_opts.h>

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <fstream>
#include <stdlib.h>
#include <string>
#include <unistd.h>

class ucs_module : public ::testing::Test {
protected:
    void SetUp() override
    {
        m_saved = ucs_global_opts.module_dir;
    }

    void TearDown() override
    {
        ucs_global_opts.module_dir = m_saved;
    }

    char *m_saved;
};

TEST_F(ucs_module, loads_from_module_dir_and_runs_constructor)
{
    std::string dir = std::string(UCX_TEST_BUILD_DIR) + "/.libs";
    ucs_global_opts.module_dir = const_cast<char *>(dir.c_str());

    void *handle = NULL;
    ASSERT_EQ(UCS_OK, ucs_module_load("test", "dummy", &handle));
    ASSERT_NE(nullptr, handle);

    int (*value)(void) = (int (*)(void))dlsym(handle, "test_dummy_value");
    ASSERT_NE(nullptr, value);
    EXPECT_EQ(42, value());

    /* Loading again returns the same module without reopening it. */
    void *again = NULL;
    EXPECT_EQ(UCS_OK, ucs_module_load("test", "dummy", &again));
    EXPECT_EQ(handle, again);
    EXPECT_GE(ucs_module_load_all("test"), 1u);
}

TEST_F(ucs_module, missing_module_is_no_elem)
{
    EXPECT_EQ(UCS_ERR_NO_ELEM, ucs_module_load("test", "does_not_exist", NULL));
}

TEST_F(ucs_module, broken_module_is_an_io_error_not_a_crash)
{
    char dir[] = "/tmp/ucx_module_test_XXXXXX";
    ASSERT_NE(nullptr, mkdtemp(dir));
    std::string file = std::string(dir) + "/libtest_broken.so";
    std::ofstream(file) << "this is not an ELF file";
    ucs_global_opts.module_dir = dir;

    EXPECT_EQ(UCS_ERR_IO_ERROR, ucs_module_load("test", "broken", NULL));

    unlink(file.c_str());
    rmdir(dir);
}

TEST_F(ucs_module, rejects_names_with_path_separators)
{
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucs_module_load("test", "../evil", NULL));
}

TEST_F(ucs_module, tests_run_from_the_build_tree)
{
    EXPECT_TRUE(ucs_module_in_build_tree());
}

TEST_F(ucs_module, constructor_that_loads_modules_does_not_deadlock)
{
    std::string dir = std::string(UCX_TEST_BUILD_DIR) + "/.libs";
    ucs_global_opts.module_dir = const_cast<char *>(dir.c_str());

    void *handle = NULL;
    ASSERT_EQ(UCS_OK, ucs_module_load("test", "nested", &handle));
    int (*status)(void) = (int (*)(void))dlsym(handle, "test_nested_load_status");
    ASSERT_NE(nullptr, status);
    EXPECT_EQ((int)UCS_OK, status());
}
