/*
 * Issue 4 end to end: CUDA allocations made through the driver API reach
 * the memory-type cache of libucs through the hooks of libucm_cuda.so
 * (ucm_memtype_cache_attach), and every lookup types them right -- memory
 * type, device, allocation kind, export handle types and extent -- whether
 * the answer comes from an event, from the resolver (allocations made
 * before attach, hook modes none and reloc) or from a race between the two.
 *
 * Runs on cudasim in CI and on the real driver on a GPU machine; as every
 * CUDA test, the CUDA work happens in a forked child (cuda_test.h), which
 * also gives each test a process whose hooks are not installed yet.
 */
#include "cuda/cuda_test.h"

#include <ucm/api/ucm.h>
#include <ucm/ucm_memtype.h>
#include <ucs/memory/memtype_cache.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <sys/mman.h>

using namespace cuda_test;

namespace {

const size_t k_mib = 1ul << 20;
/* VMM granularity of the H200 and of the model */
const size_t k_chunk = 2 * k_mib;

/* Allocation kinds this suite covers: those of cuda_test plus pitched
 * memory and a host-located pool. */
enum class e2e_kind {
    legacy,
    pitched,
    managed,
    host_alloc,
    async_default_pool,
    pool_posix_fd,
    pool_no_handle,
    host_pool,
    vmm_posix_fd,
    vmm_no_handle,
    vmm_two_chunks
};

const e2e_kind k_all_kinds[] = {
    e2e_kind::legacy, e2e_kind::pitched, e2e_kind::managed,
    e2e_kind::host_alloc, e2e_kind::async_default_pool,
    e2e_kind::pool_posix_fd, e2e_kind::pool_no_handle, e2e_kind::host_pool,
    e2e_kind::vmm_posix_fd, e2e_kind::vmm_no_handle, e2e_kind::vmm_two_chunks
};

const char *e2e_kind_name(e2e_kind kind)
{
    switch (kind) {
    case e2e_kind::legacy:             return "legacy";
    case e2e_kind::pitched:            return "pitched";
    case e2e_kind::managed:            return "managed";
    case e2e_kind::host_alloc:         return "host_alloc";
    case e2e_kind::async_default_pool: return "async_default_pool";
    case e2e_kind::pool_posix_fd:      return "pool_posix_fd";
    case e2e_kind::pool_no_handle:     return "pool_no_handle";
    case e2e_kind::host_pool:          return "host_pool";
    case e2e_kind::vmm_posix_fd:       return "vmm_posix_fd";
    case e2e_kind::vmm_no_handle:      return "vmm_no_handle";
    case e2e_kind::vmm_two_chunks:     return "vmm_two_chunks";
    }
    return "?";
}

/* For googletest's messages about parameters. */
void PrintTo(e2e_kind kind, std::ostream *os)
{
    *os << e2e_kind_name(kind);
}

bool is_pool_kind(e2e_kind kind)
{
    return (kind == e2e_kind::async_default_pool) ||
           (kind == e2e_kind::pool_posix_fd) ||
           (kind == e2e_kind::pool_no_handle) ||
           (kind == e2e_kind::host_pool);
}

/* Host-located pools came with CUDA 12.6, and the device must allow them. */
bool host_pools_supported()
{
#if CUDA_VERSION >= 12060
    static int supported = -1;

    if (supported < 0) {
        supported = probe_in_child([] {
            int value = 0;
            const CUdevice_attribute attr =
                    CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED;
            if ((cuInit(0) != CUDA_SUCCESS) ||
                (cuDeviceGetAttribute(&value, attr, 0) != CUDA_SUCCESS)) {
                return 0;
            }
            return value;
        });
    }
    return supported > 0;
#else
    return false;
#endif
}

/* What a lookup must say about one region. */
struct expected_region {
    CUdeviceptr              start;
    size_t                   length;
    ucs_memory_type_t        mem_type;
    int                      device;
    ucs_memtype_alloc_kind_t kind;
    uint32_t                 handle_types;
    void                     *pool;
    bool                     extent_known = true; /* see resolver_regions() */
};

/* One allocation of an e2e_kind, with the regions it must be typed as. */
class e2e_alloc {
public:
    e2e_alloc() = default;
    e2e_alloc(const e2e_alloc &) = delete;
    e2e_alloc &operator=(const e2e_alloc &) = delete;
    ~e2e_alloc() { release(); }

    CUresult allocate(e2e_kind k, size_t sz = k_chunk)
    {
        CUresult r;

        kind = k;
        switch (kind) {
        case e2e_kind::legacy:
            return from_base(mem_kind::legacy, sz);
        case e2e_kind::managed:
            return from_base(mem_kind::managed, sz);
        case e2e_kind::host_alloc:
            return from_base(mem_kind::host_alloc, sz);
        case e2e_kind::async_default_pool:
            return from_base(mem_kind::async_default_pool, sz);
        case e2e_kind::pool_posix_fd:
            return from_base(mem_kind::pool_posix_fd, sz);
        case e2e_kind::pool_no_handle:
            return from_base(mem_kind::pool_no_handle, sz);
        case e2e_kind::vmm_posix_fd:
            return from_base(mem_kind::vmm_posix_fd, sz);
        case e2e_kind::vmm_no_handle:
            return from_base(mem_kind::vmm_no_handle, sz);
        case e2e_kind::vmm_two_chunks:
            return from_base(mem_kind::vmm_two_chunks, 2 * sz);
        case e2e_kind::pitched: {
            size_t pitch = 0;
            /* 4 KiB rows are pitch-aligned already: pitch x height = sz */
            r = cuMemAllocPitch(&ptr, &pitch, 4096, sz / 4096, 4);
            size = pitch * (sz / 4096);
            return r;
        }
        case e2e_kind::host_pool:
            return allocate_host_pool(sz);
        }
        return CUDA_ERROR_INVALID_VALUE;
    }

