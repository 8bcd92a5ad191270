/**
 * @file topo_device.h
 * System devices (GPUs, NICs) named by their PCI bus id, numbered by a small
 * per-process table so that layers can hand a device to each other as one
 * byte (uct_md_mem_attr_t::sys_dev) without knowing what kind of device it
 * is. A transport registers the devices it finds; a user of the number asks
 * the table for the bus id or the NUMA node.
 *
 * Thread safety: every function may be called from any thread.
 */
#ifndef UCS_SYS_TOPO_DEVICE_H_
#define UCS_SYS_TOPO_DEVICE_H_

#include <ucs/sys/compiler_def.h>
#include <ucs/type/status.h>

#include <stddef.h>
#include <stdint.h>

BEGIN_C_DECLS

/** Index of a system device in the process's table. */
typedef uint8_t ucs_sys_device_t;

/** No device, or one the table does not know. */
#define UCS_SYS_DEVICE_ID_UNKNOWN UINT8_MAX

/** Longest bus id text ucs_topo_bus_id_str() writes, with its terminator. */
#define UCS_SYS_BUS_ID_STR_MAX 24

/** A PCI address: domain, bus, slot (device) and function. */
typedef struct ucs_sys_bus_id {
    uint32_t domain;
    uint8_t bus;
    uint8_t slot;
    uint8_t function;
} ucs_sys_bus_id_t;

/**
 * Parse a PCI bus id "dddd:bb:ss.f" (hexadecimal digits of either case; the
 * domain may have up to 8 digits, as nvidia-smi prints it).
 *
 * @return UCS_OK, or UCS_ERR_INVALID_PARAM for NULL, trailing characters,
 *         or a bus > 0xff, slot > 0x1f or function > 7.
 */
ucs_status_t ucs_topo_bus_id_parse(const char *name, ucs_sys_bus_id_t *bus_id);

/** Write @a bus_id as "dddd:bb:ss.f" (lower case) into @a buf; returns @a buf. */
const char *ucs_topo_bus_id_str(const ucs_sys_bus_id_t *bus_id, char *buf, size_t max);

/**
 * The number of the device at @a bus_id, entering it in the table the first
 * time it is asked for.
 *
 * @return UCS_OK, or UCS_ERR_EXCEEDS_LIMIT when the table is full (254
 *         devices; @a sys_dev is then UCS_SYS_DEVICE_ID_UNKNOWN).
 */
ucs_status_t ucs_topo_find_device_by_bus_id(const ucs_sys_bus_id_t *bus_id,
                                            ucs_sys_device_t *sys_dev);

/** As ucs_topo_find_device_by_bus_id(), from the text of the bus id
 *  (UCS_ERR_INVALID_PARAM when it does not parse). */
ucs_status_t ucs_topo_find_device_by_bdf_name(const char *name,
                                              ucs_sys_device_t *sys_dev);

/** The bus id of @a sys_dev; UCS_ERR_NO_ELEM for a number not in the table. */
ucs_status_t ucs_topo_get_device_bus_id(ucs_sys_device_t sys_dev,
                                        ucs_sys_bus_id_t *bus_id);

/** The bus id of @a sys_dev as text in @a buf, or "unknown"; returns @a buf. */
const char *ucs_topo_sys_device_bdf_name(ucs_sys_device_t sys_dev, char *buf, size_t max);

/**
 * NUMA node nearest @a sys_dev (ucs_topo_numa_node_of_pci() of its bus id),
 * or UCS_NUMA_NODE_UNKNOWN. Not cached: a slow path (a walk of the
 * topology), called when memory for the device is set up.
 */
int ucs_topo_sys_device_numa_node(ucs_sys_device_t sys_dev);

END_C_DECLS

#endif
