#include "test_memtype_cache.h"

#include <ucs/sys/sys.h>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>
#include <vector>

using namespace ucx_test;

namespace {

/* Addresses of regions that only exist in the cache (never dereferenced). */
const uintptr_t BASE = 0x7e0000000000ul;
const size_t    MB   = 1024 * 1024;

class memtype_cache : public memtype_cache_test {
protected:
    /* A region, checked through a lookup of its first byte */
    ::testing::AssertionResult region_is(uintptr_t address, uintptr_t start,
                                         uintptr_t end,
                                         const ucs_memtype_info_t &expected)
    {
        ucs_memtype_info_t info;
        ucs_status_t status = lookup(address, 1, &info);

        if (status != UCS_OK) {
            return ::testing::AssertionFailure()
                   << "lookup of 0x" << std::hex << address << ": "
                   << ucs_status_string(status);
        }
        if ((info.region_start != (void*)start) ||
            ((uintptr_t)info.region_start + info.region_length != end)) {
            return ::testing::AssertionFailure()
                   << std::hex << "region of 0x" << address << " is ["
                   << info.region_start << ", +0x" << info.region_length
                   << "), expected [0x" << start << ", 0x" << end << ")";
        }
        return same_description(expected, info);
    }

    ::testing::AssertionResult is_miss(uintptr_t address, size_t length = 1)
    {
        ucs_memtype_info_t info;
        ucs_status_t status = lookup(address, length, &info);

        if ((status == UCS_ERR_NO_ELEM) &&
            (info.mem_type == UCS_MEMORY_TYPE_UNKNOWN)) {
            return ::testing::AssertionSuccess();
        }
        return ::testing::AssertionFailure()
               << "lookup of 0x" << std::hex << address << " gave "
               << ucs_status_string(status) << " type " << info.mem_type;
    }

    ucs_memtype_info_t cuda(int device = 0, uint32_t handles = 0)
    {
        return memtype_info(UCS_MEMORY_TYPE_CUDA, device,
                            UCS_MEMTYPE_ALLOC_LEGACY, handles);
    }

    ucs_memtype_info_t host()
    {
        return memtype_info(UCS_MEMORY_TYPE_HOST, -1, UCS_MEMTYPE_ALLOC_HOST);
    }
};

/* Three mappings side by side: an inaccessible guard page, a read-write
 * area of @a pages pages, and another guard page, so that the kernel cannot
 * merge the middle one with a neighbour and its extent is known exactly. */
class guarded_mapping {
public:
    explicit guarded_mapping(size_t pages, int prot = PROT_READ | PROT_WRITE)
    {
        m_page = ucs_get_page_size();
        m_size = (pages + 2) * m_page;
        m_base = mmap(NULL, m_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
                      -1, 0);
        EXPECT_NE(MAP_FAILED, m_base);
        EXPECT_EQ(0, mprotect((char*)m_base + m_page, pages * m_page, prot));
        m_length = pages * m_page;
    }

    ~guarded_mapping()
    {
        munmap(m_base, m_size);
    }

    uintptr_t start() const
    {
        return (uintptr_t)m_base + m_page;
    }

    uintptr_t end() const
    {
        return start() + m_length;
    }

    uintptr_t guard() const
    {
        return (uintptr_t)m_base;
    }

    size_t page() const
    {
        return m_page;
    }

private:
    void   *m_base;
    size_t m_size;
    size_t m_length;
    size_t m_page;
};

} // namespace


/* ---- storing and finding ------------------------------------------------ */

TEST_F(memtype_cache, every_kind_is_returned_as_stored)
{
    std::vector<ucs_memtype_info_t> infos;

    for (int kind = UCS_MEMTYPE_ALLOC_UNKNOWN; kind < UCS_MEMTYPE_ALLOC_LAST;
         ++kind) {
        uintptr_t start       = BASE + kind * 4 * MB;
        ucs_memory_type_t type = (kind == UCS_MEMTYPE_ALLOC_MANAGED) ?
                                         UCS_MEMORY_TYPE_CUDA_MANAGED :
                                 ((kind == UCS_MEMTYPE_ALLOC_HOST) ||
                                  (kind == UCS_MEMTYPE_ALLOC_HOST_PINNED)) ?
                                         UCS_MEMORY_TYPE_HOST :
                                         UCS_MEMORY_TYPE_CUDA;
        infos.push_back(memtype_info(
                type, kind % 3, (ucs_memtype_alloc_kind_t)kind,
                UCS_MEMTYPE_HANDLE_POSIX_FD | (kind << 1),
                (void*)(uintptr_t)(0x1000 * (kind + 1)), start - 64 * 1024,
                3 * MB + kind));
        ASSERT_EQ(UCS_OK, update(start, 2 * MB, infos.back()));
    }
    EXPECT_EQ(infos.size(), ucs_memtype_cache_num_regions(m_cache));

    for (size_t i = 0; i < infos.size(); ++i) {
        uintptr_t start = BASE + i * 4 * MB;
        ucs_memtype_info_t info;

        EXPECT_TRUE(region_is(start, start, start + 2 * MB, infos[i]));
        EXPECT_TRUE(region_is(start + MB, start, start + 2 * MB, infos[i]));
        EXPECT_TRUE(region_is(start + 2 * MB - 1, start, start + 2 * MB,
                              infos[i]));
        ASSERT_EQ(UCS_OK, lookup(start, 2 * MB, &info)) << "whole region";
        EXPECT_TRUE(same_description(infos[i], info));
        EXPECT_TRUE(is_miss(start + 2 * MB)) << "one past the end";
        EXPECT_TRUE(is_miss(start - 1)) << "one below the start";
    }
}

