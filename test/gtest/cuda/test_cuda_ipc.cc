/*
 * Moving GPU memory between two processes, per allocation kind, with the
 * verdicts of GPU-FACTS.md: which kinds export how, that the importer sees
 * the exporter's data and the exporter sees the importer's writes, how the
 * POSIX file descriptors travel (SCM_RIGHTS, pidfd_getfd), and that the
 * kinds the driver cannot export are refused with CUDA_ERROR_INVALID_VALUE.
 */
#include "cuda_test.h"

#include <string.h>
#include <unistd.h>

using namespace cuda_test;
using ucx_test::oob_channel;

namespace {

const size_t SIZE = 4ul << 20;

enum class fd_path { scm_rights, pidfd };

/** What the exporter sends before any file descriptor. */
struct export_msg {
    CUipcMemHandle         legacy;
    CUmemPoolPtrExportData ptr_data;
    int                    nchunks;
    int                    chunk_fd[2]; /* exporter's fd numbers */
    pid_t                  pid;
};

/* Export @a a (allocated and filled) and hand it over; returns the fds the
 * exporter must keep open until the importer is done. */
std::vector<int> export_allocation(oob_channel &ch, allocation &a,
                                   fd_path path)
{
    std::vector<int> fds;
    export_msg msg;
    int fd = -1;

    memset(&msg, 0, sizeof(msg));
    msg.pid = getpid();
    switch (a.kind) {
    case mem_kind::legacy:
        EXPECT_CU(cuIpcGetMemHandle(&msg.legacy, a.ptr));
        break;
    case mem_kind::pool_posix_fd:
        EXPECT_CU(cuMemPoolExportToShareableHandle(
                &fd, a.pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
        EXPECT_CU(cuMemPoolExportPointer(&msg.ptr_data, a.ptr));
        fds.push_back(fd);
        break;
    default: /* VMM: one shareable handle per physical chunk */
        msg.nchunks = (int)a.chunks.size();
        for (size_t i = 0; i < a.chunks.size(); ++i) {
            CUmemGenericAllocationHandle h;
            size_t chunk = a.size / a.chunks.size();
            EXPECT_CU(cuMemRetainAllocationHandle(&h,
                                                  (void *)(a.ptr + i * chunk)));
            EXPECT_CU(cuMemExportToShareableHandle(
                    &fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
            EXPECT_CU(cuMemRelease(h));
            msg.chunk_fd[i] = fd;
            fds.push_back(fd);
        }
        break;
    }
    EXPECT_TRUE(ch.send(&msg, sizeof(msg)));
    if ((a.kind == mem_kind::pool_posix_fd) ||
        ((msg.nchunks > 0) && (path == fd_path::scm_rights))) {
        for (int f : fds) {
            EXPECT_TRUE(ch.send_fd(f));
        }
    }
    return fds;
}

/* The exporter side of every transfer test. */
ucx_test::process_fn_t exporter(mem_kind kind, fd_path path = fd_path::scm_rights)
{
    return [kind, path](oob_channel &ch) {
        allocation a;

        init_device(0);
        ASSERT_CU(a.allocate(kind, SIZE));
        write_pattern(a.ptr, SIZE, 1);
        std::vector<int> fds = export_allocation(ch, a, path);

        ASSERT_TRUE(ch.barrier()); /* the importer read ours, wrote its own */
        EXPECT_TRUE(check_pattern(a.ptr, SIZE, 2))
                << "exporter does not see the importer's writes";
        ASSERT_TRUE(ch.barrier()); /* the importer let go */
        for (int fd : fds) {
            close(fd);
        }
        EXPECT_CU(a.release());
    };
}

/* Read the exporter's pattern, write ours, let the exporter check it. */
void exchange(oob_channel &ch, CUdeviceptr ptr)
{
    EXPECT_TRUE(check_pattern(ptr, SIZE, 1))
            << "importer does not see the exporter's data";
    write_pattern(ptr, SIZE, 2);
    ASSERT_TRUE(ch.barrier());
}

ucx_test::process_fn_t legacy_importer(int device)
{
    return [device](oob_channel &ch) {
        CUdeviceptr ptr = 0, again = 0;
        export_msg msg;

        init_device(device);
        ASSERT_TRUE(ch.recv(&msg, sizeof(msg)));
        ASSERT_CU(cuIpcOpenMemHandle(&ptr, msg.legacy,
                                     CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
        /* GPU-FACTS.md: a second open returns the same pointer. */
        EXPECT_CU(cuIpcOpenMemHandle(&again, msg.legacy,
                                     CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
        EXPECT_EQ(ptr, again);
        exchange(ch, ptr);
        EXPECT_CU(cuIpcCloseMemHandle(again));
        EXPECT_CU(cuIpcCloseMemHandle(ptr));
        ASSERT_TRUE(ch.barrier());
    };
}

ucx_test::process_fn_t pool_importer(int device)
{
    return [device](oob_channel &ch) {
        CUmemAccessDesc access = rw_access(device);
        CUmemoryPool pool;
        CUdeviceptr ptr = 0;
        export_msg msg;
        int fd;

        init_device(device);
        ASSERT_TRUE(ch.recv(&msg, sizeof(msg)));
        fd = ch.recv_fd();
        ASSERT_GE(fd, 0);
        ASSERT_CU(cuMemPoolImportFromShareableHandle(
                &pool, (void *)(uintptr_t)fd,
                CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
        close(fd);
        /* GPU-FACTS.md: the importer must grant itself access. */
        ASSERT_CU(cuMemPoolSetAccess(pool, &access, 1));
        ASSERT_CU(cuMemPoolImportPointer(&ptr, pool, &msg.ptr_data));
        exchange(ch, ptr);
        /* Importers free before the exporter may. */
        EXPECT_CU(cuMemFree(ptr));
        EXPECT_CU(cuMemPoolDestroy(pool));
        ASSERT_TRUE(ch.barrier());
    };
}

ucx_test::process_fn_t vmm_importer(int device, fd_path path)
{
    return [device, path](oob_channel &ch) {
        std::vector<CUmemGenericAllocationHandle> handles;
        export_msg msg;
        CUdeviceptr base;
        size_t chunk;

        init_device(device);
        ASSERT_TRUE(ch.recv(&msg, sizeof(msg)));
        ASSERT_GT(msg.nchunks, 0);
        chunk = SIZE / msg.nchunks;
        for (int i = 0; i < msg.nchunks; ++i) {
            CUmemGenericAllocationHandle h;
            int fd = (path == fd_path::scm_rights) ?
                     ch.recv_fd() : pidfd_fetch(msg.pid, msg.chunk_fd[i]);
            ASSERT_GE(fd, 0) << "no fd for chunk " << i;
            ASSERT_CU(cuMemImportFromShareableHandle(
                    &h, (void *)(uintptr_t)fd,
                    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
            close(fd); /* the handle keeps the memory */
            handles.push_back(h);
        }
        /* One VA range, every chunk at its offset, as cuda_ipc maps it. */
        base = map_chunks(handles, chunk, device);
        ASSERT_NE(0u, base);
        exchange(ch, base);
        unmap_chunks(base, chunk, handles.size());
        for (auto h : handles) {
            EXPECT_CU(cuMemRelease(h));
        }
        ASSERT_TRUE(ch.barrier());
    };
}

} // namespace

TEST(cuda_ipc, legacy_handle_import_shares_data_both_ways)
{
    cuda_two_processes(legacy_importer(0), exporter(mem_kind::legacy));
}

TEST(cuda_ipc, pool_fd_and_pointer_export_share_data_both_ways)
{
    cuda_two_processes(pool_importer(0), exporter(mem_kind::pool_posix_fd));
}

TEST(cuda_ipc, vmm_fd_export_shares_data_both_ways)
{
    cuda_two_processes(vmm_importer(0, fd_path::scm_rights),
                       exporter(mem_kind::vmm_posix_fd));
}

TEST(cuda_ipc, vmm_two_chunk_range_imports_as_one_contiguous_range)
{
    cuda_two_processes(vmm_importer(0, fd_path::scm_rights),
                       exporter(mem_kind::vmm_two_chunks));
}

TEST(cuda_fd_transfer, vmm_fd_passes_by_scm_rights)
{
    cuda_two_processes(vmm_importer(0, fd_path::scm_rights),
                       exporter(mem_kind::vmm_posix_fd, fd_path::scm_rights));
}

TEST(cuda_fd_transfer, vmm_fds_taken_with_pidfd_getfd)
{
    cuda_two_processes(vmm_importer(0, fd_path::pidfd),
                       exporter(mem_kind::vmm_two_chunks, fd_path::pidfd));
}

TEST(cuda_ipc, legacy_handle_imports_on_second_gpu)
{
    if (device_count() < 2) {
        GTEST_SKIP() << "needs 2 GPUs, found " << device_count();
    }
    cuda_two_processes(legacy_importer(1), exporter(mem_kind::legacy));
}

TEST(cuda_ipc, pool_export_imports_on_second_gpu)
{
    if (device_count() < 2) {
        GTEST_SKIP() << "needs 2 GPUs, found " << device_count();
    }
    cuda_two_processes(pool_importer(1), exporter(mem_kind::pool_posix_fd));
}

TEST(cuda_ipc, vmm_range_imports_on_second_gpu)
{
    if (device_count() < 2) {
        GTEST_SKIP() << "needs 2 GPUs, found " << device_count();
    }
    cuda_two_processes(vmm_importer(1, fd_path::pidfd),
                       exporter(mem_kind::vmm_two_chunks, fd_path::pidfd));
}

/* Every export method on memory that cannot be exported fails with
 * CUDA_ERROR_INVALID_VALUE (GPU-FACTS.md). */
static void expect_every_export_refused(mem_kind kind)
{
    cuda_in_child([kind]() {
        CUmemGenericAllocationHandle h;
        CUmemPoolPtrExportData data;
        CUmemoryPool pool = nullptr;
        CUipcMemHandle ipc;
        allocation a;
        int fd = -1;

        init_device(0);
        ASSERT_CU(a.allocate(kind, SIZE));
        EXPECT_CU_ERR(CUDA_ERROR_INVALID_VALUE, cuIpcGetMemHandle(&ipc, a.ptr));
        EXPECT_CU_ERR(CUDA_ERROR_INVALID_VALUE,
                      cuMemPoolExportPointer(&data, a.ptr));
        EXPECT_CU(cuPointerGetAttribute(&pool,
                                        CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
                                        a.ptr));
        if (pool != nullptr) {
            EXPECT_CU_ERR(CUDA_ERROR_INVALID_VALUE,
                          cuMemPoolExportToShareableHandle(
                                  &fd, pool,
                                  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
        }
        if (cuMemRetainAllocationHandle(&h, (void *)a.ptr) == CUDA_SUCCESS) {
            EXPECT_CU_ERR(CUDA_ERROR_INVALID_VALUE,
                          cuMemExportToShareableHandle(
                                  &fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                  0));
            EXPECT_CU(cuMemRelease(h));
        }
        EXPECT_EQ(-1, fd);
        EXPECT_CU(a.release());
    });
}

TEST(cuda_ipc, default_pool_memory_refuses_every_export)
{
    expect_every_export_refused(mem_kind::async_default_pool);
}

TEST(cuda_ipc, pool_without_handle_types_refuses_every_export)
{
    expect_every_export_refused(mem_kind::pool_no_handle);
}

TEST(cuda_ipc, vmm_without_handle_type_refuses_every_export)
{
    expect_every_export_refused(mem_kind::vmm_no_handle);
}

TEST(cuda_ipc, managed_and_host_memory_refuse_every_export)
{
    expect_every_export_refused(mem_kind::managed);
    expect_every_export_refused(mem_kind::host_alloc);
}

TEST(cuda_ipc, legacy_handle_only_for_cuMemAlloc_memory)
{
    cuda_in_child([]() {
        const mem_kind kinds[] = {mem_kind::legacy, mem_kind::async_default_pool,
                                  mem_kind::pool_posix_fd, mem_kind::vmm_posix_fd,
                                  mem_kind::managed, mem_kind::host_alloc};
        CUipcMemHandle ipc;

        init_device(0);
        for (mem_kind kind : kinds) {
            allocation a;
            ASSERT_CU(a.allocate(kind, SIZE)) << kind_name(kind);
            EXPECT_CU_ERR((kind == mem_kind::legacy) ? CUDA_SUCCESS :
                                                       CUDA_ERROR_INVALID_VALUE,
                          cuIpcGetMemHandle(&ipc, a.ptr))
                    << kind_name(kind);
            EXPECT_CU(a.release());
        }
    });
}

TEST(cuda_ipc, vmm_handle_retained_only_from_vmm_addresses)
{
    cuda_in_child([]() {
        const mem_kind kinds[] = {mem_kind::legacy, mem_kind::async_default_pool,
                                  mem_kind::pool_posix_fd, mem_kind::vmm_posix_fd};
        CUmemGenericAllocationHandle h;

        init_device(0);
        for (mem_kind kind : kinds) {
            allocation a;
            ASSERT_CU(a.allocate(kind, SIZE)) << kind_name(kind);
            CUresult r = cuMemRetainAllocationHandle(&h, (void *)a.ptr);
            if (kind == mem_kind::vmm_posix_fd) {
                EXPECT_CU(r);
                EXPECT_CU(cuMemRelease(h));
            } else {
                EXPECT_NE(CUDA_SUCCESS, r) << kind_name(kind);
            }
            EXPECT_CU(a.release());
        }
    });
}

TEST(cuda_ipc, fabric_handle_needs_an_imex_channel)
{
    int created = probe_in_child([]() {
        CUmemAllocationProp prop;
        CUmemGenericAllocationHandle h;
        CUcontext ctx;

        memset(&prop, 0, sizeof(prop));
        prop.type                 = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type        = CU_MEM_LOCATION_TYPE_DEVICE;
        prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
        if ((cuInit(0) != CUDA_SUCCESS) ||
            (cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS)) {
            return -2;
        }
        cuCtxSetCurrent(ctx);
        CUresult r = cuMemCreate(&h, 2ul << 20, &prop, 0);
        if (r == CUDA_SUCCESS) {
            cuMemRelease(h);
        }
        return (int)r;
    });

    if (!is_model() && (created == CUDA_SUCCESS)) {
        GTEST_SKIP() << "this machine has an IMEX channel: fabric handles work";
    }
    EXPECT_STREQ("CUDA_ERROR_NOT_PERMITTED", cu_name((CUresult)created));
}
