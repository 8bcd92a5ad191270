/**
 * @file numa_test.h
 * What the NUMA placement tests ask the kernel directly (not through the
 * code under test): which node a page is on, which nodes exist, and how to
 * run the calling thread away from a node so that memory placed only by the
 * default policy (first touch) would land on the wrong one. Also the
 * two-node hwloc topology the lookup tests load.
 */
#ifndef UCX_TEST_NUMA_TEST_H_
#define UCX_TEST_NUMA_TEST_H_

#include <ucs/sys/topo_numa.h>

#include <linux/mempolicy.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace numa_test {

/** The two-node topology: model GPU 0 (0000:10:00.0) under package 1 (node
 *  1), model GPU 1 (0000:11:00.0) under package 0, 0000:30:00.0 on the
 *  machine (both nodes). */
inline std::string two_node_xml()
{
    return std::string(UCX_TEST_SRC_DIR) + "/ucs/topo_two_nodes.xml";
}

/** Make libucs load @a xml as the topology from now on (NULL: this
 *  machine's). */
inline void use_topology(const char *xml)
{
    if (xml != NULL) {
        setenv("HWLOC_XMLFILE", xml, 1);
    } else {
        unsetenv("HWLOC_XMLFILE");
    }
    ucs_topo_numa_cleanup();
}

/** Node of the (touched) page at @a address, -1 if the kernel does not say. */
inline int node_of_page(const void *address)
{
    int node = -1;

    if (syscall(SYS_get_mempolicy, &node, NULL, 0UL, address,
                MPOL_F_NODE | MPOL_F_ADDR) != 0) {
        return -1;
    }
    return node;
}

/** Why the kernel will not say which node a page is on ("" if it will):
 *  container seccomp profiles refuse get_mempolicy without CAP_SYS_NICE,
 *  and kernels without NUMA support refuse it always. */
inline std::string node_query_refusal()
{
    static const int probe = 0;
    int node               = -1;

    if (syscall(SYS_get_mempolicy, &node, NULL, 0UL, &probe,
                MPOL_F_NODE | MPOL_F_ADDR) == 0) {
        return "";
    }
    return std::string("get_mempolicy refused (") + strerror(errno) +
           "): the node of a page cannot be checked here";
}

/** Numbers of a sysfs list such as "0-3,8,10-11". */
inline std::vector<int> parse_list(const std::string &text)
{
    std::vector<int> out;
    const char *p = text.c_str();
    char *end;
    long a, b;

    while (*p != '\0' && *p != '\n') {
        a = strtol(p, &end, 10);
        if (end == p) {
            break;
        }
        b = a;
        if (*end == '-') {
            p = end + 1;
            b = strtol(p, &end, 10);
        }
        for (long i = a; i <= b; ++i) {
            out.push_back((int)i);
        }
        p = (*end == ',') ? end + 1 : end;
    }
    return out;
}

inline std::string read_line(const std::string &path)
{
    std::ifstream f(path);
    std::string line;

    std::getline(f, line);
    return line;
}

/** Nodes that have memory (empty if sysfs does not say). */
inline std::vector<int> memory_nodes()
{
    return parse_list(read_line("/sys/devices/system/node/has_memory"));
}

inline bool node_exists(int node)
{
    for (int n : memory_nodes()) {
        if (n == node) {
            return true;
        }
    }
    return false;
}

/** NUMA node of a PCI device as sysfs says (an independent source; -1). */
inline int sysfs_node_of_pci(std::string bus_id)
{
    std::string text;

    for (char &c : bus_id) {
        c = (char)tolower((unsigned char)c);
    }
    text = read_line("/sys/bus/pci/devices/" + bus_id + "/numa_node");
    return text.empty() ? -1 : atoi(text.c_str());
}

/** Pin the calling thread to a CPU of a node other than @a node, so that
 *  first-touch placement would miss @a node. @return whether it could. */
inline bool run_off_node(int node)
{
    cpu_set_t set;

    for (int other : memory_nodes()) {
        if (other == node) {
            continue;
        }
        std::vector<int> cpus = parse_list(read_line(
                "/sys/devices/system/node/node" + std::to_string(other) + "/cpulist"));
        if (cpus.empty()) {
            continue;
        }
        CPU_ZERO(&set);
        CPU_SET(cpus[0], &set);
        if (sched_setaffinity(0, sizeof(set), &set) == 0) {
            return true;
        }
    }
    return false;
}

} // namespace numa_test

#endif