    CUresult release()
    {
        CUresult r = CUDA_SUCCESS;

        switch (kind) {
        case e2e_kind::pitched:
            if (ptr != 0) {
                r = cuMemFree(ptr);
            }
            break;
        case e2e_kind::host_pool:
            if (ptr != 0) {
                r = cuMemFreeAsync(ptr, stream);
                cuStreamSynchronize(stream);
            }
            if (pool != nullptr) {
                cuMemPoolDestroy(pool);
            }
            if (stream != nullptr) {
                cuStreamDestroy(stream);
            }
            break;
        default:
            r = base.release();
            break;
        }
        ptr    = 0;
        pool   = nullptr;
        stream = nullptr;
        return r;
    }

    /* The regions the cache must hold for this allocation. */
    std::vector<expected_region> regions() const
    {
        std::vector<expected_region> result;
        CUmemoryPool default_pool = nullptr;

        switch (kind) {
        case e2e_kind::legacy:
        case e2e_kind::pitched:
            result.push_back({ptr, size, UCS_MEMORY_TYPE_CUDA, 0,
                              UCS_MEMTYPE_ALLOC_LEGACY,
                              UCS_MEMTYPE_HANDLE_LEGACY_IPC, nullptr});
            break;
        case e2e_kind::managed:
            result.push_back({ptr, size, UCS_MEMORY_TYPE_CUDA_MANAGED, 0,
                              UCS_MEMTYPE_ALLOC_MANAGED, 0, nullptr});
            break;
        case e2e_kind::host_alloc:
            result.push_back({ptr, size, UCS_MEMORY_TYPE_HOST, -1,
                              UCS_MEMTYPE_ALLOC_HOST_PINNED, 0, nullptr});
            break;
        case e2e_kind::async_default_pool:
            cuDeviceGetDefaultMemPool(&default_pool, 0);
            result.push_back({ptr, size, UCS_MEMORY_TYPE_CUDA, 0,
                              UCS_MEMTYPE_ALLOC_POOL, 0, default_pool});
            break;
        case e2e_kind::pool_posix_fd:
            result.push_back({ptr, size, UCS_MEMORY_TYPE_CUDA, 0,
                              UCS_MEMTYPE_ALLOC_POOL,
                              UCS_MEMTYPE_HANDLE_POSIX_FD, base.pool});
            break;
        case e2e_kind::pool_no_handle:
            result.push_back({ptr, size, UCS_MEMORY_TYPE_CUDA, 0,
                              UCS_MEMTYPE_ALLOC_POOL, 0, base.pool});
            break;
        case e2e_kind::host_pool:
            result.push_back({ptr, size, UCS_MEMORY_TYPE_HOST, -1,
                              UCS_MEMTYPE_ALLOC_POOL, 0, pool});
            break;
        case e2e_kind::vmm_posix_fd:
            result.push_back({ptr, size, UCS_MEMORY_TYPE_CUDA, 0,
                              UCS_MEMTYPE_ALLOC_VMM,
                              UCS_MEMTYPE_HANDLE_POSIX_FD, nullptr});
            break;
        case e2e_kind::vmm_no_handle:
            result.push_back({ptr, size, UCS_MEMORY_TYPE_CUDA, 0,
                              UCS_MEMTYPE_ALLOC_VMM, 0, nullptr});
            break;
        case e2e_kind::vmm_two_chunks:
            for (size_t i = 0; i < 2; ++i) {
                result.push_back({ptr + (i * size / 2), size / 2,
                                  UCS_MEMORY_TYPE_CUDA, 0,
                                  UCS_MEMTYPE_ALLOC_VMM,
                                  UCS_MEMTYPE_HANDLE_POSIX_FD, nullptr});
            }
            break;
        }
        return result;
    }

    e2e_kind     kind   = e2e_kind::legacy;
    CUdeviceptr  ptr    = 0;
    size_t       size   = 0;

private:
    CUresult from_base(mem_kind k, size_t sz)
    {
        CUresult r = base.allocate(k, sz);
        ptr  = base.ptr;
        size = sz;
        return r;
    }

    CUresult allocate_host_pool(size_t sz)
    {
#if CUDA_VERSION >= 12060
        CUmemPoolProps props = {};
        CUresult r;

        props.allocType     = CU_MEM_ALLOCATION_TYPE_PINNED;
        props.handleTypes   = CU_MEM_HANDLE_TYPE_NONE;
        props.location.type = CU_MEM_LOCATION_TYPE_HOST;
        props.location.id   = 0;
        r = cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
        if (r == CUDA_SUCCESS) {
            r = cuMemPoolCreate(&pool, &props);
        }
        if (r != CUDA_SUCCESS) {
            pool = nullptr;
            return r;
        }
        size = sz;
        r    = cuMemAllocFromPoolAsync(&ptr, sz, pool, stream);
        return (r == CUDA_SUCCESS) ? cuStreamSynchronize(stream) : r;
#else
        return CUDA_ERROR_NOT_SUPPORTED;
#endif
    }

    allocation   base;
    CUmemoryPool pool   = nullptr;
    CUstream     stream = nullptr;
};

/* Whether the driver tells the extent of the allocation at @a ptr the way
 * the resolver asks (range attributes, else cuMemGetAddressRange). */
bool driver_reports_extent(CUdeviceptr ptr)
{
    CUdeviceptr start = 0, base = 0;
    size_t size = 0, length = 0;

    if ((cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                               ptr) == CUDA_SUCCESS) &&
        (cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                               ptr) == CUDA_SUCCESS) &&
        (ptr >= start) && (ptr - start < size)) {
        return true;
    }
    return (cuMemGetAddressRange(&base, &length, ptr) == CUDA_SUCCESS) &&
           (ptr >= base) && (ptr - base < length);
}

