/**
 * @file memtype_cache.h
 * Memory-type cache: answers "what kind of memory is [address, address +
 * length)?" at the cost of a few loads, for every CUDA allocator kind.
 *
 * The cache is an ordered map of disjoint address ranges ("regions") to a
 * description (ucs_memtype_info_t): memory type, device, how the memory was
 * allocated, which export handles it allows, its pool and its allocation.
 *
 * Who fills it:
 *  - producers of allocation events (the CUDA driver hooks of libucm, through
 *    whoever subscribes to MEM_TYPE_ALLOC / MEM_TYPE_FREE / VM_UNMAPPED)
 *    call ucs_memtype_cache_update() and ucs_memtype_cache_remove(); an
 *    update is authoritative and replaces whatever it overlaps;
 *  - a miss asks the resolver (ucs_memtype_cache_set_resolver(), normally
 *    one CUDA driver query made by the CUDA module) and writes the answer
 *    back into the gap, so the next lookup is a hit. The cache itself knows
 *    nothing about CUDA. Host memory ("not CUDA") is cached for the whole
 *    mapping that contains it, see ucs_memtype_cache_lookup().
 *
 * UCX_MEMTYPE_CACHE=n (read by ucs_memtype_cache_create()) turns caching
 * off: every lookup asks the resolver and updates are ignored.
 *
 * Thread safety: every function may be called from any thread at any time
 * (except destroy, see there). Lookups take no lock and never wait for each
 * other; updates are serialised among themselves and wait only for lookups
 * that are already searching the tree (a few hundred nanoseconds). See
 * docs/memtype-cache.md for the design and its memory-ordering argument.
 */
#ifndef UCS_MEMORY_MEMTYPE_CACHE_H_
#define UCS_MEMORY_MEMTYPE_CACHE_H_

#include <ucs/memory/memory_type.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/type/status.h>

#include <stddef.h>
#include <stdint.h>

BEGIN_C_DECLS

/**
 * How an allocation was made. Values 0..7 equal ucm_mem_alloc_kind_t, so an
 * event's kind converts by a cast.
 */
typedef enum ucs_memtype_alloc_kind {
    UCS_MEMTYPE_ALLOC_UNKNOWN     = 0, /**< nobody could tell */
    UCS_MEMTYPE_ALLOC_LEGACY      = 1, /**< cuMemAlloc, cuMemAllocPitch */
    UCS_MEMTYPE_ALLOC_POOL        = 2, /**< stream-ordered, from a pool */
    UCS_MEMTYPE_ALLOC_VMM         = 3, /**< cuMemMap of a physical allocation */
    UCS_MEMTYPE_ALLOC_MANAGED     = 4, /**< cuMemAllocManaged */
    UCS_MEMTYPE_ALLOC_HOST_PINNED = 5, /**< cuMemHostAlloc, cuMemAllocHost */
    UCS_MEMTYPE_ALLOC_IPC_IMPORT  = 6, /**< cuIpcOpenMemHandle */
    UCS_MEMTYPE_ALLOC_POOL_IMPORT = 7, /**< cuMemPoolImportPointer */
    UCS_MEMTYPE_ALLOC_HOST        = 8, /**< ordinary host memory (malloc,
                                            mmap): not known to the driver */
    UCS_MEMTYPE_ALLOC_LAST
} ucs_memtype_alloc_kind_t;

/** Names of the kinds ("legacy", "pool", ...), indexed by kind. */
extern const char *ucs_memtype_alloc_kind_names[];

/**
 * Export handle types an allocation allows (bit mask). The low bits have
 * the values of CUDA's CUmemAllocationHandleType and of ucm_mem_handle_type_t,
 * so masks convert by a plain copy.
 */
enum {
    UCS_MEMTYPE_HANDLE_POSIX_FD   = UCS_BIT(0),
    UCS_MEMTYPE_HANDLE_WIN32      = UCS_BIT(1),
    UCS_MEMTYPE_HANDLE_WIN32_KMT  = UCS_BIT(2),
    UCS_MEMTYPE_HANDLE_FABRIC     = UCS_BIT(3),
    UCS_MEMTYPE_HANDLE_LEGACY_IPC = UCS_BIT(16) /**< cuIpcGetMemHandle works */
};

