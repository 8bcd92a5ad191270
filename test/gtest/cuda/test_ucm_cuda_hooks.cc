/*
 * The CUDA driver hooks of libucm_cuda.so: every allocation kind made
 * through the driver API is reported with its type, kind, device, export
 * handle types and extent; frees are reported; the hook modes behave as
 * docs/hooks.md says. Runs on cudasim in CI and on the real driver on a GPU
 * machine. As every CUDA test here, the CUDA work runs in a forked child
 * (cuda_test.h), which installs the hooks in its own address space.
 */
#include "cuda/cuda_test.h"

#include <ucm/api/ucm.h>
#include <ucm/event/event.h>
#include <ucm/ucm_memtype.h>
#include <ucs/memory/memtype_cache.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <mutex>
#include <thread>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

using namespace cuda_test;

namespace {

struct recorded_event {
    ucm_event_type_t type;
    ucm_event_t      event;
};

std::mutex                  g_lock;
std::vector<recorded_event> g_events;

void recorder(ucm_event_type_t type, ucm_event_t *event, void *arg)
{
    std::lock_guard<std::mutex> guard(g_lock);
    g_events.push_back({type, *event});
}

std::vector<recorded_event> take_events()
{
    std::lock_guard<std::mutex> guard(g_lock);
    std::vector<recorded_event> events;
    events.swap(g_events);
    return events;
}

/* Only the memory-type events. */
std::vector<recorded_event> take_mem_events()
{
    std::vector<recorded_event> events;
    for (const recorded_event &e : take_events()) {
        if (e.type & (UCM_EVENT_MEM_TYPE_ALLOC | UCM_EVENT_MEM_TYPE_FREE)) {
            events.push_back(e);
        }
    }
    return events;
}

/* Select the mode and subscribe to memory-type events (which installs the
 * hooks) and, without installing anything, to VM events. */
void start_hooks(const char *mode)
{
    setenv("UCX_MEM_CUDA_HOOK_MODE", mode, 1);
    ASSERT_EQ(UCS_OK, ucm_event_reinstall());
    ASSERT_EQ(UCS_OK, ucm_set_event_handler(UCM_EVENT_MEM_TYPE_ALLOC |
                                            UCM_EVENT_MEM_TYPE_FREE, 0,
                                            recorder, NULL));
    ASSERT_EQ(UCS_OK, ucm_set_event_handler(UCM_EVENT_VM_MAPPED |
                                            UCM_EVENT_VM_UNMAPPED |
                                            UCM_EVENT_FLAG_NO_INSTALL, 0,
                                            recorder, NULL));
    take_events();
}

struct expected_event {
    ucm_event_type_t     type;
    CUdeviceptr          address;
    size_t               size;
    ucs_memory_type_t    mem_type;
    int                  device;
    ucm_mem_alloc_kind_t kind;
    uint32_t             handle_types;
};

void expect_event(const recorded_event &got, const expected_event &exp)
{
    const auto &m = got.event.mem_type;

    EXPECT_EQ(exp.type, got.type);
    EXPECT_EQ((void*)exp.address, m.address);
    EXPECT_EQ(exp.size, m.size);
    EXPECT_EQ(exp.mem_type, m.mem_type) << ucs_memory_type_names[m.mem_type];
    EXPECT_EQ(exp.device, m.device);
    EXPECT_EQ(exp.kind, m.alloc_kind);
    EXPECT_EQ(exp.handle_types, m.handle_types);
}

/* One ALLOC on allocation, the same as FREE on release. */
void check_alloc_free(const std::function<CUdeviceptr(size_t *)> &alloc,
                      const std::function<void(CUdeviceptr)> &release,
                      ucs_memory_type_t mem_type, int device,
                      ucm_mem_alloc_kind_t kind, uint32_t handle_types)
{
    size_t size;
    CUdeviceptr ptr = alloc(&size);
    ASSERT_NE(0u, ptr);

    std::vector<recorded_event> events = take_mem_events();
    ASSERT_EQ(1u, events.size());
    expect_event(events[0], {UCM_EVENT_MEM_TYPE_ALLOC, ptr, size, mem_type,
                             device, kind, handle_types});
    EXPECT_EQ((void*)ptr, events[0].event.mem_type.alloc_base);
    EXPECT_EQ(size, events[0].event.mem_type.alloc_length);

    release(ptr);
    events = take_mem_events();
    ASSERT_EQ(1u, events.size());
    expect_event(events[0], {UCM_EVENT_MEM_TYPE_FREE, ptr, size, mem_type,
                             device, kind, handle_types});
}

const size_t k_size = 1ul << 20;

} // namespace