/*
 * The regions as the resolver can know them. The H200's driver (580.159.04,
 * CUDA 13.0) reports RANGE_START_ADDR 0 for memory of a host-located pool:
 * then the resolver answers the right type without an extent, which the
 * cache does not store (every lookup asks the driver). VMM extents come
 * from the mapping attributes, which the driver always reports.
 */
std::vector<expected_region> resolver_regions(const e2e_alloc &a)
{
    std::vector<expected_region> regions = a.regions();

    for (expected_region &r : regions) {
        if (r.kind != UCS_MEMTYPE_ALLOC_VMM) {
            r.extent_known = driver_reports_extent(r.start);
        }
        if (!r.extent_known) {
            printf("[ note      ] the driver reports no extent for %s "
                   "memory: typed by a driver query on every lookup\n",
                   e2e_kind_name(a.kind));
        }
    }
    return regions;
}

/* Kinds this machine can allocate. */
std::vector<e2e_kind> available_kinds()
{
    std::vector<e2e_kind> kinds;

    for (e2e_kind kind : k_all_kinds) {
        if ((kind != e2e_kind::host_pool) || host_pools_supported()) {
            kinds.push_back(kind);
        }
    }
    return kinds;
}

std::string describe(const ucs_memtype_info_t &info)
{
    char buf[256];

    snprintf(buf, sizeof(buf), "%s dev %d kind %s handles 0x%x pool %p "
             "region [%p, +%zu) alloc [%p, +%zu)",
             ucs_memory_type_names[info.mem_type], info.device,
             ((unsigned)info.alloc_kind < UCS_MEMTYPE_ALLOC_LAST) ?
             ucs_memtype_alloc_kind_names[info.alloc_kind] : "?",
             info.handle_types, info.pool, info.region_start,
             info.region_length, info.alloc_base, info.alloc_length);
    return buf;
}

/* Whether @a info is what @a r says about a query of [@a address,
 * +@a length) answered without an extent (uncached: the query itself). */
bool matches_uncached(const ucs_memtype_info_t &info,
                      const expected_region &r, CUdeviceptr address,
                      size_t length)
{
    return (info.mem_type == r.mem_type) && (info.device == r.device) &&
           (info.alloc_kind == r.kind) &&
           (info.handle_types == r.handle_types) && (info.pool == r.pool) &&
           (info.region_start == (void*)address) &&
           (info.region_length == std::max<size_t>(length, 1)) &&
           (info.alloc_length == 0);
}

/* Whether @a info is exactly what @a r says (the region included). */
bool matches(const ucs_memtype_info_t &info, const expected_region &r)
{
    return (info.mem_type == r.mem_type) && (info.device == r.device) &&
           (info.alloc_kind == r.kind) &&
           (info.handle_types == r.handle_types) && (info.pool == r.pool) &&
           (info.region_start == (void*)r.start) &&
           (info.region_length == r.length) &&
           (info.alloc_base == (void*)r.start) &&
           (info.alloc_length == r.length);
}

/* Look up the start, the middle, the last byte and the whole of @a r. */
void expect_region(ucs_memtype_cache_t *cache, const expected_region &r,
                   const char *what)
{
    const struct {
        CUdeviceptr address;
        size_t      length;
    } queries[] = {
        {r.start, 0}, {r.start + r.length / 2, 64},
        {r.start + r.length - 1, 1}, {r.start, r.length}
    };

    for (const auto &q : queries) {
        ucs_memtype_info_t info;
        ucs_status_t status = ucs_memtype_cache_lookup(cache,
                                                       (void*)q.address,
                                                       q.length, &info);
        ASSERT_EQ(UCS_OK, status)
                << what << ": lookup [0x" << std::hex << q.address << ", +"
                << std::dec << q.length << "): " << ucs_status_string(status);
        EXPECT_TRUE(r.extent_known ?
                    matches(info, r) :
                    matches_uncached(info, r, q.address, q.length))
                << what << ": lookup [0x" << std::hex << q.address << ", +"
                << std::dec << q.length << ") gave " << describe(info)
                << "; expected " << ucs_memory_type_names[r.mem_type]
                << " dev " << r.device << " kind "
                << ucs_memtype_alloc_kind_names[r.kind] << " handles 0x"
                << std::hex << r.handle_types << " pool " << r.pool
                << " region [0x" << r.start << ", +" << std::dec << r.length
                << ")";
    }
}

/* @a resolver: the answers come from the resolver (allocated before
 * attach, or the cache is disabled), not from events. */
void expect_allocation(ucs_memtype_cache_t *cache, const e2e_alloc &a,
                       bool resolver = false)
{
    std::vector<expected_region> regions = resolver ? resolver_regions(a) :
                                                      a.regions();

    for (const expected_region &r : regions) {
        expect_region(cache, r, e2e_kind_name(a.kind));
    }

    if (regions.size() > 1) {
        /* A query across two chunks crosses an allocation boundary. */
        ucs_memtype_info_t info;
        EXPECT_EQ(UCS_MEMTYPE_CACHE_ERR_SPANS,
                  ucs_memtype_cache_lookup(cache, (void*)a.ptr, a.size, &info))
                << e2e_kind_name(a.kind);
    }
}

/*
 * After the free of @a kind memory at [@a ptr, +@a size): nothing cached
 * may still describe it. Freed pool memory may still belong to its pool
 * (the driver keeps it mapped), so only other kinds must turn into host
 * memory; whether freed pinned memory is still known to the driver as
 * pinned is the driver's business, so the kind is not checked.
 */
