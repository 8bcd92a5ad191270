/**
 * @file test_topo_numa.cc
 * NUMA placement helpers of libucs (ucs/sys/topo_numa.h, topo_device.h):
 * the node nearest a PCI device, looked up in a two-node hwloc topology
 * loaded from XML (test/gtest/ucs/topo_two_nodes.xml), bus id parsing, the
 * system-device table, and memory placed on a node, checked with the
 * kernel's own answer (get_mempolicy) on this machine.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "common/numa_test.h"

#include <ucs/sys/topo_device.h>
#include <ucs/sys/topo_numa.h>
#include <ucs/sys/sys.h>

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace {

class test_topo_numa : public ::testing::Test {
protected:
    void SetUp() override
    {
        const char *xml = getenv("HWLOC_XMLFILE");

        m_had_xml = (xml != NULL);
        m_xml     = m_had_xml ? xml : "";
    }

    void TearDown() override
    {
        numa_test::use_topology(m_had_xml ? m_xml.c_str() : NULL);
    }

    /* The lookup tests need hwloc; without it they check the fallback. */
    void use_two_nodes()
    {
        numa_test::use_topology(numa_test::two_node_xml().c_str());
    }

    /* The checks of this machine's own topology expect it to have no
     * device at the model GPU's bus id; a host that has one cannot say. */
    void skip_if_machine_has_model_bus_id()
    {
        if (access("/sys/bus/pci/devices/0000:10:00.0", F_OK) == 0) {
            GTEST_SKIP() << "this machine has a PCI device at 0000:10:00.0, "
                            "the model GPU's bus id";
        }
    }

    static void expect_usable(void *p, size_t length)
    {
        const unsigned char *c = (const unsigned char*)p;

        ASSERT_NE(nullptr, p);
        EXPECT_EQ(0u, (uintptr_t)p % ucs_get_page_size());
        EXPECT_EQ(0, c[0]);
        EXPECT_EQ(0, c[length - 1]);
        memset(p, 0x5a, length);
        EXPECT_EQ(0x5a, c[0]);
        EXPECT_EQ(0x5a, c[length - 1]);
    }

    bool        m_had_xml = false;
    std::string m_xml;
};

#ifdef HAVE_HWLOC

TEST_F(test_topo_numa, gpu_under_second_package_is_near_node_1)
{
    use_two_nodes();
    EXPECT_EQ(1, ucs_topo_numa_node_of_pci("0000:10:00.0"));
    /* The other package's device: the answer follows the device. */
    EXPECT_EQ(0, ucs_topo_numa_node_of_pci("0000:11:00.0"));
    /* Case and an 8-digit domain (nvidia-smi) name the same device. */
    EXPECT_EQ(1, ucs_topo_numa_node_of_pci("00000000:10:00.0"));
}

TEST_F(test_topo_numa, device_spanning_both_nodes_takes_the_lowest)
{
    use_two_nodes();
    EXPECT_EQ(0, ucs_topo_numa_node_of_pci("0000:30:00.0"));
}

TEST_F(test_topo_numa, unknown_or_malformed_bus_id_is_unknown)
{
    use_two_nodes();
    EXPECT_EQ(UCS_NUMA_NODE_UNKNOWN, ucs_topo_numa_node_of_pci("0000:12:00.0"));
    EXPECT_EQ(UCS_NUMA_NODE_UNKNOWN, ucs_topo_numa_node_of_pci("0000:10:00.1"));
    EXPECT_EQ(UCS_NUMA_NODE_UNKNOWN, ucs_topo_numa_node_of_pci("0001:10:00.0"));
    for (const char *bad : {"", "garbage", "0000:10:00", "0000:10:00.0x",
                            " 0000:10:00.0", "0000:100:00.0", "0000:10:20.0",
                            "0000:10:00.8", "0x0:10:00.0"}) {
        EXPECT_EQ(UCS_NUMA_NODE_UNKNOWN, ucs_topo_numa_node_of_pci(bad)) << bad;
    }
    EXPECT_EQ(UCS_NUMA_NODE_UNKNOWN, ucs_topo_numa_node_of_pci(NULL));
}

