/*
 * What the driver says about a pointer, per allocation kind: memory type,
 * managed, legacy-IPC capability, allowed handle types, pool, ranges and
 * buffer ids. The memory-type cache and cuda_ipc rely on these answers.
 */
#include "cuda_test.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

using namespace cuda_test;

namespace {

const size_t SIZE  = 4ul << 20;
const size_t CHUNK = 2ul << 20;

struct expected_attrs {
    mem_kind kind;
    unsigned memtype;
    int      is_managed;
    int      legacy_capable;
    int      handle_types;
    int      pool; /* 0: none, 1: device default pool, 2: its own pool */
};

const expected_attrs expectations[] = {
    {mem_kind::legacy,             CU_MEMORYTYPE_DEVICE, 0, 1, 0x0, 0},
    {mem_kind::async_default_pool, CU_MEMORYTYPE_DEVICE, 0, 0, 0x0, 1},
    {mem_kind::pool_posix_fd,      CU_MEMORYTYPE_DEVICE, 0, 0, 0x1, 2},
    {mem_kind::pool_no_handle,     CU_MEMORYTYPE_DEVICE, 0, 0, 0x0, 2},
    {mem_kind::vmm_posix_fd,       CU_MEMORYTYPE_DEVICE, 0, 0, 0x1, 0},
    {mem_kind::vmm_no_handle,      CU_MEMORYTYPE_DEVICE, 0, 0, 0x0, 0},
    {mem_kind::vmm_two_chunks,     CU_MEMORYTYPE_DEVICE, 0, 0, 0x1, 0},
    {mem_kind::managed,            CU_MEMORYTYPE_DEVICE, 1, 0, 0x0, 0},
    {mem_kind::host_alloc,         CU_MEMORYTYPE_HOST,   0, 0, 0x0, 0},
};

int int_attr(CUpointer_attribute attr, CUdeviceptr ptr)
{
    int value = -12345;
    EXPECT_CU(cuPointerGetAttribute(&value, attr, ptr)) << "attribute " << attr;
    return value;
}

/* ALLOWED_HANDLE_TYPES is written as 8 bytes by the driver. */
unsigned long long handle_types_attr(CUdeviceptr ptr)
{
    unsigned long long value = 12345;
    EXPECT_CU(cuPointerGetAttribute(&value,
                                    CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES,
                                    ptr));
    return value;
}

} // namespace

class cuda_pointer_attr : public testing::TestWithParam<expected_attrs> {
};

TEST_P(cuda_pointer_attr, reports_type_exportability_and_extent)
{
    expected_attrs e = GetParam();

    cuda_in_child([e]() {
        CUmemoryPool default_pool, pool = (CUmemoryPool)1;
        unsigned long long id = 0;
        CUdeviceptr start = 0, base = 0;
        size_t range = 0, mapping = 0;
        unsigned memtype = 0;
        allocation a;

        init_device(0);
        ASSERT_CU(cuDeviceGetDefaultMemPool(&default_pool, 0));
        ASSERT_CU(a.allocate(e.kind, SIZE));

        ASSERT_CU(cuPointerGetAttribute(&memtype,
                                        CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a.ptr));
        EXPECT_EQ(e.memtype, memtype);
        EXPECT_EQ(0, int_attr(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, a.ptr));
        EXPECT_EQ(e.is_managed, int_attr(CU_POINTER_ATTRIBUTE_IS_MANAGED, a.ptr));
        EXPECT_EQ(e.legacy_capable,
                  int_attr(CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
                           a.ptr));
        EXPECT_EQ((unsigned long long)e.handle_types, handle_types_attr(a.ptr));

        ASSERT_CU(cuPointerGetAttribute(&pool,
                                        CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
                                        a.ptr));
        EXPECT_EQ((e.pool == 0) ? nullptr :
                  (e.pool == 1) ? default_pool : a.pool, pool);

        ASSERT_CU(cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                        a.ptr));
        EXPECT_NE(0ull, id);

        /* The whole allocation (for VMM: the reservation) ... */
        ASSERT_CU(cuPointerGetAttribute(&start,
                                        CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                        a.ptr + 100));
        ASSERT_CU(cuPointerGetAttribute(&range, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                        a.ptr + 100));
        EXPECT_EQ(a.ptr, start);
        EXPECT_EQ(SIZE, range);

        /* ... and the piece an interior pointer maps to: for VMM exactly
         * the chunk; otherwise the driver's mapping unit around it (pool
         * memory comes in 32 MiB chunks on an H200). */
        bool vmm = (e.kind == mem_kind::vmm_posix_fd) ||
                   (e.kind == mem_kind::vmm_no_handle) ||
                   (e.kind == mem_kind::vmm_two_chunks);
        size_t piece = (e.kind == mem_kind::vmm_two_chunks) ? CHUNK : SIZE;
        CUdeviceptr last = a.ptr + SIZE - 1;
        ASSERT_CU(cuPointerGetAttribute(&base,
                                        CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR,
                                        last));
        ASSERT_CU(cuPointerGetAttribute(&mapping,
                                        CU_POINTER_ATTRIBUTE_MAPPING_SIZE, last));
        if (vmm) {
            EXPECT_EQ(a.ptr + SIZE - piece, base);
            EXPECT_EQ(piece, mapping);
        } else {
            EXPECT_LE(base, a.ptr);
            EXPECT_GE(base + mapping, a.ptr + SIZE);
        }
        ASSERT_CU(cuMemGetAddressRange(&base, &range, last));
        EXPECT_EQ(a.ptr + SIZE - piece, base);
        EXPECT_EQ(piece, range);

        EXPECT_CU(a.release());
    });
}

