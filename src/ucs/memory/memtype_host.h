/**
 * @file memtype_host.h
 * Where host memory ends: the extent the memory-type cache gives to an
 * address that the resolver reported as ordinary host memory (internal to
 * libucs).
 */
#ifndef UCS_MEMORY_MEMTYPE_HOST_H_
#define UCS_MEMORY_MEMTYPE_HOST_H_

#include <ucs/sys/compiler_def.h>
#include <ucs/type/status.h>

#include <stdint.h>

BEGIN_C_DECLS

/* Internal to libucs: not exported, called without the PLT. */
#ifndef UCS_MEMTYPE_HIDDEN
#  define UCS_MEMTYPE_HIDDEN __attribute__((visibility("hidden")))
#endif

/**
 * Find the mapping of this process (a line of /proc/self/maps) that
 * contains @a address.
 *
 * @param [out] start_p, end_p  the mapping [start, end), on UCS_OK.
 * @return UCS_OK: the mapping is readable or writable;
 *         UCS_ERR_UNSUPPORTED: it is mapped but inaccessible (PROT_NONE,
 *         for example a CUDA virtual-address reservation or a guard page);
 *         UCS_ERR_NO_ELEM: @a address is not mapped;
 *         UCS_ERR_IO_ERROR: /proc/self/maps cannot be read.
 *
 * Thread safe; allocates no memory (a signal-safe read loop), costs one
 * pass over /proc/self/maps up to the mapping (tens of microseconds).
 */
ucs_status_t ucs_memtype_host_mapping(uintptr_t address, uintptr_t *start_p,
                                      uintptr_t *end_p)
    UCS_MEMTYPE_HIDDEN;

END_C_DECLS

#endif
