/**
 * @file test_ucp_cuda_fresh.cc
 * Issue 24.1: blocking sends from fresh buffers, the pattern of a program
 * that allocates per phase (an MPI code that makes a pool per message size
 * and then does MPI_Send / MPI_Recv ten times). Whatever a message costs
 * once (an export, a pool handle transfer, an import) must be paid once
 * per buffer, not once per message: the sender exports a buffer at its
 * first message only, and the receiver maps it once. Counted with the
 * process-wide counters of cuda_ipc, for every exportable kind and size
 * class, with each buffer (and pool) fresh.
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
#include <vector>

using cuda_test::allocation;
using cuda_test::mem_kind;
using ucx_test::oob_channel;

namespace {

const unsigned k_messages     = 10;
const size_t k_sizes[]        = {8, 4096, 65536, 1u << 20, 4u << 20};
const size_t k_vmm_gran       = 2ul << 20;

size_t alloc_size(mem_kind kind, size_t size)
{
    bool vmm = (kind == mem_kind::vmm_posix_fd);
    return vmm ? ((size + k_vmm_gran - 1) / k_vmm_gran) * k_vmm_gran : size;
}

/* What one side's cuda_ipc did for one size: exports made, peer buffers
 * mapped. The sender reads (get) or the receiver writes (put) in place,
 * depending on the configuration a test runs in, so the sides' counts are
 * added up. */
struct ipc_counts {
    uint64_t exports;
    uint64_t imports;
};

ipc_counts counts_now()
{
    return {uct_cuda_test::module_counter("uct_cuda_ipc_export_count"),
            uct_cuda_test::module_counter("uct_cuda_ipc_import_count")};
}

ipc_counts counts_since(const ipc_counts &before)
{
    ipc_counts now = counts_now();

    return {now.exports - before.exports, now.imports - before.imports};
}

/* One side: for each size a fresh buffer, k_messages blocking operations,
 * then the sides' counts compared (by the sender, which gets the
 * receiver's). */
void side(mem_kind kind, bool is_sender, oob_channel &oob)
{
    uint64_t total_imports = 0;
    cuda_test::ucp_peer p;

    cuda_test::init_device(0);
    ASSERT_NO_FATAL_FAILURE(p.init(oob));
    for (size_t size : k_sizes) {
        std::string what = std::string(cuda_test::kind_name(kind)) + " " +
                           std::to_string(size) + " B";
        ucp_request_param_t param;
        ucp_tag_recv_info_t info;
        allocation buf;
        std::string blob;

        ASSERT_CU(buf.allocate(kind, alloc_size(kind, size)));
        if (is_sender) {
            cuda_test::write_pattern(buf.ptr, size, (unsigned)size);
        } else {
            ASSERT_CU(cuMemsetD8(buf.ptr, 0, buf.size));
        }
        ASSERT_CU(cuCtxSynchronize());
        ASSERT_TRUE(oob.barrier());
        ipc_counts before = counts_now();
        for (unsigned m = 0; m < k_messages; ++m) {
            memset(&param, 0, sizeof(param));
            if (is_sender) {
                ASSERT_EQ(UCS_OK, p.wait(ucp_tag_send_nbx(p.m_ep,
                                                          (void*)(uintptr_t)buf.ptr,
                                                          size, m, &param)))
                        << what << ", message " << m;
            } else {
                ASSERT_EQ(UCS_OK, p.wait(ucp_tag_recv_nbx(p.m_worker,
                                                          (void*)(uintptr_t)buf.ptr,
                                                          size, m, (ucp_tag_t)-1,
                                                          &param),
                                         &info))
                        << what << ", message " << m;
                EXPECT_TRUE(cuda_test::check_pattern(buf.ptr, size, (unsigned)size))
                        << what << ", message " << m;
            }
        }
        ASSERT_TRUE(oob.barrier()); /* every message is done on both sides */
        ipc_counts mine = counts_since(before);
        if (!is_sender) {
            ASSERT_TRUE(oob.send_blob(std::string((const char*)&mine, sizeof(mine))));
            continue;
        }
        ASSERT_TRUE(oob.recv_blob(blob));
        ASSERT_EQ(sizeof(ipc_counts), blob.size());
        ipc_counts peer;
        memcpy(&peer, blob.data(), sizeof(peer));
        uint64_t exports = mine.exports + peer.exports;
        uint64_t imports = mine.imports + peer.imports;
        printf("[ fresh    ] %s: %u blocking messages, %lu driver exports, "
               "%lu mappings made\n", what.c_str(), k_messages,
               (unsigned long)exports, (unsigned long)imports);
        /* Each side exports its fresh buffer at most once (a receive buffer
         * too, for a put): a pool buffer is two exports (the pool, then the
         * pointer), a cuMemAlloc buffer or a one-chunk VMM mapping one. One
         * of them is mapped by the other side, once, whatever the number of
         * messages (10 here: a per-message cost would show 10 times). */
        EXPECT_LE(exports, (kind == mem_kind::pool_posix_fd) ? 4u : 2u) << what;
        EXPECT_LE(imports, 1u) << what;
        total_imports += imports;
    }
    if (is_sender) {
        /* Exportable memory is moved in place at some size at least. */
        EXPECT_GT(total_imports, 0u) << cuda_test::kind_name(kind);
    }
    p.cleanup(oob);
}

class test_ucp_cuda_fresh : public ::testing::TestWithParam<mem_kind> {
};

TEST_P(test_ucp_cuda_fresh, blocking_sends_from_fresh_buffers_export_and_map_once)
{
    mem_kind kind = GetParam();

    cuda_test::cuda_two_processes([&](oob_channel &oob) { side(kind, false, oob); },
                                  [&](oob_channel &oob) { side(kind, true, oob); }, 120.0);
}

INSTANTIATE_TEST_SUITE_P(kinds, test_ucp_cuda_fresh,
                         ::testing::Values(mem_kind::pool_posix_fd, mem_kind::legacy,
                                           mem_kind::vmm_posix_fd),
                         [](const ::testing::TestParamInfo<mem_kind> &info) {
                             return std::string(cuda_test::kind_name(info.param));
                         });

} // namespace