/* The batched query answers what the single queries answer. */
TEST_P(cuda_pointer_attr, batched_query_matches_single_queries)
{
    expected_attrs e = GetParam();

    cuda_in_child([e]() {
        CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                       CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                       CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
                                       CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES,
                                       CU_POINTER_ATTRIBUTE_BUFFER_ID};
        unsigned memtype = 99;
        int managed = 99, legacy = 99;
        unsigned long long types = 99;
        unsigned long long id = 0, id_single = 0;
        void *data[] = {&memtype, &managed, &legacy, &types, &id};
        allocation a;

        init_device(0);
        ASSERT_CU(a.allocate(e.kind, SIZE));
        ASSERT_CU(cuPointerGetAttributes(5, attrs, data, a.ptr));
        EXPECT_EQ(e.memtype, memtype);
        EXPECT_EQ(e.is_managed, managed);
        EXPECT_EQ(e.legacy_capable, legacy);
        EXPECT_EQ((unsigned long long)e.handle_types, types);
        ASSERT_CU(cuPointerGetAttribute(&id_single,
                                        CU_POINTER_ATTRIBUTE_BUFFER_ID, a.ptr));
        EXPECT_EQ(id_single, id);
        EXPECT_CU(a.release());
    });
}

INSTANTIATE_TEST_SUITE_P(
        kinds, cuda_pointer_attr, testing::ValuesIn(expectations),
        [](const testing::TestParamInfo<expected_attrs> &info) {
            return std::string(kind_name(info.param.kind));
        });

/* A freed address handed out again belongs to a new buffer: importers key
 * their mapping caches on the buffer id. Result: 0 recycled with a new id,
 * 1 recycled with the same id, 2 never recycled, <0 error. */
static int recycled_address_probe(mem_kind kind)
{
    return probe_in_child([kind]() {
        CUcontext ctx;
        if ((cuInit(0) != CUDA_SUCCESS) ||
            (cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS) ||
            (cuCtxSetCurrent(ctx) != CUDA_SUCCESS)) {
            return -1;
        }
        allocation first;
        unsigned long long id1 = 0, id2 = 0;
        if ((first.allocate(kind, SIZE) != CUDA_SUCCESS) ||
            (cuPointerGetAttribute(&id1, CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                   first.ptr) != CUDA_SUCCESS)) {
            return -2;
        }
        CUdeviceptr addr = first.ptr;
        first.release();
        for (int i = 0; i < 16; ++i) {
            allocation next;
            if (next.allocate(kind, SIZE) != CUDA_SUCCESS) {
                return -3;
            }
            if (next.ptr == addr) {
                if (cuPointerGetAttribute(&id2, CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                          next.ptr) != CUDA_SUCCESS) {
                    return -4;
                }
                return (id2 != id1) ? 0 : 1;
            }
        }
        return 2;
    });
}

TEST(cuda_pointer_attr_ids, recycled_legacy_address_gets_new_buffer_id)
{
    int r = recycled_address_probe(mem_kind::legacy);
    if (r == 2) {
        GTEST_SKIP() << "the driver never handed the address out again";
    }
    EXPECT_EQ(0, r);
}

