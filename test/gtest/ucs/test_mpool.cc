#include <ucs/datastruct/mpool.h>
#include <ucs/debug/log.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

/* Redirects log messages to a temporary file for the scope, so tests can
 * check what was printed (and expected errors do not clutter the output). */
class log_capture {
public:
    log_capture()
    {
        m_saved_level = ucs_log_level;
        snprintf(m_path, sizeof(m_path), "/tmp/ucx_test_mpool_%d_XXXXXX",
                 (int)getpid());
        int fd = mkstemp(m_path);
        if (fd >= 0) {
            close(fd);
            ucs_log_set_file(m_path);
        }
        ucs_log_set_level(UCS_LOG_LEVEL_WARN);
    }

    ~log_capture()
    {
        ucs_log_set_file("stderr");
        ucs_log_set_level(m_saved_level);
        unlink(m_path);
    }

    std::string text() const
    {
        std::ifstream in(m_path);
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    }

private:
    ucs_log_level_t m_saved_level;
    char            m_path[128];
};

struct init_counter {
    std::vector<void*> objects;
};

void count_init(void *obj, void *arg)
{
    static_cast<init_counter*>(arg)->objects.push_back(obj);
    memset(obj, 0xa5, 24);
}

ucs_mpool_params_t make_params(size_t obj_size, unsigned per_chunk,
                               unsigned max_objs)
{
    ucs_mpool_params_t params;

    ucs_mpool_params_reset(&params);
    params.obj_size       = obj_size;
    params.objs_per_chunk = per_chunk;
    params.max_objs       = max_objs;
    params.name           = "test_pool";
    return params;
}

} // namespace

TEST(ucs_mpool, params_reset_gives_usable_defaults)
{
    ucs_mpool_params_t params;
    ucs_mpool_t mp;

    ucs_mpool_params_reset(&params);
    EXPECT_EQ(UCS_MPOOL_UNLIMITED, params.max_objs);
    EXPECT_GT(params.objs_per_chunk, 0u);
    EXPECT_EQ(nullptr, params.obj_init);

    params.obj_size = 40;
    ASSERT_EQ(UCS_OK, ucs_mpool_init(&mp, &params));
    void *obj = ucs_mpool_get(&mp);
    EXPECT_NE(nullptr, obj);
    EXPECT_EQ(0u, (uintptr_t)obj % 16);
    ucs_mpool_put(obj);
    ucs_mpool_cleanup(&mp);
}

TEST(ucs_mpool, invalid_params_are_rejected)
{
    log_capture capture;
    ucs_mpool_t mp;
    ucs_mpool_params_t params;

    params = make_params(0, 8, 8);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucs_mpool_init(&mp, &params));
    params = make_params(8, 0, 8);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucs_mpool_init(&mp, &params));
    params = make_params(8, 8, 0);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucs_mpool_init(&mp, &params));
    params           = make_params(8, 8, 8);
    params.alignment = 24;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucs_mpool_init(&mp, &params));
    params = make_params(SIZE_MAX / 2, 8, 8);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucs_mpool_init(&mp, &params));
    params = make_params(SIZE_MAX / 16, 1000, 8);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucs_mpool_init(&mp, &params));

    EXPECT_NE(std::string::npos, capture.text().find("test_pool"));
}

TEST(ucs_mpool, chunks_are_allocated_on_demand)
{
    ucs_mpool_params_t params = make_params(32, 4, UCS_MPOOL_UNLIMITED);
    std::vector<void*> objs;
    ucs_mpool_t mp;

    ASSERT_EQ(UCS_OK, ucs_mpool_init(&mp, &params));
    EXPECT_EQ(0u, ucs_mpool_num_objs(&mp));

    objs.push_back(ucs_mpool_get(&mp));
    EXPECT_EQ(4u, ucs_mpool_num_objs(&mp));
    for (int i = 0; i < 3; ++i) {
        objs.push_back(ucs_mpool_get(&mp));
    }
    EXPECT_EQ(4u, ucs_mpool_num_objs(&mp));
    objs.push_back(ucs_mpool_get(&mp));
    EXPECT_EQ(8u, ucs_mpool_num_objs(&mp));

    for (void *obj : objs) {
        ASSERT_NE(nullptr, obj);
        ucs_mpool_put(obj);
    }
    ucs_mpool_cleanup(&mp);
}

