/*
 * bistro on functions of a shared object built for the test
 * (target/ucm_test_target.c): their entries are known instructions,
 * including libcuda's prologue with a RIP-relative operand.
 */
#include <gtest/gtest.h>

#if defined(__x86_64__)

#include <ucm/bistro/bistro.h>

#include <atomic>
#include <cstring>
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>
#include <string>
#include <thread>

namespace {

typedef int (*target_fn_t)(int);

/* Each hook counts its calls and forwards to the original. */
struct hook_state {
    std::atomic<long> calls{0};
    target_fn_t       orig = nullptr;
};

hook_state g_hooks[10];

template <int N> int counting_hook(int x)
{
    ++g_hooks[N].calls;
    /* bistro stores the way back atomically while this may run */
    return __atomic_load_n(&g_hooks[N].orig, __ATOMIC_ACQUIRE)(x);
}

/* A hook that changes the result, to tell hooked calls apart. */
target_fn_t g_offset_orig;

int offset_hook(int x)
{
    return g_offset_orig(x) + 1000;
}

} // namespace

class ucm_bistro : public ::testing::Test {
protected:
    void SetUp() override
    {
        std::string path = std::string(UCX_TEST_BUILD_DIR) +
                           "/.libs/libtest_ucm_target.so";
        m_lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        ASSERT_NE(nullptr, m_lib) << dlerror() << " (the test library is "
                                  << "built with the gtest program)";
        ucm_bistro_set_strategies(UCS_MASK(UCM_BISTRO_STRATEGY_LAST));
    }

    void TearDown() override
    {
        ucm_bistro_set_strategies(UCS_MASK(UCM_BISTRO_STRATEGY_LAST));
        /* Kept loaded: a patched library must never be unmapped, and
         * bistro keeps its restore points. */
    }

    target_fn_t function(const char *name)
    {
        target_fn_t fn = (target_fn_t)dlsym(m_lib, name);
        EXPECT_NE(nullptr, fn) << name;
        return fn;
    }

    /* Patch @a fn with counting_hook<N>, check the hook and the original
     * both work, unpatch, check the original bytes are back. */
    template <int N>
    void check_patch_roundtrip(target_fn_t fn, int x, int expected,
                               ucm_bistro_strategy_t *strategy = nullptr)
    {
        uint8_t before[16];
        ucm_bistro_restore_point_t *rp = nullptr;
        void *orig                     = nullptr;

        memcpy(before, (void*)fn, sizeof(before));
        ASSERT_EQ(expected, fn(x));

        g_hooks[N].calls = 0;
        ASSERT_EQ(UCS_OK, ucm_bistro_patch((void*)fn, (void*)counting_hook<N>,
                                           "target", &orig, &rp));
        g_hooks[N].orig = (target_fn_t)orig;
        ASSERT_NE(nullptr, rp);
        EXPECT_TRUE(ucm_bistro_is_patched(rp));
        if (strategy != nullptr) {
            *strategy = ucm_bistro_restore_point_strategy(rp);
        }

        EXPECT_EQ(expected, fn(x));
        EXPECT_EQ(1, g_hooks[N].calls.load());
        EXPECT_EQ(expected, g_hooks[N].orig(x)); /* original, not hooked */
        EXPECT_EQ(1, g_hooks[N].calls.load());

        ASSERT_EQ(UCS_OK, ucm_bistro_restore(rp));
        EXPECT_FALSE(ucm_bistro_is_patched(rp));
        EXPECT_EQ(0, memcmp(before, (void*)fn, sizeof(before)));
        EXPECT_EQ(expected, fn(x));
        EXPECT_EQ(1, g_hooks[N].calls.load());
    }

    void *m_lib = nullptr;
};

TEST_F(ucm_bistro, libcuda_prologue_is_patched_with_a_one_byte_store)
{
    ucm_bistro_strategy_t strategy;

    check_patch_roundtrip<0>(function("ucm_test_target_cuda_like"), 20, 41,
                             &strategy);
    EXPECT_EQ(UCM_BISTRO_STRATEGY_OPCODE, strategy);
}

