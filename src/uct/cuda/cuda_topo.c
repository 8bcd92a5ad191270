#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "cuda_topo.h"
#include "cuda_common.h"

/*
 * Asked on every uct_md_mem_query() of a device buffer with sys_dev
 * (a staging pool choosing where its host memory goes), so the answer is
 * cached per ordinal: one atomic load after the first time. 0 means "not
 * asked yet", otherwise the device number + 1. Ordinals beyond the cache
 * are asked every time.
 */
#define UCT_CUDA_TOPO_CACHED_DEVICES 64

static int uct_cuda_topo_sys_devs[UCT_CUDA_TOPO_CACHED_DEVICES];

static ucs_sys_device_t uct_cuda_topo_lookup(int ordinal)
{
    ucs_sys_device_t sys_dev;
    char bus_id[32];
    CUdevice dev;
    CUresult res;

    res = cuDeviceGet(&dev, ordinal);
    if (res == CUDA_SUCCESS) {
        res = cuDeviceGetPCIBusId(bus_id, sizeof(bus_id), dev);
    }
    if (res != CUDA_SUCCESS) {
        ucs_debug("cuda: no PCI bus id for device %d: %s", ordinal,
                  uct_cuda_cu_name(res));
        return UCS_SYS_DEVICE_ID_UNKNOWN;
    }
    if (ucs_topo_find_device_by_bdf_name(bus_id, &sys_dev) != UCS_OK) {
        ucs_debug("cuda: device %d (PCI %s) not entered as a system device", ordinal,
                  bus_id);
        return UCS_SYS_DEVICE_ID_UNKNOWN;
    }
    ucs_debug("cuda: device %d is PCI %s, system device %u", ordinal, bus_id,
              (unsigned)sys_dev);
    return sys_dev;
}

ucs_sys_device_t uct_cuda_device_sys_dev(int ordinal)
{
    ucs_sys_device_t sys_dev;
    int cached;

    if (ordinal < 0) {
        return UCS_SYS_DEVICE_ID_UNKNOWN;
    }
    if (ordinal >= UCT_CUDA_TOPO_CACHED_DEVICES) {
        return uct_cuda_topo_lookup(ordinal);
    }
    cached = __atomic_load_n(&uct_cuda_topo_sys_devs[ordinal], __ATOMIC_RELAXED);
    if (cached != 0) {
        return (ucs_sys_device_t)(cached - 1);
    }
    sys_dev = uct_cuda_topo_lookup(ordinal);
    if (sys_dev != UCS_SYS_DEVICE_ID_UNKNOWN) {
        __atomic_store_n(&uct_cuda_topo_sys_devs[ordinal], (int)sys_dev + 1,
                         __ATOMIC_RELAXED);
    }
    return sys_dev;
}

int uct_cuda_sys_dev_ordinal(ucs_sys_device_t sys_dev)
{
    int count, i;

    if ((sys_dev == UCS_SYS_DEVICE_ID_UNKNOWN) ||
        (cuDeviceGetCount(&count) != CUDA_SUCCESS)) {
        return -1;
    }
    for (i = 0; i < count; ++i) {
        if (uct_cuda_device_sys_dev(i) == sys_dev) {
            return i;
        }
    }
    return -1;
}