TEST(ucm_cuda, legacy_alloc_is_device_memory_with_legacy_ipc)
{
    cuda_in_child([] {
        init_device(0);
        start_hooks("bistro");
        check_alloc_free(
            [](size_t *size) {
                CUdeviceptr p = 0;
                *size = k_size;
                EXPECT_CU(cuMemAlloc(&p, k_size));
                return p;
            },
            [](CUdeviceptr p) { EXPECT_CU(cuMemFree(p)); },
            UCS_MEMORY_TYPE_CUDA, 0, UCM_MEM_ALLOC_KIND_LEGACY,
            UCM_MEM_HANDLE_TYPE_LEGACY_IPC);
    });
}

TEST(ucm_cuda, pitched_alloc_extent_is_pitch_times_height)
{
    cuda_in_child([] {
        init_device(0);
        start_hooks("bistro");
        check_alloc_free(
            [](size_t *size) {
                CUdeviceptr p = 0;
                size_t pitch  = 0;
                EXPECT_CU(cuMemAllocPitch(&p, &pitch, 1000, 37, 4));
                *size = pitch * 37;
                return p;
            },
            [](CUdeviceptr p) { EXPECT_CU(cuMemFree(p)); },
            UCS_MEMORY_TYPE_CUDA, 0, UCM_MEM_ALLOC_KIND_LEGACY,
            UCM_MEM_HANDLE_TYPE_LEGACY_IPC);
    });
}

TEST(ucm_cuda, managed_alloc_is_managed_memory_and_a_cpu_mapping)
{
    cuda_in_child([] {
        init_device(0);
        start_hooks("bistro");

        CUdeviceptr p = 0;
        ASSERT_CU(cuMemAllocManaged(&p, k_size, CU_MEM_ATTACH_GLOBAL));
        std::vector<recorded_event> events = take_events();
        ASSERT_EQ(2u, events.size());
        expect_event(events[0], {UCM_EVENT_MEM_TYPE_ALLOC, p, k_size,
                                 UCS_MEMORY_TYPE_CUDA_MANAGED, 0,
                                 UCM_MEM_ALLOC_KIND_MANAGED, 0});
        EXPECT_EQ(UCM_EVENT_VM_MAPPED, events[1].type);
        EXPECT_EQ((void*)p, events[1].event.vm_mapped.address);

        ASSERT_CU(cuMemFree(p));
        events = take_events();
        ASSERT_EQ(2u, events.size());
        EXPECT_EQ(UCM_EVENT_VM_UNMAPPED, events[0].type);
        EXPECT_EQ(k_size, events[0].event.vm_unmapped.size);
        EXPECT_EQ(UCM_EVENT_MEM_TYPE_FREE, events[1].type);
    });
}

TEST(ucm_cuda, host_alloc_is_pinned_host_memory)
{
    cuda_in_child([] {
        init_device(0);
        start_hooks("bistro");
        check_alloc_free(
            [](size_t *size) {
                void *p = nullptr;
                *size = k_size;
                EXPECT_CU(cuMemHostAlloc(&p, k_size, 0));
                return (CUdeviceptr)p;
            },
            [](CUdeviceptr p) { EXPECT_CU(cuMemFreeHost((void*)p)); },
            UCS_MEMORY_TYPE_HOST, -1, UCM_MEM_ALLOC_KIND_HOST_PINNED, 0);
    });
}