/**
 * Description of one region. The cache never interprets the fields beyond
 * mem_type and alloc_kind (which decide whether host pieces may be joined);
 * they mean what the producer says they mean.
 */
typedef struct ucs_memtype_info {
    ucs_memory_type_t        mem_type;     /**< host, cuda, cuda-managed, or
                                                UNKNOWN for "no answer" */
    int                      device;       /**< device ordinal; -1 for host
                                                memory or unknown */
    ucs_memtype_alloc_kind_t alloc_kind;   /**< how it was allocated */
    uint32_t                 handle_types; /**< UCS_MEMTYPE_HANDLE_* mask */
    void                     *pool;        /**< memory pool (CUmemoryPool)
                                                of pool memory, else NULL */
    void                     *alloc_base;  /**< start of the exportable
                                                object the region belongs to
                                                (producer-defined; for VMM
                                                where offset 0 of the physical
                                                allocation would lie) */
    size_t                   alloc_length; /**< size of that object */

    /**
     * The range the answer is known to hold for. Filled by lookups (the
     * cached region, or the joined host regions, that contain the query;
     * for an uncached answer the query itself). In a resolver's answer: the
     * extent of the allocation the address belongs to, or length 0 for
     * "unknown" (the cache then derives it for host memory, see
     * ucs_memtype_cache_lookup()). Ignored by ucs_memtype_cache_update().
     */
    void                     *region_start;
    size_t                   region_length;
} ucs_memtype_info_t;

/** Status of ucs_memtype_cache_lookup() for a query that is not inside one
 *  region: it crosses a region boundary (two allocations, or device memory
 *  and host memory). */
#define UCS_MEMTYPE_CACHE_ERR_SPANS UCS_ERR_OUT_OF_RANGE

/** A memory-type cache. Opaque. */
typedef struct ucs_memtype_cache ucs_memtype_cache_t;

/**
 * Answer a miss: describe the memory at @a address, typically with one
 * driver query (cuPointerGetAttributes, cuMemRetainAllocationHandle,
 * cuMemGetAddressRange).
 *
 * @param arg      as given to ucs_memtype_cache_set_resolver().
 * @param address  start of the query (the resolver only needs to describe
 *                 the memory at this address).
 * @param length   length of the query, > 0; informational.
 * @param info     on entry: mem_type UNKNOWN, device -1, everything else 0.
 *                 On UCS_OK: mem_type and the other fields; region_start /
 *                 region_length: the extent of the allocation containing
 *                 @a address (cuMemGetAddressRange), or length 0 if unknown.
 *                 Memory the driver does not know is reported as
 *                 UCS_MEMORY_TYPE_HOST with UCS_MEMTYPE_ALLOC_HOST and
 *                 region length 0.
 * @return UCS_OK, or an error when the question cannot be answered (the
 *         lookup then reports a miss and caches nothing).
 *
 * Called concurrently from any thread that looks up an address, outside
 * the cache's lock and outside any tree search, so it may itself call
 * ucs_memtype_cache_update() or ucs_memtype_cache_remove() (not lookup on
 * the same address: that would recurse).
 */
typedef ucs_status_t (*ucs_memtype_cache_resolve_func_t)(void *arg,
                                                         const void *address,
                                                         size_t length,
                                                         ucs_memtype_info_t *info);


/**
 * Create an empty cache. Reads UCX_MEMTYPE_CACHE (y/n/try; "n" makes every
 * lookup ask the resolver).
 *
 * @param name     for log messages (copied); may be NULL.
 * @param cache_p  set to the new cache, owned by the caller.
 * @return UCS_OK; UCS_ERR_INVALID_PARAM for a bad UCX_MEMTYPE_CACHE value
 *         (an error naming it was logged); UCS_ERR_NO_MEMORY.
 *
 * Thread safe.
 */
