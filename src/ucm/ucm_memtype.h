/**
 * @file ucm_memtype.h
 * Connects the memory-type cache of libucs to the memory events of libucm.
 *
 * libucs cannot call libucm (libucm links libucs), so the glue lives here:
 * ucm_memtype_cache_attach() subscribes a cache to the CUDA allocation
 * events and installs the CUDA module's resolver on it, so that the cache
 * answers "what is this pointer?" for every CUDA allocator, with a driver
 * query only for memory the hooks never saw.
 *
 * Contract for the layers above (uct cuda md, ucp context):
 *  - call ucm_memtype_cache_attach() on the cache you will look up -- in
 *    practice the process-wide one from ucs_memtype_cache_get_global() --
 *    before the first lookup, and ucm_memtype_cache_detach() once for every
 *    attach that returned UCS_OK, when you no longer look up;
 *  - after a successful attach every lookup is correct, whichever way the
 *    cache ends up working (docs/memtype-cache.md, "Integration"):
 *      * hooks in bistro mode: events keep the cache exact; misses (memory
 *        allocated before the hooks went in) cost one driver query, whose
 *        answer is cached;
 *      * hooks unavailable, UCX_MEM_CUDA_HOOK_MODE=none or reloc: the cache
 *        is disabled (ucs_memtype_cache_disable()) and every lookup is one
 *        driver query; reloc mode cannot see cudart's calls, so nothing
 *        the cache would hold could be trusted (docs/hooks.md);
 *  - UCS_ERR_UNSUPPORTED from attach means this process has no CUDA module
 *    (no libcuda.so.1): no memory can be CUDA memory, lookups of unknown
 *    addresses return UCS_ERR_NO_ELEM, which callers take as host memory.
 *
 * Never call these functions from inside a memory event handler (the
 * subscription would be refused) or from a resolver.
 */
#ifndef UCM_MEMTYPE_H_
#define UCM_MEMTYPE_H_

#include <ucs/memory/memtype_cache.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/type/status.h>

#include <stdint.h>

BEGIN_C_DECLS

/**
 * Keep @a cache filled from the CUDA allocation events and let it resolve
 * misses with the CUDA module's driver query.
 *
 * What it does, the first time for a given cache:
 *  1. subscribes the cache to MEM_TYPE_ALLOC (-> ucs_memtype_cache_update,
 *     with UCM_EVENT_FLAG_EXISTING_ALLOC so the allocations the hooks
 *     already know are replayed into it), MEM_TYPE_FREE and VM_UNMAPPED
 *     (-> ucs_memtype_cache_remove); this installs the CUDA hooks in the
 *     mode UCX_MEM_CUDA_HOOK_MODE selects;
 *  2. if the hooks cannot be installed, warns once (at debug level when
 *     UCX_MEM_CUDA_HOOK_MODE=none: the user asked for it) and disables the
 *     cache; if they were installed in reloc mode, disables the cache too
 *     (logged at debug level) and drops the subscription;
 *  3. installs the resolver (after the subscription, so that no answer
 *     can be cached before frees are seen).
 * Later calls for the same cache only count a reference.
 *
 * @param cache  the cache; must stay alive until the matching detach.
 * @return UCS_OK: lookups on @a cache are correct from now on;
 *         UCS_ERR_UNSUPPORTED: no CUDA module is loaded (see above),
 *         nothing was changed and nothing needs detaching;
 *         UCS_ERR_INVALID_PARAM: bad UCX_MEM_* value (an error naming the
 *         variable was logged) -- never silently replaced by a default;
 *         UCS_ERR_NO_MEMORY; UCS_ERR_BUSY when called from a handler.
 *         On error the cache is left as it was.
 *
 * Thread safe: attach and detach are serialised by one lock. Lookups on
 * the cache may run during the call.
 */
ucs_status_t ucm_memtype_cache_attach(ucs_memtype_cache_t *cache);


/**
 * Undo one successful ucm_memtype_cache_attach(). The last detach of a
 * cache unsubscribes it, removes the resolver and empties the cache, since
 * without events its regions could go stale. The caller guarantees that no
 * lookup on @a cache runs during the last detach (a lookup could otherwise
 * cache a driver answer that no free event would ever remove).
 *
 * A cache that is not attached is ignored. Thread safe.
 */
void ucm_memtype_cache_detach(ucs_memtype_cache_t *cache);


/**
 * Number of resolver calls made so far by caches attached through this
 * interface, in this process: every miss of an enabled cache and every
 * lookup of a disabled one. For tests and diagnostics. Thread safe.
 */
uint64_t ucm_memtype_resolver_count(void);

END_C_DECLS

#endif