TEST_F(memtype_cache, empty_cache_without_resolver_reports_miss)
{
    EXPECT_TRUE(is_miss(BASE));
    EXPECT_TRUE(is_miss(BASE, 100 * MB));
    EXPECT_EQ(0u, ucs_memtype_cache_num_regions(m_cache));
}

TEST_F(memtype_cache, zero_length_query_asks_about_one_byte)
{
    ucs_memtype_info_t info;

    ASSERT_EQ(UCS_OK, update(BASE, 4096, cuda()));
    EXPECT_EQ(UCS_OK, lookup(BASE + 4095, 0, &info));
    EXPECT_EQ(UCS_MEMORY_TYPE_CUDA, info.mem_type);
    EXPECT_TRUE(is_miss(BASE + 4096, 0));
}

TEST_F(memtype_cache, query_past_top_of_address_space_is_cut)
{
    ucs_memtype_info_t info;
    uintptr_t top = UINTPTR_MAX - 4095;

    ASSERT_EQ(UCS_OK, update(top, 4095, cuda()));
    EXPECT_EQ(UCS_OK, lookup(top + 10, SIZE_MAX, &info));
    EXPECT_EQ(UCS_MEMORY_TYPE_CUDA, info.mem_type);
    EXPECT_TRUE(is_miss(UINTPTR_MAX));
}

TEST_F(memtype_cache, update_rejects_bad_arguments)
{
    ucs_memtype_info_t bad_type = cuda();
    ucs_memtype_info_t bad_kind = cuda();

    bad_type.mem_type   = (ucs_memory_type_t)(UCS_MEMORY_TYPE_LAST + 1);
    bad_kind.alloc_kind = UCS_MEMTYPE_ALLOC_LAST;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, update(BASE, 0, cuda()));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, update(BASE, 10, bad_type));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, update(BASE, 10, bad_kind));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              ucs_memtype_cache_remove(m_cache, (void*)BASE, 0));
    EXPECT_EQ(0u, ucs_memtype_cache_num_regions(m_cache));
}

/* ---- removing ----------------------------------------------------------- */

TEST_F(memtype_cache, remove_forgets_whole_region)
{
    ASSERT_EQ(UCS_OK, update(BASE, MB, cuda()));
    ASSERT_EQ(UCS_OK, ucs_memtype_cache_remove(m_cache, (void*)BASE, MB));
    EXPECT_TRUE(is_miss(BASE));
    EXPECT_TRUE(is_miss(BASE + MB - 1));
    EXPECT_EQ(0u, ucs_memtype_cache_num_regions(m_cache));
}

TEST_F(memtype_cache, remove_of_middle_part_leaves_both_ends)
{
    ucs_memtype_info_t dev = cuda(1);

    ASSERT_EQ(UCS_OK, update(BASE, 3 * MB, dev));
    ASSERT_EQ(UCS_OK, ucs_memtype_cache_remove(m_cache, (void*)(BASE + MB), MB));
    EXPECT_TRUE(region_is(BASE, BASE, BASE + MB, dev));
    EXPECT_TRUE(is_miss(BASE + MB));
    EXPECT_TRUE(region_is(BASE + 2 * MB, BASE + 2 * MB, BASE + 3 * MB, dev));
    EXPECT_EQ(2u, ucs_memtype_cache_num_regions(m_cache));
}

/* ---- removals from events that may not lock (deferred) ------------------ */

TEST_F(memtype_cache, deferred_removal_is_seen_by_the_next_lookup)
{
    ucs_memtype_info_t dev = cuda(1), info;

    ASSERT_EQ(UCS_OK, update(BASE, 3 * MB, dev));
    ASSERT_EQ(UCS_OK, lookup(BASE + MB, 100, &info));
    ASSERT_EQ(UCS_OK, lookup(BASE + MB, 100, &info)); /* a remembered hit */

    ucs_memtype_cache_remove_deferred(m_cache, (void*)(BASE + MB), MB);

    /* no update ran in between: the lookup itself must apply it */
    EXPECT_TRUE(is_miss(BASE + MB, 100));
    EXPECT_TRUE(region_is(BASE, BASE, BASE + MB, dev));
    EXPECT_TRUE(region_is(BASE + 2 * MB, BASE + 2 * MB, BASE + 3 * MB, dev));
    EXPECT_EQ(2u, ucs_memtype_cache_num_regions(m_cache));
    EXPECT_EQ(UCS_OK, ucs_memtype_cache_check(m_cache));
}

TEST_F(memtype_cache, deferred_removal_comes_before_a_later_update)
{
    ASSERT_EQ(UCS_OK, update(BASE, MB, cuda(0)));
    ucs_memtype_cache_remove_deferred(m_cache, (void*)BASE, MB);
    /* the address is recycled: the parked free must not erase the new one */
    ASSERT_EQ(UCS_OK, update(BASE, MB, cuda(2)));
    EXPECT_TRUE(region_is(BASE, BASE, BASE + MB, cuda(2)));
}

