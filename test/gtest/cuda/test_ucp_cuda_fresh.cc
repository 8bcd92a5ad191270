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

/* A process-wide counter of the cuda_ipc module (loaded once the peer's
 * context exists). */
uint64_t module_count(const char *name)
{
    typedef uint64_t (*count_fn_t)(void);
    count_fn_t fn = (count_fn_t)uct_cuda_test::module_symbol(name);

    EXPECT_TRUE(fn != NULL) << name;
    return (fn != NULL) ? fn() : 0;
}

size_t alloc_size(mem_kind kind, size_t size)
{
    bool vmm = (kind == mem_kind::vmm_posix_fd);
    return vmm ? ((size + k_vmm_gran - 1) / k_vmm_gran) * k_vmm_gran : size;
}

/* Per size: the new exports (sender) or imports (receiver) its messages
 * caused, sent to the other side for the report. */
void sender(mem_kind kind, oob_channel &oob)
{
    cuda_test::ucp_peer p;

    cuda_test::init_device(0);
    ASSERT_NO_FATAL_FAILURE(p.init(oob));
    for (size_t size : k_sizes) {
        ucp_request_param_t param;
        allocation buf;

        ASSERT_CU(buf.allocate(kind, alloc_size(kind, size)));
        cuda_test::write_pattern(buf.ptr, size, (unsigned)size);
        ASSERT_CU(cuCtxSynchronize());
        uint64_t before = module_count("uct_cuda_ipc_export_count");
        for (unsigned m = 0; m < k_messages; ++m) {
            memset(&param, 0, sizeof(param));
            ASSERT_EQ(UCS_OK, p.wait(ucp_tag_send_nbx(p.m_ep, (void*)(uintptr_t)buf.ptr,
                                                      size, m, &param)))
                    << cuda_test::kind_name(kind) << " " << size << " B, message " << m;
        }
        ASSERT_TRUE(oob.barrier()); /* the receiver checked every message */
        uint64_t exports = module_count("uct_cuda_ipc_export_count") - before;
        printf("[ fresh    ] %s %zu B: %u blocking sends, %lu driver exports\n",
               cuda_test::kind_name(kind), size, k_messages, (unsigned long)exports);
        /* A pool buffer is two exports (the pool, then the pointer); a
         * cuMemAlloc buffer and a one-chunk VMM mapping one. */
        EXPECT_LE(exports, (kind == mem_kind::pool_posix_fd) ? 2u : 1u)
                << cuda_test::kind_name(kind) << " " << size << " B";
        ASSERT_TRUE(oob.barrier()); /* the buffer goes only after both counted */
    }
    p.cleanup(oob);
}

void receiver(mem_kind kind, oob_channel &oob)
{
    cuda_test::ucp_peer p;

    uint64_t total = 0;

    cuda_test::init_device(0);
    ASSERT_NO_FATAL_FAILURE(p.init(oob));
    for (size_t size : k_sizes) {
        ucp_request_param_t param;
        ucp_tag_recv_info_t info;
        allocation buf;

        ASSERT_CU(buf.allocate(kind, alloc_size(kind, size)));
        ASSERT_CU(cuMemsetD8(buf.ptr, 0, buf.size));
        ASSERT_CU(cuCtxSynchronize());
        uint64_t before = module_count("uct_cuda_ipc_import_count");
        for (unsigned m = 0; m < k_messages; ++m) {
            memset(&param, 0, sizeof(param));
            ASSERT_EQ(UCS_OK, p.wait(ucp_tag_recv_nbx(p.m_worker, (void*)(uintptr_t)buf.ptr,
                                                      size, m, (ucp_tag_t)-1, &param),
                                     &info))
                    << cuda_test::kind_name(kind) << " " << size << " B, message " << m;
            EXPECT_TRUE(cuda_test::check_pattern(buf.ptr, size, (unsigned)size))
                    << cuda_test::kind_name(kind) << " " << size << " B, message " << m;
        }
        ASSERT_TRUE(oob.barrier());
        uint64_t imports = module_count("uct_cuda_ipc_import_count") - before;
        printf("[ fresh    ] %s %zu B: %u blocking receives, %lu mappings made\n",
               cuda_test::kind_name(kind), size, k_messages, (unsigned long)imports);
        /* Eager messages map nothing; a zero-copy get maps the sender's
         * fresh buffer once, whatever the number of messages. */
        EXPECT_LE(imports, 1u) << cuda_test::kind_name(kind) << " " << size << " B";
        total += imports;
        ASSERT_TRUE(oob.barrier());
    }
    /* Exportable memory is read in place at some size at least. */
    EXPECT_GT(total, 0u) << cuda_test::kind_name(kind);
    p.cleanup(oob);
}

class test_ucp_cuda_fresh : public ::testing::TestWithParam<mem_kind> {
};

TEST_P(test_ucp_cuda_fresh, blocking_sends_from_fresh_buffers_export_and_map_once)
{
    mem_kind kind = GetParam();

    cuda_test::cuda_two_processes([&](oob_channel &oob) { receiver(kind, oob); },
                                  [&](oob_channel &oob) { sender(kind, oob); }, 120.0);
}

INSTANTIATE_TEST_SUITE_P(kinds, test_ucp_cuda_fresh,
                         ::testing::Values(mem_kind::pool_posix_fd, mem_kind::legacy,
                                           mem_kind::vmm_posix_fd),
                         [](const ::testing::TestParamInfo<mem_kind> &info) {
                             return std::string(cuda_test::kind_name(info.param));
                         });

} // namespace