ucs_status_t ucs_memtype_cache_create(const char *name,
                                      ucs_memtype_cache_t **cache_p);


/**
 * Destroy a cache and free everything it holds. The caller guarantees that
 * no other thread uses the cache during or after the call.
 */
void ucs_memtype_cache_destroy(ucs_memtype_cache_t *cache);


/**
 * The process-wide cache, created on the first call (reading the
 * configuration then). Event producers and consumers share it. It lives
 * until the process exits: destroying it from a library destructor would
 * race with threads that are still running at exit.
 *
 * @param cache_p  set to the cache on UCS_OK.
 * @return UCS_OK, or the status of the failed creation (the same on every
 *         call).
 *
 * Thread safe.
 */
ucs_status_t ucs_memtype_cache_get_global(ucs_memtype_cache_t **cache_p);


/**
 * Set the function that answers misses; @a func NULL removes it. Lookups
 * that start after the call use the new resolver; a lookup already running
 * may still call the previous one, so a module must not unload its resolver
 * while lookups can be in flight.
 *
 * @return UCS_OK or UCS_ERR_NO_MEMORY (the old resolver stays).
 *
 * Thread safe.
 */
ucs_status_t ucs_memtype_cache_set_resolver(ucs_memtype_cache_t *cache,
                                            ucs_memtype_cache_resolve_func_t func,
                                            void *arg);


/**
 * Record that [@a address, @a address + @a length) is described by @a info
 * (an allocation event). Whatever the range overlapped is removed first:
 * regions inside it disappear, regions across its edges are trimmed, a
 * region around it is split in two (an address recycled by another
 * allocator gets the new description).
 *
 * @param info  copied; region_start / region_length are ignored. A
 *              mem_type of UCS_MEMORY_TYPE_UNKNOWN ("the hooks could not
 *              tell") forgets the range instead, so that the next lookup
 *              asks the resolver.
 * @return UCS_OK (also when caching is disabled: nothing is stored);
 *         UCS_ERR_INVALID_PARAM for length 0, or mem_type or alloc_kind
 *         out of range;
 *         UCS_ERR_NO_MEMORY, in which case the cache is emptied (lookups
 *         stay correct through the resolver) and an error is logged.
 *
 * Thread safe; serialised with other updates, waits for lookups that are
 * searching at that moment. Does not call the resolver.
 */
ucs_status_t ucs_memtype_cache_update(ucs_memtype_cache_t *cache,
                                      const void *address, size_t length,
                                      const ucs_memtype_info_t *info);


/**
 * Forget [@a address, @a address + @a length) (a free or unmap event):
 * regions inside it disappear, regions across its edges are trimmed or
 * split. Addresses that are not cached are ignored.
 *
 * @return UCS_OK; UCS_ERR_INVALID_PARAM for length 0; UCS_ERR_NO_MEMORY
 *         (a split failed: the cache is emptied, as for update).
 *
 * Thread safe, as ucs_memtype_cache_update().
 */
ucs_status_t ucs_memtype_cache_remove(ucs_memtype_cache_t *cache,
                                      const void *address, size_t length);


/**
 * Whether a change is still wanted, asked by ucs_memtype_cache_update_if()
 * under the update lock (for example "is this allocation still live").
 * Must not call into the cache.
 */
typedef int (*ucs_memtype_cache_check_func_t)(void *arg, const void *address,
                                              size_t length);


/**
 * As ucs_memtype_cache_update(), but store the change only if @a check
 * (when not NULL) returns non-zero, asked under the update lock. A removal
 * for the same range that is ordered after the check (it takes the lock,
 * or is parked by ucs_memtype_cache_remove_deferred()) is applied after
 * the change; one ordered before it has been applied already. That is
 * what makes a replay of allocations that races with their frees safe.
 *
 * @return as ucs_memtype_cache_update(); UCS_OK when @a check said no.
 */