TEST_F(memtype_cache, deferred_removals_beyond_the_slots_empty_the_cache)
{
    unsigned i;

    ASSERT_EQ(UCS_OK, update(BASE, MB, cuda(0)));
    ASSERT_EQ(UCS_OK, update(BASE + 4 * MB, MB, cuda(1)));
    for (i = 0; i < 1000; ++i) { /* far more than fit */
        ucs_memtype_cache_remove_deferred(m_cache,
                                          (void*)(BASE + 8 * MB + i * 4096),
                                          4096);
    }

    /* correct, only slower: nothing stale can remain */
    EXPECT_TRUE(is_miss(BASE));
    EXPECT_TRUE(is_miss(BASE + 4 * MB));
    EXPECT_EQ(0u, ucs_memtype_cache_num_regions(m_cache));
    EXPECT_EQ(UCS_OK, ucs_memtype_cache_check(m_cache));

    /* and the slots are usable again */
    ASSERT_EQ(UCS_OK, update(BASE, 2 * MB, cuda(0)));
    ucs_memtype_cache_remove_deferred(m_cache, (void*)BASE, MB);
    EXPECT_TRUE(is_miss(BASE));
    EXPECT_TRUE(region_is(BASE + MB, BASE + MB, BASE + 2 * MB, cuda(0)));
}

namespace {

int check_says(void *arg, const void *address, size_t length)
{
    return *static_cast<int*>(arg);
}

} // namespace

TEST_F(memtype_cache, checked_update_stores_only_what_the_check_allows)
{
    int allow = 0;
    ucs_memtype_info_t dev = cuda(1);

    EXPECT_EQ(UCS_OK, ucs_memtype_cache_update_if(m_cache, (void*)BASE, MB,
                                                  &dev, check_says, &allow));
    EXPECT_TRUE(is_miss(BASE));

    allow = 1;
    EXPECT_EQ(UCS_OK, ucs_memtype_cache_update_if(m_cache, (void*)BASE, MB,
                                                  &dev, check_says, &allow));
    EXPECT_TRUE(region_is(BASE, BASE, BASE + MB, dev));
}

TEST_F(memtype_cache, remove_of_uncached_range_changes_nothing)
{
    ASSERT_EQ(UCS_OK, update(BASE, MB, cuda()));
    EXPECT_EQ(UCS_OK,
              ucs_memtype_cache_remove(m_cache, (void*)(BASE + 2 * MB), MB));
    EXPECT_TRUE(region_is(BASE, BASE, BASE + MB, cuda()));
}

TEST_F(memtype_cache, update_with_unknown_type_forgets_range)
{
    ASSERT_EQ(UCS_OK, update(BASE, 2 * MB, cuda()));
    ASSERT_EQ(UCS_OK, update(BASE + MB, MB,
                             memtype_info(UCS_MEMORY_TYPE_UNKNOWN, -1,
                                          UCS_MEMTYPE_ALLOC_UNKNOWN)));
    EXPECT_TRUE(region_is(BASE, BASE, BASE + MB, cuda()));
    EXPECT_TRUE(is_miss(BASE + MB));
}

/* ---- overlapping updates ------------------------------------------------ */

TEST_F(memtype_cache, update_inside_region_splits_it)
{
    ucs_memtype_info_t outer = cuda(0);
    ucs_memtype_info_t inner = memtype_info(UCS_MEMORY_TYPE_CUDA, 1,
                                            UCS_MEMTYPE_ALLOC_POOL,
                                            UCS_MEMTYPE_HANDLE_POSIX_FD,
                                            (void*)0x77);

    ASSERT_EQ(UCS_OK, update(BASE, 10 * MB, outer));
    ASSERT_EQ(UCS_OK, update(BASE + 4 * MB, 2 * MB, inner));
    EXPECT_TRUE(region_is(BASE, BASE, BASE + 4 * MB, outer));
    EXPECT_TRUE(region_is(BASE + 5 * MB, BASE + 4 * MB, BASE + 6 * MB, inner));
    EXPECT_TRUE(region_is(BASE + 9 * MB, BASE + 6 * MB, BASE + 10 * MB, outer));
    EXPECT_EQ(3u, ucs_memtype_cache_num_regions(m_cache));
}

TEST_F(memtype_cache, update_across_edges_trims_neighbours)
{
    ucs_memtype_info_t left  = cuda(0);
    ucs_memtype_info_t right = cuda(1);
    ucs_memtype_info_t mid   = memtype_info(UCS_MEMORY_TYPE_CUDA_MANAGED, 0,
                                            UCS_MEMTYPE_ALLOC_MANAGED);

    ASSERT_EQ(UCS_OK, update(BASE, 4 * MB, left));
    ASSERT_EQ(UCS_OK, update(BASE + 4 * MB, 4 * MB, right));
    ASSERT_EQ(UCS_OK, update(BASE + 3 * MB, 2 * MB, mid));
    EXPECT_TRUE(region_is(BASE, BASE, BASE + 3 * MB, left));
    EXPECT_TRUE(region_is(BASE + 4 * MB, BASE + 3 * MB, BASE + 5 * MB, mid));
    EXPECT_TRUE(region_is(BASE + 7 * MB, BASE + 5 * MB, BASE + 8 * MB, right));
}

