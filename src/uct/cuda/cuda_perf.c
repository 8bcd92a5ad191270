#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cuda_perf.h"

#include <ucs/config/parser.h>
#include <ucs/debug/log.h>

/*
 * Defaults measured on H200 machines (driver 580) by
 * test/bench/cuda_copy_model_probe: one copy issued and waited for, as UCP
 * stages a message. Issuing takes ~2 us of CPU and seeing the completion
 * ~1.7 us (one event query, GPU-FACTS.md); what remains of the measured
 * 8-byte cost is the latency: 8.85 us in all out of a GPU, 5.9 us into one
 * (host memory pageable, as UCP's staging buffers are), 8.9 us within one.
 * Bandwidths are the slopes between 8 B and 64 KiB, the sizes where UCP's
 * thresholds fall: pageable copies reach 9.3 GB/s out and 6.9 GB/s in
 * there (16 GB/s from 64 KiB to 4 MiB).
 */
const uct_cuda_perf_t uct_cuda_copy_perf_default = {
    .pre  = 2.0e-6,
    .post = 1.7e-6,
    .lat  = {[UCT_CUDA_PERF_H2D]      = 2.2e-6,
             [UCT_CUDA_PERF_D2H]      = 5.15e-6,
             [UCT_CUDA_PERF_D2D]      = 5.2e-6,
             [UCT_CUDA_PERF_D2D_PEER] = 5.2e-6},
    .bw   = {[UCT_CUDA_PERF_H2D]      = 6.9e9,
             [UCT_CUDA_PERF_D2H]      = 9.3e9,
             [UCT_CUDA_PERF_D2D]      = 2000e9,
             [UCT_CUDA_PERF_D2D_PEER] = 396e9}};

/* A copy through an imported mapping, the mapping cached: ~8.7 us in all
 * for a small get or put between two H200s (a rendezvous read measured
 * 9.4 us with its RTS); between two GPUs the data crosses NVLink (396 GB/s
 * per direction, NV18), with host memory PCIe. */
const uct_cuda_perf_t uct_cuda_ipc_perf_default = {
    .pre  = 2.5e-6,
    .post = 1.7e-6,
    .lat  = {[UCT_CUDA_PERF_H2D]      = 4.5e-6,
             [UCT_CUDA_PERF_D2H]      = 4.5e-6,
             [UCT_CUDA_PERF_D2D]      = 4.5e-6,
             [UCT_CUDA_PERF_D2D_PEER] = 4.5e-6},
    .bw   = {[UCT_CUDA_PERF_H2D]      = 16e9,
             [UCT_CUDA_PERF_D2H]      = 16e9,
             [UCT_CUDA_PERF_D2D]      = 2000e9,
             [UCT_CUDA_PERF_D2D_PEER] = 396e9}};

ucs_status_t uct_cuda_perf_init(uct_cuda_perf_t *perf, const uct_cuda_perf_t *defaults,
                                double lat_cfg, size_t bw_cfg, const char *prefix)
{
    int d;

    if (bw_cfg == 0) {
        ucs_error("UCX_%sBW=0: the bandwidth of the performance model must be "
                  "positive (or auto)", prefix);
        return UCS_ERR_INVALID_PARAM;
    }
    *perf = *defaults;
    for (d = 0; d < UCT_CUDA_PERF_DIR_LAST; ++d) {
        if (lat_cfg >= 0) {
            perf->lat[d] = lat_cfg;
        }
        if (bw_cfg != UCS_MEMUNITS_AUTO) {
            perf->bw[d] = (double)bw_cfg;
        }
    }
    return UCS_OK;
}

static int uct_cuda_perf_is_host(ucs_memory_type_t mem_type)
{
    return (mem_type == UCS_MEMORY_TYPE_HOST) ||
           (mem_type == UCS_MEMORY_TYPE_CUDA_MANAGED);
}

static uct_cuda_perf_dir_t uct_cuda_perf_dir(const uct_perf_attr_t *pa)
{
    uint64_t mask         = pa->field_mask;
    ucs_memory_type_t loc = (mask & UCT_PERF_ATTR_FIELD_LOCAL_MEMORY_TYPE)
                                ? pa->local_memory_type
                                : UCS_MEMORY_TYPE_CUDA;
    ucs_memory_type_t rem = (mask & UCT_PERF_ATTR_FIELD_REMOTE_MEMORY_TYPE)
                                ? pa->remote_memory_type
                                : UCS_MEMORY_TYPE_CUDA;
    int get               = (pa->operation == UCT_EP_OP_GET_SHORT) ||
              (pa->operation == UCT_EP_OP_GET_BCOPY) ||
              (pa->operation == UCT_EP_OP_GET_ZCOPY);
    int src_host = uct_cuda_perf_is_host(get ? rem : loc);
    int dst_host = uct_cuda_perf_is_host(get ? loc : rem);

    if (!src_host && !dst_host) {
        return ((mask & UCT_PERF_ATTR_FIELD_LOCAL_SYS_DEVICE) &&
                (mask & UCT_PERF_ATTR_FIELD_REMOTE_SYS_DEVICE) &&
                (pa->local_sys_device != UCS_SYS_DEVICE_ID_UNKNOWN) &&
                (pa->local_sys_device == pa->remote_sys_device))
                   ? UCT_CUDA_PERF_D2D
                   : UCT_CUDA_PERF_D2D_PEER;
    }
    /* Host to host through the driver is bounded by the host side too. */
    return src_host ? UCT_CUDA_PERF_H2D : UCT_CUDA_PERF_D2H;
}

void uct_cuda_perf_estimate(const uct_cuda_perf_t *perf, uct_perf_attr_t *perf_attr)
{
    uct_cuda_perf_dir_t dir;

    if (!(perf_attr->field_mask & UCT_PERF_ATTR_FIELD_OPERATION)) {
        return;
    }
    switch (perf_attr->operation) {
    case UCT_EP_OP_PUT_SHORT:
    case UCT_EP_OP_PUT_BCOPY:
    case UCT_EP_OP_PUT_ZCOPY:
    case UCT_EP_OP_GET_SHORT:
    case UCT_EP_OP_GET_BCOPY:
    case UCT_EP_OP_GET_ZCOPY:
        break;
    default:
        return;
    }
    dir                            = uct_cuda_perf_dir(perf_attr);
    perf_attr->send_pre_overhead   = perf->pre;
    perf_attr->send_post_overhead  = perf->post;
    perf_attr->recv_overhead       = 0; /* one-sided: the peer's CPU is idle */
    perf_attr->latency             = ucs_linear_func_make(perf->lat[dir], 0);
    perf_attr->bandwidth.dedicated = perf->bw[dir];
    perf_attr->bandwidth.shared    = 0;
}
