/**
 * @file test_uct_cuda_ipc.h
 * Two-process helpers of the cuda_ipc transport tests: the exporter packs a
 * key of each buffer and offers it (pointer, iface address, key) over the
 * out-of-band channel; the importer unpacks it and gets or puts through it.
 * Used only inside processes forked by cuda_two_processes().
 */
#ifndef UCX_TEST_UCT_CUDA_IPC_H_
#define UCX_TEST_UCT_CUDA_IPC_H_

#include "test_uct_cuda.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace uct_cuda_ipc_test {

using namespace cuda_test;
using namespace uct_cuda_test;
using ucx_test::oob_channel;
using ucx_test::uct_test_entity;

const size_t SIZE = 4ul << 20;
const size_t OFFSET = (1ul << 20) + 123;    /* into the middle of the allocation */
const size_t LENGTH = (2ul << 20) + 4001;   /* crosses the 2 MiB chunk boundary */

typedef std::map<std::string, std::string> config_t;

inline uct_test_entity *new_ipc_entity(const config_t &iface_config = config_t())
{
    ucx_test::uct_entity_params params;
    params.iface_config = iface_config;
    return new uct_test_entity(find_resource("cuda_ipc"), params);
}

/* Register [ptr, ptr + len) on the cuda_ipc md and pack its key. */
inline std::string pack_key(uct_test_entity &e, CUdeviceptr ptr, size_t len)
{
    std::string blob(e.md_attr().rkey_packed_size, '\0');
    uct_mem_h memh;

    EXPECT_UCS_OK(uct_md_mem_reg(e.md(), (void*)ptr, len, UCT_MD_MEM_ACCESS_ALL,
                                 &memh));
    EXPECT_UCS_OK(uct_md_mkey_pack(e.md(), memh, &blob[0]));
    EXPECT_UCS_OK(uct_md_mem_dereg(e.md(), memh));
    return blob;
}

/* What the exporter tells the importer about one buffer. */
struct offer {
    uint64_t    ptr;
    std::string iface_addr;
    std::string rkey;
};

inline bool send_offer(oob_channel &ch, uct_test_entity &e, CUdeviceptr ptr, size_t len)
{
    uint64_t p = ptr;
    return ch.send(&p, sizeof(p)) && ch.send_blob(e.iface_address()) &&
           ch.send_blob(pack_key(e, ptr, len));
}

inline bool recv_offer(oob_channel &ch, offer &o)
{
    return ch.recv(&o.ptr, sizeof(o.ptr)) && ch.recv_blob(o.iface_addr) &&
           ch.recv_blob(o.rkey);
}

/* The next @a count offers, in order (fewer when the channel failed). */
inline std::vector<offer> recv_offers(oob_channel &ch, size_t count)
{
    std::vector<offer> offers(count);
    for (size_t i = 0; i < count; ++i) {
        if (!recv_offer(ch, offers[i])) {
            ADD_FAILURE() << "offer " << i << " did not arrive";
            offers.resize(i);
            break;
        }
    }
    return offers;
}

/* The importer's view of one offered buffer. */
struct imported {
    imported(uct_test_entity &ent, const offer &o) : e(ent), remote(o.ptr)
    {
        status = uct_rkey_unpack(e.component(), o.rkey.data(), &bundle);
        if (status == UCS_OK) {
            ep = e.create_ep_to_iface(std::string(), o.iface_addr);
        }
    }

    ~imported()
    {
        if (status == UCS_OK) {
            uct_rkey_release(e.component(), &bundle);
        }
    }

    ucs_status_t get(CUdeviceptr local, size_t len, size_t offset)
    {
        uct_iov_t iov = make_iov(local, len);
        return zcopy_wait(e, [&](uct_completion_t *comp) {
            return uct_ep_get_zcopy(ep, &iov, 1, remote + offset, bundle.rkey, comp);
        });
    }

    ucs_status_t put(CUdeviceptr local, size_t len, size_t offset)
    {
        uct_iov_t iov = make_iov(local, len);
        return zcopy_wait(e, [&](uct_completion_t *comp) {
            return uct_ep_put_zcopy(ep, &iov, 1, remote + offset, bundle.rkey, comp);
        });
    }

    uct_test_entity   &e;
    uint64_t          remote;
    uct_rkey_bundle_t bundle;
    ucs_status_t      status;
    uct_ep_h          ep = NULL;
};

/*
 * Exporter for importer-side checks: allocate each of @a kinds, fill
 * [OFFSET, OFFSET + LENGTH) of the i-th with seed i + 1, offer them in order,
 * and keep them alive until the importer's barrier.
 */
inline ucx_test::process_fn_t offers(std::vector<mem_kind> kinds)
{
    return guarded([kinds](oob_channel &ch) {
        init_device();
        std::unique_ptr<uct_test_entity> e(new_ipc_entity());
        std::vector<allocation> allocs(kinds.size());
        for (size_t i = 0; i < kinds.size(); ++i) {
            ASSERT_CU(allocs[i].allocate(kinds[i], SIZE));
            write_pattern(allocs[i].ptr + OFFSET, LENGTH, (unsigned)i + 1);
        }
        for (const allocation &a : allocs) {
            ASSERT_TRUE(send_offer(ch, *e, a.ptr, SIZE));
        }
        ASSERT_TRUE(ch.barrier());
    });
}

inline ucx_test::process_fn_t single_offer(mem_kind kind)
{
    return offers({kind});
}

} // namespace uct_cuda_ipc_test

#endif