TEST(ucs_mpool, objects_are_distinct_and_do_not_overlap)
{
    const size_t size         = 37;
    ucs_mpool_params_t params = make_params(size, 16, UCS_MPOOL_UNLIMITED);
    std::vector<char*> objs;
    ucs_mpool_t mp;

    ASSERT_EQ(UCS_OK, ucs_mpool_init(&mp, &params));
    for (int i = 0; i < 100; ++i) {
        char *obj = (char*)ucs_mpool_get(&mp);
        ASSERT_NE(nullptr, obj);
        memset(obj, i, size); /* the whole object is writable */
        objs.push_back(obj);
    }

    /* Writing one object must not have changed any other. */
    for (int i = 0; i < 100; ++i) {
        for (size_t b = 0; b < size; ++b) {
            ASSERT_EQ((char)i, objs[i][b]) << "object " << i << " byte " << b;
        }
    }

    std::sort(objs.begin(), objs.end());
    for (size_t i = 1; i < objs.size(); ++i) {
        EXPECT_GE((size_t)(objs[i] - objs[i - 1]), size);
    }

    for (char *obj : objs) {
        ucs_mpool_put(obj);
    }
    ucs_mpool_cleanup(&mp);
}

TEST(ucs_mpool, objects_honour_requested_alignment)
{
    for (size_t alignment : {1, 2, 8, 16, 64, 256, 4096}) {
        ucs_mpool_params_t params = make_params(13, 7, UCS_MPOOL_UNLIMITED);
        std::vector<void*> objs;
        ucs_mpool_t mp;

        params.alignment = alignment;
        ASSERT_EQ(UCS_OK, ucs_mpool_init(&mp, &params)) << alignment;
        for (int i = 0; i < 30; ++i) {
            void *obj = ucs_mpool_get(&mp);
            ASSERT_NE(nullptr, obj);
            EXPECT_EQ(0u, (uintptr_t)obj % alignment)
                    << "alignment " << alignment << " object " << i;
            objs.push_back(obj);
        }
        for (void *obj : objs) {
            ucs_mpool_put(obj);
        }
        ucs_mpool_cleanup(&mp);
    }
}

TEST(ucs_mpool, get_returns_null_when_max_objects_are_in_use)
{
    ucs_mpool_params_t params = make_params(16, 4, 10);
    std::vector<void*> objs;
    ucs_mpool_t mp;

    ASSERT_EQ(UCS_OK, ucs_mpool_init(&mp, &params));
    for (int i = 0; i < 10; ++i) {
        void *obj = ucs_mpool_get(&mp);
        ASSERT_NE(nullptr, obj) << i;
        objs.push_back(obj);
    }
    EXPECT_EQ(nullptr, ucs_mpool_get(&mp));
    EXPECT_EQ(nullptr, ucs_mpool_get(&mp));
    /* The last chunk was cut to the limit: never more than max_objs. */
    EXPECT_EQ(10u, ucs_mpool_num_objs(&mp));

    /* Returning one object makes exactly one get succeed again. */
    ucs_mpool_put(objs.back());
    objs.pop_back();
    void *again = ucs_mpool_get(&mp);
    EXPECT_NE(nullptr, again);
    objs.push_back(again);
    EXPECT_EQ(nullptr, ucs_mpool_get(&mp));

    for (void *obj : objs) {
        ucs_mpool_put(obj);
    }
    ucs_mpool_cleanup(&mp);
}

TEST(ucs_mpool, put_object_is_reused_first)
{
    ucs_mpool_params_t params = make_params(64, 8, UCS_MPOOL_UNLIMITED);
    ucs_mpool_t mp;

    ASSERT_EQ(UCS_OK, ucs_mpool_init(&mp, &params));
    void *a = ucs_mpool_get(&mp);
    void *b = ucs_mpool_get(&mp);
    ASSERT_NE(a, b);
    ucs_mpool_put(a);
    EXPECT_EQ(a, ucs_mpool_get(&mp));
    ucs_mpool_put(b);
    ucs_mpool_put(a);
    EXPECT_EQ(a, ucs_mpool_get(&mp));
    EXPECT_EQ(b, ucs_mpool_get(&mp));
    ucs_mpool_put(a);
    ucs_mpool_put(b);
    ucs_mpool_cleanup(&mp);
}

TEST(ucs_mpool, get_put_cycles_allocate_no_new_chunks)
{
    ucs_mpool_params_t params = make_params(24, 32, UCS_MPOOL_UNLIMITED);
    std::vector<void*> objs(500);
    ucs_mpool_t mp;

    ASSERT_EQ(UCS_OK, ucs_mpool_init(&mp, &params));
    for (int round = 0; round < 5; ++round) {
        for (auto &obj : objs) {
            obj = ucs_mpool_get(&mp);
            ASSERT_NE(nullptr, obj);
        }
        for (auto obj : objs) {
            ucs_mpool_put(obj);
        }
    }
    EXPECT_EQ(512u, ucs_mpool_num_objs(&mp)); /* 16 chunks of 32 */
    ucs_mpool_cleanup(&mp);
}

