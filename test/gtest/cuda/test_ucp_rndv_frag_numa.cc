/**
 * @file test_ucp_rndv_frag_numa.cc
 * Host staging fragments of the rendezvous pipeline (UCX_RNDV_FRAG_MEM_TYPE=
 * host) are pooled per GPU, placed on the NUMA node nearest that GPU and
 * pinned. Checked through the worker's pools (ucp_rndv_frag_get) against
 * the kernel (get_mempolicy: where the pages are), the driver (the
 * fragment is registered host memory) and a copy through the fragment
 * to and from the GPU. On the model the two-node hwloc topology of
 * test/gtest/ucs/topo_two_nodes.xml names its GPUs; on any machine, its
 * own topology must put the fragment on a node that exists (on a GPU
 * machine with several nodes: the GPU's node, as sysfs says).
 * Device fragments (UCX_RNDV_FRAG_MEM_TYPE=cuda) are pooled per GPU too:
 * each lives on the GPU of the buffer it stages, and its index names its
 * pool (test_ucp_rndv_frag_device).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "cuda/cuda_test.h"
#include "common/numa_test.h"
#include "cuda/ucp_cuda_peer.h"

#include <ucp/api/ucp.h>
#include <ucp/rndv/ucp_rndv.h>
#include <ucs/sys/topo_numa.h>

#include <cstring>
#include <vector>

namespace {

const size_t k_dev_size = 2 * 1024 * 1024;

/* A context and a worker of this process (init_worker()): the fragment
 * pools live in it. Destroyed also when an assertion returns early. */
struct local_worker : public cuda_test::ucp_peer {
    ~local_worker()
    {
        destroy_worker();
    }
};

/* Device memory of @a device (its primary context made current for the
 * allocation, device 0's afterwards). */
CUdeviceptr device_alloc(int device)
{
    CUdeviceptr ptr = 0;

    cuda_test::init_device(device);
    EXPECT_CU(cuMemAlloc(&ptr, k_dev_size));
    cuda_test::init_device(0);
    return ptr;
}

/* One device buffer on each of GPUs 0 and 1, device 0 current after. */
void device_alloc_two(CUdeviceptr *d0, CUdeviceptr *d1)
{
    *d0 = device_alloc(0);
    *d1 = device_alloc(1);
    ASSERT_NE(0u, *d0);
    ASSERT_NE(0u, *d1);
}

/* A fragment of @a type for staging data of the GPU that holds @a buffer (a
 * pool of no GPU for host memory), as the rendezvous asks for one. */
ucp_rndv_frag_t *frag_for(ucp_worker_h worker, ucs_memory_type_t type,
                          const void *buffer, uint64_t owner)
{
    return ucp_rndv_frag_get(worker, type, ucp_rndv_buffer_gpu(worker, buffer), owner);
}

void device_free(CUdeviceptr ptr, int device)
{
    cuda_test::init_device(device);
    EXPECT_CU(cuMemFree(ptr));
    cuda_test::init_device(0);
}

/*
 * The fragment works as staging memory of the GPU at @a dev: data goes
 * host fragment -> device -> host intact; the driver knows it as host
 * memory (registered: an unregistered page is unknown to it) and ucp
 * says it is pinned; its pages are on a node that exists. Returns that
 * node (-1 on failure, or when the kernel will not say).
 */
int check_fragment(ucp_rndv_frag_t *frag, CUdeviceptr dev, unsigned seed)
{
    size_t n = (frag->size < k_dev_size) ? frag->size : k_dev_size;
    std::vector<unsigned char> back(n);
    unsigned char *p = (unsigned char*)frag->address;
    unsigned memtype = 0;
    int first, last;

    for (size_t i = 0; i < n; ++i) {
        p[i] = (unsigned char)(i * 7 + seed);
    }
    EXPECT_CU(cuMemcpyHtoD(dev, frag->address, n));
    EXPECT_CU(cuMemcpyDtoH(back.data(), dev, n));
    EXPECT_EQ(0, memcmp(back.data(), frag->address, n)) << "copy through the fragment";

    EXPECT_CU(cuPointerGetAttribute(&memtype, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                    (CUdeviceptr)(uintptr_t)frag->address));
    EXPECT_EQ((unsigned)CU_MEMORYTYPE_HOST, memtype) << "registered with the driver";
    EXPECT_TRUE(ucp_rndv_frag_pinned(frag));

    if (!numa_test::node_query_refusal().empty()) {
        return -1;
    }
    first = numa_test::node_of_page(frag->address);
    last  = numa_test::node_of_page((char*)frag->address + frag->size - 1);
    EXPECT_TRUE(numa_test::node_exists(first)) << "node " << first;
    EXPECT_EQ(first, last);
    return first;
}

class test_ucp_rndv_frag_numa : public ::testing::Test {
protected:
    void SetUp() override
    {
        if (cuda_test::device_count() < 1) {
            GTEST_SKIP() << "no CUDA device";
        }
        m_refusal = numa_test::node_query_refusal();
    }