TEST_F(test_topo_numa, topology_is_reloaded_after_cleanup)
{
    use_two_nodes();
    ASSERT_EQ(1, ucs_topo_numa_node_of_pci("0000:10:00.0"));
    skip_if_machine_has_model_bus_id();
    numa_test::use_topology(NULL);
    EXPECT_EQ(UCS_NUMA_NODE_UNKNOWN, ucs_topo_numa_node_of_pci("0000:10:00.0"));
}

/* hwloc then discovers this machine, which has no device at the model's
 * bus id: an answer, never a crash or a made-up node. */
TEST_F(test_topo_numa, unreadable_topology_file_falls_back_to_this_machine)
{
    skip_if_machine_has_model_bus_id();
    numa_test::use_topology("/nonexistent/topology.xml");
    EXPECT_EQ(UCS_NUMA_NODE_UNKNOWN, ucs_topo_numa_node_of_pci("0000:10:00.0"));
}

TEST_F(test_topo_numa, sys_device_numa_node_comes_from_its_bus_id)
{
    ucs_sys_device_t dev0, dev1;

    use_two_nodes();
    ASSERT_EQ(UCS_OK, ucs_topo_find_device_by_bdf_name("0000:10:00.0", &dev0));
    ASSERT_EQ(UCS_OK, ucs_topo_find_device_by_bdf_name("0000:11:00.0", &dev1));
    EXPECT_EQ(1, ucs_topo_sys_device_numa_node(dev0));
    EXPECT_EQ(0, ucs_topo_sys_device_numa_node(dev1));
    EXPECT_EQ(UCS_NUMA_NODE_UNKNOWN,
              ucs_topo_sys_device_numa_node(UCS_SYS_DEVICE_ID_UNKNOWN));
}

#else

TEST_F(test_topo_numa, without_hwloc_every_node_is_unknown)
{
    use_two_nodes();
    EXPECT_EQ(UCS_NUMA_NODE_UNKNOWN, ucs_topo_numa_node_of_pci("0000:10:00.0"));
}

#endif

TEST_F(test_topo_numa, bus_id_parses_in_either_case_and_prints_lower)
{
    char buf[UCS_SYS_BUS_ID_STR_MAX];
    ucs_sys_bus_id_t id;

    ASSERT_EQ(UCS_OK, ucs_topo_bus_id_parse("0000:1B:1f.7", &id));
    EXPECT_EQ(0u, id.domain);
    EXPECT_EQ(0x1b, id.bus);
    EXPECT_EQ(0x1f, id.slot);
    EXPECT_EQ(7, id.function);
    EXPECT_STREQ("0000:1b:1f.7", ucs_topo_bus_id_str(&id, buf, sizeof(buf)));
    ASSERT_EQ(UCS_OK, ucs_topo_bus_id_parse("10000:01:00.0", &id));
    EXPECT_EQ(0x10000u, id.domain);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucs_topo_bus_id_parse("0000:1b:00.0\n", &id));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucs_topo_bus_id_parse("-1:1b:00.0", &id));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucs_topo_bus_id_parse("100000000:1b:00.0", &id));
}