TEST(ucs_mpool, init_callback_runs_once_per_object_and_state_survives_put)
{
    ucs_mpool_params_t params = make_params(24, 5, UCS_MPOOL_UNLIMITED);
    init_counter counter;
    std::vector<void*> objs;
    ucs_mpool_t mp;

    params.obj_init     = count_init;
    params.obj_init_arg = &counter;
    ASSERT_EQ(UCS_OK, ucs_mpool_init(&mp, &params));

    for (int round = 0; round < 4; ++round) {
        for (int i = 0; i < 12; ++i) {
            void *obj = ucs_mpool_get(&mp);
            ASSERT_NE(nullptr, obj);
            /* What the init callback wrote is still there. */
            for (int b = 0; b < 24; ++b) {
                ASSERT_EQ(0xa5, ((uint8_t*)obj)[b]);
            }
            objs.push_back(obj);
        }
        for (void *obj : objs) {
            ucs_mpool_put(obj);
        }
        objs.clear();
    }

    EXPECT_EQ(15u, ucs_mpool_num_objs(&mp));
    EXPECT_EQ(15u, counter.objects.size());
    std::set<void*> unique(counter.objects.begin(), counter.objects.end());
    EXPECT_EQ(15u, unique.size()) << "an object was initialized twice";
    ucs_mpool_cleanup(&mp);
}

TEST(ucs_mpool, put_finds_the_pool_of_each_object)
{
    ucs_mpool_params_t params = make_params(16, 4, 4);
    ucs_mpool_t mp1, mp2;

    ASSERT_EQ(UCS_OK, ucs_mpool_init(&mp1, &params));
    ASSERT_EQ(UCS_OK, ucs_mpool_init(&mp2, &params));
    void *a = ucs_mpool_get(&mp1);
    void *b = ucs_mpool_get(&mp2);
    ucs_mpool_put(b);
    ucs_mpool_put(a);
    EXPECT_EQ(a, ucs_mpool_get(&mp1));
    EXPECT_EQ(b, ucs_mpool_get(&mp2));
    ucs_mpool_put(a);
    ucs_mpool_put(b);
    ucs_mpool_cleanup(&mp1);
    ucs_mpool_cleanup(&mp2);
}

TEST(ucs_mpool, cleanup_with_leaked_objects_warns_with_name_and_count)
{
    ucs_mpool_params_t params = make_params(16, 4, UCS_MPOOL_UNLIMITED);
    ucs_mpool_t mp;
    log_capture capture;

    params.name = "leaky_pool";
    ASSERT_EQ(UCS_OK, ucs_mpool_init(&mp, &params));
    for (int i = 0; i < 5; ++i) {
        ASSERT_NE(nullptr, ucs_mpool_get(&mp));
    }
    ucs_mpool_put(ucs_mpool_get(&mp));
    ucs_mpool_cleanup(&mp);

    std::string text = capture.text();
    EXPECT_NE(std::string::npos, text.find("leaky_pool")) << text;
    EXPECT_NE(std::string::npos, text.find("5 of 8")) << text;
}

TEST(ucs_mpool, cleanup_without_leaks_is_silent)
{
    ucs_mpool_params_t params = make_params(16, 4, UCS_MPOOL_UNLIMITED);
    ucs_mpool_t mp;
    log_capture capture;

    ASSERT_EQ(UCS_OK, ucs_mpool_init(&mp, &params));
    ucs_mpool_put(ucs_mpool_get(&mp));
    ucs_mpool_cleanup(&mp);

    /* An unused pool has nothing to release either. */
    ASSERT_EQ(UCS_OK, ucs_mpool_init(&mp, &params));
    ucs_mpool_cleanup(&mp);
    EXPECT_EQ("", capture.text());
}

TEST(ucs_mpool, long_name_is_truncated_not_overflowed)
{
    std::string name(200, 'n');
    ucs_mpool_params_t params = make_params(8, 1, 1);
    ucs_mpool_t mp;

    params.name = name.c_str();
    ASSERT_EQ(UCS_OK, ucs_mpool_init(&mp, &params));
    EXPECT_EQ(name.substr(0, UCS_MPOOL_NAME_MAX - 1), ucs_mpool_name(&mp));
    ucs_mpool_cleanup(&mp);
}
