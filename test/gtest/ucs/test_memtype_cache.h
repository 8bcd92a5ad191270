/**
 * @file test_memtype_cache.h
 * Helpers shared by the memory-type cache suites: building descriptions, a
 * fake resolver that counts its calls, and a fixture that owns a cache.
 */
#ifndef UCX_TEST_MEMTYPE_CACHE_H_
#define UCX_TEST_MEMTYPE_CACHE_H_

#include <ucs/memory/memtype_cache.h>

#include "common/test_helpers.h"
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>

namespace ucx_test {

inline ucs_memtype_info_t
memtype_info(ucs_memory_type_t mem_type, int device,
             ucs_memtype_alloc_kind_t kind, uint32_t handle_types = 0,
             void *pool = NULL, uintptr_t alloc_base = 0,
             size_t alloc_length = 0)
{
    ucs_memtype_info_t info;

    memset(&info, 0, sizeof(info));
    info.mem_type     = mem_type;
    info.device       = device;
    info.alloc_kind   = kind;
    info.handle_types = handle_types;
    info.pool         = pool;
    info.alloc_base   = (void*)alloc_base;
    info.alloc_length = alloc_length;
    return info;
}

/* Compare the producer's fields (everything but region_*). */
inline ::testing::AssertionResult
same_description(const ucs_memtype_info_t &expected,
                 const ucs_memtype_info_t &actual)
{
    if ((expected.mem_type == actual.mem_type) &&
        (expected.device == actual.device) &&
        (expected.alloc_kind == actual.alloc_kind) &&
        (expected.handle_types == actual.handle_types) &&
        (expected.pool == actual.pool) &&
        (expected.alloc_base == actual.alloc_base) &&
        (expected.alloc_length == actual.alloc_length)) {
        return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure()
           << "expected type " << expected.mem_type << " dev "
           << expected.device << " kind " << expected.alloc_kind
           << " handles " << expected.handle_types << " pool "
           << expected.pool << " base " << expected.alloc_base << " len "
           << expected.alloc_length << "; got type " << actual.mem_type
           << " dev " << actual.device << " kind " << actual.alloc_kind
           << " handles " << actual.handle_types << " pool " << actual.pool
           << " base " << actual.alloc_base << " len " << actual.alloc_length;
}

/*
 * Stands in for the CUDA module's resolver: knows a set of "device
 * allocations" (as the driver would), answers everything else as ordinary
 * host memory, and counts its calls. Thread safe.
 */
class fake_resolver {
public:
    void add(uintptr_t start, size_t length, const ucs_memtype_info_t &info,
             bool report_extent = true)
    {
        std::lock_guard<std::mutex> guard(m_lock);
        m_allocs[start] = {start + length, info, report_extent};
    }

    void fail_with(ucs_status_t status)
    {
        m_fail_status = status;
    }

    unsigned calls() const
    {
        return m_calls.load();
    }

    static ucs_status_t resolve(void *arg, const void *address, size_t length,
                                ucs_memtype_info_t *info)
    {
        return static_cast<fake_resolver*>(arg)->answer((uintptr_t)address,
                                                        length, info);
    }

    void attach(ucs_memtype_cache_t *cache)
    {
        ASSERT_EQ(UCS_OK, ucs_memtype_cache_set_resolver(cache, resolve, this));
    }

private:
    struct alloc {
        uintptr_t          end;
        ucs_memtype_info_t info;
        bool               report_extent;
    };

    ucs_status_t answer(uintptr_t address, size_t length,
                        ucs_memtype_info_t *info)
    {
        ++m_calls;
        EXPECT_GT(length, 0u);
        EXPECT_EQ(UCS_MEMORY_TYPE_UNKNOWN, info->mem_type) << "not reset";
        if (m_fail_status != UCS_OK) {
            return m_fail_status;
        }

        std::lock_guard<std::mutex> guard(m_lock);
        auto it = m_allocs.upper_bound(address);
        if ((it != m_allocs.begin()) && (address < (--it)->second.end)) {
            *info = it->second.info;
            if (it->second.report_extent) {
                info->region_start  = (void*)it->first;
                info->region_length = it->second.end - it->first;
            }
            return UCS_OK;
        }

        /* what the driver says about memory it does not know */
        info->mem_type   = UCS_MEMORY_TYPE_HOST;
        info->alloc_kind = UCS_MEMTYPE_ALLOC_HOST;
        return UCS_OK;
    }

    std::mutex                     m_lock;
    std::map<uintptr_t, alloc>     m_allocs;
    std::atomic<unsigned>          m_calls{0};
    std::atomic<ucs_status_t>      m_fail_status{UCS_OK};
};

/* A fresh cache per test, created with UCX_MEMTYPE_CACHE unset, and checked
 * for internal consistency at the end. */
class memtype_cache_test : public ::testing::Test {
protected:
    void SetUp() override
    {
        scoped_setenv env("UCX_MEMTYPE_CACHE", NULL);
        ASSERT_EQ(UCS_OK, ucs_memtype_cache_create("test", &m_cache));
    }

    void TearDown() override
    {
        if (m_cache != NULL) {
            EXPECT_EQ(UCS_OK, ucs_memtype_cache_check(m_cache));
            ucs_memtype_cache_destroy(m_cache);
        }
    }

    ucs_status_t update(uintptr_t start, size_t length,
                        const ucs_memtype_info_t &info)
    {
        return ucs_memtype_cache_update(m_cache, (void*)start, length, &info);
    }

    ucs_status_t lookup(uintptr_t start, size_t length,
                        ucs_memtype_info_t *info)
    {
        return ucs_memtype_cache_lookup(m_cache, (void*)start, length, info);
    }

    ucs_memtype_cache_t *m_cache = NULL;
};

} // namespace ucx_test

#endif
