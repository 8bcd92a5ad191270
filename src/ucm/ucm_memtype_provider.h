/**
 * @file ucm_memtype_provider.h
 * How a hook module (libucm_cuda.so) hands libucm what the memory-type glue
 * (ucm_memtype.h) needs from it: the resolver, which must call the driver
 * and so cannot live in libucm, and the state of its hooks.
 */
#ifndef UCM_MEMTYPE_PROVIDER_H_
#define UCM_MEMTYPE_PROVIDER_H_

#include <ucm/ucm_config.h>
#include <ucs/memory/memtype_cache.h>

BEGIN_C_DECLS

/** What the CUDA module provides. Owned by the module, which never unloads
 *  (-z nodelete), so libucm may keep the pointer for good. */
typedef struct ucm_memtype_provider {
    /** Name for log messages ("cuda"). */
    const char                       *name;

    /**
     * Describe the memory at an address with one driver query (the
     * contract of ucs_memtype_cache_resolve_func_t; @a arg is unused).
     * Must never initialise the driver.
     */
    ucs_memtype_cache_resolve_func_t resolve;

    /**
     * The mode the module's hooks are installed in now:
     * UCM_CUDA_HOOK_MODE_BISTRO or _RELOC, or UCM_CUDA_HOOK_MODE_NONE when
     * they are not installed. Thread safe.
     */
    ucm_cuda_hook_mode_t             (*hook_mode)(void);

    /**
     * Whether [address, +size) is still an allocation the hooks saw made
     * and not yet freed: the check for replayed events
     * (UCM_MEM_TYPE_FLAG_REPLAYED). The hooks remove an allocation from
     * their tables before they report its free, so an answer of 1 given
     * under a lock that the handling of frees also takes cannot be
     * overtaken by that free. Thread safe; takes a short internal lock.
     */
    int                              (*alloc_is_live)(const void *address,
                                                      size_t size);
} ucm_memtype_provider_t;


/**
 * Register the provider; called by the module's constructor while libucm
 * loads it. One provider at most: a second call replaces the first. Thread
 * safe.
 */
void ucm_memtype_set_provider(const ucm_memtype_provider_t *provider);

END_C_DECLS

#endif
