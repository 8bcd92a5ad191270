/**
 * The arguments of the batched device-to-device copy kernel
 * (cuda_copy_kernel.cu), shared by the kernel and the code that launches it
 * (cuda_batch.c), so both agree on the layout of the one by-value argument.
 */
#ifndef UCT_CUDA_COPY_KERNEL_H_
#define UCT_CUDA_COPY_KERNEL_H_

#include <stdint.h>

/** Most copies one launch carries (gridDim.y; 768 bytes of arguments). */
#define UCT_CUDA_COPY_KERNEL_MAX_COPIES 32

/** Threads per block; the kernel is compiled for at most this many. */
#define UCT_CUDA_COPY_KERNEL_THREADS 512

/** Bytes one block moves per round: every thread four 16-byte words. */
#define UCT_CUDA_COPY_KERNEL_BLOCK_BYTES (UCT_CUDA_COPY_KERNEL_THREADS * 64)

/** Name of the kernel in the PTX. */
#define UCT_CUDA_COPY_KERNEL_NAME "uct_cuda_copy_batch_kernel"

/**
 * Blocks along x of a launch whose longest copy is @a longest bytes: one
 * round of UCT_CUDA_COPY_KERNEL_BLOCK_BYTES per block, at least 1, at most
 * @a blocks_max (longer copies loop over the grid).
 */
static inline unsigned uct_cuda_copy_kernel_blocks(uint64_t longest, unsigned blocks_max)
{
    uint64_t blocks = (longest + UCT_CUDA_COPY_KERNEL_BLOCK_BYTES - 1) /
                      UCT_CUDA_COPY_KERNEL_BLOCK_BYTES;

    return (blocks == 0) ? 1 : (blocks < blocks_max) ? (unsigned)blocks : blocks_max;
}

/** Copy i moves len[i] bytes from src[i] to dst[i]; both 16-byte aligned. */
typedef struct uct_cuda_copy_kernel_args {
    uint64_t dst[UCT_CUDA_COPY_KERNEL_MAX_COPIES];
    uint64_t src[UCT_CUDA_COPY_KERNEL_MAX_COPIES];
    uint64_t len[UCT_CUDA_COPY_KERNEL_MAX_COPIES];
} uct_cuda_copy_kernel_args_t;

#endif
