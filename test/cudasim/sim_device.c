#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

/*
 * Devices: count, names, UUIDs, PCI ids, attributes and peer access. Every
 * device looks like an H200 (compute capability 9.0, VMM, memory pools,
 * POSIX-fd and fabric handles, mempool handle types 0x9) so verdicts match
 * the machines GPU-FACTS.md was measured on.
 */
#include "cudasim.h"

#include <stdio.h>
#include <string.h>

/*
 * Attribute values by number (older cuda.h files lack some enumerators), as
 * an H200 with driver 580.159.04 reports them for device 0; the PCI bus id
 * and the multi-GPU board group id are made per device below. Anything
 * outside 1..147 is CUDA_ERROR_INVALID_VALUE, as in that driver.
 */
typedef struct sim_attr_value {
    int attr;
    int value;
} sim_attr_value_t;

#define SIM_ATTR_PCI_BUS_ID          33
#define SIM_ATTR_MULTI_GPU_GROUP_ID  85

static const sim_attr_value_t sim_device_attrs[] = {
    {1, 1024}, /* MAX_THREADS_PER_BLOCK */
    {2, 1024}, /* MAX_BLOCK_DIM_X */
    {3, 1024}, /* MAX_BLOCK_DIM_Y */
    {4, 64}, /* MAX_BLOCK_DIM_Z */
    {5, 2147483647}, /* MAX_GRID_DIM_X */
    {6, 65535}, /* MAX_GRID_DIM_Y */
    {7, 65535}, /* MAX_GRID_DIM_Z */
    {8, 49152}, /* MAX_SHARED_MEMORY_PER_BLOCK */
    {9, 65536}, /* TOTAL_CONSTANT_MEMORY */
    {10, 32}, /* WARP_SIZE */
    {11, 2147483647}, /* MAX_PITCH */
    {12, 65536}, /* MAX_REGISTERS_PER_BLOCK */
    {13, 1980000}, /* CLOCK_RATE */
    {14, 512}, /* TEXTURE_ALIGNMENT */
    {15, 1}, /* GPU_OVERLAP */
    {16, 132}, /* MULTIPROCESSOR_COUNT */
    {17, 0}, /* KERNEL_EXEC_TIMEOUT */
    {18, 0}, /* INTEGRATED */
    {19, 1}, /* CAN_MAP_HOST_MEMORY */
    {20, 0}, /* COMPUTE_MODE */
    {21, 131072}, /* MAXIMUM_TEXTURE1D_WIDTH */
    {22, 131072}, /* MAXIMUM_TEXTURE2D_WIDTH */
    {23, 65536}, /* MAXIMUM_TEXTURE2D_HEIGHT */
    {24, 16384}, /* MAXIMUM_TEXTURE3D_WIDTH */
    {25, 16384}, /* MAXIMUM_TEXTURE3D_HEIGHT */
    {26, 16384}, /* MAXIMUM_TEXTURE3D_DEPTH */
    {27, 32768}, /* MAXIMUM_TEXTURE2D_LAYERED_WIDTH */
    {28, 32768}, /* MAXIMUM_TEXTURE2D_LAYERED_HEIGHT */
    {29, 2048}, /* MAXIMUM_TEXTURE2D_LAYERED_LAYERS */
    {30, 512}, /* SURFACE_ALIGNMENT */
    {31, 1}, /* CONCURRENT_KERNELS */
    {32, 1}, /* ECC_ENABLED */
    {34, 6}, /* PCI_DEVICE_ID */
    {35, 0}, /* TCC_DRIVER */
    {36, 3201000}, /* MEMORY_CLOCK_RATE */
    {37, 6016}, /* GLOBAL_MEMORY_BUS_WIDTH */
    {38, 62914560}, /* L2_CACHE_SIZE */
    {39, 2048}, /* MAX_THREADS_PER_MULTIPROCESSOR */
    {40, 3}, /* ASYNC_ENGINE_COUNT */
    {41, 1}, /* UNIFIED_ADDRESSING */
    {42, 32768}, /* MAXIMUM_TEXTURE1D_LAYERED_WIDTH */
    {43, 2048}, /* MAXIMUM_TEXTURE1D_LAYERED_LAYERS */
    {44, 1}, /* CAN_TEX2D_GATHER */
    {45, 32768}, /* MAXIMUM_TEXTURE2D_GATHER_WIDTH */
    {46, 32768}, /* MAXIMUM_TEXTURE2D_GATHER_HEIGHT */
    {47, 8192}, /* MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE */
    {48, 8192}, /* MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE */
    {49, 32768}, /* MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE */
    {50, 0}, /* PCI_DOMAIN_ID */
    {51, 32}, /* TEXTURE_PITCH_ALIGNMENT */
    {52, 32768}, /* MAXIMUM_TEXTURECUBEMAP_WIDTH */
    {53, 32768}, /* MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH */
    {54, 2046}, /* MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS */
    {55, 32768}, /* MAXIMUM_SURFACE1D_WIDTH */
    {56, 131072}, /* MAXIMUM_SURFACE2D_WIDTH */
    {57, 65536}, /* MAXIMUM_SURFACE2D_HEIGHT */
    {58, 16384}, /* MAXIMUM_SURFACE3D_WIDTH */
    {59, 16384}, /* MAXIMUM_SURFACE3D_HEIGHT */
    {60, 16384}, /* MAXIMUM_SURFACE3D_DEPTH */
    {61, 32768}, /* MAXIMUM_SURFACE1D_LAYERED_WIDTH */
    {62, 2048}, /* MAXIMUM_SURFACE1D_LAYERED_LAYERS */
    {63, 32768}, /* MAXIMUM_SURFACE2D_LAYERED_WIDTH */
    {64, 32768}, /* MAXIMUM_SURFACE2D_LAYERED_HEIGHT */
    {65, 2048}, /* MAXIMUM_SURFACE2D_LAYERED_LAYERS */
    {66, 32768}, /* MAXIMUM_SURFACECUBEMAP_WIDTH */
    {67, 32768}, /* MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH */
    {68, 2046}, /* MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS */
    {69, 268435456}, /* MAXIMUM_TEXTURE1D_LINEAR_WIDTH */
    {70, 131072}, /* MAXIMUM_TEXTURE2D_LINEAR_WIDTH */
    {71, 65000}, /* MAXIMUM_TEXTURE2D_LINEAR_HEIGHT */
    {72, 2097120}, /* MAXIMUM_TEXTURE2D_LINEAR_PITCH */
    {73, 32768}, /* MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH */
    {74, 32768}, /* MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT */
    {75, 9}, /* COMPUTE_CAPABILITY_MAJOR */
    {76, 0}, /* COMPUTE_CAPABILITY_MINOR */
    {77, 32768}, /* MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH */
    {78, 1}, /* STREAM_PRIORITIES_SUPPORTED */
    {79, 1}, /* GLOBAL_L1_CACHE_SUPPORTED */
    {80, 1}, /* LOCAL_L1_CACHE_SUPPORTED */
    {81, 233472}, /* MAX_SHARED_MEMORY_PER_MULTIPROCESSOR */
    {82, 65536}, /* MAX_REGISTERS_PER_MULTIPROCESSOR */
    {83, 1}, /* MANAGED_MEMORY */
    {84, 0}, /* MULTI_GPU_BOARD */
    {86, 0}, /* HOST_NATIVE_ATOMIC_SUPPORTED */
    {87, 2}, /* SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO */
    {88, 0}, /* PAGEABLE_MEMORY_ACCESS */
    {89, 1}, /* CONCURRENT_MANAGED_ACCESS */
    {90, 1}, /* COMPUTE_PREEMPTION_SUPPORTED */
    {91, 1}, /* CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM */
    {92, 0}, /* CAN_USE_STREAM_MEM_OPS_V1 */
    {93, 0}, /* CAN_USE_64_BIT_STREAM_MEM_OPS_V1 */
    {94, 0}, /* CAN_USE_STREAM_WAIT_VALUE_NOR_V1 */
    {95, 1}, /* COOPERATIVE_LAUNCH */
    {96, 1}, /* COOPERATIVE_MULTI_DEVICE_LAUNCH */
    {97, 232448}, /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
    {98, 0}, /* CAN_FLUSH_REMOTE_WRITES */
    {99, 1}, /* HOST_REGISTER_SUPPORTED */
    {100, 0}, /* PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES */
    {101, 0}, /* DIRECT_MANAGED_MEM_ACCESS_FROM_HOST */
    {102, 1}, /* VIRTUAL_ADDRESS_MANAGEMENT_SUPPORTED */
    {103, 1}, /* HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED */
    {104, 0}, /* HANDLE_TYPE_WIN32_HANDLE_SUPPORTED */
    {105, 0}, /* HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED */
    {106, 32}, /* MAX_BLOCKS_PER_MULTIPROCESSOR */
    {107, 1}, /* GENERIC_COMPRESSION_SUPPORTED */
    {108, 39321600}, /* MAX_PERSISTING_L2_CACHE_SIZE */
    {109, 134217728}, /* MAX_ACCESS_POLICY_WINDOW_SIZE */
    {110, 1}, /* GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED */
    {111, 1024}, /* RESERVED_SHARED_MEMORY_PER_BLOCK */
    {112, 1}, /* SPARSE_CUDA_ARRAY_SUPPORTED */
    {113, 1}, /* READ_ONLY_HOST_REGISTER_SUPPORTED */
    {114, 1}, /* TIMELINE_SEMAPHORE_INTEROP_SUPPORTED */
    {115, 1}, /* MEMORY_POOLS_SUPPORTED */
    {116, 1}, /* GPU_DIRECT_RDMA_SUPPORTED */
    {117, 1}, /* GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS */
    {118, 100}, /* GPU_DIRECT_RDMA_WRITES_ORDERING */
    {119, 0x9}, /* MEMPOOL_SUPPORTED_HANDLE_TYPES */
    {120, 1}, /* CLUSTER_LAUNCH */
    {121, 1}, /* DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED */
    {122, 1}, /* CAN_USE_64_BIT_STREAM_MEM_OPS */
    {123, 1}, /* CAN_USE_STREAM_WAIT_VALUE_NOR */
    {124, 1}, /* DMA_BUF_SUPPORTED */
    {125, 1}, /* IPC_EVENT_SUPPORTED */
    {126, 4}, /* MEM_SYNC_DOMAIN_COUNT */
    {127, 1}, /* TENSOR_MAP_ACCESS_SUPPORTED */
    {128, 1}, /* HANDLE_TYPE_FABRIC_SUPPORTED */
    {129, 1}, /* UNIFIED_FUNCTION_POINTERS */
    {130, 0}, /* NUMA_CONFIG */
    {131, -1}, /* NUMA_ID */
    {132, 1}, /* MULTICAST_SUPPORTED */
    {133, 0}, /* MPS_ENABLED */
    {134, 0}, /* HOST_NUMA_ID */
    {135, 0}, /* D3D12_CIG_SUPPORTED */
    {136, 0}, /* MEM_DECOMPRESS_ALGORITHM_MASK */
    {137, 0}, /* MEM_DECOMPRESS_MAXIMUM_LENGTH */
    {138, 0}, /* VULKAN_CIG_SUPPORTED */
    {139, 590680286}, /* GPU_PCI_DEVICE_ID */
    {140, 415174878}, /* GPU_PCI_SUBSYSTEM_ID */
    {141, 1}, /* HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED */
    {142, 1}, /* HOST_NUMA_MEMORY_POOLS_SUPPORTED */
    {143, 0}, /* HOST_NUMA_MULTINODE_IPC_SUPPORTED */
    {144, 1}, /* HOST_MEMORY_POOLS_SUPPORTED */
    {145, 1}, /* HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED */
    {146, 0}, /* HOST_ALLOC_DMA_BUF_SUPPORTED */
    {147, 0}, /* ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED */
};