TEST_F(memtype_cache, update_covering_regions_replaces_them)
{
    ucs_memtype_info_t big = memtype_info(UCS_MEMORY_TYPE_CUDA, 2,
                                          UCS_MEMTYPE_ALLOC_VMM,
                                          UCS_MEMTYPE_HANDLE_FABRIC);

    for (int i = 0; i < 8; ++i) {
        ASSERT_EQ(UCS_OK, update(BASE + i * MB + 4096, 4096, cuda(i % 2)));
    }
    ASSERT_EQ(UCS_OK, update(BASE, 8 * MB, big));
    EXPECT_EQ(1u, ucs_memtype_cache_num_regions(m_cache));
    EXPECT_TRUE(region_is(BASE + 4096, BASE, BASE + 8 * MB, big));
}

TEST_F(memtype_cache, recycled_address_gets_new_allocation_type)
{
    ucs_memtype_info_t legacy = memtype_info(UCS_MEMORY_TYPE_CUDA, 0,
                                             UCS_MEMTYPE_ALLOC_LEGACY,
                                             UCS_MEMTYPE_HANDLE_LEGACY_IPC,
                                             NULL, BASE, 2 * MB);
    ucs_memtype_info_t pool   = memtype_info(UCS_MEMORY_TYPE_CUDA, 0,
                                             UCS_MEMTYPE_ALLOC_POOL, 0,
                                             (void*)0x1234, BASE, MB);
    ucs_memtype_info_t info;

    /* freed with an event, then reused by a pool allocation */
    ASSERT_EQ(UCS_OK, update(BASE, 2 * MB, legacy));
    ASSERT_EQ(UCS_OK, lookup(BASE, 2 * MB, &info)); /* remembered hit */
    ASSERT_EQ(UCS_OK, ucs_memtype_cache_remove(m_cache, (void*)BASE, 2 * MB));
    ASSERT_EQ(UCS_OK, update(BASE, MB, pool));
    EXPECT_TRUE(region_is(BASE, BASE, BASE + MB, pool));
    EXPECT_TRUE(is_miss(BASE + MB));

    /* no free event seen (e.g. hooks were late): the new allocation wins
     * where it lies; the rest keeps the old description */
    ASSERT_EQ(UCS_OK, update(BASE, 2 * MB, legacy));
    ASSERT_EQ(UCS_OK, update(BASE, MB, pool));
    EXPECT_TRUE(region_is(BASE + 10, BASE, BASE + MB, pool));
    EXPECT_TRUE(region_is(BASE + MB, BASE + MB, BASE + 2 * MB, legacy));
}

TEST_F(memtype_cache, update_invalidates_remembered_hits_of_this_thread)
{
    ucs_memtype_info_t info;

    ASSERT_EQ(UCS_OK, update(BASE, MB, cuda(0)));
    ASSERT_EQ(UCS_OK, lookup(BASE, 100, &info));
    ASSERT_EQ(UCS_OK, lookup(BASE, 100, &info)); /* from the hit list */
    EXPECT_EQ(0, info.device);

    ASSERT_EQ(UCS_OK, update(BASE, MB, cuda(3)));
    ASSERT_EQ(UCS_OK, lookup(BASE, 100, &info));
    EXPECT_EQ(3, info.device);

    ASSERT_EQ(UCS_OK, ucs_memtype_cache_remove(m_cache, (void*)BASE, MB));
    EXPECT_TRUE(is_miss(BASE, 100));
}

TEST_F(memtype_cache, many_buffers_in_turn_get_right_answers)
{
    const int count = 11; /* more than a thread remembers */
    ucs_memtype_info_t info;

    for (int i = 0; i < count; ++i) {
        ASSERT_EQ(UCS_OK, update(BASE + i * MB, MB, cuda(i)));
    }
    for (int round = 0; round < 5; ++round) {
        for (int i = 0; i < count; ++i) {
            ASSERT_EQ(UCS_OK, lookup(BASE + i * MB + round, 64, &info));
            EXPECT_EQ(i, info.device);
        }
    }
}

/* ---- queries over several regions --------------------------------------- */

TEST_F(memtype_cache, query_across_two_allocations_spans)
{
    ucs_memtype_info_t info;

    ASSERT_EQ(UCS_OK, update(BASE, MB, cuda(0)));
    ASSERT_EQ(UCS_OK, update(BASE + MB, MB, cuda(1)));
    EXPECT_EQ(UCS_MEMTYPE_CACHE_ERR_SPANS, lookup(BASE + MB - 8, 16, &info));
    EXPECT_EQ(UCS_ERR_OUT_OF_RANGE, UCS_MEMTYPE_CACHE_ERR_SPANS);
    EXPECT_EQ(0, info.device) << "describes the region of the start";
    EXPECT_EQ((void*)BASE, info.region_start);
}

TEST_F(memtype_cache, query_from_device_region_into_gap_spans)
{
    ucs_memtype_info_t info;

    ASSERT_EQ(UCS_OK, update(BASE, MB, cuda(0)));
    EXPECT_EQ(UCS_MEMTYPE_CACHE_ERR_SPANS, lookup(BASE, MB + 1, &info));
    EXPECT_EQ(UCS_MEMORY_TYPE_CUDA, info.mem_type);
}

TEST_F(memtype_cache, query_from_gap_into_region_without_resolver_misses)
{
    ASSERT_EQ(UCS_OK, update(BASE + MB, MB, cuda(0)));
    EXPECT_TRUE(is_miss(BASE, 2 * MB));
}