TEST(ucm_cuda, async_alloc_from_default_pool_is_pool_memory_not_exportable)
{
    cuda_in_child([] {
        init_device(0);
        start_hooks("bistro");

        CUmemoryPool default_pool;
        CUstream stream;
        ASSERT_CU(cuDeviceGetDefaultMemPool(&default_pool, 0));
        ASSERT_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

        CUdeviceptr p = 0;
        ASSERT_CU(cuMemAllocAsync(&p, k_size, stream));
        std::vector<recorded_event> events = take_mem_events();
        ASSERT_EQ(1u, events.size());
        expect_event(events[0], {UCM_EVENT_MEM_TYPE_ALLOC, p, k_size,
                                 UCS_MEMORY_TYPE_CUDA, 0,
                                 UCM_MEM_ALLOC_KIND_POOL, 0});
        EXPECT_EQ((void*)default_pool, events[0].event.mem_type.pool);

        /* Reported at the call, not when the stream gets there. */
        ASSERT_CU(cuMemFreeAsync(p, stream));
        events = take_mem_events();
        ASSERT_EQ(1u, events.size());
        expect_event(events[0], {UCM_EVENT_MEM_TYPE_FREE, p, k_size,
                                 UCS_MEMORY_TYPE_CUDA, 0,
                                 UCM_MEM_ALLOC_KIND_POOL, 0});
        ASSERT_CU(cuStreamSynchronize(stream));
        ASSERT_CU(cuStreamDestroy(stream));
    });
}

TEST(ucm_cuda, pool_with_posix_fd_handles_is_exportable_through_the_pool)
{
    cuda_in_child([] {
        init_device(0);
        start_hooks("bistro");

        CUmemPoolProps props = {};
        props.allocType     = CU_MEM_ALLOCATION_TYPE_PINNED;
        props.handleTypes   = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
        props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        props.location.id   = 0;

        CUmemoryPool pool;
        CUstream stream;
        ASSERT_CU(cuMemPoolCreate(&pool, &props));
        ASSERT_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

        check_alloc_free(
            [&](size_t *size) {
                CUdeviceptr p = 0;
                *size = k_size;
                EXPECT_CU(cuMemAllocFromPoolAsync(&p, k_size, pool, stream));
                return p;
            },
            [&](CUdeviceptr p) { EXPECT_CU(cuMemFreeAsync(p, stream)); },
            UCS_MEMORY_TYPE_CUDA, 0, UCM_MEM_ALLOC_KIND_POOL,
            UCM_MEM_HANDLE_TYPE_POSIX_FD);

        ASSERT_CU(cuStreamSynchronize(stream));
        ASSERT_CU(cuMemPoolDestroy(pool));
        ASSERT_CU(cuStreamDestroy(stream));
    });
}

/* Host-located pools came with CUDA 12.6. */
#if CUDA_VERSION >= 12060
TEST(ucm_cuda, host_located_pool_yields_host_memory)
{
    int supported = probe_in_child([] {
        int value = 0;
        if ((cuInit(0) != CUDA_SUCCESS) ||
            (cuDeviceGetAttribute(&value,
                                  CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED,
                                  0) != CUDA_SUCCESS)) {
            return 0;
        }
        return value;
    });
    if (supported <= 0) {
        GTEST_SKIP() << "the driver does not support host-located pools";
    }

    cuda_in_child([] {
        init_device(0);
        start_hooks("bistro");

        CUmemPoolProps props = {};
        props.allocType     = CU_MEM_ALLOCATION_TYPE_PINNED;
        props.handleTypes   = CU_MEM_HANDLE_TYPE_NONE;
        props.location.type = CU_MEM_LOCATION_TYPE_HOST;
        props.location.id   = 0;

        CUmemoryPool pool;
        CUstream stream;
        ASSERT_CU(cuMemPoolCreate(&pool, &props));
        ASSERT_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

        CUdeviceptr p = 0;
        ASSERT_CU(cuMemAllocFromPoolAsync(&p, k_size, pool, stream));
        std::vector<recorded_event> events = take_mem_events();
        ASSERT_EQ(1u, events.size());
        expect_event(events[0], {UCM_EVENT_MEM_TYPE_ALLOC, p, k_size,
                                 UCS_MEMORY_TYPE_HOST, -1,
                                 UCM_MEM_ALLOC_KIND_POOL, 0});

        ASSERT_CU(cuMemFreeAsync(p, stream));
        ASSERT_CU(cuStreamSynchronize(stream));
        ASSERT_CU(cuMemPoolDestroy(pool));
        ASSERT_CU(cuStreamDestroy(stream));
    });
}

#endif