CUresult sim_check_device(CUdevice dev)
{
    return ((dev >= 0) && (dev < sim.cfg.num_devices)) ?
           CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

/* Device functions share one shape: enter, validate, answer, leave. */
static CUresult sim_device_enter(CUdevice dev, const void *out)
{
    CUresult status = sim_enter();

    if (status != CUDA_SUCCESS) {
        return status;
    }
    status = (out == NULL) ? CUDA_ERROR_INVALID_VALUE : sim_check_device(dev);
    if (status != CUDA_SUCCESS) {
        sim_leave();
    }
    return status;
}

CUresult cuDeviceGetCount(int *count)
{
    CUresult status = sim_enter();

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (count == NULL) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else {
        *count = sim.cfg.num_devices;
    }
    sim_leave();
    return status;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    CUresult status = sim_device_enter(ordinal, device);

    if (status != CUDA_SUCCESS) {
        return status;
    }
    *device = ordinal;
    sim_leave();
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    CUresult status = sim_device_enter(dev, name);

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (len <= 0) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else {
        snprintf(name, (size_t)len, "NVIDIA H200 (cudasim model)");
    }
    sim_leave();
    return status;
}

static CUresult sim_device_uuid(CUuuid *uuid, CUdevice dev)
{
    CUresult status = sim_device_enter(dev, uuid);

    if (status != CUDA_SUCCESS) {
        return status;
    }
    *uuid = sim.devices[dev].uuid;
    sim_leave();
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    return sim_device_uuid(uuid, dev);
}

CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    return sim_device_uuid(uuid, dev);
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    CUresult status = sim_device_enter(dev, bytes);

    if (status != CUDA_SUCCESS) {
        return status;
    }
    *bytes = sim.cfg.device_mem;
    sim_leave();
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    CUresult status = sim_device_enter(dev, pi);
    size_t i;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if ((int)attrib == SIM_ATTR_PCI_BUS_ID) {
        *pi = 0x10 + dev;
        goto out;
    }
    if ((int)attrib == SIM_ATTR_MULTI_GPU_GROUP_ID) {
        *pi = dev;
        goto out;
    }
    for (i = 0; i < SIM_ARRAY_SIZE(sim_device_attrs); ++i) {
        if (sim_device_attrs[i].attr == (int)attrib) {
            *pi = sim_device_attrs[i].value;
            goto out;
        }
    }
    status = CUDA_ERROR_INVALID_VALUE;
out:
    sim_leave();
    return status;
}

CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
    CUresult status = sim_device_enter(dev, pciBusId);

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (len < 13) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else {
        snprintf(pciBusId, (size_t)len, "0000:%02x:00.0", 0x10 + dev);
    }
    sim_leave();
    return status;
}

CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId)
{
    CUresult status = sim_enter();
    unsigned domain, bus, slot, func;
    int n;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    status = CUDA_ERROR_INVALID_VALUE;
    if ((dev != NULL) && (pciBusId != NULL)) {
        n = sscanf(pciBusId, "%x:%x:%x.%x", &domain, &bus, &slot, &func);
        if ((n == 4) && (domain == 0) && (slot == 0) && (func == 0) &&
            (bus >= 0x10) && ((int)(bus - 0x10) < sim.cfg.num_devices)) {
            *dev   = (CUdevice)(bus - 0x10);
            status = CUDA_SUCCESS;
        } else {
            status = CUDA_ERROR_INVALID_DEVICE;
        }
    }
    sim_leave();
    return status;
}

/* All model devices see each other, as GPUs joined by NVLink do, unless
 * CUDASIM_PEER=0 (GPUs behind PCIe switches without peer-to-peer). */
CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev,
                               CUdevice peerDev)
{
    CUresult status = sim_device_enter(dev, canAccessPeer);

    if (status != CUDA_SUCCESS) {
        return status;
    }
    status = sim_check_device(peerDev);
    if (status == CUDA_SUCCESS) {
        *canAccessPeer = sim.cfg.peer && (dev != peerDev);
    }
    sim_leave();
    return status;
}

CUresult cuDeviceGetP2PAttribute(int *value, CUdevice_P2PAttribute attrib,
                                 CUdevice srcDevice, CUdevice dstDevice)
{
    CUresult status = sim_device_enter(srcDevice, value);

    if (status != CUDA_SUCCESS) {
        return status;
    }
    status = sim_check_device(dstDevice);
    if ((status == CUDA_SUCCESS) && (srcDevice == dstDevice)) {
        status = CUDA_ERROR_INVALID_DEVICE;
    }
    if (status == CUDA_SUCCESS) {
        switch ((int)attrib) {
        case 1: /* PERFORMANCE_RANK */
            *value = 0;
            break;
        case 2: /* ACCESS_SUPPORTED */
        case 3: /* NATIVE_ATOMIC_SUPPORTED */
        case 4: /* CUDA_ARRAY_ACCESS_SUPPORTED */
            *value = 1;
            break;
        case 5: /* ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED */
            *value = 0;
            break;
        default:
            status = CUDA_ERROR_INVALID_VALUE;
            break;
        }
    }
    sim_leave();
    return status;
}