void expect_freed(ucs_memtype_cache_t *cache, e2e_kind kind, CUdeviceptr ptr,
                  size_t size)
{
    ucs_memtype_info_t info;
    ucs_status_t status;

    status = ucs_memtype_cache_lookup(cache, (void*)(ptr + size / 2), 0,
                                      &info);
    if (!is_pool_kind(kind)) {
        ASSERT_EQ(UCS_OK, status) << e2e_kind_name(kind) << " after free";
        EXPECT_EQ(UCS_MEMORY_TYPE_HOST, info.mem_type)
                << e2e_kind_name(kind) << " after free: " << describe(info);
    } else if (status == UCS_OK) {
        EXPECT_FALSE((info.region_start == (void*)ptr) &&
                     (info.region_length == size) &&
                     (info.alloc_kind != UCS_MEMTYPE_ALLOC_POOL))
                << e2e_kind_name(kind) << " after free: " << describe(info);
    }
}

/* Global cache, attached in @a mode (a fresh child: no hooks yet). */
ucs_memtype_cache_t *attach_global(const char *mode)
{
    ucs_memtype_cache_t *cache = nullptr;

    setenv("UCX_MEM_CUDA_HOOK_MODE", mode, 1);
    EXPECT_EQ(UCS_OK, ucs_memtype_cache_get_global(&cache));
    if (cache != nullptr) {
        EXPECT_EQ(UCS_OK, ucm_memtype_cache_attach(cache));
    }
    return cache;
}

void expect_host_buffers(ucs_memtype_cache_t *cache)
{
    static char static_buf[4096];
    std::vector<char> heap(1 << 16);
    char stack_buf[256];
    ucs_memtype_info_t info;

    const std::pair<void*, size_t> buffers[] = {
        {static_buf, sizeof(static_buf)}, {heap.data(), heap.size()},
        {stack_buf, sizeof(stack_buf)}
    };

    for (const auto &b : buffers) {
        ASSERT_EQ(UCS_OK, ucs_memtype_cache_lookup(cache, b.first, b.second,
                                                   &info));
        EXPECT_EQ(UCS_MEMORY_TYPE_HOST, info.mem_type) << describe(info);
        EXPECT_EQ(UCS_MEMTYPE_ALLOC_HOST, info.alloc_kind) << describe(info);
    }
}

class memtype_e2e_kind : public ::testing::TestWithParam<e2e_kind> {
protected:
    void SetUp() override
    {
        if ((GetParam() == e2e_kind::host_pool) && !host_pools_supported()) {
            GTEST_SKIP() << "the driver does not support host-located pools";
        }
    }
};

} // namespace


/*
 * Bistro: allocations are typed from their events (no driver query), and a
 * free removes them.
 */
TEST_P(memtype_e2e_kind, typed_from_its_event_and_forgotten_at_free)
{
    e2e_kind kind = GetParam();

    cuda_in_child([kind] {
        init_device(0);
        ucs_memtype_cache_t *cache = attach_global("bistro");
        ASSERT_NE(nullptr, cache);
        ASSERT_TRUE(ucs_memtype_cache_is_enabled(cache));

        e2e_alloc a;
        ASSERT_CU(a.allocate(kind));
        uint64_t calls = ucm_memtype_resolver_count();
        expect_allocation(cache, a);
        EXPECT_EQ(calls, ucm_memtype_resolver_count())
                << "a hooked allocation needed a driver query";

        CUdeviceptr ptr = a.ptr;
        size_t size     = a.size;
        ASSERT_CU(a.release());
        calls = ucm_memtype_resolver_count();
        expect_freed(cache, kind, ptr, size);
        EXPECT_LT(calls, ucm_memtype_resolver_count())
                << "the free left the region in the cache";
        EXPECT_EQ(UCS_OK, ucs_memtype_cache_check(cache));
        ucm_memtype_cache_detach(cache);
    });
}

/*
 * Memory allocated before the hooks existed: the first lookup asks the
 * driver once and caches the answer, the next ones are hits; the free (now
 * hooked) still removes it.
 */
TEST_P(memtype_e2e_kind, allocated_before_attach_resolved_once_then_hit)
{
    e2e_kind kind = GetParam();

    cuda_in_child([kind] {
        init_device(0);
        e2e_alloc a;
        ASSERT_CU(a.allocate(kind));

        ucs_memtype_cache_t *cache = attach_global("bistro");
        ASSERT_NE(nullptr, cache);

        std::vector<expected_region> regions = resolver_regions(a);
        for (const expected_region &r : regions) {
            /* expect_region() makes 4 lookups */
            uint64_t calls = ucm_memtype_resolver_count();
            expect_region(cache, r, e2e_kind_name(kind));
            EXPECT_EQ(calls + (r.extent_known ? 1 : 4),
                      ucm_memtype_resolver_count())
                    << "one driver query per unseen allocation, or per "
                       "lookup when its extent is unknown";

            calls = ucm_memtype_resolver_count();
            expect_region(cache, r, e2e_kind_name(kind));
            EXPECT_EQ(calls + (r.extent_known ? 0 : 4),
                      ucm_memtype_resolver_count())
                    << "the driver's answer was not cached";
        }

        CUdeviceptr ptr = a.ptr;
        size_t size     = a.size;
        ASSERT_CU(a.release());
        expect_freed(cache, kind, ptr, size);
        EXPECT_EQ(UCS_OK, ucs_memtype_cache_check(cache));
    });
}

INSTANTIATE_TEST_SUITE_P(
        memtype_e2e, memtype_e2e_kind, ::testing::ValuesIn(k_all_kinds),
        [](const ::testing::TestParamInfo<e2e_kind> &info) {
            return std::string(e2e_kind_name(info.param));
        });


