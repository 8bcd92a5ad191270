/**
 * @file topo_numa.h
 * NUMA placement for memory that serves a PCI device: which node is nearest
 * the device (from hwloc, when libucs is built with it), and host memory
 * whose pages are placed on a given node before anything touches them.
 *
 * Without hwloc, or when the topology does not know the device, the node is
 * UCS_NUMA_NODE_UNKNOWN and memory is allocated without a placement; why is
 * logged at debug level. Nothing here fails because of NUMA.
 *
 * Thread safety: every function may be called from any thread.
 */
#ifndef UCS_SYS_TOPO_NUMA_H_
#define UCS_SYS_TOPO_NUMA_H_

#include <ucs/sys/compiler_def.h>
#include <ucs/type/status.h>

#include <stddef.h>

BEGIN_C_DECLS

/** No node: not known, or not to be placed. */
#define UCS_NUMA_NODE_UNKNOWN (-1)

/**
 * NUMA node nearest the PCI device @a bus_id ("dddd:bb:ss.f", see
 * ucs_topo_bus_id_parse()): in hwloc's topology of this machine, the first
 * ancestor of the device that is not an I/O object (a package, a group, the
 * machine) and the NUMA nodes it covers; when it covers several, the lowest
 * (logged at debug level: hwloc does not tell which is nearer).
 *
 * The topology is loaded on the first call and kept (with PCI devices, a
 * few milliseconds to tens of them); hwloc's own environment applies at that
 * moment, so HWLOC_XMLFILE=file.xml replaces the machine by a saved or
 * synthetic topology (tests do that, see ucs_topo_numa_cleanup()).
 *
 * @return the node number as the kernel numbers it (hwloc's os_index), or
 *         UCS_NUMA_NODE_UNKNOWN: built without hwloc, the topology cannot be
 *         loaded, @a bus_id does not parse, hwloc has no such device, or its
 *         ancestor has no node.
 */
int ucs_topo_numa_node_of_pci(const char *bus_id);

/**
 * Forget the loaded topology; the next lookup loads it again (reading
 * HWLOC_XMLFILE again). For tests and for library unload.
 */
void ucs_topo_numa_cleanup(void);

/**
 * Private anonymous memory of @a length bytes (rounded up to pages) whose
 * pages the kernel takes from @a node: the policy (MPOL_PREFERRED) is set
 * before the first touch, so it holds also for pages that a later pinning
 * (cuMemHostRegister) faults in. Preferred rather than bound: when the node
 * is full the pages come from another node instead of the allocation
 * failing or the OOM killer running.
 *
 * @param length     bytes, > 0.
 * @param node       UCS_NUMA_NODE_UNKNOWN: no placement.
 * @param address_p  the memory, page aligned and zeroed; free it with
 *                   ucs_topo_numa_free() and the same @a length.
 * @param placed_p   may be NULL; receives @a node when the policy was set,
 *                   else UCS_NUMA_NODE_UNKNOWN (no node asked for, or the
 *                   kernel refused it: the node does not exist or is not
 *                   allowed to this process, or mbind is forbidden; logged
 *                   at debug level, and the memory is still returned).
 * @return UCS_OK, UCS_ERR_INVALID_PARAM (@a length 0) or UCS_ERR_NO_MEMORY.
 */
ucs_status_t ucs_topo_numa_alloc(size_t length, int node, void **address_p,
                                 int *placed_p);

/** Release memory of ucs_topo_numa_alloc() (@a length as given there). */
void ucs_topo_numa_free(void *address, size_t length);

END_C_DECLS

#endif