TEST(ucm_cuda, vmm_range_is_reported_per_chunk_and_unmap_frees_every_chunk)
{
    cuda_in_child([] {
        init_device(0);
        start_hooks("bistro");

        const size_t chunk = 2ul << 20;
        allocation a;
        ASSERT_CU(a.allocate(mem_kind::vmm_two_chunks, 2 * chunk));

        std::vector<recorded_event> events = take_mem_events();
        ASSERT_EQ(2u, events.size());
        for (size_t i = 0; i < 2; ++i) {
            expect_event(events[i], {UCM_EVENT_MEM_TYPE_ALLOC,
                                     a.ptr + (i * chunk), chunk,
                                     UCS_MEMORY_TYPE_CUDA, 0,
                                     UCM_MEM_ALLOC_KIND_VMM,
                                     UCM_MEM_HANDLE_TYPE_POSIX_FD});
            EXPECT_EQ((void*)(a.ptr + (i * chunk)),
                      events[i].event.mem_type.alloc_base);
            EXPECT_EQ(chunk, events[i].event.mem_type.alloc_length);
        }

        /* One cuMemUnmap of the whole range. */
        CUdeviceptr base = a.ptr;
        ASSERT_CU(a.release());
        events = take_mem_events();
        ASSERT_EQ(2u, events.size());
        for (size_t i = 0; i < 2; ++i) {
            expect_event(events[i], {UCM_EVENT_MEM_TYPE_FREE,
                                     base + (i * chunk), chunk,
                                     UCS_MEMORY_TYPE_CUDA, 0,
                                     UCM_MEM_ALLOC_KIND_VMM,
                                     UCM_MEM_HANDLE_TYPE_POSIX_FD});
        }
    });
}

TEST(ucm_cuda, vmm_without_handle_type_is_not_exportable)
{
    cuda_in_child([] {
        init_device(0);
        start_hooks("bistro");

        allocation a;
        ASSERT_CU(a.allocate(mem_kind::vmm_no_handle, 2ul << 20));
        std::vector<recorded_event> events = take_mem_events();
        ASSERT_EQ(1u, events.size());
        expect_event(events[0], {UCM_EVENT_MEM_TYPE_ALLOC, a.ptr, 2ul << 20,
                                 UCS_MEMORY_TYPE_CUDA, 0,
                                 UCM_MEM_ALLOC_KIND_VMM, 0});
        ASSERT_CU(a.release());
    });
}

TEST(ucm_cuda, failed_calls_report_nothing)
{
    cuda_in_child([] {
        init_device(0);
        start_hooks("bistro");

        CUdeviceptr p = 0;
        EXPECT_NE(CUDA_SUCCESS, cuMemAlloc(&p, ~0ul >> 4));

        /* Not an allocation, and inside one but not its start. */
        EXPECT_NE(CUDA_SUCCESS, cuMemFree((CUdeviceptr)0x1000));
        ASSERT_CU(cuMemAlloc(&p, k_size));
        take_events();
        EXPECT_NE(CUDA_SUCCESS, cuMemFree(p + 4096));
        EXPECT_TRUE(take_mem_events().empty());

        ASSERT_CU(cuMemFree(p));
        EXPECT_EQ(1u, take_mem_events().size());
    });
}

TEST(ucm_cuda, free_of_memory_allocated_before_the_hooks_has_its_extent)
{
    cuda_in_child([] {
        init_device(0);

        CUdeviceptr p = 0;
        ASSERT_CU(cuMemAlloc(&p, k_size));
        start_hooks("bistro");
        EXPECT_TRUE(take_mem_events().empty());

        ASSERT_CU(cuMemFree(p));
        std::vector<recorded_event> events = take_mem_events();
        ASSERT_EQ(1u, events.size());
        EXPECT_EQ(UCM_EVENT_MEM_TYPE_FREE, events[0].type);
        EXPECT_EQ((void*)p, events[0].event.mem_type.address);
        EXPECT_EQ(k_size, events[0].event.mem_type.size);
    });
}

namespace {

std::atomic<int> g_nested_allocs;

/* A handler that uses CUDA itself. */
void allocating_handler(ucm_event_type_t type, ucm_event_t *event, void *arg)
{
    CUdeviceptr p;

    if ((type == UCM_EVENT_MEM_TYPE_ALLOC) &&
        (cuMemAlloc(&p, 4096) == CUDA_SUCCESS)) {
        ++g_nested_allocs;
        cuMemFree(p);
    }
}

} // namespace