TEST_F(memtype_cache, query_across_adjacent_host_regions_is_host)
{
    ucs_memtype_info_t pinned = memtype_info(UCS_MEMORY_TYPE_HOST, -1,
                                             UCS_MEMTYPE_ALLOC_HOST_PINNED);
    ucs_memtype_info_t info;

    ASSERT_EQ(UCS_OK, update(BASE, MB, host()));
    ASSERT_EQ(UCS_OK, update(BASE + MB, MB, host()));
    ASSERT_EQ(UCS_OK, lookup(BASE + 10, 2 * MB - 20, &info));
    EXPECT_EQ(UCS_MEMORY_TYPE_HOST, info.mem_type);
    EXPECT_EQ((void*)BASE, info.region_start);
    EXPECT_EQ(2 * MB, info.region_length);

    /* pinned memory has its own export rules: not joined */
    ASSERT_EQ(UCS_OK, update(BASE + 2 * MB, MB, pinned));
    EXPECT_EQ(UCS_MEMTYPE_CACHE_ERR_SPANS, lookup(BASE + 10, 3 * MB, &info));
}

/* ---- resolver ----------------------------------------------------------- */

class memtype_cache_with_resolver : public memtype_cache {
protected:
    void SetUp() override
    {
        memtype_cache::SetUp();
        m_resolver.attach(m_cache);
    }

    fake_resolver m_resolver;
};

TEST_F(memtype_cache_with_resolver, miss_asks_resolver_once_then_hits)
{
    ucs_memtype_info_t dev = memtype_info(UCS_MEMORY_TYPE_CUDA, 1,
                                          UCS_MEMTYPE_ALLOC_LEGACY,
                                          UCS_MEMTYPE_HANDLE_LEGACY_IPC, NULL,
                                          BASE, 8 * MB);
    ucs_memtype_info_t info;

    m_resolver.add(BASE, 8 * MB, dev);
    ASSERT_EQ(UCS_OK, lookup(BASE + 100, 1000, &info));
    EXPECT_EQ(1u, m_resolver.calls());
    EXPECT_TRUE(same_description(dev, info));
    EXPECT_EQ((void*)BASE, info.region_start);
    EXPECT_EQ(8 * MB, info.region_length);

    EXPECT_TRUE(region_is(BASE + 5 * MB, BASE, BASE + 8 * MB, dev));
    ASSERT_EQ(UCS_OK, lookup(BASE, 8 * MB, &info));
    EXPECT_EQ(1u, m_resolver.calls());
    EXPECT_EQ(1u, ucs_memtype_cache_num_regions(m_cache));
}

/* Memory allocated before the hooks were installed produced no event: the
 * resolver's one driver query types it, with all of its properties. */
TEST_F(memtype_cache_with_resolver, allocation_unseen_by_hooks_is_typed)
{
    ucs_memtype_info_t pool = memtype_info(UCS_MEMORY_TYPE_CUDA, 0,
                                           UCS_MEMTYPE_ALLOC_POOL,
                                           UCS_MEMTYPE_HANDLE_POSIX_FD,
                                           (void*)0xabc0, BASE + MB, 2 * MB);
    ucs_memtype_info_t managed = memtype_info(UCS_MEMORY_TYPE_CUDA_MANAGED,
                                              0, UCS_MEMTYPE_ALLOC_MANAGED);

    m_resolver.add(BASE + MB, 2 * MB, pool);
    m_resolver.add(BASE + 8 * MB, MB, managed);
    EXPECT_TRUE(region_is(BASE + 2 * MB, BASE + MB, BASE + 3 * MB, pool));
    EXPECT_TRUE(region_is(BASE + 8 * MB, BASE + 8 * MB, BASE + 9 * MB,
                          managed));
    EXPECT_EQ(2u, m_resolver.calls());
}

TEST_F(memtype_cache_with_resolver, answer_fills_only_gap_around_address)
{
    ucs_memtype_info_t event = memtype_info(UCS_MEMORY_TYPE_CUDA, 0,
                                            UCS_MEMTYPE_ALLOC_VMM,
                                            UCS_MEMTYPE_HANDLE_POSIX_FD);
    ucs_memtype_info_t driver = cuda(0);

    /* the driver's extent covers an event's region: the event wins */
    m_resolver.add(BASE, 8 * MB, driver);
    ASSERT_EQ(UCS_OK, update(BASE + 2 * MB, MB, event));
    ASSERT_EQ(UCS_OK, update(BASE + 6 * MB, MB, event));

    EXPECT_TRUE(region_is(BASE + 4 * MB, BASE + 3 * MB, BASE + 6 * MB, driver));
    EXPECT_EQ(1u, m_resolver.calls());
    EXPECT_TRUE(region_is(BASE + 2 * MB, BASE + 2 * MB, BASE + 3 * MB, event));
    EXPECT_TRUE(region_is(BASE + 6 * MB, BASE + 6 * MB, BASE + 7 * MB, event));
    EXPECT_TRUE(region_is(BASE, BASE, BASE + 2 * MB, driver));
    EXPECT_TRUE(region_is(BASE + 7 * MB, BASE + 7 * MB, BASE + 8 * MB, driver));
    EXPECT_EQ(3u, m_resolver.calls());
}

