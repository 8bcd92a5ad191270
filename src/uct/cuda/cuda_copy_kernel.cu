/*
 * Several device-to-device copies in one kernel launch.
 *
 * On one GPU a stream of mid-size messages (a few MiB) is limited by the
 * CPU cost of issuing each copy (3.5-4 us for cuMemcpyAsync on an H200),
 * not by the copy itself (~2 us for 4 MiB). A launch costs about as much as
 * one copy issue however many copies it carries, so the cuda_ipc transport
 * collects the copies it is asked for between two progress calls and
 * launches them together (cuda_batch.c).
 *
 * Built to PTX by nvcc at build time and embedded in the CUDA module; the
 * driver compiles it for the GPU at first use. blockIdx.y picks the copy;
 * the blocks along x share it, every thread moving four 16-byte words per
 * round so that each SM keeps many loads in flight. The launcher guarantees
 * 16-byte aligned pointers; the first threads of each copy move the bytes
 * past its last whole word.
 */
#include "cuda_copy_kernel.h"

extern "C" __global__ void __launch_bounds__(UCT_CUDA_COPY_KERNEL_THREADS)
uct_cuda_copy_batch_kernel(uct_cuda_copy_kernel_args_t args)
{
    const unsigned k    = blockIdx.y;
    const uint64_t len  = args.len[k];
    const uint4 *s      = (const uint4*)args.src[k];
    uint4 *d            = (uint4*)args.dst[k];
    const uint64_t n    = len / 16;
    const uint64_t step = (uint64_t)gridDim.x * blockDim.x;
    const uint64_t me   = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    uint64_t i          = me;
    uint4 w0, w1, w2, w3;

    for (; i + 3 * step < n; i += 4 * step) {
        w0              = s[i];
        w1              = s[i + step];
        w2              = s[i + 2 * step];
        w3              = s[i + 3 * step];
        d[i]            = w0;
        d[i + step]     = w1;
        d[i + 2 * step] = w2;
        d[i + 3 * step] = w3;
    }
    for (; i < n; i += step) {
        d[i] = s[i];
    }
    if (me < len - n * 16) {
        ((unsigned char*)d)[n * 16 + me] = ((const unsigned char*)s)[n * 16 + me];
    }
}