namespace {

class memtype_e2e_mode : public ::testing::TestWithParam<const char*> {
};

} // namespace

/*
 * Each hook mode gives the right answer for every kind: bistro from
 * events; reloc and none with the cache disabled, so that the driver
 * answers every lookup (reloc cannot see cudart, docs/memtype-cache.md).
 */
TEST_P(memtype_e2e_mode, every_kind_typed_correctly)
{
    std::string mode         = GetParam();
    std::vector<e2e_kind> kinds = available_kinds();

    cuda_in_child([mode, kinds] {
        init_device(0);
        ucs_memtype_cache_t *cache = attach_global(mode.c_str());
        ASSERT_NE(nullptr, cache);
        bool cached = (mode == "bistro");
        EXPECT_EQ(cached, (bool)ucs_memtype_cache_is_enabled(cache));

        for (e2e_kind kind : kinds) {
            e2e_alloc a;
            ASSERT_CU(a.allocate(kind)) << e2e_kind_name(kind);

            uint64_t calls = ucm_memtype_resolver_count();
            expect_allocation(cache, a, !cached);
            uint64_t queries = ucm_memtype_resolver_count() - calls;
            if (cached) {
                EXPECT_EQ(0u, queries) << e2e_kind_name(kind);
            } else {
                /* every lookup is a driver query */
                EXPECT_LE(4u * a.regions().size(), queries)
                        << e2e_kind_name(kind);
            }

            CUdeviceptr ptr = a.ptr;
            size_t size     = a.size;
            ASSERT_CU(a.release()) << e2e_kind_name(kind);
            expect_freed(cache, kind, ptr, size);
        }

        expect_host_buffers(cache);
        if (!cached) {
            EXPECT_EQ(0u, ucs_memtype_cache_num_regions(cache));
        }
        ucm_memtype_cache_detach(cache);
    });
}

INSTANTIATE_TEST_SUITE_P(memtype_e2e, memtype_e2e_mode,
                         ::testing::Values("bistro", "reloc", "none"),
                         [](const ::testing::TestParamInfo<const char*> &info) {
                             return std::string(info.param);
                         });


/* A VA range unmapped and mapped again with other chunks: the cache must
 * follow (the address is recycled with certainty). */
TEST(memtype_e2e, recycled_vmm_address_gets_the_new_mappings_description)
{
    cuda_in_child([] {
        init_device(0);
        ucs_memtype_cache_t *cache = attach_global("bistro");
        ASSERT_NE(nullptr, cache);

        CUmemAllocationProp prop = {};
        prop.type          = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id   = 0;

        CUdeviceptr base = 0;
        ASSERT_CU(cuMemAddressReserve(&base, 2 * k_chunk, 0, 0, 0));

        /* one 4 MiB chunk with a POSIX fd handle */
        CUmemGenericAllocationHandle big, small[2];
        prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
        ASSERT_CU(cuMemCreate(&big, 2 * k_chunk, &prop, 0));
        ASSERT_CU(cuMemMap(base, 2 * k_chunk, 0, big, 0));
        expect_region(cache, {base, 2 * k_chunk, UCS_MEMORY_TYPE_CUDA, 0,
                              UCS_MEMTYPE_ALLOC_VMM,
                              UCS_MEMTYPE_HANDLE_POSIX_FD, nullptr},
                      "big chunk");
        ASSERT_CU(cuMemUnmap(base, 2 * k_chunk));
        ASSERT_CU(cuMemRelease(big));

        /* the same addresses, now two chunks without handle types */
        prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
        for (int i = 0; i < 2; ++i) {
            ASSERT_CU(cuMemCreate(&small[i], k_chunk, &prop, 0));
            ASSERT_CU(cuMemMap(base + i * k_chunk, k_chunk, 0, small[i], 0));
        }
        for (int i = 0; i < 2; ++i) {
            expect_region(cache, {base + i * k_chunk, k_chunk,
                                  UCS_MEMORY_TYPE_CUDA, 0,
                                  UCS_MEMTYPE_ALLOC_VMM, 0, nullptr},
                          "small chunk");
        }

        for (int i = 0; i < 2; ++i) {
            ASSERT_CU(cuMemUnmap(base + i * k_chunk, k_chunk));
            ASSERT_CU(cuMemRelease(small[i]));
        }
        ASSERT_CU(cuMemAddressFree(base, 2 * k_chunk));
        EXPECT_EQ(UCS_OK, ucs_memtype_cache_check(cache));
    });
}

/* Pool memory freed and allocated again with another size and pool: the
 * new allocation's description wins, the old extent is gone. */