    /* Where the kernel will not tell a page's node, everything else is
     * checked and the test then says what it could not check. */
    void skip_if_nodes_unknown()
    {
        if (!m_refusal.empty()) {
            GTEST_SKIP() << "fragments checked; " << m_refusal;
        }
    }

    std::string m_refusal;
};

/*
 * This machine's topology. On the model (CI) hwloc does not know the
 * model's bus id: the fragment is not placed, and must still be usable and
 * pinned. On a GPU machine with several nodes the fragment must be on the
 * GPU's node as sysfs (an independent source) tells it, even though this
 * thread runs on another node: first touch would put it there instead.
 */
TEST_F(test_ucp_rndv_frag_numa, host_fragment_is_pinned_usable_and_on_the_gpus_node)
{
    cuda_test::cuda_in_child([] {
        char bus_id[32] = {0};
        int expected, node, placed, resident;
        local_worker w;
        CUdevice dev;

        numa_test::use_topology(NULL);
        cuda_test::init_device(0);
        ASSERT_CU(cuDeviceGet(&dev, 0));
        ASSERT_CU(cuDeviceGetPCIBusId(bus_id, sizeof(bus_id), dev));
        expected = (numa_test::memory_nodes().size() > 1) ?
                           numa_test::sysfs_node_of_pci(bus_id) : -1;
        if (expected >= 0) {
            numa_test::run_off_node(expected);
        }

        ASSERT_NO_FATAL_FAILURE(w.init_worker());
        CUdeviceptr d = device_alloc(0);
        ASSERT_NE(0u, d);
        ucp_rndv_frag_t *frag =
            frag_for(w.m_worker, UCS_MEMORY_TYPE_HOST, (void *)(uintptr_t)d, 1);
        ASSERT_NE(nullptr, frag);
        node     = ucp_rndv_frag_numa_node(frag, &placed);
        resident = check_fragment(frag, d, 1);
        bool known = numa_test::node_query_refusal().empty();
        if (placed != UCS_NUMA_NODE_UNKNOWN) {
            EXPECT_EQ(node, placed);
            EXPECT_TRUE(!known || (placed == resident)) << "the kernel ignored the placement";
        }
        if (expected >= 0) {
#ifdef HAVE_HWLOC
            EXPECT_EQ(expected, node) << "GPU " << bus_id << ": hwloc vs sysfs";
            EXPECT_EQ(expected, placed) << "GPU " << bus_id;
            EXPECT_TRUE(!known || (expected == resident)) << "GPU " << bus_id;
#endif
        }
        printf("GPU0 %s: sysfs node %d, fragment node %d, placed %d, resident %d\n",
               bus_id, expected, node, placed, resident);
        ucp_rndv_frag_put(w.m_worker, frag);
        EXPECT_EQ(0u, ucp_rndv_frag_in_use(w.m_worker));
        device_free(d, 0);
    });
    skip_if_nodes_unknown();
}

/*
 * The two-node topology: GPU 0 (0000:10:00.0) is under package 1, GPU 1
 * (0000:11:00.0) under package 0. Each GPU's host fragments come from its
 * own pool on its own node; staging for host memory is not placed. On a
 * machine that has node 1 the pages must really be there.
 */
