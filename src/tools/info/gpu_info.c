#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucx_info.h"

#include <tools/perf/perf_cuda_fns.h>
#include <ucs/sys/topo_numa.h>

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/*
 * ucx_info -d, GPU part: the devices the CUDA driver sees (through
 * ucx_perftest's loader, so that ucx_info runs where CUDA is absent), their
 * memory, PCI bus id, NUMA node and which other GPUs they reach directly.
 */

/*
 * NUMA node of a PCI device: hwloc's answer, which is the one host staging
 * fragments are placed by (ucs/sys/topo_numa.h); else sysfs's, labelled so
 * that it is clear nothing is placed by it; "-" when neither knows.
 */
static void ucx_info_gpu_numa(const char *bus_id, char *buf, size_t max)
{
    char path[128], lower[32];
    FILE *f;
    int node;
    size_t i;

    node = ucs_topo_numa_node_of_pci(bus_id);
    if (node != UCS_NUMA_NODE_UNKNOWN) {
        snprintf(buf, max, "%d (hwloc)", node);
        return;
    }
    for (i = 0; (bus_id[i] != '\0') && (i < sizeof(lower) - 1); ++i) {
        lower[i] = (char)((bus_id[i] >= 'A' && bus_id[i] <= 'F') ? bus_id[i] + 32 : bus_id[i]);
    }
    lower[i] = '\0';
    snprintf(buf, max, "- (unknown to hwloc and sysfs)");
    snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/numa_node", lower);
    f = fopen(path, "r");
    if (f == NULL) {
        return;
    }
    if ((fscanf(f, "%d", &node) == 1) && (node >= 0)) {
        snprintf(buf, max, "%d (sysfs; unknown to hwloc: staging not placed)", node);
    }
    fclose(f);
}

static void ucx_info_gpu_peers(FILE *stream, CUdevice dev, int index, int count)
{
    int peer, access, atomics, rank, any = 0;
    CUdevice pdev;

    fprintf(stream, "#      peers: ");
    for (peer = 0; peer < count; ++peer) {
        if ((peer == index) || (perf_cu.cuDeviceGet(&pdev, peer) != CUDA_SUCCESS)) {
            continue;
        }
        access = atomics = rank = 0;
        (void)perf_cu.cuDeviceGetP2PAttribute(&access,
                                                  CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED,
                                                  dev, pdev);
        (void)perf_cu.cuDeviceGetP2PAttribute(
                &atomics, CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED, dev, pdev);
        (void)perf_cu.cuDeviceGetP2PAttribute(
                &rank, CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK, dev, pdev);
        /* Native atomics between two GPUs need a direct link (NVLink);
         * plain peer access may also run over PCIe. */
        fprintf(stream, "%sGPU%d (%s, perf rank %d)", any ? "; " : "", peer,
                !access ? "no peer access" :
                atomics ? "direct, NVLink-class (native atomics)" : "peer access over PCIe",
                rank);
        any = 1;
    }
    fprintf(stream, "%s\n", any ? "" : "none");
}

void ucx_info_print_gpus(FILE *stream)
{
    const char *why = perf_cuda_unavailable();
    char name[128], bus_id[32], numa[64];
    int i, count, version = 0;
    size_t total;
    CUdevice dev;

    fprintf(stream, "#\n# GPUs\n");
    if (why != NULL) {
        fprintf(stream, "#   < none: %s >\n", why);
        return;
    }
    (void)perf_cu.cuDriverGetVersion(&version);
    count = perf_cuda_device_count();
    fprintf(stream, "#   driver API %d.%d, %d device(s)%s\n", version / 1000,
            (version % 1000) / 10, count,
            (dlsym(RTLD_DEFAULT, "cudasim_model_info") != NULL) ?
            " (cudasim: the CI model of the driver)" : "");
    for (i = 0; i < count; ++i) {
        if (perf_cu.cuDeviceGet(&dev, i) != CUDA_SUCCESS) {
            continue;
        }
        if (perf_cu.cuDeviceGetName(name, sizeof(name), dev) != CUDA_SUCCESS) {
            snprintf(name, sizeof(name), "?");
        }
        total = 0;
        (void)perf_cu.cuDeviceTotalMem(&total, dev);
        if (perf_cu.cuDeviceGetPCIBusId(bus_id, sizeof(bus_id), dev) != CUDA_SUCCESS) {
            snprintf(bus_id, sizeof(bus_id), "?");
        }
        ucx_info_gpu_numa(bus_id, numa, sizeof(numa));
        fprintf(stream, "#   GPU%d: %s, %.1f GiB, PCI %s, NUMA node %s\n", i, name,
                (double)total / (1024.0 * 1024.0 * 1024.0), bus_id, numa);
        ucx_info_gpu_peers(stream, dev, i, count);
    }
}