TEST(memtype_e2e, recycled_pool_address_gets_the_new_allocations_description)
{
    cuda_in_child([] {
        init_device(0);
        ucs_memtype_cache_t *cache = attach_global("bistro");
        ASSERT_NE(nullptr, cache);

        CUstream stream;
        CUmemoryPool default_pool;
        ASSERT_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
        ASSERT_CU(cuDeviceGetDefaultMemPool(&default_pool, 0));

        int reused = 0;
        for (int round = 0; round < 8; ++round) {
            CUdeviceptr old_ptr = 0, new_ptr = 0;
            size_t old_size = (4 + round) * k_mib, new_size = k_mib;

            ASSERT_CU(cuMemAllocAsync(&old_ptr, old_size, stream));
            expect_region(cache, {old_ptr, old_size, UCS_MEMORY_TYPE_CUDA, 0,
                                  UCS_MEMTYPE_ALLOC_POOL, 0, default_pool},
                          "first allocation");
            ASSERT_CU(cuMemFreeAsync(old_ptr, stream));
            ASSERT_CU(cuStreamSynchronize(stream));

            ASSERT_CU(cuMemAllocAsync(&new_ptr, new_size, stream));
            reused += (new_ptr == old_ptr);
            expect_region(cache, {new_ptr, new_size, UCS_MEMORY_TYPE_CUDA, 0,
                                  UCS_MEMTYPE_ALLOC_POOL, 0, default_pool},
                          "second allocation");

            /* the tail of the old extent is not the old allocation */
            ucs_memtype_info_t info;
            if (ucs_memtype_cache_lookup(cache,
                                         (void*)(old_ptr + old_size - 1), 1,
                                         &info) == UCS_OK) {
                EXPECT_FALSE((info.region_start == (void*)old_ptr) &&
                             (info.region_length == old_size))
                        << "stale region: " << describe(info);
            }
            ASSERT_CU(cuMemFreeAsync(new_ptr, stream));
            ASSERT_CU(cuStreamSynchronize(stream));
        }
        printf("[ recycled  ] the pool gave the freed address again in %d "
               "of 8 rounds\n", reused);
        ASSERT_CU(cuStreamDestroy(stream));
    });
}

/* Allocations the hooks made known before attach (another subscriber
 * installed them) are replayed into the cache: hits without a query. */
TEST(memtype_e2e, allocations_known_to_the_hooks_are_replayed_at_attach)
{
    cuda_in_child([] {
        init_device(0);
        setenv("UCX_MEM_CUDA_HOOK_MODE", "bistro", 1);
        auto noop = [](ucm_event_type_t, ucm_event_t *, void *) {};
        ASSERT_EQ(UCS_OK, ucm_set_event_handler(UCM_EVENT_MEM_TYPE_ALLOC, 0,
                                                noop, nullptr));

        e2e_alloc a, b;
        ASSERT_CU(a.allocate(e2e_kind::pool_posix_fd));
        ASSERT_CU(b.allocate(e2e_kind::vmm_two_chunks));

        ucs_memtype_cache_t *cache;
        ASSERT_EQ(UCS_OK, ucs_memtype_cache_get_global(&cache));
        ASSERT_EQ(UCS_OK, ucm_memtype_cache_attach(cache));
        /* the pool allocation and the two chunks (at least: a real driver
         * may allocate through its hooked entry points too) */
        EXPECT_LE(3u, ucs_memtype_cache_num_regions(cache));

        uint64_t calls = ucm_memtype_resolver_count();
        expect_allocation(cache, a);
        expect_allocation(cache, b);
        EXPECT_EQ(calls, ucm_memtype_resolver_count());
        ucm_unset_event_handler(UCM_EVENT_MEM_TYPE_ALLOC, noop, nullptr);
    });
}

/* Attach counts references; the last detach unsubscribes, removes the
 * resolver and empties the cache (which would otherwise go stale). */
TEST(memtype_e2e, attach_is_counted_and_last_detach_empties_the_cache)
{
    cuda_in_child([] {
        init_device(0);
        setenv("UCX_MEM_CUDA_HOOK_MODE", "bistro", 1);
        ucs_memtype_cache_t *cache;
        ASSERT_EQ(UCS_OK, ucs_memtype_cache_create("e2e", &cache));
        ASSERT_EQ(UCS_OK, ucm_memtype_cache_attach(cache));
        ASSERT_EQ(UCS_OK, ucm_memtype_cache_attach(cache));

        e2e_alloc a;
        ucm_memtype_cache_detach(cache);
        ASSERT_CU(a.allocate(e2e_kind::legacy));
        uint64_t calls = ucm_memtype_resolver_count();
        expect_allocation(cache, a); /* still subscribed */
        EXPECT_EQ(calls, ucm_memtype_resolver_count());

        ucm_memtype_cache_detach(cache);
        EXPECT_EQ(0u, ucs_memtype_cache_num_regions(cache));
        ucs_memtype_info_t info;
        EXPECT_EQ(UCS_ERR_NO_ELEM,
                  ucs_memtype_cache_lookup(cache, (void*)a.ptr, 1, &info));
        ASSERT_CU(a.release());
        EXPECT_EQ(0u, ucs_memtype_cache_num_regions(cache));
        ucm_memtype_cache_detach(cache); /* not attached: ignored */
        ucs_memtype_cache_destroy(cache);
    });
}

/* UCX_MEMTYPE_CACHE=n: nothing stored, the driver answers, still right. */
TEST(memtype_e2e, cache_turned_off_still_types_every_kind)
{
    std::vector<e2e_kind> kinds = available_kinds();

    cuda_in_child([kinds] {
        init_device(0);
        setenv("UCX_MEM_CUDA_HOOK_MODE", "bistro", 1);
        setenv("UCX_MEMTYPE_CACHE", "n", 1);
        ucs_memtype_cache_t *cache;
        ASSERT_EQ(UCS_OK, ucs_memtype_cache_create("e2e-off", &cache));
        ASSERT_EQ(UCS_OK, ucm_memtype_cache_attach(cache));
        for (e2e_kind kind : kinds) {
            e2e_alloc a;
            ASSERT_CU(a.allocate(kind)) << e2e_kind_name(kind);
            expect_allocation(cache, a, true);
        }
        EXPECT_EQ(0u, ucs_memtype_cache_num_regions(cache));
        ucm_memtype_cache_detach(cache);
        ucs_memtype_cache_destroy(cache);
    });
}