TEST(ucm_cuda, handler_calling_cuda_neither_recurses_nor_deadlocks)
{
    cuda_in_child([] {
        init_device(0);
        start_hooks("bistro");
        ASSERT_EQ(UCS_OK, ucm_set_event_handler(UCM_EVENT_MEM_TYPE_ALLOC, 1,
                                                allocating_handler, NULL));

        CUdeviceptr p = 0;
        ASSERT_CU(cuMemAlloc(&p, k_size));
        EXPECT_EQ(1, g_nested_allocs.load());

        /* The handler's own allocation is not reported. */
        std::vector<recorded_event> events = take_mem_events();
        ASSERT_EQ(1u, events.size());
        EXPECT_EQ((void*)p, events[0].event.mem_type.address);
        ASSERT_CU(cuMemFree(p));
    }, 30.0);
}

TEST(ucm_cuda, existing_alloc_flag_replays_live_allocations)
{
    cuda_in_child([] {
        init_device(0);
        start_hooks("bistro");

        CUdeviceptr a = 0, b = 0;
        ASSERT_CU(cuMemAlloc(&a, k_size));
        ASSERT_CU(cuMemAlloc(&b, 2 * k_size));
        ASSERT_CU(cuMemFree(a));
        ucm_unset_event_handler(~0, recorder, NULL);
        take_events();

        ASSERT_EQ(UCS_OK,
                  ucm_set_event_handler(UCM_EVENT_MEM_TYPE_ALLOC |
                                        UCM_EVENT_FLAG_EXISTING_ALLOC, 0,
                                        recorder, NULL));
        std::vector<recorded_event> events = take_mem_events();
        ASSERT_EQ(1u, events.size());
        expect_event(events[0], {UCM_EVENT_MEM_TYPE_ALLOC, b, 2 * k_size,
                                 UCS_MEMORY_TYPE_CUDA, 0,
                                 UCM_MEM_ALLOC_KIND_LEGACY,
                                 UCM_MEM_HANDLE_TYPE_LEGACY_IPC});
        ASSERT_CU(cuMemFree(b));
    });
}

TEST(ucm_cuda, threads_allocating_concurrently_are_all_reported)
{
    cuda_in_child([] {
        init_device(0);
        start_hooks("bistro");

        CUcontext ctx;
        ASSERT_CU(cuCtxGetCurrent(&ctx));
        const int threads = 4, iterations = 200;
        std::vector<std::thread> workers;
        for (int t = 0; t < threads; ++t) {
            workers.emplace_back([ctx] {
                cuCtxSetCurrent(ctx);
                for (int i = 0; i < iterations; ++i) {
                    CUdeviceptr p;
                    if (cuMemAlloc(&p, 4096 * (1 + (i % 7))) == CUDA_SUCCESS) {
                        cuMemFree(p);
                    }
                }
            });
        }
        for (std::thread &w : workers) {
            w.join();
        }

        size_t allocs = 0, frees = 0;
        for (const recorded_event &e : take_mem_events()) {
            allocs += (e.type == UCM_EVENT_MEM_TYPE_ALLOC);
            frees  += (e.type == UCM_EVENT_MEM_TYPE_FREE);
        }
        EXPECT_EQ((size_t)(threads * iterations), allocs);
        EXPECT_EQ(allocs, frees);
    });
}

/*
 * The hooks uninstalled and installed again (ucm_event_reinstall: every
 * entry point unpatched and patched) over and over while four threads
 * allocate, look up and free legacy and stream-ordered memory, and host
 * buffers, through a memtype cache the hooks feed. No crash, no deadlock
 * between reinstall and event dispatch, and every lookup of a byte of a
 * live allocation gives its memory type -- from the event, or from the
 * driver query for what was allocated while the hooks were out (a free
 * missed then leaves a stale extent, so only the type is checked).
 * contrib/hardening/tsan.sh runs it under ThreadSanitizer.
 */
