/**
 * @file test_uct_cuda_ipc_fd_limit.cc
 * RLIMIT_NOFILE met while cuda_ipc imports a peer's POSIX-fd handles (a VMM
 * chunk, a memory pool), for each way the fd travels (pidfd_getfd, the
 * exporter's socket): the import fails with UCS_ERR_EXCEEDS_LIMIT and an
 * error naming the cause, without a crash, a hang or a leaked fd; with fds
 * free again the same keys import and carry the right data.
 */
#include "test_uct_cuda_ipc.h"
#include "common/resource_census.h"
#include "common/test_helpers.h"

#include <string>

using namespace uct_cuda_ipc_test;

namespace {

class test_uct_cuda_ipc_fd_limit : public ::testing::TestWithParam<std::string> {};

const char *k_cause = "Too many open files";

} // namespace

/*
 * The importer unpacks a VMM key and a pool key and connects first (none
 * of which needs an fd), then, with no fd to spare, or one or two (the
 * fetch itself, and the driver's own copy of the fd, each need one), gets
 * through both keys. With none or one spare every get must fail with
 * EXCEEDS_LIMIT; with two, the model's pool import still lacks one and the
 * fd-passing paths of the real driver may differ: a get either works with
 * the right data or fails the same way. Each failure is logged naming the
 * cause, and the process holds no more fds than before. Then, with the
 * limit restored, both keys import and the data is right.
 */
TEST_P(test_uct_cuda_ipc_fd_limit, import_at_fd_limit_is_a_clear_error_then_works)
{
    const std::string mode = GetParam();

    cuda_two_processes(
        guarded([mode](oob_channel &ch) {
            std::vector<offer> o = recv_offers(ch, 2); /* VMM, pool */
            ASSERT_EQ(2u, o.size());
            init_device();
            allocation local;
            ASSERT_CU(local.allocate(mem_kind::legacy, SIZE));
            {
                ucx_test::config_sandbox sandbox; /* log file open before */
                std::unique_ptr<uct_test_entity> e(
                        new_ipc_entity({{"FD_TRANSFER", mode}}));
                imported vmm(*e, o[0]), pool(*e, o[1]);
                ASSERT_UCS_OK(vmm.status);
                ASSERT_UCS_OK(pool.status);
                /* An imported pool keeps an fd while it is mapped: the
                 * count to hold moves after each import that worked. */
                int fds = ucx_test::resource_census::take().fds;

                struct {
                    imported   *imp;
                    const char *name;
                    unsigned    seed;
                } keys[] = {{&vmm, "VMM", 1}, {&pool, "pool", 2}};
                unsigned failures = 0;
                for (unsigned spare = 0; spare <= 2; ++spare) {
                    for (auto &k : keys) {
                        ucx_test::fd_exhaustion no_fds(spare);
                        ASSERT_TRUE(no_fds.ok());
                        ucs_status_t status = k.imp->get(local.ptr, LENGTH, OFFSET);
                        no_fds.release();
                        printf("[ fd limit ] %s, %s key, %u spare fds: %s\n",
                               mode.c_str(), k.name, spare, ucs_status_string(status));
                        if (spare < 2) {
                            EXPECT_UCS_STATUS(UCS_ERR_EXCEEDS_LIMIT, status)
                                    << k.name << ", " << spare << " spare";
                        } else if (status == UCS_OK) {
                            EXPECT_TRUE(check_pattern(local.ptr, LENGTH, k.seed))
                                    << k.name;
                        } else {
                            EXPECT_UCS_STATUS(UCS_ERR_EXCEEDS_LIMIT, status) << k.name;
                        }
                        failures += (status != UCS_OK);
                        if (status != UCS_OK) {
                            EXPECT_EQ(fds, ucx_test::resource_census::take().fds)
                                    << "fds leaked by a failed import: " << k.name
                                    << ", " << spare << " spare";
                        }
                        fds = ucx_test::resource_census::take().fds;
                    }
                }

                std::string log = sandbox.log();
                EXPECT_EQ(failures, ucx_test::count_occurrences(log, k_cause))
                        << "each failure must name the cause:\n" << log;
                EXPECT_NE(std::string::npos, log.find("RLIMIT_NOFILE")) << log;

                /* Room again: the same keys import, the data is right. */
                for (auto &k : keys) {
                    write_pattern(local.ptr, LENGTH, 99);
                    ASSERT_UCS_OK(k.imp->get(local.ptr, LENGTH, OFFSET)) << k.name;
                    EXPECT_TRUE(check_pattern(local.ptr, LENGTH, k.seed)) << k.name;
                }
            }
            ASSERT_TRUE(ch.barrier());
        }),
        offers({mem_kind::vmm_posix_fd, mem_kind::pool_posix_fd}));
}

INSTANTIATE_TEST_SUITE_P(fd_transfer, test_uct_cuda_ipc_fd_limit,
                         ::testing::Values("pidfd", "socket"));
