/**
 * @file test_ucp_cuda_imported.cc
 * Issue 24.2: sending from an address that is itself a mapping of another
 * process's memory. The owner exports a buffer (an explicit pool with POSIX
 * fd handles: cuMemPoolExportPointer; a VMM allocation: one POSIX fd per
 * chunk), the other process imports it (cuMemPoolImportPointer; its own
 * mapping of the imported handles) and hands that address to
 * ucp_tag_send_nbx, sizes 8 B - 4 MiB, to the owner, which receives into a
 * buffer of its own and checks every byte. The driver reports
 * CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES 0 for such mappings and cannot
 * export them again, so the sender must not try: the message is staged,
 * and the sender makes no export of its own.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "cuda/cuda_test.h"
#include "cuda/test_uct_cuda.h"
#include "cuda/ucp_cuda_peer.h"

#include <ucp/api/ucp.h>

#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

using cuda_test::allocation;
using cuda_test::mem_kind;
using ucx_test::oob_channel;

namespace {

const size_t k_size    = 4u << 20; /* two 2 MiB chunks for VMM */
const size_t k_sizes[] = {8, 4096, 65536, 1u << 20, 4u << 20};
const unsigned k_seed  = 7;

struct export_msg {
    CUmemPoolPtrExportData ptr_data;
    int                    nchunks;
};

/* The owner: exports its buffer, receives every message sent from the
 * peer's mapping of it into a buffer of its own. */
