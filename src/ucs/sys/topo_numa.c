#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <ucs/sys/topo_numa.h>
#include <ucs/sys/topo_device.h>
#include <ucs/sys/sys.h>
#include <ucs/debug/log.h>

#include <linux/mempolicy.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef HAVE_HWLOC
#  include <hwloc.h>
#endif

/*
 * mbind is called through syscall(2) so that libucs needs neither libnuma
 * nor hwloc for placement: hwloc only answers "which node", and a node
 * number from anywhere else (a test, a future sysfs reader) places the same.
 */

#define UCS_TOPO_NUMA_MASK_BITS (8 * sizeof(unsigned long))

static pthread_mutex_t ucs_topo_numa_lock = PTHREAD_MUTEX_INITIALIZER;

#ifdef HAVE_HWLOC

static hwloc_topology_t ucs_topo_numa_topology; /* NULL: not loaded (yet) */
static int ucs_topo_numa_load_failed;           /* do not retry every lookup */

/* Called with the lock held. */
static hwloc_topology_t ucs_topo_numa_topology_get(void)
{
    hwloc_topology_t topology;
    const char *backend;
    int err;

    if ((ucs_topo_numa_topology != NULL) || ucs_topo_numa_load_failed) {
        return ucs_topo_numa_topology;
    }
    if (hwloc_topology_init(&topology) != 0) {
        ucs_debug("topo: hwloc_topology_init failed: %s", strerror(errno));
        ucs_topo_numa_load_failed = 1;
        return NULL;
    }
    /* PCI devices are not in the topology by default. Caches are of no use
     * here and cost most of the load time (failing to drop them costs only
     * that time). */
    (void)hwloc_topology_set_cache_types_filter(topology, HWLOC_TYPE_FILTER_KEEP_NONE);
    (void)hwloc_topology_set_icache_types_filter(topology, HWLOC_TYPE_FILTER_KEEP_NONE);
    err = hwloc_topology_set_io_types_filter(topology, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
#if HWLOC_API_VERSION >= 0x20100
    /* Bus ids and their locality come from Linux's sysfs discovery; the
     * libpciaccess-based "pci" component adds only device names, and its
     * plugin leaves allocations behind when hwloc unloads it, which
     * LeakSanitizer reports in every ASan-built program that loads us. */
    if (err == 0) {
        (void)hwloc_topology_set_components(topology,
                                            HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST,
                                            "pci");
    }
#endif
    if (err == 0) {
        err = hwloc_topology_load(topology);
    }
    if (err != 0) {
        ucs_debug("topo: hwloc cannot load the topology: %s", strerror(errno));
        hwloc_topology_destroy(topology);
        ucs_topo_numa_load_failed = 1;
        return NULL;
    }
    /* hwloc falls back to this machine when HWLOC_XMLFILE cannot be read:
     * say which one was loaded. */
    backend = hwloc_obj_get_info_by_name(hwloc_get_root_obj(topology), "Backend");
    ucs_debug("topo: hwloc topology loaded: %d NUMA nodes, backend %s%s%s",
              hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_NUMANODE),
              (backend != NULL) ? backend : "?",
              (getenv("HWLOC_XMLFILE") != NULL) ? ", HWLOC_XMLFILE=" : "",
              (getenv("HWLOC_XMLFILE") != NULL) ? getenv("HWLOC_XMLFILE") : "");
    ucs_topo_numa_topology = topology;
    return topology;
}

/* Called with the lock held. */
static int ucs_topo_numa_lookup(const char *name, const ucs_sys_bus_id_t *bus_id)
{
    hwloc_topology_t topology = ucs_topo_numa_topology_get();
    hwloc_obj_t dev, ancestor;
    char nodes[64];
    int node;

    if (topology == NULL) {
        return UCS_NUMA_NODE_UNKNOWN;
    }
    dev = hwloc_get_pcidev_by_busid(topology, bus_id->domain, bus_id->bus, bus_id->slot,
                                    bus_id->function);
    if (dev == NULL) {
        ucs_debug("topo: PCI %s is not in hwloc's topology: NUMA node unknown", name);
        return UCS_NUMA_NODE_UNKNOWN;
    }
    ancestor = hwloc_get_non_io_ancestor_obj(topology, dev);
    if ((ancestor == NULL) || (ancestor->nodeset == NULL) ||
        hwloc_bitmap_iszero(ancestor->nodeset)) {
        ucs_debug("topo: PCI %s has no ancestor with a NUMA node in hwloc's topology",
                  name);
        return UCS_NUMA_NODE_UNKNOWN;
    }
    node = hwloc_bitmap_first(ancestor->nodeset);
    if (hwloc_bitmap_weight(ancestor->nodeset) > 1) {
        hwloc_bitmap_list_snprintf(nodes, sizeof(nodes), ancestor->nodeset);
        ucs_debug("topo: PCI %s hangs off %s L#%u, which spans NUMA nodes %s: "
                  "taking the lowest, %d",
                  name, hwloc_obj_type_string(ancestor->type), ancestor->logical_index,
                  nodes, node);
    } else {
        ucs_debug("topo: PCI %s is near NUMA node %d (under %s L#%u)", name, node,
                  hwloc_obj_type_string(ancestor->type), ancestor->logical_index);
    }
    return node;
}

