/**
 * @file memory_type.h
 * Kinds of memory a buffer can live in. Values match upstream UCX 1.13,
 * which is the oldest ABI we promise to run under.
 */
#ifndef UCS_MEMORY_TYPE_H_
#define UCS_MEMORY_TYPE_H_

#include <ucs/sys/compiler_def.h>

BEGIN_C_DECLS

typedef enum ucs_memory_type {
    UCS_MEMORY_TYPE_HOST,         /**< ordinary host memory */
    UCS_MEMORY_TYPE_CUDA,         /**< NVIDIA device memory */
    UCS_MEMORY_TYPE_CUDA_MANAGED, /**< NVIDIA managed (unified) memory */
    UCS_MEMORY_TYPE_ROCM,         /**< AMD device memory */
    UCS_MEMORY_TYPE_ROCM_MANAGED, /**< AMD managed memory */
    UCS_MEMORY_TYPE_LAST,
    UCS_MEMORY_TYPE_UNKNOWN = UCS_MEMORY_TYPE_LAST
} ucs_memory_type_t;

/** Memory types the CPU can load from and store to directly. */
#define UCS_MEMORY_TYPES_CPU_ACCESSIBLE \
    (UCS_BIT(UCS_MEMORY_TYPE_HOST) | UCS_BIT(UCS_MEMORY_TYPE_CUDA_MANAGED) | \
     UCS_BIT(UCS_MEMORY_TYPE_ROCM_MANAGED))

/** Short lower-case names ("host", "cuda", ...), indexed by type; "unknown" at LAST. */
extern const char *ucs_memory_type_names[];

END_C_DECLS

#endif