ucs_status_t ucs_memtype_cache_update_if(ucs_memtype_cache_t *cache,
                                         const void *address, size_t length,
                                         const ucs_memtype_info_t *info,
                                         ucs_memtype_cache_check_func_t check,
                                         void *check_arg);


/**
 * Forget [@a address, @a address + @a length) as ucs_memtype_cache_remove()
 * does, from any context: inside malloc() or free() with their locks
 * held, in a signal handler, while another thread holds the update lock.
 * Never waits, allocates or logs. The removal is parked and applied by the
 * next update or by the next lookup that does not hit its remembered hits;
 * the call invalidates every remembered hit, so no lookup that starts
 * after it returns answers from the removed range. If too many removals
 * are parked at once, the next holder of the lock empties the cache
 * (correct, only slower).
 *
 * Thread safe and lock-free.
 */
void ucs_memtype_cache_remove_deferred(ucs_memtype_cache_t *cache,
                                       const void *address, size_t length);


/**
 * Describe [@a address, @a address + @a length). Length 0 asks about the
 * byte at @a address; a range past the top of the address space is cut
 * there.
 *
 * A query inside one cached region is answered from the cache. Otherwise,
 * for every gap the query touches (at most 8 per call), the resolver is
 * asked once and its answer written back into the gap:
 *  - device or managed memory with a known extent: the part of the extent
 *    that lies in the gap;
 *  - host memory (UCS_MEMTYPE_ALLOC_HOST, no extent): the part of the
 *    containing mapping of /proc/self/maps that lies in the gap, or only
 *    the page when /proc cannot be read; nothing when the address is not
 *    mapped or the mapping is inaccessible (PROT_NONE).
 * A resolver answer never replaces a region that is already cached; only
 * ucs_memtype_cache_update() does.
 *
 * Consecutive regions of ordinary host memory (UCS_MEMTYPE_ALLOC_HOST) are
 * joined: a query across them is a hit with region_* spanning them.
 *
 * @param info  filled on UCS_OK; on UCS_MEMTYPE_CACHE_ERR_SPANS it describes
 *              the region holding @a address; on UCS_ERR_NO_ELEM mem_type is
 *              UCS_MEMORY_TYPE_UNKNOWN.
 * @return UCS_OK: hit (from the cache or from the resolver);
 *         UCS_ERR_NO_ELEM: @a address is in no region and there is no
 *         resolver, or it failed;
 *         UCS_MEMTYPE_CACHE_ERR_SPANS (UCS_ERR_OUT_OF_RANGE): the query
 *         crosses a region boundary (other than between host regions).
 *
 * With caching disabled, every call asks the resolver about @a address and
 * returns its answer (SPANS when its known extent ends inside the query).
 *
 * Thread safe and lock-free: never waits for other lookups or for updates.
 * The answer is the state of the cache at one instant during the call.
 */
ucs_status_t ucs_memtype_cache_lookup(ucs_memtype_cache_t *cache,
                                      const void *address, size_t length,
                                      ucs_memtype_info_t *info);


/**
 * Stop caching for good (for example when the allocation hooks could not be
 * installed, so events would be missing and cached answers could go
 * stale): empty the cache; from then on every lookup asks the resolver and
 * updates are ignored. Thread safe.
 */
void ucs_memtype_cache_disable(ucs_memtype_cache_t *cache);


/** Whether the cache stores anything (UCX_MEMTYPE_CACHE and disable()). */
int ucs_memtype_cache_is_enabled(const ucs_memtype_cache_t *cache);


/** Number of regions cached (for tests and diagnostics). Thread safe. */
size_t ucs_memtype_cache_num_regions(ucs_memtype_cache_t *cache);


/**
 * Check the internal invariants (both tree copies valid and identical,
 * every region's description consistent) and log the first violation. For
 * tests; O(n), takes the update lock.
 *
 * @return UCS_OK or UCS_ERR_INVALID_PARAM.
 */
ucs_status_t ucs_memtype_cache_check(ucs_memtype_cache_t *cache);

END_C_DECLS

#endif