void owner(mem_kind kind, oob_channel &oob)
{
    cuda_test::ucp_peer p;
    allocation buf, dst;
    export_msg msg;
    std::vector<int> fds;
    int fd;

    cuda_test::init_device(0);
    ASSERT_CU(buf.allocate(kind, k_size));
    cuda_test::write_pattern(buf.ptr, k_size, k_seed);
    memset(&msg, 0, sizeof(msg));
    if (kind == mem_kind::pool_posix_fd) {
        ASSERT_CU(cuMemPoolExportToShareableHandle(
                &fd, buf.pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
        ASSERT_CU(cuMemPoolExportPointer(&msg.ptr_data, buf.ptr));
        fds.push_back(fd);
    } else {
        msg.nchunks = (int)buf.chunks.size();
        for (size_t i = 0; i < buf.chunks.size(); ++i) {
            ASSERT_CU(cuMemExportToShareableHandle(
                    &fd, buf.chunks[i], CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
            fds.push_back(fd);
        }
    }
    ASSERT_TRUE(oob.send(&msg, sizeof(msg)));
    for (int f : fds) {
        ASSERT_TRUE(oob.send_fd(f));
    }
    ASSERT_NO_FATAL_FAILURE(p.init(oob));
    ASSERT_CU(dst.allocate(mem_kind::legacy, k_size));
    for (size_t size : k_sizes) {
        ucp_request_param_t param;
        ucp_tag_recv_info_t info;

        ASSERT_CU(cuMemsetD8(dst.ptr, 0, size));
        ASSERT_CU(cuCtxSynchronize());
        memset(&param, 0, sizeof(param));
        memset(&info, 0, sizeof(info));
        /* the sender does not wait for us: a message may already be here */
        param.op_attr_mask       = UCP_OP_ATTR_FIELD_RECV_INFO;
        param.recv_info.tag_info = &info;
        ASSERT_EQ(UCS_OK, p.wait(ucp_tag_recv_nbx(p.m_worker, (void*)(uintptr_t)dst.ptr,
                                                  size, size, (ucp_tag_t)-1, &param),
                                 &info))
                << size << " B";
        EXPECT_EQ(size, info.length);
        EXPECT_TRUE(cuda_test::check_pattern(dst.ptr, size, k_seed))
                << cuda_test::kind_name(kind) << ", " << size
                << " B sent from the peer's mapping of our buffer";
    }
    p.cleanup(oob);
    ASSERT_TRUE(oob.barrier()); /* the peer let go of its mapping */
    for (int f : fds) {
        close(f);
    }
}

/* The peer: maps the owner's buffer and sends from that mapping. */
void importer(mem_kind kind, oob_channel &oob)
{
    CUmemAccessDesc access = cuda_test::rw_access(0);
    std::vector<CUmemGenericAllocationHandle> handles;
    cuda_test::ucp_peer p;
    CUmemoryPool pool = NULL;
    CUdeviceptr ptr   = 0;
    export_msg msg;
    size_t chunk = 0;

    cuda_test::init_device(0);
    ASSERT_TRUE(oob.recv(&msg, sizeof(msg)));
    if (kind == mem_kind::pool_posix_fd) {
        int fd = oob.recv_fd();
        ASSERT_GE(fd, 0);
        ASSERT_CU(cuMemPoolImportFromShareableHandle(
                &pool, (void*)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                0));
        close(fd);
        ASSERT_CU(cuMemPoolSetAccess(pool, &access, 1));
        ASSERT_CU(cuMemPoolImportPointer(&ptr, pool, &msg.ptr_data));
    } else {
        ASSERT_GT(msg.nchunks, 0);
        chunk = k_size / msg.nchunks;
        for (int i = 0; i < msg.nchunks; ++i) {
            CUmemGenericAllocationHandle h;
            int fd = oob.recv_fd();
            ASSERT_GE(fd, 0);
            ASSERT_CU(cuMemImportFromShareableHandle(
                    &h, (void*)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
            close(fd);
            handles.push_back(h);
        }
        ptr = cuda_test::map_chunks(handles, chunk, 0);
        ASSERT_NE(0u, ptr);
    }
    /* The driver's view of the mapping the library is handed. */
    unsigned long long types = ~0ull;
    ASSERT_CU(cuPointerGetAttribute(&types, CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES,
                                    ptr));
    EXPECT_EQ(0ull, types) << "an imported mapping";

    ASSERT_NO_FATAL_FAILURE(p.init(oob));
    uint64_t before = uct_cuda_test::module_counter("uct_cuda_ipc_export_count");
    for (size_t size : k_sizes) {
        ucp_request_param_t param;

        memset(&param, 0, sizeof(param));
        ASSERT_EQ(UCS_OK, p.wait(ucp_tag_send_nbx(p.m_ep, (void*)(uintptr_t)ptr, size,
                                                  size, &param)))
                << cuda_test::kind_name(kind) << ", " << size << " B";
    }
    EXPECT_EQ(0u, uct_cuda_test::module_counter("uct_cuda_ipc_export_count") - before)
            << "the sender exported a mapping of another process's memory";
    p.cleanup(oob);
    if (kind == mem_kind::pool_posix_fd) {
        EXPECT_CU(cuMemFree(ptr));
        EXPECT_CU(cuMemPoolDestroy(pool));
    } else {
        cuda_test::unmap_chunks(ptr, chunk, handles.size());
        for (auto h : handles) {
            EXPECT_CU(cuMemRelease(h));
        }
    }
    ASSERT_TRUE(oob.barrier());
}

class test_ucp_cuda_imported : public ::testing::TestWithParam<mem_kind> {
};

TEST_P(test_ucp_cuda_imported, send_from_a_mapping_of_peer_memory_is_staged_and_correct)
{
    mem_kind kind = GetParam();

    cuda_test::cuda_two_processes([&](oob_channel &oob) { owner(kind, oob); },
                                  [&](oob_channel &oob) { importer(kind, oob); },
                                  120.0);
}

INSTANTIATE_TEST_SUITE_P(kinds, test_ucp_cuda_imported,
                         ::testing::Values(mem_kind::pool_posix_fd, mem_kind::vmm_posix_fd),
                         [](const ::testing::TestParamInfo<mem_kind> &info) {
                             return std::string(cuda_test::kind_name(info.param));
                         });

} // namespace