void ucs_topo_numa_cleanup(void)
{
    pthread_mutex_lock(&ucs_topo_numa_lock);
    if (ucs_topo_numa_topology != NULL) {
        hwloc_topology_destroy(ucs_topo_numa_topology);
        ucs_topo_numa_topology = NULL;
    }
    ucs_topo_numa_load_failed = 0;
    pthread_mutex_unlock(&ucs_topo_numa_lock);
}

#else /* !HAVE_HWLOC */

static int ucs_topo_numa_lookup(const char *name, const ucs_sys_bus_id_t *bus_id)
{
    (void)bus_id;
    ucs_debug("topo: libucs was built without hwloc: NUMA node of PCI %s unknown", name);
    return UCS_NUMA_NODE_UNKNOWN;
}

void ucs_topo_numa_cleanup(void)
{
}

#endif /* HAVE_HWLOC */

int ucs_topo_numa_node_of_pci(const char *bus_id)
{
    ucs_sys_bus_id_t parsed;
    int node;

    if (ucs_topo_bus_id_parse(bus_id, &parsed) != UCS_OK) {
        ucs_debug("topo: '%s' is not a PCI bus id: NUMA node unknown",
                  (bus_id != NULL) ? bus_id : "(null)");
        return UCS_NUMA_NODE_UNKNOWN;
    }
    pthread_mutex_lock(&ucs_topo_numa_lock);
    node = ucs_topo_numa_lookup(bus_id, &parsed);
    pthread_mutex_unlock(&ucs_topo_numa_lock);
    return node;
}

static void UCS_F_DTOR ucs_topo_numa_unload(void)
{
    ucs_topo_numa_cleanup();
}

static size_t ucs_topo_numa_alloc_size(size_t length)
{
    size_t page = ucs_get_page_size();

    return (length + page - 1) / page * page;
}

/* Set the policy of untouched pages; 0 or an errno. */
static int ucs_topo_numa_prefer(void *address, size_t size, int node)
{
    unsigned long mask[(1024 + UCS_TOPO_NUMA_MASK_BITS - 1) / UCS_TOPO_NUMA_MASK_BITS];
    unsigned long words = (unsigned long)node / UCS_TOPO_NUMA_MASK_BITS + 1;

    if ((node < 0) || (words > sizeof(mask) / sizeof(mask[0]))) {
        return EINVAL;
    }
    memset(mask, 0, sizeof(mask));
    mask[node / UCS_TOPO_NUMA_MASK_BITS] = 1ul << (node % UCS_TOPO_NUMA_MASK_BITS);
    /* The kernel reads maxnode - 1 bits. */
    if (syscall(SYS_mbind, address, size, MPOL_PREFERRED, mask,
                words * UCS_TOPO_NUMA_MASK_BITS + 1, 0) != 0) {
        return errno;
    }
    return 0;
}

ucs_status_t ucs_topo_numa_alloc(size_t length, int node, void **address_p, int *placed_p)
{
    size_t size;
    void *address;
    int err;

    if (placed_p != NULL) {
        *placed_p = UCS_NUMA_NODE_UNKNOWN;
    }
    if (length == 0) {
        return UCS_ERR_INVALID_PARAM;
    }
    size = ucs_topo_numa_alloc_size(length);
    address =
        mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (address == MAP_FAILED) {
        ucs_debug("topo: mmap of %zu bytes failed: %s", size, strerror(errno));
        return UCS_ERR_NO_MEMORY;
    }
    if (node != UCS_NUMA_NODE_UNKNOWN) {
        err = ucs_topo_numa_prefer(address, size, node);
        if (err != 0) {
            /* One node, a node this cpuset may not use, or a container that
             * forbids mbind: the memory works, it is only not placed. */
            ucs_debug("topo: cannot place %zu bytes at %p on NUMA node %d: %s; "
                      "left to the default policy",
                      size, address, node, strerror(err));
        } else if (placed_p != NULL) {
            *placed_p = node;
        }
    }
    *address_p = address;
    return UCS_OK;
}

void ucs_topo_numa_free(void *address, size_t length)
{
    if ((address != NULL) && (munmap(address, ucs_topo_numa_alloc_size(length)) != 0)) {
        ucs_debug("topo: munmap(%p, %zu) failed: %s", address, length, strerror(errno));
    }
}