TEST_F(ucm_bistro, rip_relative_first_instruction_is_relocated)
{
    /* Both strategies move the RIP-relative mov; a wrong displacement
     * would read something other than 7. */
    check_patch_roundtrip<1>(function("ucm_test_target_rip_first"), 5, 12);
}

TEST_F(ucm_bistro, endbr64_entry_is_patched)
{
    check_patch_roundtrip<2>(function("ucm_test_target_endbr"), 7, 21);
}

TEST_F(ucm_bistro, compiled_c_function_is_patched)
{
    check_patch_roundtrip<3>(function("ucm_test_target_c"), 3, 26);
}

TEST_F(ucm_bistro, jump_strategy_relocates_a_rip_relative_prologue)
{
    ucm_bistro_strategy_t strategy;

    /* rip_first's own restore point is already OPCODE (earlier test or
     * not); cuda_like's twin keeps its strategy too. Use the hammer
     * function of the jump strategy, forced before its first patch. */
    ucm_bistro_set_strategies(UCS_BIT(UCM_BISTRO_STRATEGY_JUMP));
    check_patch_roundtrip<4>(function("ucm_test_target_hammer_jump"), 1, 8,
                             &strategy);
    EXPECT_EQ(UCM_BISTRO_STRATEGY_JUMP, strategy);
}

TEST_F(ucm_bistro, taken_pad_address_falls_back_to_the_jump_strategy)
{
    target_fn_t fn  = function("ucm_test_target_fallback");
    size_t page_size = sysconf(_SC_PAGESIZE);
    ucm_bistro_strategy_t strategy;
    int32_t disp;

    /* Occupy the page where the opcode strategy would put its pad. */
    memcpy(&disp, (const uint8_t*)fn + 1, sizeof(disp));
    uintptr_t pad  = (uintptr_t)fn + 5 + disp;
    void *page     = (void*)(pad & ~(page_size - 1));
    void *occupied = mmap(page, page_size, PROT_NONE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                          -1, 0);
    if (occupied == MAP_FAILED) {
        GTEST_SKIP() << "the pad page " << page << " is already in use";
    }
    if (occupied != page) {
        munmap(occupied, page_size);
        GTEST_SKIP() << "the kernel cannot map at a chosen address";
    }

    check_patch_roundtrip<5>(fn, 4, 9, &strategy);
    EXPECT_EQ(UCM_BISTRO_STRATEGY_JUMP, strategy);
    munmap(occupied, page_size);
}

TEST_F(ucm_bistro, patching_twice_is_refused)
{
    target_fn_t fn = function("ucm_test_target_endbr");
    ucm_bistro_restore_point_t *rp;
    void *orig;

    ASSERT_EQ(UCS_OK, ucm_bistro_patch((void*)fn, (void*)offset_hook, "endbr",
                                       &orig, &rp));
    g_offset_orig = (target_fn_t)orig;
    EXPECT_EQ(1000 + 30, fn(10));

    void *orig2 = nullptr;
    EXPECT_EQ(UCS_ERR_ALREADY_EXISTS,
              ucm_bistro_patch((void*)fn, (void*)counting_hook<8>, "endbr",
                               &orig2, nullptr));
    EXPECT_EQ(nullptr, orig2);
    EXPECT_EQ(1000 + 30, fn(10));

    ASSERT_EQ(UCS_OK, ucm_bistro_restore(rp));
    EXPECT_EQ(UCS_ERR_NO_ELEM, ucm_bistro_restore(rp));
    EXPECT_EQ(30, fn(10));
}