TEST(ucm_cuda, hooks_reinstalled_while_threads_allocate_keep_lookups_right)
{
    cuda_in_child([] {
        const int threads = 4, reinstalls = 50;
        std::atomic<bool> stop{false};
        std::atomic<long> lookups{0}, wrong{0};
        ucs_memtype_cache_t *cache;
        CUcontext ctx;

        init_device(0);
        setenv("UCX_MEM_CUDA_HOOK_MODE", "bistro", 1);
        ASSERT_EQ(UCS_OK, ucs_memtype_cache_create("reinstall", &cache));
        ASSERT_EQ(UCS_OK, ucm_memtype_cache_attach(cache));
        ASSERT_CU(cuCtxGetCurrent(&ctx));

        auto check = [&](const void *p, size_t len, ucs_memory_type_t want) {
            ucs_memtype_info_t info;
            ucs_status_t status = ucs_memtype_cache_lookup(cache, p, len, &info);
            ++lookups;
            if (((status != UCS_OK) || (info.mem_type != want)) && (++wrong <= 5)) {
                ADD_FAILURE() << p << " +" << len << ": " << ucs_status_string(status)
                              << ", " << ucs_memory_type_names[info.mem_type]
                              << " instead of " << ucs_memory_type_names[want];
            }
        };
        std::vector<std::thread> workers;
        for (int t = 0; t < threads; ++t) {
            workers.emplace_back([&, t] {
                CUstream stream;
                EXPECT_CU(cuCtxSetCurrent(ctx));
                EXPECT_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
                for (unsigned i = t; !stop.load(std::memory_order_relaxed); ++i) {
                    size_t size = 4096 * (1 + (i % 16));
                    CUdeviceptr p;
                    if (cuMemAlloc(&p, size) == CUDA_SUCCESS) {
                        check((void*)(p + size / 2), 1, UCS_MEMORY_TYPE_CUDA);
                        EXPECT_CU(cuMemFree(p));
                    }
                    if (cuMemAllocAsync(&p, size, stream) == CUDA_SUCCESS) {
                        check((void*)(p + size - 1), 1, UCS_MEMORY_TYPE_CUDA);
                        EXPECT_CU(cuMemFreeAsync(p, stream));
                    }
                    std::vector<char> host(size);
                    check(host.data() + i % size, 1, UCS_MEMORY_TYPE_HOST);
                }
                EXPECT_CU(cuStreamSynchronize(stream));
                EXPECT_CU(cuStreamDestroy(stream));
            });
        }
        for (int i = 0; i < reinstalls; ++i) {
            EXPECT_EQ(UCS_OK, ucm_event_reinstall()) << "reinstall " << i;
            std::this_thread::sleep_for(std::chrono::microseconds(500));
        }
        stop = true;
        for (std::thread &w : workers) {
            w.join();
        }

        printf("[ reinstall] %d reinstalls under %d threads: %ld lookups, "
               "%ld wrong\n", reinstalls, threads, lookups.load(), wrong.load());
        EXPECT_EQ(0, wrong.load());
        EXPECT_LT(100, lookups.load());
        EXPECT_EQ(UCS_OK, ucs_memtype_cache_check(cache));
        EXPECT_EQ(UCS_OK, ucm_test_events(UCM_EVENT_MEM_TYPE_ALLOC |
                                          UCM_EVENT_MEM_TYPE_FREE))
                << "the hooks are not in place after the last reinstall";
        ucm_memtype_cache_detach(cache);
        ucs_memtype_cache_destroy(cache);
    }, 120.0);
}

TEST(ucm_cuda, installed_hooks_pass_the_event_test)
{
    cuda_in_child([] {
        init_device(0);
        start_hooks("bistro");
        EXPECT_EQ(UCS_OK, ucm_test_events(UCM_EVENT_MEM_TYPE_ALLOC |
                                          UCM_EVENT_MEM_TYPE_FREE));
        start_hooks("reloc");
        EXPECT_EQ(UCS_OK, ucm_test_events(UCM_EVENT_MEM_TYPE_ALLOC));
    });
}

