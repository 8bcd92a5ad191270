/*
 * The cuda_ipc transport of libuct_cuda.so between two real processes: an
 * exporter registers and packs device memory of each allocation kind, the
 * importer unpacks the key, gets and puts through it and both check data.
 * Also: fd transfer by pidfd and by socket, the importer's mapping cache
 * (hit, recycled address, eviction, cache off), an exporter that frees
 * memory the importer has mapped, kinds that cannot be exported, and keys
 * that are corrupt or truncated.
 */
#include "test_uct_cuda_ipc.h"
#include "common/resource_census.h"
#include "common/test_helpers.h"

#include <uct/cuda/cuda_ipc.h>
#include <ucs/sys/sys.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace cuda_test;
using namespace uct_cuda_test;
using namespace uct_cuda_ipc_test;
using ucx_test::oob_channel;
using ucx_test::uct_test_entity;

namespace {

/*
 * Exporter: allocate @a kind, fill [OFFSET, OFFSET + LENGTH) with seed 1,
 * offer it; after the importer's put, check seed 2 there.
 */
ucx_test::process_fn_t exporter(mem_kind kind)
{
    return guarded([kind](oob_channel &ch) {
        init_device();
        std::unique_ptr<uct_test_entity> e(new_ipc_entity());
        allocation a;
        ASSERT_CU(a.allocate(kind, SIZE));
        write_pattern(a.ptr + OFFSET, LENGTH, 1);
        ASSERT_TRUE(send_offer(ch, *e, a.ptr, SIZE));
        ASSERT_TRUE(ch.barrier()); /* importer got and put */
        EXPECT_TRUE(check_pattern(a.ptr + OFFSET, LENGTH, 2)) << kind_name(kind);
        ASSERT_TRUE(ch.barrier()); /* importer unmapped */
    });
}

/* Importer: get [OFFSET, OFFSET + LENGTH) and check it, put seed 2 there. */
ucx_test::process_fn_t importer(const config_t &config = config_t(), int device = 0)
{
    return guarded([config, device](oob_channel &ch) {
        init_device(device);
        allocation local;
        ASSERT_CU(local.allocate(mem_kind::legacy, SIZE, device));
        offer o;
        ASSERT_TRUE(recv_offer(ch, o));
        {
            std::unique_ptr<uct_test_entity> e(new_ipc_entity(config));
            EXPECT_TRUE(uct_iface_is_reachable(e->iface(), NULL,
                                               (const uct_iface_addr_t*)
                                               o.iface_addr.data()));
            imported imp(*e, o);
            ASSERT_UCS_OK(imp.status);
            ASSERT_UCS_OK(imp.get(local.ptr, LENGTH, OFFSET));
            EXPECT_TRUE(check_pattern(local.ptr, LENGTH, 1));
            write_pattern(local.ptr, LENGTH, 2);
            ASSERT_UCS_OK(imp.put(local.ptr, LENGTH, OFFSET));
            e->flush();
            ASSERT_TRUE(ch.barrier());
        }
        ASSERT_TRUE(ch.barrier());
    });
}

/* Map [base, base + size) from @a chunks fresh POSIX-fd VMM chunks. */
std::vector<CUmemGenericAllocationHandle> vmm_map_at(CUdeviceptr base, size_t size,
                                                     size_t chunks,
                                                     CUmemAllocationHandleType type =
                                                     CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
{
    std::vector<CUmemGenericAllocationHandle> hs;
    CUmemAllocationProp prop;
    CUmemAccessDesc acc = rw_access(0);

    memset(&prop, 0, sizeof(prop));
    prop.type                 = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type        = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id          = 0;
    prop.requestedHandleTypes = type;
    for (size_t i = 0; i < chunks; ++i) {
        CUmemGenericAllocationHandle h;
        EXPECT_CU(cuMemCreate(&h, size / chunks, &prop, 0));
        EXPECT_CU(cuMemMap(base + i * (size / chunks), size / chunks, 0, h, 0));
        hs.push_back(h);
    }
    EXPECT_CU(cuMemSetAccess(base, size, &acc, 1));
    return hs;
}

void vmm_unmap(CUdeviceptr base, size_t size,
               const std::vector<CUmemGenericAllocationHandle> &hs)
{
    EXPECT_CU(cuMemUnmap(base, size));
    for (CUmemGenericAllocationHandle h : hs) {
        EXPECT_CU(cuMemRelease(h));
    }
}

} // namespace

class test_uct_cuda_ipc : public ::testing::Test {};

TEST_F(test_uct_cuda_ipc, legacy_get_and_put_at_offset_keep_data)
{
    cuda_two_processes(importer(), exporter(mem_kind::legacy));
}

TEST_F(test_uct_cuda_ipc, pool_fd_get_and_put_at_offset_keep_data)
{
    cuda_two_processes(importer(), exporter(mem_kind::pool_posix_fd));
}

TEST_F(test_uct_cuda_ipc, vmm_fd_get_and_put_at_offset_keep_data)
{
    cuda_two_processes(importer(), exporter(mem_kind::vmm_posix_fd));
}

TEST_F(test_uct_cuda_ipc, vmm_range_of_two_chunks_maps_both_at_their_offsets)
{
    cuda_two_processes(importer(), exporter(mem_kind::vmm_two_chunks));
}

TEST_F(test_uct_cuda_ipc, every_exportable_kind_imports_on_another_gpu)
{
    if (device_count() < 2) {
        GTEST_SKIP() << "needs two GPUs";
    }
    for (mem_kind k : {mem_kind::legacy, mem_kind::pool_posix_fd,
                       mem_kind::vmm_two_chunks}) {
        SCOPED_TRACE(kind_name(k));
        cuda_two_processes(importer(config_t(), 1), exporter(k));
    }
}

TEST_F(test_uct_cuda_ipc, flush_waits_for_copies_with_every_peer_gpu)
{
    if (device_count() < 2) {
        GTEST_SKIP() << "needs two GPUs";
    }
    cuda_two_processes(
        guarded([](oob_channel &ch) {
            if (is_model()) {
                setenv("CUDASIM_ASYNC", "1", 1); /* copies finish late */
            }
            init_device(0);
            allocation la, lb;
            ASSERT_CU(la.allocate(mem_kind::legacy, SIZE));
            ASSERT_CU(lb.allocate(mem_kind::legacy, SIZE));
            offer oa, ob;
            ASSERT_TRUE(recv_offer(ch, oa));
            ASSERT_TRUE(recv_offer(ch, ob));
            {
                std::unique_ptr<uct_test_entity> e(new_ipc_entity());
                imported a(*e, oa), b(*e, ob);
                ASSERT_UCS_OK(a.status);
                ASSERT_UCS_OK(b.status);
                uct_iov_t iova = make_iov(la.ptr, LENGTH), iovb = make_iov(lb.ptr, LENGTH);
                ucs_status_t sa = uct_ep_get_zcopy(a.ep, &iova, 1, a.remote + OFFSET,
                                                   a.bundle.rkey, NULL);
                ucs_status_t sb = UCS_OK;
                ucx_test::uct_test_completion last_b;
                /* More work on the second GPU's stream: it finishes last. */
                for (int i = 0; (i < 4) && (sb != UCS_ERR_IO_ERROR); ++i) {
                    sb = uct_ep_get_zcopy(b.ep, &iovb, 1, b.remote + OFFSET,
                                          b.bundle.rkey,
                                          (i == 3) ? &last_b.comp : NULL);
                }
                ASSERT_TRUE((sa == UCS_OK) || (sa == UCS_INPROGRESS)) << sa;
                ASSERT_TRUE((sb == UCS_OK) || (sb == UCS_INPROGRESS)) << sb;
                ucx_test::uct_test_completion c;
                ucs_status_t st = uct_iface_flush(e->iface(), 0, &c.comp);
                if (st == UCS_INPROGRESS) {
                    ASSERT_TRUE(wait_comp(*e, c));
                    EXPECT_EQ(1, c.calls);
                    /* The flush covered the busiest stream too. */
                    EXPECT_TRUE((sb == UCS_OK) || last_b.done());
                } else {
                    ASSERT_UCS_OK(st);
                }
                EXPECT_UCS_OK(uct_iface_flush(e->iface(), 0, NULL));
                EXPECT_TRUE(check_pattern(la.ptr, LENGTH, 1));
                EXPECT_TRUE(check_pattern(lb.ptr, LENGTH, 2));
            }
            ASSERT_TRUE(ch.barrier());
        }),
        guarded([](oob_channel &ch) {
            init_device(1);
            allocation b;
            ASSERT_CU(b.allocate(mem_kind::pool_posix_fd, SIZE, 1));
            write_pattern(b.ptr + OFFSET, LENGTH, 2);
            init_device(0);
            std::unique_ptr<uct_test_entity> e(new_ipc_entity());
            allocation a;
            ASSERT_CU(a.allocate(mem_kind::vmm_two_chunks, SIZE, 0));
            write_pattern(a.ptr + OFFSET, LENGTH, 1);
            ASSERT_TRUE(send_offer(ch, *e, a.ptr, SIZE));
            ASSERT_TRUE(send_offer(ch, *e, b.ptr, SIZE));
            ASSERT_TRUE(ch.barrier());
        }));
}

TEST_F(test_uct_cuda_ipc, completions_wait_for_late_stream_work)
{
    if (!is_model()) {
        GTEST_SKIP() << "CUDASIM_ASYNC exists only on the model";
    }
    ucx_test::process_fn_t imp = importer();
    cuda_two_processes(
        [imp](oob_channel &ch) {
            /* Copies run late on the model's stream threads: data checked
             * right after a completion would be stale if it came early. */
            setenv("CUDASIM_ASYNC", "1", 1);
            imp(ch);
        },
        exporter(mem_kind::pool_posix_fd));
}

TEST_F(test_uct_cuda_ipc, vmm_fds_travel_by_pidfd)
{
    cuda_two_processes(importer({{"FD_TRANSFER", "pidfd"}}),
                       exporter(mem_kind::vmm_two_chunks));
}

TEST_F(test_uct_cuda_ipc, vmm_fds_travel_by_socket)
{
    cuda_two_processes(importer({{"FD_TRANSFER", "socket"}}),
                       exporter(mem_kind::vmm_two_chunks));
}

TEST_F(test_uct_cuda_ipc, pool_fd_travels_by_socket)
{
    cuda_two_processes(importer({{"FD_TRANSFER", "socket"}}),
                       exporter(mem_kind::pool_posix_fd));
}

TEST_F(test_uct_cuda_ipc, non_exportable_kinds_pack_but_unpack_unreachable)
{
    const std::vector<mem_kind> kinds = {mem_kind::async_default_pool,
                                         mem_kind::pool_no_handle,
                                         mem_kind::vmm_no_handle, mem_kind::managed};
    cuda_two_processes(
        guarded([kinds](oob_channel &ch) {
            init_device();
            std::unique_ptr<uct_test_entity> e(new_ipc_entity());
            for (mem_kind k : kinds) {
                offer o;
                ASSERT_TRUE(recv_offer(ch, o));
                uct_rkey_bundle_t b;
                EXPECT_UCS_STATUS(UCS_ERR_UNREACHABLE,
                                  uct_rkey_unpack(e->component(), o.rkey.data(), &b))
                        << kind_name(k);
            }
            ASSERT_TRUE(ch.barrier());
        }),
        guarded([kinds](oob_channel &ch) {
            init_device();
            std::unique_ptr<uct_test_entity> e(new_ipc_entity());
            std::vector<std::unique_ptr<allocation>> allocs;
            for (mem_kind k : kinds) {
                allocs.emplace_back(new allocation());
                ASSERT_CU(allocs.back()->allocate(k, SIZE));
                ASSERT_TRUE(send_offer(ch, *e, allocs.back()->ptr, SIZE));
            }
            ASSERT_TRUE(ch.barrier());
        }));
}

TEST_F(test_uct_cuda_ipc, repeated_access_hits_the_mapping_cache)
{
    cuda_two_processes(
        guarded([](oob_channel &ch) {
            init_device();
            allocation local;
            ASSERT_CU(local.allocate(mem_kind::legacy, SIZE));
            offer o;
            ASSERT_TRUE(recv_offer(ch, o));
            {
                std::unique_ptr<uct_test_entity> e(new_ipc_entity());
                imported imp(*e, o);
                ASSERT_UCS_OK(imp.status);
                for (int i = 0; i < 3; ++i) {
                    ASSERT_UCS_OK(imp.get(local.ptr, 4096, OFFSET + i * 100));
                }
                ipc_cache_stats st = cache_stats(e->iface());
                EXPECT_EQ(1u, st.imports);
                EXPECT_EQ(2u, st.hits);
                EXPECT_EQ(1u, st.regions);
            }
            ASSERT_TRUE(ch.barrier());
        }),
        single_offer(mem_kind::vmm_two_chunks));
}

TEST_F(test_uct_cuda_ipc, new_buffer_at_same_address_replaces_stale_mapping)
{
    cuda_two_processes(
        guarded([](oob_channel &ch) {
            init_device();
            allocation local;
            ASSERT_CU(local.allocate(mem_kind::legacy, SIZE));
            std::unique_ptr<uct_test_entity> e(new_ipc_entity());
            for (unsigned seed = 1; seed <= 2; ++seed) {
                offer o;
                ASSERT_TRUE(recv_offer(ch, o));
                imported imp(*e, o);
                ASSERT_UCS_OK(imp.status);
                ASSERT_UCS_OK(imp.get(local.ptr, LENGTH, OFFSET));
                EXPECT_TRUE(check_pattern(local.ptr, LENGTH, seed)) << seed;
                ASSERT_TRUE(ch.barrier());
            }
            ipc_cache_stats st = cache_stats(e->iface());
            EXPECT_EQ(2u, st.imports);
            EXPECT_EQ(0u, st.hits);
            EXPECT_EQ(1u, st.regions); /* the stale mapping is gone */
            e.reset();
            ASSERT_TRUE(ch.barrier());
        }),
        guarded([](oob_channel &ch) {
            init_device();
            std::unique_ptr<uct_test_entity> e(new_ipc_entity());
            CUdeviceptr va;
            ASSERT_CU(cuMemAddressReserve(&va, SIZE, 0, 0, 0));
            for (unsigned seed = 1; seed <= 2; ++seed) {
                /* Same addresses, new physical memory: a new buffer. */
                std::vector<CUmemGenericAllocationHandle> hs = vmm_map_at(va, SIZE, 2);
                write_pattern(va + OFFSET, LENGTH, seed);
                ASSERT_TRUE(send_offer(ch, *e, va, SIZE));
                ASSERT_TRUE(ch.barrier());
                vmm_unmap(va, SIZE, hs);
            }
            ASSERT_TRUE(ch.barrier());
            EXPECT_CU(cuMemAddressFree(va, SIZE));
        }));
}

/*
 * Importer of @a count offers (seeds 1..count), each a new allocation the
 * exporter frees while it is still mapped here: every get must see the new
 * seed, and every offer is a new import.
 */
static ucx_test::process_fn_t importer_of_offers_freed_under_it(unsigned count)
{
    return guarded([count](oob_channel &ch) {
        init_device();
        allocation local;
        ASSERT_CU(local.allocate(mem_kind::legacy, SIZE));
        std::unique_ptr<uct_test_entity> e(new_ipc_entity());
        for (unsigned seed = 1; seed <= count; ++seed) {
            offer o;
            ASSERT_TRUE(recv_offer(ch, o));
            imported imp(*e, o);
            ASSERT_UCS_OK(imp.status);
            ASSERT_UCS_OK(imp.get(local.ptr, LENGTH, OFFSET));
            EXPECT_TRUE(check_pattern(local.ptr, LENGTH, seed)) << seed;
            ASSERT_TRUE(ch.barrier()); /* still mapped when the exporter frees */
        }
        EXPECT_EQ(count, cache_stats(e->iface()).imports);
        e.reset();
        ASSERT_TRUE(ch.barrier());
    });
}

TEST_F(test_uct_cuda_ipc, exporter_frees_mapped_memory_and_next_import_sees_new_buffer)
{
    for (mem_kind k : {mem_kind::legacy, mem_kind::pool_posix_fd,
                       mem_kind::vmm_posix_fd}) {
        SCOPED_TRACE(kind_name(k));
        cuda_two_processes(
            importer_of_offers_freed_under_it(2),
            guarded([k](oob_channel &ch) {
                init_device();
                std::unique_ptr<uct_test_entity> e(new_ipc_entity());
                for (unsigned seed = 1; seed <= 2; ++seed) {
                    allocation a;
                    ASSERT_CU(a.allocate(k, SIZE));
                    write_pattern(a.ptr + OFFSET, LENGTH, seed);
                    ASSERT_TRUE(send_offer(ch, *e, a.ptr, SIZE));
                    ASSERT_TRUE(ch.barrier());
                    ASSERT_CU(a.release());
                }
                ASSERT_TRUE(ch.barrier());
            }));
    }
}

TEST_F(test_uct_cuda_ipc, cache_evicts_least_recently_used_beyond_max_regions)
{
    cuda_two_processes(
        guarded([](oob_channel &ch) {
            init_device();
            allocation local;
            ASSERT_CU(local.allocate(mem_kind::legacy, SIZE));
            offer oa, ob;
            ASSERT_TRUE(recv_offer(ch, oa));
            ASSERT_TRUE(recv_offer(ch, ob));
            {
                std::unique_ptr<uct_test_entity> e(
                        new_ipc_entity({{"CACHE_MAX_REGIONS", "1"}}));
                imported a(*e, oa), b(*e, ob);
                ASSERT_UCS_OK(a.status);
                ASSERT_UCS_OK(b.status);
                ASSERT_UCS_OK(a.get(local.ptr, LENGTH, OFFSET));
                EXPECT_TRUE(check_pattern(local.ptr, LENGTH, 1));
                ASSERT_UCS_OK(b.get(local.ptr, LENGTH, OFFSET));
                EXPECT_TRUE(check_pattern(local.ptr, LENGTH, 2));
                ASSERT_UCS_OK(a.get(local.ptr, LENGTH, OFFSET));
                EXPECT_TRUE(check_pattern(local.ptr, LENGTH, 1));
                ipc_cache_stats st = cache_stats(e->iface());
                EXPECT_EQ(3u, st.imports);
                EXPECT_EQ(1u, st.regions);
            }
            ASSERT_TRUE(ch.barrier());
        }),
        offers({mem_kind::pool_posix_fd, mem_kind::vmm_posix_fd}));
}

TEST_F(test_uct_cuda_ipc, cache_off_maps_per_operation)
{
    cuda_two_processes(
        guarded([](oob_channel &ch) {
            init_device();
            allocation local;
            ASSERT_CU(local.allocate(mem_kind::legacy, SIZE));
            offer o;
            ASSERT_TRUE(recv_offer(ch, o));
            {
                std::unique_ptr<uct_test_entity> e(new_ipc_entity({{"CACHE", "n"}}));
                imported imp(*e, o);
                ASSERT_UCS_OK(imp.status);
                for (int i = 0; i < 2; ++i) {
                    ASSERT_UCS_OK(imp.get(local.ptr, LENGTH, OFFSET));
                    EXPECT_TRUE(check_pattern(local.ptr, LENGTH, 1));
                }
                ipc_cache_stats st = cache_stats(e->iface());
                EXPECT_EQ(2u, st.imports);
                EXPECT_EQ(0u, st.regions);
            }
            ASSERT_TRUE(ch.barrier());
        }),
        single_offer(mem_kind::vmm_posix_fd));
}

TEST_F(test_uct_cuda_ipc, packing_twice_reuses_the_cached_export)
{
    in_child([] {
        init_device();
        std::unique_ptr<uct_test_entity> e(new_ipc_entity());
        for (mem_kind k : {mem_kind::vmm_two_chunks, mem_kind::pool_posix_fd,
                           mem_kind::legacy}) {
            allocation a;
            ASSERT_CU(a.allocate(k, SIZE));
            /* fd numbers and handles in the key would differ on a new export. */
            std::string first = pack_key(*e, a.ptr, SIZE);
            EXPECT_EQ(first, pack_key(*e, a.ptr, SIZE)) << kind_name(k);
        }
    });
}

/* Version 2 keys name the GPU by UUID (the same in every process, unlike
 * the ordinal); version 1 keys (no UUID) still unpack, with no device id. */
TEST_F(test_uct_cuda_ipc, key_carries_device_uuid_and_version_1_still_parses)
{
    in_child([] {
        typedef ucs_status_t (*parse_fn_t)(const void*, uct_cuda_ipc_key_t*);
        int devices = device_count();
        for (int dev = 0; dev < std::min(devices, 2); ++dev) {
            init_device(dev);
            std::unique_ptr<uct_test_entity> e(new_ipc_entity());
            parse_fn_t parse = (parse_fn_t)module_symbol("uct_cuda_ipc_rkey_parse");
            ASSERT_TRUE(parse != NULL);
            uct_component_h comp = e->component();
            allocation a;
            ASSERT_CU(a.allocate(mem_kind::legacy, SIZE));
            std::string v2 = pack_key(*e, a.ptr, SIZE);
            EXPECT_EQ(2, v2[4]);
            uct_cuda_ipc_key_t key;
            ASSERT_UCS_OK(parse(v2.data(), &key));
            CUuuid uuid;
            ASSERT_CU(cuDeviceGetUuid(&uuid, dev));
            EXPECT_EQ(0, memcmp(uuid.bytes, key.device_uuid, 16)) << dev;
            uct_rkey_bundle_t b;
            ASSERT_UCS_OK(uct_rkey_unpack(comp, v2.data(), &b));
            uint8_t id[16];
            ASSERT_UCS_OK(uct_rkey_device_id(comp, b.rkey, id));
            EXPECT_EQ(0, memcmp(uuid.bytes, id, 16));
            uct_rkey_release(comp, &b);

            /* The same key in version 1: owner without the UUID (bytes
             * 56..71), new length and checksum (FNV-1a, field zeroed). */
            std::string v1 = v2;
            uint32_t length;
            memcpy(&length, &v1[8], sizeof(length));
            v1.erase(56, 16);
            v1.append(16, '\0');
            v1[4]   = 1;
            length -= 16;
            memcpy(&v1[8], &length, sizeof(length));
            memset(&v1[12], 0, 4);
            uint32_t csum = 2166136261u;
            for (uint32_t i = 0; i < length; ++i) {
                csum = (csum ^ (uint8_t)v1[i]) * 16777619u;
            }
            memcpy(&v1[12], &csum, sizeof(csum));
            ASSERT_UCS_OK(parse(v1.data(), &key));
            EXPECT_EQ(UCT_CUDA_IPC_KIND_LEGACY, key.kind);
            EXPECT_EQ((uint64_t)a.ptr, key.remote_base);
            ASSERT_UCS_OK(uct_rkey_unpack(comp, v1.data(), &b));
            EXPECT_UCS_STATUS(UCS_ERR_UNSUPPORTED,
                              uct_rkey_device_id(comp, b.rkey, id));
            uct_rkey_release(comp, &b);
            /* A version 1 length on a version 2 key is refused. */
            v1[4] = 2;
            EXPECT_UCS_STATUS(UCS_ERR_INVALID_PARAM, parse(v1.data(), &key));
        }
        if (devices >= 2) {
            CUuuid u0, u1;
            ASSERT_CU(cuDeviceGetUuid(&u0, 0));
            ASSERT_CU(cuDeviceGetUuid(&u1, 1));
            EXPECT_NE(0, memcmp(u0.bytes, u1.bytes, 16));
        }
    });
}

/* UCX_CUDA_IPC_EXPORTABLE_DEFAULT_POOL: the md makes the current pool
 * IPC-capable, so cuMemAllocAsync memory packs as POOL; a pool the
 * application made current is left alone; without it, not exportable. */
TEST_F(test_uct_cuda_ipc, exportable_default_pool_option)
{
    for (bool on : {true, false}) {
        in_child([on] {
            typedef ucs_status_t (*parse_fn_t)(const void*, uct_cuda_ipc_key_t*);
            setenv("UCX_CUDA_IPC_EXPORTABLE_DEFAULT_POOL", on ? "y" : "n", 1);
            init_device();
            CUmemoryPool deflt, current;
            ASSERT_CU(cuDeviceGetDefaultMemPool(&deflt, 0));
            std::unique_ptr<uct_test_entity> e(new_ipc_entity());
            ASSERT_CU(cuDeviceGetMemPool(&current, 0));
            EXPECT_EQ(on, current != deflt);
            parse_fn_t parse = (parse_fn_t)module_symbol("uct_cuda_ipc_rkey_parse");
            ASSERT_TRUE(parse != NULL);
            {
                allocation a;
                ASSERT_CU(a.allocate(mem_kind::async_default_pool, SIZE));
                uct_cuda_ipc_key_t key;
                ASSERT_UCS_OK(parse(pack_key(*e, a.ptr, SIZE).data(), &key));
                EXPECT_EQ(on ? UCT_CUDA_IPC_KIND_POOL : UCT_CUDA_IPC_KIND_NONE,
                          key.kind);
            }
            /* A second md (another context) keeps the pool in place. */
            std::unique_ptr<uct_test_entity> e2(new_ipc_entity());
            CUmemoryPool again;
            ASSERT_CU(cuDeviceGetMemPool(&again, 0));
            EXPECT_EQ(current, again);
            e2.reset();
            e.reset();
            /* It outlives the md: allocations may still come from it. */
            ASSERT_CU(cuDeviceGetMemPool(&again, 0));
            EXPECT_EQ(current, again);
        });
    }
}

TEST_F(test_uct_cuda_ipc, corrupt_or_truncated_keys_are_rejected)
{
    in_child([] {
        init_device();
        std::unique_ptr<uct_test_entity> e(new_ipc_entity());
        uct_component_h comp = e->component();
        uct_rkey_bundle_t b;

        for (mem_kind k : {mem_kind::legacy, mem_kind::vmm_two_chunks,
                           mem_kind::pool_posix_fd}) {
            allocation a;
            ASSERT_CU(a.allocate(k, SIZE));
            std::string key = pack_key(*e, a.ptr, SIZE);
            ASSERT_UCS_OK(uct_rkey_unpack(comp, key.data(), &b)) << kind_name(k);
            uct_rkey_release(comp, &b);

            uint32_t length;
            memcpy(&length, &key[8], sizeof(length));
            ASSERT_LE(length, key.size());

            /* Every single flipped bit inside the key. */
            for (size_t i = 0; i < length; ++i) {
                std::string bad = key;
                bad[i] ^= (char)(1u << (i % 8));
                EXPECT_UCS_STATUS(UCS_ERR_INVALID_PARAM,
                                  uct_rkey_unpack(comp, bad.data(), &b))
                        << kind_name(k) << " byte " << i;
            }

            /* Truncated: the tail lost, with or without a matching length. */
            for (uint32_t cut : {length - 1, length / 2, 16u, 0u}) {
                std::string bad = key;
                memset(&bad[cut], 0, bad.size() - cut);
                if (cut >= 12) {
                    memcpy(&bad[8], &cut, sizeof(cut));
                }
                EXPECT_UCS_STATUS(UCS_ERR_INVALID_PARAM,
                                  uct_rkey_unpack(comp, bad.data(), &b))
                        << kind_name(k) << " cut at " << cut;
            }
        }

        /* Garbage, also garbage behind a valid magic and version. */
        std::mt19937 rng(7);
        std::string junk(e->md_attr().rkey_packed_size, '\0');
        for (int iter = 0; iter < 2000; ++iter) {
            for (char &c : junk) {
                c = (char)rng();
            }
            if (iter % 2) {
                const uint32_t magic = 0x4b504943u;
                memcpy(&junk[0], &magic, sizeof(magic));
                junk[4] = 1;
            }
            EXPECT_UCS_STATUS(UCS_ERR_INVALID_PARAM,
                              uct_rkey_unpack(comp, junk.data(), &b));
        }
    });
}

TEST_F(test_uct_cuda_ipc, socket_server_hands_out_only_exported_fds)
{
    typedef int (*fetch_fn_t)(const uct_cuda_ipc_key_t*, int, uct_cuda_ipc_fd_transfer_t);
    struct fds_msg {
        pid_t pid;
        int   exported;
        int   other;
    };

    cuda_two_processes(
        guarded([](oob_channel &ch) {
            init_device();
            std::unique_ptr<uct_test_entity> e(new_ipc_entity());
            fetch_fn_t fetch = (fetch_fn_t)module_symbol("uct_cuda_ipc_fd_fetch");
            ASSERT_TRUE(fetch != NULL);
            fds_msg m;
            ASSERT_TRUE(ch.recv(&m, sizeof(m)));

            uct_cuda_ipc_key_t key;
            memset(&key, 0, sizeof(key));
            key.pid    = (uint32_t)m.pid;
            key.pid_ns = ucs_sys_get_pid_ns();
            int fd = fetch(&key, m.exported, UCT_CUDA_IPC_FD_TRANSFER_SOCKET);
            EXPECT_GE(fd, 0);
            if (fd >= 0) {
                close(fd);
            }
            /* An fd the exporter never exported is refused. */
            EXPECT_EQ(-1, fetch(&key, m.other, UCT_CUDA_IPC_FD_TRANSFER_SOCKET));
            ASSERT_TRUE(ch.barrier()); /* exporter frees the allocation */
            ASSERT_TRUE(ch.barrier());
            /* Its export is gone with it. */
            EXPECT_EQ(-1, fetch(&key, m.exported, UCT_CUDA_IPC_FD_TRANSFER_SOCKET));
            ASSERT_TRUE(ch.barrier());
        }),
        guarded([](oob_channel &ch) {
            init_device();
            std::unique_ptr<uct_test_entity> e(new_ipc_entity());
            std::unique_ptr<allocation> a(new allocation());
            ASSERT_CU(a->allocate(mem_kind::vmm_posix_fd, 2ul << 20));
            uct_cuda_ipc_key_t key;
            std::string blob = pack_key(*e, a->ptr, 2ul << 20);
            typedef ucs_status_t (*parse_fn_t)(const void*, uct_cuda_ipc_key_t*);
            parse_fn_t parse = (parse_fn_t)module_symbol("uct_cuda_ipc_rkey_parse");
            ASSERT_TRUE(parse != NULL);
            ASSERT_UCS_OK(parse(blob.data(), &key));
            ASSERT_EQ(UCT_CUDA_IPC_KIND_VMM, key.kind);

            fds_msg m;
            m.pid      = getpid();
            m.exported = key.chunks[0].fd;
            m.other    = open("/dev/null", O_RDONLY);
            ASSERT_TRUE(ch.send(&m, sizeof(m)));
            ASSERT_TRUE(ch.barrier());
            a.reset(); /* cuMemUnmap + cuMemRelease: the free event drops the export */
            ASSERT_TRUE(ch.barrier());
            ASSERT_TRUE(ch.barrier());
            close(m.other);
        }));
}

/* pidfd_getfd made to fail for real (a seccomp filter in the importer:
 * root's CAP_SYS_PTRACE would pass any ptrace check) must fall back to the
 * socket; a peer of another uid is refused by the socket (SO_PEERCRED) and
 * by the kernel's ptrace check on pidfd_getfd. */
TEST_F(test_uct_cuda_ipc, pidfd_refused_falls_back_to_socket_and_other_uid_gets_nothing)
{
    typedef int (*fetch_fn_t)(const uct_cuda_ipc_key_t*, int, uct_cuda_ipc_fd_transfer_t);

    cuda_two_processes(
        guarded([](oob_channel &ch) {
            init_device();
            std::unique_ptr<uct_test_entity> e(new_ipc_entity());
            fetch_fn_t fetch = (fetch_fn_t)module_symbol("uct_cuda_ipc_fd_fetch");
            ASSERT_TRUE(fetch != NULL);
            int32_t msg[2];
            ASSERT_TRUE(ch.recv(msg, sizeof(msg)));
            uct_cuda_ipc_key_t key;
            memset(&key, 0, sizeof(key));
            key.pid    = (uint32_t)msg[0];
            key.pid_ns = ucs_sys_get_pid_ns();

            ASSERT_TRUE(ucx_test::refuse_syscall(438 /* pidfd_getfd */, EPERM));
            EXPECT_EQ(-1, fetch(&key, msg[1], UCT_CUDA_IPC_FD_TRANSFER_PIDFD));
            int fd = fetch(&key, msg[1], UCT_CUDA_IPC_FD_TRANSFER_AUTO);
            EXPECT_GE(fd, 0) << "no fallback to the socket";
            if (fd >= 0) {
                close(fd);
            }
            if (getuid() == 0) {
                ASSERT_EQ(0, setresuid(65534, 65534, 65534)); /* nobody */
                EXPECT_EQ(-1, fetch(&key, msg[1], UCT_CUDA_IPC_FD_TRANSFER_SOCKET))
                        << "the socket served another uid";
            } else {
                printf("[ SKIPPED  ] other-uid check: needs root to change uid\n");
            }
            ASSERT_TRUE(ch.barrier());
        }),
        guarded([](oob_channel &ch) {
            init_device();
            std::unique_ptr<uct_test_entity> e(new_ipc_entity());
            std::unique_ptr<allocation> a(new allocation());
            ASSERT_CU(a->allocate(mem_kind::vmm_posix_fd, 2ul << 20));
            std::string blob = pack_key(*e, a->ptr, 2ul << 20);
            typedef ucs_status_t (*parse_fn_t)(const void*, uct_cuda_ipc_key_t*);
            parse_fn_t parse = (parse_fn_t)module_symbol("uct_cuda_ipc_rkey_parse");
            ASSERT_TRUE(parse != NULL);
            uct_cuda_ipc_key_t key;
            ASSERT_UCS_OK(parse(blob.data(), &key));
            int32_t msg[2] = {(int32_t)getpid(), key.chunks[0].fd};
            ASSERT_TRUE(ch.send(msg, sizeof(msg)));
            ASSERT_TRUE(ch.barrier());
        }));
}

/* Many transfers, each from a freshly allocated exporter buffer of every
 * exportable kind in turn: imported mappings, fds, memory files and RSS of
 * the importer must plateau (the mapping cache evicts, stale imports are
 * dropped). UCX_TEST_LONG_RUN sets the count: 600 on the driver model in CI,
 * 10^5 on a GPU (contrib/gpu-run.sh). Peaks are printed. */
TEST_F(test_uct_cuda_ipc, long_run_of_fresh_allocations_keeps_imports_bounded)
{
    const char *env  = getenv("UCX_TEST_LONG_RUN");
    const long count = (env != NULL) ? atol(env) : 600;
    const mem_kind kinds[] = {mem_kind::legacy, mem_kind::pool_posix_fd,
                              mem_kind::vmm_posix_fd};
    const size_t len   = 64 * 1024;
    const size_t alloc = 2ul << 20; /* VMM granularity */

    cuda_two_processes(
        guarded([&](oob_channel &ch) {
            init_device();
            allocation local;
            ASSERT_CU(local.allocate(mem_kind::legacy, len));
            std::unique_ptr<uct_test_entity> e(new_ipc_entity());
            ucx_test::resource_census base = ucx_test::resource_census::take(),
                                      peak = base;
            unsigned max_regions = 0;
            for (long i = 0; i < count; ++i) {
                offer o;
                ASSERT_TRUE(recv_offer(ch, o));
                {
                    imported imp(*e, o);
                    ASSERT_UCS_OK(imp.status);
                    ASSERT_UCS_OK(imp.get(local.ptr, len, 0));
                    if (i % 97 == 0) {
                        ASSERT_TRUE(check_pattern(local.ptr, len, (unsigned)i + 1)) << i;
                    }
                }
                ASSERT_TRUE(ch.barrier()); /* the exporter frees it now */
                if (i % 50 == 0) {
                    peak.raise_to(ucx_test::resource_census::take());
                    max_regions = std::max(max_regions, cache_stats(e->iface()).regions);
                }
            }
            peak.raise_to(ucx_test::resource_census::take());
            printf("[ long run ] cuda_ipc importer: %ld transfers, mapped regions max %u, "
                   "fds %d -> max %d, memfds %d -> max %d, rss %ld -> max %ld kB\n",
                   count, max_regions, base.fds, peak.fds, base.memfds, peak.memfds,
                   base.rss_kb, peak.rss_kb);
            EXPECT_LE(max_regions, 64u);
            EXPECT_LE(peak.fds - base.fds, 64);
            EXPECT_LE(peak.rss_kb - base.rss_kb, 512 * 1024);
            e.reset();
        }),
        guarded([&](oob_channel &ch) {
            init_device();
            std::unique_ptr<uct_test_entity> e(new_ipc_entity());
            ucx_test::resource_census base = ucx_test::resource_census::take(),
                                      peak = base;
            for (long i = 0; i < count; ++i) {
                allocation a;
                ASSERT_CU(a.allocate(kinds[i % 3], alloc));
                write_pattern(a.ptr, len, (unsigned)i + 1);
                ASSERT_TRUE(send_offer(ch, *e, a.ptr, alloc));
                ASSERT_TRUE(ch.barrier());
                ASSERT_CU(a.release());
                if (i % 50 == 0) {
                    peak.raise_to(ucx_test::resource_census::take());
                }
            }
            printf("[ long run ] cuda_ipc exporter: fds %d -> max %d, memfds %d -> "
                   "max %d, rss %ld -> max %ld kB\n", base.fds, peak.fds, base.memfds,
                   peak.memfds, base.rss_kb, peak.rss_kb);
            EXPECT_LE(peak.fds - base.fds, 64);
            EXPECT_LE(peak.rss_kb - base.rss_kb, 512 * 1024);
        }),
        (double)count * 0.05 + 120);
}

TEST_F(test_uct_cuda_ipc, bad_fd_transfer_value_is_an_error)
{
    in_child([] {
        init_device();
        EXPECT_THROW(new_ipc_entity({{"FD_TRANSFER", "carrier-pigeon"}}),
                     ucx_test::uct_test_error);
    });
}

TEST_F(test_uct_cuda_ipc, reachable_only_on_same_host_as_same_user)
{
    in_child([] {
        init_device();
        std::unique_ptr<uct_test_entity> e(new_ipc_entity());
        std::unique_ptr<uct_test_entity> p(new_ipc_entity({{"FD_TRANSFER", "pidfd"}}));
        std::string own = e->iface_address();
        uct_cuda_ipc_iface_addr_t a;
        ASSERT_EQ(sizeof(a), own.size());

        auto reachable = [](uct_test_entity &ent, const uct_cuda_ipc_iface_addr_t &addr) {
            return uct_iface_is_reachable(ent.iface(), NULL,
                                          (const uct_iface_addr_t*)&addr) != 0;
        };

        memcpy(&a, own.data(), sizeof(a));
        EXPECT_TRUE(reachable(*e, a));
        a.uid += 1;
        EXPECT_FALSE(reachable(*e, a)) << "another user";
        memcpy(&a, own.data(), sizeof(a));
        a.node_id[3] ^= 0xff;
        EXPECT_FALSE(reachable(*e, a)) << "another host";
        memcpy(&a, own.data(), sizeof(a));
        a.magic = 0;
        EXPECT_FALSE(reachable(*e, a)) << "not a cuda_ipc address";
        memcpy(&a, own.data(), sizeof(a));
        a.pid_ns += 1;
        EXPECT_TRUE(reachable(*e, a)) << "other PID namespace: socket path";
        EXPECT_FALSE(reachable(*p, a)) << "other PID namespace, pidfd only";
    });
}

TEST_F(test_uct_cuda_ipc, import_and_unmap_from_a_thread_without_current_context)
{
    cuda_two_processes(
        guarded([](oob_channel &ch) {
            init_device();
            allocation local;
            ASSERT_CU(local.allocate(mem_kind::legacy, SIZE));
            offer o;
            ASSERT_TRUE(recv_offer(ch, o));
            {
                /* Cache off: every operation imports and, from progress,
                 * unmaps -- all in a thread with no current context. */
                std::unique_ptr<uct_test_entity> e(new_ipc_entity({{"CACHE", "n"}}));
                imported imp(*e, o);
                ASSERT_UCS_OK(imp.status);
                std::thread t([&] {
                    for (int i = 0; i < 2; ++i) {
                        EXPECT_UCS_OK(imp.get(local.ptr, LENGTH, OFFSET));
                    }
                });
                t.join();
                EXPECT_TRUE(check_pattern(local.ptr, LENGTH, 1));
                ipc_cache_stats st = cache_stats(e->iface());
                EXPECT_EQ(2u, st.imports);
                EXPECT_EQ(0u, st.regions);
            }
            ASSERT_TRUE(ch.barrier());
        }),
        single_offer(mem_kind::vmm_two_chunks));
}

TEST_F(test_uct_cuda_ipc, export_cache_drops_an_allocation_and_closes_its_fds_when_it_is_freed)
{
    in_child([] {
        init_device();
        std::unique_ptr<uct_test_entity> e(new_ipc_entity());
        typedef size_t (*size_fn_t)(void);
        typedef uint64_t (*count_fn_t)(void);
        size_fn_t cache_size = (size_fn_t)module_symbol("uct_cuda_ipc_export_cache_size");
        count_fn_t exports   = (count_fn_t)module_symbol("uct_cuda_ipc_export_count");
        typedef int (*dup_fn_t)(int);
        typedef ucs_status_t (*parse_fn_t)(const void*, uct_cuda_ipc_key_t*);
        dup_fn_t fd_dup  = (dup_fn_t)module_symbol("uct_cuda_ipc_export_fd_dup");
        parse_fn_t parse = (parse_fn_t)module_symbol("uct_cuda_ipc_rkey_parse");
        ASSERT_TRUE((cache_size != NULL) && (exports != NULL) && (fd_dup != NULL) &&
                    (parse != NULL));

        for (mem_kind k : {mem_kind::legacy, mem_kind::pool_posix_fd,
                           mem_kind::vmm_two_chunks}) {
            SCOPED_TRACE(kind_name(k));
            size_t before = cache_size();
            allocation a;
            ASSERT_CU(a.allocate(k, SIZE));
            uct_cuda_ipc_key_t key;
            ASSERT_UCS_OK(parse(pack_key(*e, a.ptr, SIZE).data(), &key));
            uint64_t made = exports();
            EXPECT_GT(cache_size(), before);
            pack_key(*e, a.ptr + OFFSET, LENGTH); /* part of it: cache hits */
            EXPECT_EQ(made, exports());

            /* The fds of the export are open while it is cached. */
            std::vector<int> fds;
            if (key.kind == UCT_CUDA_IPC_KIND_POOL) {
                fds.push_back(key.pool_fd);
            }
            for (unsigned i = 0; (key.kind == UCT_CUDA_IPC_KIND_VMM) &&
                                 (i < key.num_chunks); ++i) {
                fds.push_back(key.chunks[i].fd);
            }
            for (int fd : fds) {
                int copy = fd_dup(fd);
                EXPECT_GE(copy, 0) << "fd " << fd;
                if (copy >= 0) {
                    close(copy);
                }
            }

            ASSERT_CU(a.release());
            EXPECT_EQ(before, cache_size()) << "free event did not drop the export";
            for (int fd : fds) {
                EXPECT_EQ(-1, fd_dup(fd)) << "fd " << fd << " still exported";
            }
        }
    });
}

TEST_F(test_uct_cuda_ipc, cache_respects_size_limit_but_never_unmaps_under_a_copy)
{
    cuda_two_processes(
        guarded([](oob_channel &ch) {
            if (is_model()) {
                setenv("CUDASIM_ASYNC", "1", 1); /* copies stay in flight */
            }
            init_device();
            allocation la, lb;
            ASSERT_CU(la.allocate(mem_kind::legacy, SIZE));
            ASSERT_CU(lb.allocate(mem_kind::legacy, SIZE));
            offer oa, ob;
            ASSERT_TRUE(recv_offer(ch, oa));
            ASSERT_TRUE(recv_offer(ch, ob));
            {
                /* Room for one 4 MiB object only. */
                std::unique_ptr<uct_test_entity> e(
                        new_ipc_entity({{"CACHE_MAX_SIZE", "5M"}}));
                imported a(*e, oa), b(*e, ob);
                ASSERT_UCS_OK(a.status);
                ASSERT_UCS_OK(b.status);
                uct_iov_t iova = make_iov(la.ptr, LENGTH), iovb = make_iov(lb.ptr, LENGTH);
                ucx_test::uct_test_completion ca, cb;
                ucs_status_t sa = uct_ep_get_zcopy(a.ep, &iova, 1, a.remote + OFFSET,
                                                   a.bundle.rkey, &ca.comp);
                ASSERT_TRUE((sa == UCS_OK) || (sa == UCS_INPROGRESS));
                /* Importing b exceeds the limit while a's copy may run. */
                ucs_status_t sb = uct_ep_get_zcopy(b.ep, &iovb, 1, b.remote + OFFSET,
                                                   b.bundle.rkey, &cb.comp);
                ASSERT_TRUE((sb == UCS_OK) || (sb == UCS_INPROGRESS));
                if (sa == UCS_INPROGRESS) {
                    EXPECT_EQ(2u, cache_stats(e->iface()).regions);
                    ASSERT_TRUE(wait_comp(*e, ca));
                }
                if (sb == UCS_INPROGRESS) {
                    ASSERT_TRUE(wait_comp(*e, cb));
                }
                EXPECT_TRUE(check_pattern(la.ptr, LENGTH, 1));
                EXPECT_TRUE(check_pattern(lb.ptr, LENGTH, 2));
                /* The next import trims the idle one (a, least recent). */
                ASSERT_UCS_OK(a.get(la.ptr, LENGTH, OFFSET));
                ipc_cache_stats st = cache_stats(e->iface());
                EXPECT_EQ(1u, st.regions);
                EXPECT_TRUE(check_pattern(la.ptr, LENGTH, 1));
            }
            ASSERT_TRUE(ch.barrier());
        }),
        offers({mem_kind::legacy, mem_kind::vmm_two_chunks}));
}

TEST_F(test_uct_cuda_ipc, vmm_with_fabric_handles_needs_no_fd_transfer)
{
    int fabric = probe_in_child([] {
        if (is_model()) {
            setenv("CUDASIM_FABRIC", "1", 1);
        }
        CUcontext ctx;
        CUdevice dev;
        CUmemAllocationProp prop;
        CUmemGenericAllocationHandle h;
        if ((cuInit(0) != CUDA_SUCCESS) || (cuDeviceGet(&dev, 0) != CUDA_SUCCESS) ||
            (cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS) ||
            (cuCtxSetCurrent(ctx) != CUDA_SUCCESS)) {
            return 0;
        }
        memset(&prop, 0, sizeof(prop));
        prop.type                 = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type        = CU_MEM_LOCATION_TYPE_DEVICE;
        prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
        if (cuMemCreate(&h, 2ul << 20, &prop, 0) != CUDA_SUCCESS) {
            return 0;
        }
        cuMemRelease(h);
        return 1;
    });
    if (fabric != 1) {
        GTEST_SKIP() << "fabric handles are not permitted here (no IMEX channel)";
    }

    /* pidfd only: a fabric key must not need any fd from the exporter. */
    ucx_test::process_fn_t imp = importer({{"FD_TRANSFER", "pidfd"}});
    cuda_two_processes(
        [imp](oob_channel &ch) {
            if (is_model()) {
                setenv("CUDASIM_FABRIC", "1", 1);
            }
            imp(ch);
        },
        guarded([](oob_channel &ch) {
            if (is_model()) {
                setenv("CUDASIM_FABRIC", "1", 1);
            }
            init_device();
            std::unique_ptr<uct_test_entity> e(new_ipc_entity());
            CUdeviceptr va;
            ASSERT_CU(cuMemAddressReserve(&va, SIZE, 0, 0, 0));
            std::vector<CUmemGenericAllocationHandle> hs =
                    vmm_map_at(va, SIZE, 2, CU_MEM_HANDLE_TYPE_FABRIC);
            write_pattern(va + OFFSET, LENGTH, 1);

            std::string blob = pack_key(*e, va, SIZE);
            typedef ucs_status_t (*parse_fn_t)(const void*, uct_cuda_ipc_key_t*);
            parse_fn_t parse = (parse_fn_t)module_symbol("uct_cuda_ipc_rkey_parse");
            ASSERT_TRUE(parse != NULL);
            uct_cuda_ipc_key_t key;
            ASSERT_UCS_OK(parse(blob.data(), &key));
            EXPECT_EQ(UCT_CUDA_IPC_KIND_VMM_FABRIC, key.kind);
            EXPECT_EQ(2u, key.num_chunks);

            ASSERT_TRUE(send_offer(ch, *e, va, SIZE));
            ASSERT_TRUE(ch.barrier()); /* importer got and put */
            EXPECT_TRUE(check_pattern(va + OFFSET, LENGTH, 2));
            ASSERT_TRUE(ch.barrier());
            vmm_unmap(va, SIZE, hs);
            EXPECT_CU(cuMemAddressFree(va, SIZE));
        }));
}

/*
 * Pool memory freed under a cached mapping, two ways: (a) cuMemFreeAsync
 * only -- the pool and its import live on, and the next allocation from the
 * same pool may take the same address and offset, so the importer's cache
 * must not hand out the old mapping; (b) cuMemPoolDestroy issued while the
 * allocation is still live (the driver frees the pool once the last
 * allocation goes), then a new pool. Either way the next transfer sees the
 * new data and neither process crashes.
 */
TEST_F(test_uct_cuda_ipc, pool_free_async_or_destroy_under_cached_mapping_sees_new_data)
{
    for (bool destroy_first : {false, true}) {
        SCOPED_TRACE(destroy_first ? "pool destroyed, then freed" :
                                     "freed async, pool kept");
        cuda_two_processes(
            importer_of_offers_freed_under_it(3),
            guarded([destroy_first](oob_channel &ch) {
                init_device();
                std::unique_ptr<uct_test_entity> e(new_ipc_entity());
                allocation a; /* holds the stream and the first pool */
                ASSERT_CU(a.allocate(mem_kind::pool_posix_fd, SIZE));
                CUmemoryPool pool   = a.pool;
                CUdeviceptr  ptr    = a.ptr, first = a.ptr;
                CUstream     stream = a.stream;
                CUmemPoolProps props;
                memset(&props, 0, sizeof(props));
                props.allocType     = CU_MEM_ALLOCATION_TYPE_PINNED;
                props.handleTypes   = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
                props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
                props.location.id   = 0;
                int same_address    = 0;
                for (unsigned seed = 1; seed <= 3; ++seed) {
                    write_pattern(ptr + OFFSET, LENGTH, seed);
                    ASSERT_TRUE(send_offer(ch, *e, ptr, SIZE));
                    ASSERT_TRUE(ch.barrier());
                    if (destroy_first) {
                        ASSERT_CU(cuMemPoolDestroy(pool));
                        ASSERT_CU(cuMemFreeAsync(ptr, stream));
                        ASSERT_CU(cuStreamSynchronize(stream));
                        ASSERT_CU(cuMemPoolCreate(&pool, &props));
                    } else {
                        ASSERT_CU(cuMemFreeAsync(ptr, stream));
                        ASSERT_CU(cuStreamSynchronize(stream));
                    }
                    ASSERT_CU(cuMemAllocFromPoolAsync(&ptr, SIZE, pool, stream));
                    ASSERT_CU(cuStreamSynchronize(stream));
                    same_address += (ptr == first);
                }
                printf("[ pool     ] %s: new allocation at the freed address %d of 3 "
                       "times\n", destroy_first ? "destroy" : "free_async",
                       same_address);
                a.ptr  = ptr;
                a.pool = pool;
                ASSERT_TRUE(ch.barrier());
            }));
    }
}

/* cuda_ipc's cost model: one GPU's own bandwidth when both buffers are on
 * the same device, the link's otherwise; UCX_CUDA_IPC_LAT/_BW replace the
 * defaults. */
TEST_F(test_uct_cuda_ipc, estimate_perf_same_gpu_peer_gpu_and_configuration)
{
    const ucs_memory_type_t H = UCS_MEMORY_TYPE_HOST, D = UCS_MEMORY_TYPE_CUDA;

    in_child([&] {
        init_device();
        {
            std::unique_ptr<uct_test_entity> e(new_ipc_entity());
            uct_iface_h iface    = e->iface();
            uct_perf_attr_t same = estimate_perf(iface, UCT_EP_OP_GET_ZCOPY, D, D, 3, 3);
            uct_perf_attr_t peer = estimate_perf(iface, UCT_EP_OP_GET_ZCOPY, D, D, 3, 4);
            uct_perf_attr_t unknown = estimate_perf(iface, UCT_EP_OP_PUT_ZCOPY, D, D);
            uct_perf_attr_t host = estimate_perf(iface, UCT_EP_OP_GET_ZCOPY, H, D);

            EXPECT_GT(same.bandwidth.dedicated, peer.bandwidth.dedicated);
            EXPECT_EQ(peer.bandwidth.dedicated, unknown.bandwidth.dedicated);
            EXPECT_GT(peer.bandwidth.dedicated, host.bandwidth.dedicated);
            EXPECT_GT(same.send_pre_overhead, 0.0);
            EXPECT_GT(same.latency.c, 0.0);
            EXPECT_EQ(0.0, same.recv_overhead);
        }
        setenv("UCX_CUDA_IPC_LAT", "3us", 1);
        setenv("UCX_CUDA_IPC_BW", "2G", 1);
        {
            std::unique_ptr<uct_test_entity> e(new_ipc_entity());
            uct_perf_attr_t a = estimate_perf(e->iface(), UCT_EP_OP_GET_ZCOPY, D, D,
                                              3, 3);

            EXPECT_NEAR(3e-6, a.latency.c, 1e-12);
            EXPECT_EQ(2.0 * 1024 * 1024 * 1024, a.bandwidth.dedicated);
        }
    });
}