/* A bad hook mode is an error from attach, never a silent fallback. */
TEST(memtype_e2e, bad_hook_mode_fails_the_attach)
{
    cuda_in_child([] {
        setenv("UCX_MEM_CUDA_HOOK_MODE", "sometimes", 1);
        ucs_memtype_cache_t *cache;
        ASSERT_EQ(UCS_OK, ucs_memtype_cache_create("e2e-bad", &cache));
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucm_memtype_cache_attach(cache));
        EXPECT_TRUE(ucs_memtype_cache_is_enabled(cache));
        ucm_memtype_cache_detach(cache);
        ucs_memtype_cache_destroy(cache);
    });
}

/* Lookups made before cuInit do not initialise the driver. */
TEST(memtype_e2e, resolver_never_initialises_the_driver)
{
    cuda_in_child([] {
        setenv("UCX_MEM_CUDA_HOOK_MODE", "bistro", 1);
        ucs_memtype_cache_t *cache;
        ASSERT_EQ(UCS_OK, ucs_memtype_cache_create("e2e-noinit", &cache));
        ASSERT_EQ(UCS_OK, ucm_memtype_cache_attach(cache));
        expect_host_buffers(cache);

        int count = 0;
        EXPECT_CU_ERR(CUDA_ERROR_NOT_INITIALIZED, cuDeviceGetCount(&count));
        ucm_memtype_cache_detach(cache);
        ucs_memtype_cache_destroy(cache);
    });
}


namespace {

/* One live allocation of the stress test. */
struct stress_alloc {
    e2e_kind                     kind;
    CUdeviceptr                  ptr;
    size_t                       size;
    expected_region              region;
    CUmemGenericAllocationHandle handle;
    CUdeviceptr                  reserved;
};

struct stress_ctx {
    ucs_memtype_cache_t *cache;
    CUcontext           ctx;
    CUmemoryPool        export_pool;
    CUmemoryPool        default_pool;
    std::atomic<bool>   stop{false};
    std::atomic<long>   lookups{0};
    std::atomic<long>   allocs{0};
    std::atomic<long>   wrong{0};
};

bool stress_allocate(stress_ctx &s, CUstream stream, std::mt19937 &rng,
                     stress_alloc &a)
{
    static const e2e_kind kinds[] = {
        e2e_kind::legacy, e2e_kind::async_default_pool,
        e2e_kind::pool_posix_fd, e2e_kind::managed, e2e_kind::host_alloc,
        e2e_kind::vmm_posix_fd
    };
    void *host;

    a.kind     = kinds[rng() % ucs_static_array_size(kinds)];
    a.size     = 4096 * (1 + rng() % 64);
    a.reserved = 0;
    switch (a.kind) {
    case e2e_kind::legacy:
        if (cuMemAlloc(&a.ptr, a.size) != CUDA_SUCCESS) {
            return false;
        }
        a.region = {a.ptr, a.size, UCS_MEMORY_TYPE_CUDA, 0,
                    UCS_MEMTYPE_ALLOC_LEGACY, UCS_MEMTYPE_HANDLE_LEGACY_IPC,
                    nullptr};
        return true;
    case e2e_kind::async_default_pool:
        if (cuMemAllocAsync(&a.ptr, a.size, stream) != CUDA_SUCCESS) {
            return false;
        }
        a.region = {a.ptr, a.size, UCS_MEMORY_TYPE_CUDA, 0,
                    UCS_MEMTYPE_ALLOC_POOL, 0, s.default_pool};
        return true;
    case e2e_kind::pool_posix_fd:
        if (cuMemAllocFromPoolAsync(&a.ptr, a.size, s.export_pool, stream) !=
            CUDA_SUCCESS) {
            return false;
        }
        a.region = {a.ptr, a.size, UCS_MEMORY_TYPE_CUDA, 0,
                    UCS_MEMTYPE_ALLOC_POOL, UCS_MEMTYPE_HANDLE_POSIX_FD,
                    s.export_pool};
        return true;
    case e2e_kind::managed:
        if (cuMemAllocManaged(&a.ptr, a.size, CU_MEM_ATTACH_GLOBAL) !=
            CUDA_SUCCESS) {
            return false;
        }
        a.region = {a.ptr, a.size, UCS_MEMORY_TYPE_CUDA_MANAGED, 0,
                    UCS_MEMTYPE_ALLOC_MANAGED, 0, nullptr};
        return true;
    case e2e_kind::host_alloc:
        if (cuMemHostAlloc(&host, a.size, 0) != CUDA_SUCCESS) {
            return false;
        }
        a.ptr    = (CUdeviceptr)host;
        a.region = {a.ptr, a.size, UCS_MEMORY_TYPE_HOST, -1,
                    UCS_MEMTYPE_ALLOC_HOST_PINNED, 0, nullptr};
        return true;
    default: { /* vmm_posix_fd */
        CUmemAllocationProp prop = {};
        CUmemAccessDesc access   = rw_access(0);
        prop.type                 = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type        = CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id          = 0;
        prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
        a.size                    = k_chunk;
        if (cuMemCreate(&a.handle, a.size, &prop, 0) != CUDA_SUCCESS) {
            return false;
        }
        if ((cuMemAddressReserve(&a.reserved, a.size, 0, 0, 0) !=
             CUDA_SUCCESS) ||
            (cuMemMap(a.reserved, a.size, 0, a.handle, 0) != CUDA_SUCCESS) ||
            (cuMemSetAccess(a.reserved, a.size, &access, 1) !=
             CUDA_SUCCESS)) {
            ADD_FAILURE() << "VMM allocation failed";
            return false;
        }
        a.ptr    = a.reserved;
        a.region = {a.ptr, a.size, UCS_MEMORY_TYPE_CUDA, 0,
                    UCS_MEMTYPE_ALLOC_VMM, UCS_MEMTYPE_HANDLE_POSIX_FD,
                    nullptr};
        return true;
    }
    }
}

void stress_free(CUstream stream, const stress_alloc &a)
{
    switch (a.kind) {
    case e2e_kind::legacy:
    case e2e_kind::managed:
        EXPECT_CU(cuMemFree(a.ptr));
        break;
    case e2e_kind::async_default_pool:
    case e2e_kind::pool_posix_fd:
        EXPECT_CU(cuMemFreeAsync(a.ptr, stream));
        break;
    case e2e_kind::host_alloc:
        EXPECT_CU(cuMemFreeHost((void*)a.ptr));
        break;
    default:
        EXPECT_CU(cuMemUnmap(a.ptr, a.size));
        EXPECT_CU(cuMemRelease(a.handle));
        EXPECT_CU(cuMemAddressFree(a.reserved, a.size));
        break;
    }
}

void stress_lookup(stress_ctx &s, std::mt19937 &rng, const stress_alloc &a)
{
    size_t offset = rng() % a.size;
    size_t length = 1 + rng() % (a.size - offset);
    ucs_memtype_info_t info;
    ucs_status_t status;

    status = ucs_memtype_cache_lookup(s.cache, (void*)(a.ptr + offset), length,
                                      &info);
    ++s.lookups;
    if ((status != UCS_OK) || !matches(info, a.region)) {
        if (++s.wrong <= 5) {
            ADD_FAILURE() << e2e_kind_name(a.kind) << " [0x" << std::hex
                          << a.ptr << ", +" << std::dec << a.size
                          << ") at +" << offset << " len " << length << ": "
                          << ucs_status_string(status) << " "
                          << describe(info);
        }
    }
}

/* Host memory that comes and goes (malloc'd blocks large enough to be
 * mappings of their own): never anything but host. */
void stress_host_lookup(stress_ctx &s, std::mt19937 &rng)
{
    size_t size = 4096 * (32 + rng() % 64);
    char *buf   = (char*)malloc(size);
    ucs_memtype_info_t info;
    ucs_status_t status;

    if (buf == nullptr) {
        return;
    }
    buf[0] = 1;
    status = ucs_memtype_cache_lookup(s.cache, buf, size, &info);
    ++s.lookups;
    if ((status != UCS_OK) || (info.mem_type != UCS_MEMORY_TYPE_HOST) ||
        (info.alloc_kind != UCS_MEMTYPE_ALLOC_HOST)) {
        if (++s.wrong <= 5) {
            ADD_FAILURE() << "host buffer " << (void*)buf << " +" << size
                          << ": " << ucs_status_string(status) << " "
                          << describe(info);
        }
    }
    free(buf);
}

void stress_thread(stress_ctx &s, unsigned seed)
{
    std::mt19937 rng(seed);
    std::vector<stress_alloc> live;
    CUstream stream;

    ASSERT_CU(cuCtxSetCurrent(s.ctx));
    ASSERT_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    while (!s.stop.load(std::memory_order_relaxed)) {
        unsigned op = rng() % 8;
        if ((op < 2) && (live.size() < 8)) {
            stress_alloc a;
            if (stress_allocate(s, stream, rng, a)) {
                live.push_back(a);
                ++s.allocs;
                stress_lookup(s, rng, a); /* typed at once */
            }
        } else if ((op < 4) && !live.empty()) {
            size_t i = rng() % live.size();
            stress_free(stream, live[i]);
            live[i] = live.back();
            live.pop_back();
        } else if ((op < 7) && !live.empty()) {
            stress_lookup(s, rng, live[rng() % live.size()]);
        } else {
            stress_host_lookup(s, rng);
        }
    }
    for (const stress_alloc &a : live) {
        stress_free(stream, a);
    }
    cuStreamSynchronize(stream);
    cuStreamDestroy(stream);
}

} // namespace