TEST(ucm_cuda, patch_overwritten_by_someone_else_fails_the_event_test)
{
    cuda_in_child([] {
        init_device(0);
        start_hooks("bistro");
        ASSERT_EQ(UCS_OK, ucm_test_events(UCM_EVENT_MEM_TYPE_ALLOC));

        /* Put the entry's first byte back, as another tool might. */
        void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
        ASSERT_NE(nullptr, driver);
        uint8_t *entry = (uint8_t*)dlsym(driver, "cuMemAlloc_v2");
        ASSERT_NE(nullptr, entry);
        ASSERT_EQ(0xe9, entry[0]) << "bistro's opcode patch expected";
        size_t page_size = sysconf(_SC_PAGESIZE);
        void *page = (void*)((uintptr_t)entry & ~(page_size - 1));
        ASSERT_EQ(0, mprotect(page, 2 * page_size,
                              PROT_READ | PROT_WRITE | PROT_EXEC));
        entry[0] = 0x55; /* push %rbp, as in libcuda and cudasim */
        mprotect(page, 2 * page_size, PROT_READ | PROT_EXEC);

        EXPECT_EQ(UCS_ERR_NO_ELEM, ucm_test_events(UCM_EVENT_MEM_TYPE_ALLOC));
        dlclose(driver);
    });
}

#if CUDA_VERSION >= 12000
TEST(ucm_cuda, calls_through_cuGetProcAddress_are_caught_in_bistro_mode)
{
    cuda_in_child([] {
        init_device(0);
        start_hooks("bistro");

        typedef CUresult (*alloc_fn_t)(CUdeviceptr*, size_t);
        typedef CUresult (*alloc_async_fn_t)(CUdeviceptr*, size_t, CUstream);
        CUdriverProcAddressQueryResult result;
        void *fn = nullptr;

        /* As cudart finds the driver's functions. */
        ASSERT_CU(cuGetProcAddress("cuMemAlloc", &fn, 12000,
                                   CU_GET_PROC_ADDRESS_DEFAULT, &result));
        CUdeviceptr p = 0;
        ASSERT_CU(((alloc_fn_t)fn)(&p, k_size));
        std::vector<recorded_event> events = take_mem_events();
        ASSERT_EQ(1u, events.size());
        EXPECT_EQ((void*)p, events[0].event.mem_type.address);
        ASSERT_CU(cuMemFree(p));

        /* Per-thread default stream: the _ptsz entry point. */
        ASSERT_CU(cuGetProcAddress("cuMemAllocAsync", &fn, 12000,
                                   CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                                   &result));
        take_events();
        ASSERT_CU(((alloc_async_fn_t)fn)(&p, k_size, CU_STREAM_PER_THREAD));
        events = take_mem_events();
        ASSERT_EQ(1u, events.size());
        EXPECT_EQ(UCM_MEM_ALLOC_KIND_POOL, events[0].event.mem_type.alloc_kind);
        ASSERT_CU(cuMemFreeAsync(p, CU_STREAM_PER_THREAD));
        ASSERT_CU(cuStreamSynchronize(CU_STREAM_PER_THREAD));
    });
}

TEST(ucm_cuda, reloc_mode_catches_linked_calls_but_not_cuGetProcAddress)
{
    cuda_in_child([] {
        init_device(0);
        start_hooks("reloc");

        /* This program calls the driver through its GOT. */
        CUdeviceptr p = 0;
        ASSERT_CU(cuMemAlloc(&p, k_size));
        EXPECT_EQ(1u, take_mem_events().size());
        ASSERT_CU(cuMemFree(p));
        EXPECT_EQ(1u, take_mem_events().size());

        /* A pointer from cuGetProcAddress is the driver's own function. */
        CUdriverProcAddressQueryResult result;
        void *fn = nullptr;
        ASSERT_CU(cuGetProcAddress("cuMemAlloc", &fn, 12000,
                                   CU_GET_PROC_ADDRESS_DEFAULT, &result));
        ASSERT_CU(((CUresult (*)(CUdeviceptr*, size_t))fn)(&p, k_size));
        EXPECT_TRUE(take_mem_events().empty());
        ASSERT_CU(cuMemFree(p));
    });
}
#endif