TEST_F(memtype_cache_with_resolver, query_from_gap_into_region_resolves_gap)
{
    ucs_memtype_info_t info;

    m_resolver.add(BASE, MB, cuda(0));
    ASSERT_EQ(UCS_OK, update(BASE + MB, MB, cuda(1)));
    EXPECT_EQ(UCS_MEMTYPE_CACHE_ERR_SPANS, lookup(BASE, 2 * MB, &info));
    EXPECT_EQ(0, info.device);
    EXPECT_EQ(1u, m_resolver.calls());
    EXPECT_EQ(2u, ucs_memtype_cache_num_regions(m_cache));
}

TEST_F(memtype_cache_with_resolver, failed_answer_is_not_cached)
{
    m_resolver.fail_with(UCS_ERR_IO_ERROR);
    EXPECT_TRUE(is_miss(BASE));
    EXPECT_TRUE(is_miss(BASE));
    EXPECT_EQ(2u, m_resolver.calls());
    EXPECT_EQ(0u, ucs_memtype_cache_num_regions(m_cache));
}

TEST_F(memtype_cache_with_resolver, device_answer_without_extent_is_not_cached)
{
    ucs_memtype_info_t info;

    m_resolver.add(BASE, MB, cuda(2), false);
    for (unsigned i = 1; i <= 2; ++i) {
        ASSERT_EQ(UCS_OK, lookup(BASE + 10, 100, &info));
        EXPECT_EQ(UCS_MEMORY_TYPE_CUDA, info.mem_type);
        EXPECT_EQ(2, info.device);
        EXPECT_EQ((void*)(BASE + 10), info.region_start) << "the query";
        EXPECT_EQ(100u, info.region_length);
        EXPECT_EQ(i, m_resolver.calls());
    }
}

TEST_F(memtype_cache_with_resolver, resolver_can_be_replaced_and_removed)
{
    fake_resolver other;

    other.add(BASE, MB, cuda(5));
    other.attach(m_cache);
    EXPECT_TRUE(region_is(BASE, BASE, BASE + MB, cuda(5)));
    EXPECT_EQ(0u, m_resolver.calls());
    EXPECT_EQ(1u, other.calls());

    ASSERT_EQ(UCS_OK, ucs_memtype_cache_set_resolver(m_cache, NULL, NULL));
    EXPECT_TRUE(is_miss(BASE + 2 * MB));
    EXPECT_EQ(1u, other.calls());
}

/* ---- host memory -------------------------------------------------------- */

TEST_F(memtype_cache_with_resolver, host_answer_is_cached_for_its_mapping)
{
    guarded_mapping mapping(16);
    ucs_memtype_info_t info;

    ASSERT_EQ(UCS_OK, lookup(mapping.start() + 100, 64, &info));
    EXPECT_EQ(1u, m_resolver.calls());
    EXPECT_EQ(UCS_MEMORY_TYPE_HOST, info.mem_type);
    EXPECT_EQ(UCS_MEMTYPE_ALLOC_HOST, info.alloc_kind);
    EXPECT_EQ(-1, info.device);
    EXPECT_EQ((void*)mapping.start(), info.region_start);
    EXPECT_EQ(mapping.end() - mapping.start(), info.region_length);
    EXPECT_EQ((void*)mapping.start(), info.alloc_base);

    /* anywhere in the mapping is a hit now */
    ASSERT_EQ(UCS_OK, lookup(mapping.start(), mapping.end() - mapping.start(),
                             &info));
    ASSERT_EQ(UCS_OK, lookup(mapping.end() - 1, 1, &info));
    ASSERT_EQ(UCS_OK, lookup(mapping.start() + 5 * mapping.page(), 3, &info));
    EXPECT_EQ(UCS_MEMORY_TYPE_HOST, info.mem_type);
    EXPECT_EQ(1u, m_resolver.calls());
}

TEST_F(memtype_cache_with_resolver, host_mapping_is_cut_at_cached_regions)
{
    guarded_mapping mapping(16);
    uintptr_t dev_start = mapping.start() + 4 * mapping.page();
    uintptr_t dev_end   = dev_start + 2 * mapping.page();
    ucs_memtype_info_t info;

    ASSERT_EQ(UCS_OK, update(dev_start, dev_end - dev_start, cuda()));
    ASSERT_EQ(UCS_OK, lookup(mapping.start(), 1, &info));
    EXPECT_EQ(UCS_MEMORY_TYPE_HOST, info.mem_type);
    EXPECT_EQ((void*)mapping.start(), info.region_start);
    EXPECT_EQ(dev_start - mapping.start(), info.region_length);
    EXPECT_EQ((void*)mapping.start(), info.alloc_base);
    EXPECT_EQ(dev_start - mapping.start(), info.alloc_length);
    ASSERT_EQ(UCS_OK, lookup(dev_end, 1, &info));
    EXPECT_EQ((void*)dev_end, info.region_start);
    EXPECT_EQ(mapping.end() - dev_end, info.region_length);
    EXPECT_EQ(2u, m_resolver.calls());
    EXPECT_TRUE(region_is(dev_start, dev_start, dev_end, cuda()));
}