TEST_F(test_ucp_rndv_frag_numa, host_fragments_follow_each_gpus_node_in_two_node_topology)
{
#ifndef HAVE_HWLOC
    GTEST_SKIP() << "built without hwloc";
#endif
    if (!cuda_test::is_model()) {
        GTEST_SKIP() << "the XML topology names the CUDA model's PCI bus ids";
    }
    if (cuda_test::device_count() < 2) {
        GTEST_SKIP() << "needs two CUDA devices";
    }
    cuda_test::cuda_in_child([] {
        std::vector<char> host(4096);
        int placed0, placed1, placed_host;
        local_worker w;

        numa_test::use_topology(numa_test::two_node_xml().c_str());
        cuda_test::init_device(0);
        if (numa_test::node_exists(1)) {
            numa_test::run_off_node(1);
        }
        ASSERT_NO_FATAL_FAILURE(w.init_worker());
        CUdeviceptr d0, d1;
        ASSERT_NO_FATAL_FAILURE(device_alloc_two(&d0, &d1));

        ucp_rndv_frag_t *f0 =
            frag_for(w.m_worker, UCS_MEMORY_TYPE_HOST, (void *)(uintptr_t)d0, 1);
        ucp_rndv_frag_t *f1 =
            frag_for(w.m_worker, UCS_MEMORY_TYPE_HOST, (void *)(uintptr_t)d1, 2);
        ucp_rndv_frag_t *f0b =
            frag_for(w.m_worker, UCS_MEMORY_TYPE_HOST, (void *)(uintptr_t)(d0 + 4096), 3);
        ucp_rndv_frag_t *fh = frag_for(w.m_worker, UCS_MEMORY_TYPE_HOST, host.data(), 4);
        ASSERT_NE(nullptr, f0);
        ASSERT_NE(nullptr, f1);
        ASSERT_NE(nullptr, f0b);
        ASSERT_NE(nullptr, fh);

        EXPECT_EQ(1, ucp_rndv_frag_numa_node(f0, &placed0)) << "GPU 0, package 1";
        EXPECT_EQ(1, ucp_rndv_frag_numa_node(f0b, NULL)) << "GPU 0 again";
        EXPECT_EQ(0, ucp_rndv_frag_numa_node(f1, &placed1)) << "GPU 1, package 0";
        EXPECT_EQ(UCS_NUMA_NODE_UNKNOWN, ucp_rndv_frag_numa_node(fh, &placed_host));
        EXPECT_EQ(UCS_NUMA_NODE_UNKNOWN, placed_host);
        /* Pools per GPU: f0 and f0b are consecutive fragments of one pool,
         * f1 is of another. */
        EXPECT_EQ(f0->index + 1, f0b->index);
        EXPECT_NE(f0->index, f1->index);

        int r0 = check_fragment(f0, d0, 2);
        int r1 = check_fragment(f1, d1, 3);
        check_fragment(fh, d0, 4);
        if (numa_test::node_exists(1)) {
            EXPECT_EQ(1, placed0);
            EXPECT_EQ(0, placed1);
            if (numa_test::node_query_refusal().empty()) {
                EXPECT_EQ(1, r0);
                EXPECT_EQ(0, r1);
            }
        } else {
            /* This machine has no node 1: the placement is refused, the
             * memory still works (checked above). */
            EXPECT_EQ(UCS_NUMA_NODE_UNKNOWN, placed0);
        }

        for (ucp_rndv_frag_t *f : {f0, f1, f0b, fh}) {
            ucp_rndv_frag_put(w.m_worker, f);
        }
        EXPECT_EQ(0u, ucp_rndv_frag_in_use(w.m_worker));
        device_free(d0, 0);
        device_free(d1, 1);
    });
    skip_if_nodes_unknown();
}

} // namespace

/* Device fragments live on the GPU of the buffer they stage for, whichever
 * device is current, in a pool per GPU; ucp_rndv_frag_find() (the ack of a
 * fragment names it by index) finds each in its own pool, for its owner only. */
TEST(test_ucp_rndv_frag_device, device_fragments_live_on_the_gpu_of_the_buffer)
{
    if (cuda_test::device_count() < 2) {
        GTEST_SKIP() << "needs two CUDA devices";
    }
    cuda_test::cuda_in_child([] {
        setenv("UCX_RNDV_FRAG_SIZE", "host:512K,cuda:1M", 1);
        local_worker w;

        cuda_test::init_device(0);
        ASSERT_NO_FATAL_FAILURE(w.init_worker());
        CUdeviceptr d0, d1;
        ASSERT_NO_FATAL_FAILURE(device_alloc_two(&d0, &d1));

        ucp_rndv_frag_t *f1 =
            frag_for(w.m_worker, UCS_MEMORY_TYPE_CUDA, (void *)(uintptr_t)d1, 11);
        ucp_rndv_frag_t *f0 =
            frag_for(w.m_worker, UCS_MEMORY_TYPE_CUDA, (void *)(uintptr_t)d0, 12);
        ucp_rndv_frag_t *f1b = frag_for(w.m_worker, UCS_MEMORY_TYPE_CUDA,
                                        (void *)(uintptr_t)(d1 + 4096), 13);
        ASSERT_NE(nullptr, f0);
        ASSERT_NE(nullptr, f1);
        ASSERT_NE(nullptr, f1b);

        struct {
            ucp_rndv_frag_t *frag;
            int             device;
            uint64_t        owner;
        } want[] = {{f0, 0, 12}, {f1, 1, 11}, {f1b, 1, 13}};
        for (auto &x : want) {
            int ordinal = -1;
            EXPECT_CU(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                            (CUdeviceptr)(uintptr_t)x.frag->address));
            EXPECT_EQ(x.device, ordinal) << "fragment of owner " << x.owner;
            EXPECT_EQ(x.frag, ucp_rndv_frag_find(w.m_worker, UCS_MEMORY_TYPE_CUDA,
                                                 x.frag->index, x.owner));
            EXPECT_EQ(nullptr, ucp_rndv_frag_find(w.m_worker, UCS_MEMORY_TYPE_CUDA,
                                                  x.frag->index, 99));
        }
        EXPECT_NE(f0->index, f1->index);
        EXPECT_EQ(f1->index + 1, f1b->index);
        EXPECT_TRUE(ucp_rndv_frag_supported(w.m_worker, UCS_MEMORY_TYPE_CUDA,
                                            ucp_rndv_buffer_gpu(w.m_worker,
                                                                (void*)(uintptr_t)d1)));

        ucp_rndv_frag_put(w.m_worker, f0);
        ucp_rndv_frag_put(w.m_worker, f1);
        ucp_rndv_frag_put(w.m_worker, f1b);
        EXPECT_EQ(0u, ucp_rndv_frag_in_use(w.m_worker));
        w.destroy_worker();
        device_free(d0, 0);
        device_free(d1, 1);
    });
}