TEST(ucm_cuda, none_mode_installs_no_hook)
{
    cuda_in_child([] {
        init_device(0);
        setenv("UCX_MEM_CUDA_HOOK_MODE", "none", 1);
        ASSERT_EQ(UCS_OK, ucm_event_reinstall());
        EXPECT_EQ(UCS_ERR_UNSUPPORTED,
                  ucm_set_event_handler(UCM_EVENT_MEM_TYPE_ALLOC, 0, recorder,
                                        NULL));
        EXPECT_EQ(UCS_ERR_UNSUPPORTED,
                  ucm_test_events(UCM_EVENT_MEM_TYPE_ALLOC));

        /* Nothing reports, even to a handler set without hooks. */
        ASSERT_EQ(UCS_OK, ucm_set_event_handler(UCM_EVENT_MEM_TYPE_ALLOC |
                                                UCM_EVENT_FLAG_NO_INSTALL, 0,
                                                recorder, NULL));
        CUdeviceptr p = 0;
        ASSERT_CU(cuMemAlloc(&p, k_size));
        ASSERT_CU(cuMemFree(p));
        EXPECT_TRUE(take_events().empty());
    });
}

TEST(ucm_cuda, bad_hook_mode_fails_the_subscription)
{
    cuda_in_child([] {
        setenv("UCX_MEM_CUDA_HOOK_MODE", "sometimes", 1);
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  ucm_set_event_handler(UCM_EVENT_MEM_TYPE_ALLOC, 0, recorder,
                                        NULL));
    });
}

TEST(ucm_cuda, ipc_open_is_an_imported_mapping_until_closed)
{
    struct msg_t {
        CUipcMemHandle handle;
        size_t         size;
    };

    cuda_two_processes(
        [](ucx_test::oob_channel &ch) { /* importer */
            msg_t msg;
            init_device(0);
            start_hooks("bistro");
            ASSERT_TRUE(ch.recv(&msg, sizeof(msg)));

            CUdeviceptr p = 0;
            ASSERT_CU(cuIpcOpenMemHandle(&p, msg.handle,
                                         CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
            std::vector<recorded_event> events = take_mem_events();
            ASSERT_EQ(1u, events.size());
            expect_event(events[0], {UCM_EVENT_MEM_TYPE_ALLOC, p, msg.size,
                                     UCS_MEMORY_TYPE_CUDA, 0,
                                     UCM_MEM_ALLOC_KIND_IPC_IMPORT, 0});
            EXPECT_EQ((uint32_t)UCM_MEM_TYPE_FLAG_IMPORTED,
                      events[0].event.mem_type.flags);

            ASSERT_CU(cuIpcCloseMemHandle(p));
            events = take_mem_events();
            ASSERT_EQ(1u, events.size());
            EXPECT_EQ(UCM_EVENT_MEM_TYPE_FREE, events[0].type);
            ASSERT_TRUE(ch.barrier());
        },
        [](ucx_test::oob_channel &ch) { /* exporter */
            msg_t msg;
            CUdeviceptr p;
            init_device(0);
            ASSERT_CU(cuMemAlloc(&p, k_size));
            ASSERT_CU(cuIpcGetMemHandle(&msg.handle, p));
            msg.size = k_size;
            ASSERT_TRUE(ch.send(&msg, sizeof(msg)));
            ASSERT_TRUE(ch.barrier());
            EXPECT_CU(cuMemFree(p));
        });
}

namespace {

/* Mean nanoseconds of one cuMemAllocAsync + cuMemFreeAsync pair. */
double async_pair_ns(CUstream stream, int count)
{
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < count; ++i) {
        CUdeviceptr p;
        if (cuMemAllocAsync(&p, 4096, stream) != CUDA_SUCCESS) {
            return -1;
        }
        cuMemFreeAsync(p, stream);
    }
    cuStreamSynchronize(stream);
    auto end = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::nano>(end - start).count() /
           count;
}

} // namespace

TEST(ucm_cuda, hook_cost_per_async_alloc_free_pair)
{
    cuda_in_child([] {
        const int count = 20000;
        CUstream stream;

        init_device(0);
        ASSERT_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
        async_pair_ns(stream, 1000); /* warm the pool up */
        double without = async_pair_ns(stream, count);

        /* With a handler that records every event, as a cache would. */
        start_hooks("bistro");
        double with = async_pair_ns(stream, count);
        take_events();

        printf("[ hook cost ] cuMemAllocAsync+cuMemFreeAsync: %.0f ns without "
               "hooks, %.0f ns with (%+.0f ns per pair, %s)\n", without, with,
               with - without, is_model() ? "cudasim" : "real driver");
        EXPECT_GT(without, 0);
        EXPECT_GT(with, 0);
        ASSERT_CU(cuStreamDestroy(stream));
    }, 120.0);
}
