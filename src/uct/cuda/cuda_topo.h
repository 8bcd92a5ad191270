/**
 * @file cuda_topo.h
 * Where a CUDA device sits in the machine: its PCI bus id, entered in the
 * system-device table of ucs (ucs/sys/topo_device.h), so that the layers
 * above can ask for the device of a buffer (uct_md_mem_query(), sys_dev)
 * and the NUMA node nearest it without calling CUDA themselves.
 *
 * Thread safety: may be called from any thread.
 */
#ifndef UCT_CUDA_TOPO_H_
#define UCT_CUDA_TOPO_H_

#include <ucs/sys/topo_device.h>

BEGIN_C_DECLS

/**
 * System device of the CUDA device with ordinal @a ordinal (as
 * CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL gives it), from cuDeviceGetPCIBusId;
 * asked once per ordinal and process, then cached.
 *
 * @return the device, or UCS_SYS_DEVICE_ID_UNKNOWN (negative ordinal, driver
 *         not initialised, no bus id; logged at debug level, not cached).
 */
ucs_sys_device_t uct_cuda_device_sys_dev(int ordinal);

/**
 * The ordinal of the CUDA device that is system device @a sys_dev, or -1
 * (unknown device, not a CUDA device, driver not initialised).
 */
int uct_cuda_sys_dev_ordinal(ucs_sys_device_t sys_dev);

END_C_DECLS

#endif