TEST_F(memtype_cache_with_resolver, later_update_overrides_cached_host_answer)
{
    guarded_mapping mapping(16);
    uintptr_t dev_start = mapping.start() + 4 * mapping.page();
    uintptr_t dev_end   = dev_start + 2 * mapping.page();
    ucs_memtype_info_t pinned = memtype_info(UCS_MEMORY_TYPE_HOST, -1,
                                             UCS_MEMTYPE_ALLOC_HOST_PINNED, 0,
                                             NULL, dev_start, 2 * 4096);
    ucs_memtype_info_t info;

    ASSERT_EQ(UCS_OK, lookup(dev_start, 1, &info));
    ASSERT_EQ(UCS_MEMTYPE_ALLOC_HOST, info.alloc_kind);
    ASSERT_EQ(1u, m_resolver.calls());

    /* e.g. the address range was unmapped and the driver placed an
     * allocation there: the event overrides the cached host answer */
    ASSERT_EQ(UCS_OK, update(dev_start, dev_end - dev_start, cuda(1)));
    EXPECT_TRUE(region_is(dev_start, dev_start, dev_end, cuda(1)));
    ASSERT_EQ(UCS_OK, update(dev_start, dev_end - dev_start, pinned));
    EXPECT_TRUE(region_is(dev_start + 1, dev_start, dev_end, pinned));

    /* the host pieces around it stay cached */
    ASSERT_EQ(UCS_OK, lookup(mapping.start(), 1, &info));
    EXPECT_EQ(dev_start - mapping.start(), info.region_length);
    ASSERT_EQ(UCS_OK, lookup(mapping.end() - 1, 1, &info));
    EXPECT_EQ((void*)dev_end, info.region_start);
    EXPECT_EQ(1u, m_resolver.calls());
}

TEST_F(memtype_cache_with_resolver, inaccessible_mapping_is_not_cached)
{
    guarded_mapping mapping(1);
    ucs_memtype_info_t info;

    for (unsigned i = 1; i <= 2; ++i) {
        ASSERT_EQ(UCS_OK, lookup(mapping.guard() + 8, 8, &info));
        EXPECT_EQ(UCS_MEMORY_TYPE_HOST, info.mem_type);
        EXPECT_EQ(i, m_resolver.calls());
    }
    EXPECT_EQ(0u, ucs_memtype_cache_num_regions(m_cache));
}

TEST_F(memtype_cache_with_resolver, query_across_two_host_mappings_is_host)
{
    guarded_mapping mapping(8);
    uintptr_t middle = mapping.start() + 4 * mapping.page();
    ucs_memtype_info_t info;

    /* different protections split the area into two kernel mappings */
    ASSERT_EQ(0, mprotect((void*)middle, mapping.end() - middle, PROT_READ));
    ASSERT_EQ(UCS_OK, lookup(middle - 16, 32, &info));
    EXPECT_EQ(UCS_MEMORY_TYPE_HOST, info.mem_type);
    EXPECT_EQ(2u, m_resolver.calls());
    EXPECT_EQ((void*)mapping.start(), info.region_start);

    ASSERT_EQ(UCS_OK, lookup(mapping.start(), mapping.end() - mapping.start(),
                             &info));
    EXPECT_EQ(mapping.end() - mapping.start(), info.region_length);
    EXPECT_EQ(2u, m_resolver.calls());
}

TEST_F(memtype_cache_with_resolver, host_buffer_running_into_device_memory_spans)
{
    guarded_mapping mapping(4);
    ucs_memtype_info_t info;

    /* a device allocation right behind the host mapping */
    m_resolver.add(mapping.end(), MB, cuda(0));
    EXPECT_EQ(UCS_MEMTYPE_CACHE_ERR_SPANS,
              lookup(mapping.end() - 8, 16, &info));
    EXPECT_EQ(UCS_MEMORY_TYPE_HOST, info.mem_type);
    EXPECT_EQ(2u, m_resolver.calls());
}

TEST_F(memtype_cache_with_resolver, malloc_buffer_is_host_and_cached)
{
    std::vector<char> buffer(1 << 20);
    ucs_memtype_info_t info;

    ASSERT_EQ(UCS_OK, lookup((uintptr_t)buffer.data(), buffer.size(), &info));
    EXPECT_EQ(UCS_MEMORY_TYPE_HOST, info.mem_type);
    unsigned calls = m_resolver.calls();
    ASSERT_EQ(UCS_OK, lookup((uintptr_t)buffer.data() + 1000, 5000, &info));
    EXPECT_EQ(calls, m_resolver.calls());
}

/* ---- UCX_MEMTYPE_CACHE and disable() ------------------------------------ */

class memtype_cache_config : public ::testing::Test {
};

