/*
 * reloc: a libc function (getppid) called through the GOT of the test
 * library, loaded before the patch, and of a second library loaded after
 * it. The hook lives in this program, which reloc therefore leaves alone.
 */
#include <ucm/reloc/reloc.h>

#include <gtest/gtest.h>
#include "common/test_helpers.h"

#include <atomic>
#include <dlfcn.h>
#include <string>
#include <unistd.h>

namespace {

std::atomic<int> g_getppid_calls;
ucm_reloc_patch_t g_patch;

pid_t getppid_hook(void)
{
    ++g_getppid_calls;
    return ((pid_t (*)(void))g_patch.prev_value)();
}

typedef int (*call_fn_t)(void);

std::string lib_path(const char *name)
{
    return std::string(UCX_TEST_BUILD_DIR) + "/.libs/" + name;
}

} // namespace

class ucm_reloc : public ::testing::Test {
protected:
    void SetUp() override
    {
        m_target = dlopen(lib_path("libtest_ucm_target.so").c_str(),
                          RTLD_NOW | RTLD_LOCAL);
        ASSERT_NE(nullptr, m_target) << dlerror();
        m_call = (call_fn_t)dlsym(m_target, "ucm_test_target_call_getppid");
        ASSERT_NE(nullptr, m_call);

        g_getppid_calls    = 0;
        g_patch.symbol     = "getppid";
        g_patch.value      = (void*)getppid_hook;
        g_patch.prev_value = nullptr;
    }

    void TearDown() override
    {
        ucm_reloc_restore(&g_patch);
        dlclose(m_target);
    }

    void     *m_target = nullptr;
    call_fn_t m_call   = nullptr;
};

TEST_F(ucm_reloc, hooks_calls_from_an_already_loaded_object)
{
    const int parent = (int)getppid();

    EXPECT_EQ(parent, m_call());
    EXPECT_EQ(0, g_getppid_calls.load());

    ASSERT_EQ(UCS_OK, ucm_reloc_modify(&g_patch));
    EXPECT_NE(nullptr, g_patch.prev_value);
    EXPECT_EQ(0u, ucm_reloc_count_unpatched(&g_patch));

    EXPECT_EQ(parent, m_call());
    EXPECT_EQ(1, g_getppid_calls.load());

    /* This program holds the hook, so its own calls are not redirected. */
    EXPECT_EQ(parent, (int)getppid());
    EXPECT_EQ(1, g_getppid_calls.load());
}

TEST_F(ucm_reloc, hooks_calls_from_an_object_loaded_later)
{
    ASSERT_EQ(UCS_OK, ucm_reloc_modify(&g_patch));

    void *late = dlopen(lib_path("libtest_ucm_late.so").c_str(),
                        RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(nullptr, late) << dlerror();
    call_fn_t late_call = (call_fn_t)dlsym(late, "ucm_test_late_call_getppid");
    ASSERT_NE(nullptr, late_call);

    EXPECT_EQ((int)getppid(), late_call());
    EXPECT_EQ(1, g_getppid_calls.load());
    EXPECT_EQ(0u, ucm_reloc_count_unpatched(&g_patch));

    ASSERT_EQ(UCS_OK, ucm_reloc_restore(&g_patch));
    late_call();
    EXPECT_EQ(1, g_getppid_calls.load());
    dlclose(late);
}

TEST_F(ucm_reloc, restore_gives_every_caller_the_original_back)
{
    ASSERT_EQ(UCS_OK, ucm_reloc_modify(&g_patch));
    m_call();
    EXPECT_EQ(1, g_getppid_calls.load());
    EXPECT_EQ(UCS_ERR_ALREADY_EXISTS, ucm_reloc_modify(&g_patch));

    ASSERT_EQ(UCS_OK, ucm_reloc_restore(&g_patch));
    EXPECT_EQ(UCS_ERR_NO_ELEM, ucm_reloc_restore(&g_patch));
    m_call();
    EXPECT_EQ(1, g_getppid_calls.load());
    EXPECT_GT(ucm_reloc_count_unpatched(&g_patch), 0u);
    EXPECT_GE(ucm_reloc_count_slots("getppid"),
              ucm_reloc_count_unpatched(&g_patch));
}

/* Needs a process in which libtest_ucm_late.so was never loaded (an earlier
 * test loads it and the loader may keep it): runs in a fresh process. */
TEST(ucm_reloc_fresh, dlopen_hook_searches_the_callers_run_path)
{
    EXPECT_EQ(0, ucx_test::run_test_in_fresh_process(
                         "ucm_reloc.DISABLED_dlopen_hook_searches_the_callers_run_path"));
}

TEST_F(ucm_reloc, DISABLED_dlopen_hook_searches_the_callers_run_path)
{
    typedef void *(*dlopen_fn_t)(const char*);
    dlopen_fn_t target_dlopen = (dlopen_fn_t)dlsym(m_target,
                                                   "ucm_test_target_dlopen");
    ASSERT_NE(nullptr, target_dlopen);

    void *loaded = dlopen(lib_path("libtest_ucm_late.so").c_str(),
                          RTLD_NOW | RTLD_NOLOAD);
    if (loaded != nullptr) {
        dlclose(loaded);
        FAIL() << "libtest_ucm_late.so is already loaded in a fresh process";
    }

    /* With dlopen() hooked, the loader sees libucm as the caller; the
     * target library's run path must still be searched. */
    ASSERT_EQ(UCS_OK, ucm_reloc_modify(&g_patch));
    void *late = target_dlopen("libtest_ucm_late.so");
    ASSERT_NE(nullptr, late) << dlerror();

    call_fn_t late_call = (call_fn_t)dlsym(late, "ucm_test_late_call_getppid");
    ASSERT_NE(nullptr, late_call);
    late_call();
    EXPECT_EQ(1, g_getppid_calls.load()) << "the new object was not patched";
    dlclose(late);
}

TEST_F(ucm_reloc, unknown_symbol_is_not_found)
{
    ucm_reloc_patch_t patch = {};

    patch.symbol = "ucm_test_no_such_function";
    patch.value  = (void*)getppid_hook;
    EXPECT_EQ(UCS_ERR_NO_ELEM, ucm_reloc_modify(&patch));
}