TEST(cuda_pointer_attr_ids, recycled_pool_address_gets_new_buffer_id)
{
    int r = recycled_address_probe(mem_kind::async_default_pool);
    if (r == 2) {
        GTEST_SKIP() << "the driver never handed the address out again";
    }
    EXPECT_EQ(0, r);
}

TEST(cuda_pointer_attr_ids, live_allocations_have_distinct_buffer_ids)
{
    cuda_in_child([]() {
        allocation a, b;
        unsigned long long ida = 0, idb = 0;

        init_device(0);
        ASSERT_CU(a.allocate(mem_kind::legacy, SIZE));
        ASSERT_CU(b.allocate(mem_kind::legacy, SIZE));
        ASSERT_CU(cuPointerGetAttribute(&ida, CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                        a.ptr));
        ASSERT_CU(cuPointerGetAttribute(&idb, CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                        b.ptr));
        EXPECT_NE(ida, idb);
    });
}

/* GPU-FACTS.md: a host pointer fails the single query (so the memory-type
 * cache must answer host pointers itself); the batched query succeeds. */
TEST(cuda_pointer_attr_host, plain_host_pointer_is_unknown_to_the_driver)
{
    cuda_in_child([]() {
        std::vector<char> buf(4096);
        CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                       CU_POINTER_ATTRIBUTE_IS_MANAGED};
        unsigned memtype = 99;
        int managed = 99;
        void *data[] = {&memtype, &managed};

        init_device(0);
        EXPECT_CU_ERR(CUDA_ERROR_INVALID_VALUE,
                      cuPointerGetAttribute(&memtype,
                                            CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                            (CUdeviceptr)buf.data()));
        EXPECT_CU(cuPointerGetAttributes(2, attrs, data,
                                         (CUdeviceptr)buf.data()));
        EXPECT_EQ(0u, memtype);
        EXPECT_EQ(0, managed);
    });
}

/* GPU-FACTS.md: SYNC_MEMOPS cannot be set on VMM memory; pool memory and
 * cuMemAlloc memory accept it; managed memory has it from the start. */
TEST(cuda_pointer_attr_sync_memops, set_refused_on_vmm_accepted_elsewhere)
{
    cuda_in_child([]() {
        const mem_kind kinds[] = {mem_kind::legacy, mem_kind::async_default_pool,
                                  mem_kind::pool_posix_fd, mem_kind::vmm_posix_fd,
                                  mem_kind::vmm_no_handle};
        int one = 1;

        init_device(0);
        for (mem_kind kind : kinds) {
            allocation a;
            bool vmm = (kind == mem_kind::vmm_posix_fd) ||
                       (kind == mem_kind::vmm_no_handle);
            ASSERT_CU(a.allocate(kind, SIZE)) << kind_name(kind);
            EXPECT_CU_ERR(vmm ? CUDA_ERROR_NOT_SUPPORTED : CUDA_SUCCESS,
                          cuPointerSetAttribute(&one,
                                                CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
                                                a.ptr))
                    << kind_name(kind);
            if (!vmm) {
                EXPECT_EQ(1, int_attr(CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, a.ptr));
            }
            EXPECT_CU(a.release());
        }
    });
}

TEST(cuda_pointer_attr_sync_memops, managed_memory_has_it_from_the_start)
{
    cuda_in_child([]() {
        allocation a;

        init_device(0);
        ASSERT_CU(a.allocate(mem_kind::managed, SIZE));
        EXPECT_EQ(1, int_attr(CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, a.ptr));
    });
}

/* Device memory is not CPU memory: reading it as host memory fails with
 * EFAULT ("process_vm_readv: Bad address", DESIGN.md section 1) -- the
 * failure mode that mistaking GPU memory for host memory produces. */
TEST(cuda_memory, device_memory_is_not_readable_as_host_memory)
{
    cuda_in_child([]() {
        const mem_kind kinds[] = {mem_kind::legacy, mem_kind::async_default_pool,
                                  mem_kind::vmm_posix_fd};
        char buf[64];

        init_device(0);
        for (mem_kind kind : kinds) {
            allocation a;
            ASSERT_CU(a.allocate(kind, SIZE)) << kind_name(kind);
            struct iovec local  = {buf, sizeof(buf)};
            struct iovec remote = {(void *)a.ptr, sizeof(buf)};
            errno = 0;
            EXPECT_EQ(-1, process_vm_readv(getpid(), &local, 1, &remote, 1, 0))
                    << kind_name(kind);
            EXPECT_EQ(EFAULT, errno) << kind_name(kind);
            EXPECT_CU(a.release());
        }
    });
}