TEST_F(ucm_bistro, relative_call_at_entry_is_refused_and_code_left_alone)
{
    target_fn_t fn = function("ucm_test_target_call_first");
    uint8_t before[16];
    void *orig = nullptr;

    memcpy(before, (void*)fn, sizeof(before));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              ucm_bistro_patch((void*)fn, (void*)counting_hook<9>, "call",
                               &orig, nullptr));
    EXPECT_EQ(0, memcmp(before, (void*)fn, sizeof(before)));
    EXPECT_EQ(nullptr, orig);
    EXPECT_EQ(9, fn(5));
}

TEST_F(ucm_bistro, branch_inside_the_jump_window_is_refused)
{
    target_fn_t fn = function("ucm_test_target_jcc_early");
    uint8_t before[16];
    void *orig = nullptr;

    /* The 5-byte jump would overwrite "je": refused... */
    ucm_bistro_set_strategies(UCS_BIT(UCM_BISTRO_STRATEGY_JUMP));
    memcpy(before, (void*)fn, sizeof(before));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              ucm_bistro_patch((void*)fn, (void*)counting_hook<6>, "jcc",
                               &orig, nullptr));
    EXPECT_EQ(0, memcmp(before, (void*)fn, sizeof(before)));

    /* ...while the opcode patch moves only "test" and works. */
    ucm_bistro_set_strategies(UCS_MASK(UCM_BISTRO_STRATEGY_LAST));
    fn = function("ucm_test_target_jcc_early_ok");
    check_patch_roundtrip<6>(fn, 1, 5);
    EXPECT_EQ(9, fn(0));
}

namespace {

/* Call @a fn in a loop on another thread while this one patches and
 * unpatches it; every call must return the right value. */
void hammer(target_fn_t fn, int (*hook)(int), hook_state *state,
            int (*expected)(int), ucm_bistro_strategy_t expected_strategy)
{
    std::atomic<bool> stop{false};
    std::atomic<long> calls{0}, wrong{0};
    ucm_bistro_restore_point_t *rp = nullptr;

    std::thread caller([&] {
        for (int x = 0; !stop.load(std::memory_order_relaxed); ++x) {
            int y = x & 0xffff;
            if (fn(y) != expected(y)) {
                ++wrong;
            }
            ++calls;
        }
    });

    state->calls = 0;
    for (int i = 0; i < 2000; ++i) {
        /* bistro sets the hook's way to the original before the patch
         * can be taken. */
        ASSERT_EQ(UCS_OK, ucm_bistro_patch((void*)fn, (void*)hook, "hammer",
                                           (void**)&state->orig, &rp));
        ASSERT_EQ(expected_strategy, ucm_bistro_restore_point_strategy(rp));
        for (volatile int spin = 0; spin < 2000; ++spin) {
        }
        ASSERT_EQ(UCS_OK, ucm_bistro_restore(rp));
    }

    stop = true;
    caller.join();
    EXPECT_EQ(0, wrong.load()) << "of " << calls.load() << " calls";
    EXPECT_GT(calls.load(), 0);
    EXPECT_GT(state->calls.load(), 0) << "the hook never ran";
}

} // namespace

TEST_F(ucm_bistro, opcode_patch_is_safe_while_another_thread_calls)
{
    hammer(function("ucm_test_target_hammer_opcode"), counting_hook<7>,
           &g_hooks[7], [](int x) { return 2 * x + 1; },
           UCM_BISTRO_STRATEGY_OPCODE);
}

TEST_F(ucm_bistro, jump_patch_is_safe_while_another_thread_calls)
{
    /* First instruction 6 bytes: the jump covers it alone. Uses the same
     * function as the jump-strategy test, whose restore point is JUMP. */
    ucm_bistro_set_strategies(UCS_BIT(UCM_BISTRO_STRATEGY_JUMP));
    hammer(function("ucm_test_target_hammer_jump"), counting_hook<4>,
           &g_hooks[4], [](int x) { return x + 7; },
           UCM_BISTRO_STRATEGY_JUMP);
}

#endif /* __x86_64__ */