TEST_F(test_topo_numa, sys_device_table_keeps_one_number_per_bus_id)
{
    char buf[UCS_SYS_BUS_ID_STR_MAX];
    ucs_sys_device_t a, b, c;

    ASSERT_EQ(UCS_OK, ucs_topo_find_device_by_bdf_name("0000:42:00.0", &a));
    ASSERT_EQ(UCS_OK, ucs_topo_find_device_by_bdf_name("0000:42:00.0", &b));
    ASSERT_EQ(UCS_OK, ucs_topo_find_device_by_bdf_name("0000:43:00.0", &c));
    EXPECT_EQ(a, b);
    EXPECT_NE(a, c);
    EXPECT_NE(UCS_SYS_DEVICE_ID_UNKNOWN, a);
    EXPECT_STREQ("0000:42:00.0", ucs_topo_sys_device_bdf_name(a, buf, sizeof(buf)));
    EXPECT_STREQ("0000:43:00.0", ucs_topo_sys_device_bdf_name(c, buf, sizeof(buf)));
    EXPECT_STREQ("unknown", ucs_topo_sys_device_bdf_name(UCS_SYS_DEVICE_ID_UNKNOWN, buf,
                                                         sizeof(buf)));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucs_topo_find_device_by_bdf_name("x", &b));
    EXPECT_EQ(UCS_SYS_DEVICE_ID_UNKNOWN, b);
}

TEST_F(test_topo_numa, allocation_without_a_node_works)
{
    const size_t length = 3 * ucs_get_page_size() + 1;
    int placed          = 0;
    void *p             = NULL;

    ASSERT_EQ(UCS_OK, ucs_topo_numa_alloc(length, UCS_NUMA_NODE_UNKNOWN, &p, &placed));
    EXPECT_EQ(UCS_NUMA_NODE_UNKNOWN, placed);
    expect_usable(p, length);
    std::string refusal = numa_test::node_query_refusal();
    if (refusal.empty()) {
        EXPECT_TRUE(numa_test::node_exists(numa_test::node_of_page(p)));
    }
    ucs_topo_numa_free(p, length);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucs_topo_numa_alloc(0, 0, &p, NULL));
    if (!refusal.empty()) {
        GTEST_SKIP() << "allocation checked; " << refusal;
    }
}

TEST_F(test_topo_numa, allocation_on_a_missing_node_falls_back)
{
    const size_t length = 2 * ucs_get_page_size();
    int missing         = 0;
    int placed          = 0;
    void *p             = NULL;

    std::string refusal = numa_test::node_query_refusal();

    while (numa_test::node_exists(missing)) {
        ++missing;
    }
    for (int node : {missing, 1023, 5000}) {
        ASSERT_EQ(UCS_OK, ucs_topo_numa_alloc(length, node, &p, &placed)) << node;
        EXPECT_EQ(UCS_NUMA_NODE_UNKNOWN, placed) << node;
        expect_usable(p, length);
        if (refusal.empty()) {
            EXPECT_TRUE(numa_test::node_exists(numa_test::node_of_page(p)));
        }
        ucs_topo_numa_free(p, length);
    }
    if (!refusal.empty()) {
        GTEST_SKIP() << "fallback allocations checked; " << refusal;
    }
}

TEST_F(test_topo_numa, allocation_on_each_node_resides_there)
{
    const size_t length = 4 * ucs_get_page_size();
    std::vector<int> nodes = numa_test::memory_nodes();

    if (nodes.empty()) {
        GTEST_SKIP() << "sysfs lists no NUMA node with memory";
    }
    for (int node : nodes) {
        int placed = UCS_NUMA_NODE_UNKNOWN;
        void *p    = NULL;

        ASSERT_EQ(UCS_OK, ucs_topo_numa_alloc(length, node, &p, &placed));
        if (placed == UCS_NUMA_NODE_UNKNOWN) {
            ucs_topo_numa_free(p, length);
            GTEST_SKIP() << "the kernel refuses mbind here (container policy?)";
        }
        EXPECT_EQ(node, placed);
        /* First touch from a CPU of another node where there is one: only
         * the policy can put the pages on this node then. */
        cpu_set_t saved;
        ASSERT_EQ(0, sched_getaffinity(0, sizeof(saved), &saved));
        numa_test::run_off_node(node);
        expect_usable(p, length);
        EXPECT_EQ(node, numa_test::node_of_page(p));
        EXPECT_EQ(node, numa_test::node_of_page((char*)p + length - 1));
        sched_setaffinity(0, sizeof(saved), &saved);
        ucs_topo_numa_free(p, length);
    }
}

} // namespace
