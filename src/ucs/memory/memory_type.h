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

/**
 * Short lower-case names ("host", "cuda", ...), indexed by type, "unknown"
 * at LAST. Any index 0 .. 10 is valid, so that a program built with newer
 * upstream headers (whose UNKNOWN is 9 or 10) reads a name; NULL follows.
 */
extern const char *ucs_memory_type_names[];

/** One-line descriptions ("NVIDIA GPU memory"), indexed as ucs_memory_type_names. */
extern const char *ucs_memory_type_descs[];

END_C_DECLS

#endif
