#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <ucs/memory/memory_type.h>

/*
 * Programs built with upstream's headers index these arrays with their own
 * numbering: 1.13 has UNKNOWN at 5; 1.15 and later insert RDMA (5) and the
 * three ZE types (6-8), 1.21 GAUDI (9), which moves UNKNOWN to 9 or 10.
 * The library never reports any of the inserted types, so a value from 5 to
 * 10 in a caller's hands is "unknown" or a type foreign to us; every index a
 * caller of 1.13 .. 1.22 can use is filled, the ZE names where no version
 * gives the index another meaning. The list stays NULL-terminated for the
 * configuration parser, which accepts only the types below UNKNOWN.
 */
#define UCS_MEMORY_TYPE_CALLER_MAX 10

const char *ucs_memory_type_names[] = {
    [UCS_MEMORY_TYPE_HOST]         = "host",
    [UCS_MEMORY_TYPE_CUDA]         = "cuda",
    [UCS_MEMORY_TYPE_CUDA_MANAGED] = "cuda-managed",
    [UCS_MEMORY_TYPE_ROCM]         = "rocm",
    [UCS_MEMORY_TYPE_ROCM_MANAGED] = "rocm-managed",
    [UCS_MEMORY_TYPE_LAST]         = "unknown",
    [6]                            = "ze-host",
    [7]                            = "ze-device",
    [8]                            = "ze-managed",
    [9]                            = "unknown",
    [UCS_MEMORY_TYPE_CALLER_MAX]   = "unknown",
    NULL
};

const char *ucs_memory_type_descs[] = {
    [UCS_MEMORY_TYPE_HOST]         = "System memory",
    [UCS_MEMORY_TYPE_CUDA]         = "NVIDIA GPU memory",
    [UCS_MEMORY_TYPE_CUDA_MANAGED] = "NVIDIA GPU managed memory",
    [UCS_MEMORY_TYPE_ROCM]         = "AMD GPU memory",
    [UCS_MEMORY_TYPE_ROCM_MANAGED] = "AMD GPU managed memory",
    [UCS_MEMORY_TYPE_LAST]         = "Unknown memory type",
    [6]                            = "Intel Level Zero host memory",
    [7]                            = "Intel Level Zero device memory",
    [8]                            = "Intel Level Zero shared memory",
    [9]                            = "Unknown memory type",
    [UCS_MEMORY_TYPE_CALLER_MAX]   = "Unknown memory type",
    NULL
};