TEST_F(memtype_cache_config, disabled_by_environment_asks_resolver_every_time)
{
    scoped_setenv env("UCX_MEMTYPE_CACHE", "n");
    guarded_mapping mapping(4);
    ucs_memtype_cache_t *cache;
    fake_resolver resolver;
    ucs_memtype_info_t info;
    ucs_memtype_info_t dev = memtype_info(UCS_MEMORY_TYPE_CUDA, 0,
                                          UCS_MEMTYPE_ALLOC_LEGACY);
    unsigned calls         = 0;

    ASSERT_EQ(UCS_OK, ucs_memtype_cache_create("off", &cache));
    EXPECT_FALSE(ucs_memtype_cache_is_enabled(cache));
    EXPECT_EQ(UCS_ERR_NO_ELEM,
              ucs_memtype_cache_lookup(cache, (void*)BASE, 1, &info))
            << "no resolver";

    resolver.add(BASE, MB, dev);
    resolver.attach(cache);
    ASSERT_EQ(UCS_OK, ucs_memtype_cache_update(cache, (void*)BASE, MB, &dev));
    EXPECT_EQ(0u, ucs_memtype_cache_num_regions(cache)) << "updates ignored";

    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(UCS_OK, ucs_memtype_cache_lookup(cache, (void*)(BASE + 8),
                                                   64, &info));
        EXPECT_TRUE(same_description(dev, info));
        EXPECT_EQ(++calls, resolver.calls());

        EXPECT_EQ(UCS_MEMTYPE_CACHE_ERR_SPANS,
                  ucs_memtype_cache_lookup(cache, (void*)(BASE + MB - 8), 64,
                                           &info));
        EXPECT_EQ(++calls, resolver.calls());

        ASSERT_EQ(UCS_OK, ucs_memtype_cache_lookup(cache,
                                                   (void*)mapping.start(), 64,
                                                   &info));
        EXPECT_EQ(UCS_MEMORY_TYPE_HOST, info.mem_type);
        EXPECT_EQ(++calls, resolver.calls());
    }
    EXPECT_EQ(0u, ucs_memtype_cache_num_regions(cache));
    ucs_memtype_cache_destroy(cache);
}

TEST_F(memtype_cache_config, yes_and_try_enable_caching)
{
    for (const char *value : {"y", "yes", "try"}) {
        scoped_setenv env("UCX_MEMTYPE_CACHE", value);
        ucs_memtype_cache_t *cache;

        ASSERT_EQ(UCS_OK, ucs_memtype_cache_create(value, &cache));
        EXPECT_TRUE(ucs_memtype_cache_is_enabled(cache)) << value;
        ucs_memtype_cache_destroy(cache);
    }
}

TEST_F(memtype_cache_config, bad_environment_value_fails_creation)
{
    scoped_setenv env("UCX_MEMTYPE_CACHE", "sometimes");
    ucs_memtype_cache_t *cache;

    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucs_memtype_cache_create("bad", &cache));
}

TEST_F(memtype_cache_with_resolver, disable_drops_regions_and_asks_resolver)
{
    ucs_memtype_info_t info;

    m_resolver.add(BASE, MB, cuda(1));
    ASSERT_EQ(UCS_OK, update(BASE + 2 * MB, MB, cuda(2)));
    ASSERT_EQ(UCS_OK, lookup(BASE, 1, &info));
    ASSERT_EQ(UCS_OK, lookup(BASE, 1, &info));
    ASSERT_EQ(1u, m_resolver.calls());

    ucs_memtype_cache_disable(m_cache);
    EXPECT_FALSE(ucs_memtype_cache_is_enabled(m_cache));
    EXPECT_EQ(0u, ucs_memtype_cache_num_regions(m_cache));
    ASSERT_EQ(UCS_OK, lookup(BASE, 1, &info));
    EXPECT_EQ(1, info.device);
    EXPECT_EQ(2u, m_resolver.calls()) << "remembered hit must not be used";
    ASSERT_EQ(UCS_OK, update(BASE + 2 * MB, MB, cuda(2)));
    EXPECT_EQ(0u, ucs_memtype_cache_num_regions(m_cache));
}

/* ---- process-wide instance, threads, fork ------------------------------- */

TEST(memtype_cache_global, is_one_instance_for_all_callers)
{
    ucs_memtype_cache_t *first = NULL, *second = NULL;

    ASSERT_EQ(UCS_OK, ucs_memtype_cache_get_global(&first));
    std::thread([&second]() {
        EXPECT_EQ(UCS_OK, ucs_memtype_cache_get_global(&second));
    }).join();
    EXPECT_NE((ucs_memtype_cache_t*)NULL, first);
    EXPECT_EQ(first, second);
}

TEST_F(memtype_cache, short_lived_threads_all_get_right_answers)
{
    ASSERT_EQ(UCS_OK, update(BASE, MB, cuda(4)));
    for (int i = 0; i < 64; ++i) {
        std::thread([this]() {
            ucs_memtype_info_t info;
            EXPECT_EQ(UCS_OK, lookup(BASE + 10, 10, &info));
            EXPECT_EQ(4, info.device);
            EXPECT_TRUE(is_miss(BASE + MB));
        }).join();
    }
    /* a thread exiting cleared its slot: updates do not wait for it */
    ASSERT_EQ(UCS_OK, update(BASE, MB, cuda(5)));
    EXPECT_TRUE(region_is(BASE, BASE, BASE + MB, cuda(5)));
}

TEST_F(memtype_cache, forked_child_can_update_and_look_up)
{
    ucs_memtype_info_t info;
    int wstatus;

    ASSERT_EQ(UCS_OK, update(BASE, MB, cuda(1)));
    ASSERT_EQ(UCS_OK, lookup(BASE, 1, &info));

    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        int ok = (update(BASE, MB, cuda(2)) == UCS_OK) &&
                 (lookup(BASE, 1, &info) == UCS_OK) && (info.device == 2);
        _exit(ok ? 0 : 1);
    }
    ASSERT_EQ(pid, waitpid(pid, &wstatus, 0));
    EXPECT_TRUE(WIFEXITED(wstatus) && (WEXITSTATUS(wstatus) == 0));
    EXPECT_TRUE(region_is(BASE, BASE, BASE + MB, cuda(1)));
}