/*
 * Threads allocate every kind, free in random order and look up their live
 * allocations and fresh host buffers, for ~3 s: addresses are recycled
 * between threads (pools, the legacy heap), events race with lookups and
 * resolver write-backs; no lookup may ever be wrong.
 */
TEST(memtype_e2e, threads_allocating_freeing_and_looking_up_are_never_wrong)
{
    cuda_in_child([] {
        const int threads    = 4;
        const double seconds = 3.0;
        stress_ctx s;

        init_device(0);
        s.cache = attach_global("bistro");
        ASSERT_NE(nullptr, s.cache);
        ASSERT_CU(cuCtxGetCurrent(&s.ctx));
        ASSERT_CU(cuDeviceGetDefaultMemPool(&s.default_pool, 0));

        CUmemPoolProps props = {};
        props.allocType     = CU_MEM_ALLOCATION_TYPE_PINNED;
        props.handleTypes   = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
        props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        props.location.id   = 0;
        ASSERT_CU(cuMemPoolCreate(&s.export_pool, &props));

        std::vector<std::thread> workers;
        for (int t = 0; t < threads; ++t) {
            workers.emplace_back(stress_thread, std::ref(s), 1234u + t);
        }
        std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
        s.stop = true;
        for (std::thread &w : workers) {
            w.join();
        }

        printf("[ stress    ] %d threads, %.1f s: %ld allocations, %ld "
               "lookups, %ld wrong, %lu driver queries (%s)\n", threads,
               seconds, s.allocs.load(), s.lookups.load(), s.wrong.load(),
               (unsigned long)ucm_memtype_resolver_count(),
               is_model() ? "cudasim" : "real driver");
        EXPECT_EQ(0, s.wrong.load());
        EXPECT_LT(1000, s.lookups.load());
        EXPECT_EQ(UCS_OK, ucs_memtype_cache_check(s.cache));
        ASSERT_CU(cuMemPoolDestroy(s.export_pool));
    }, 60.0);
}
