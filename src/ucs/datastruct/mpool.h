/**
 * @file mpool.h
 * Pool of fixed-size objects.
 *
 * Objects are carved out of chunks that are allocated on demand, a chunk at
 * a time, and released only by ucs_mpool_cleanup(). Each object is preceded
 * by a one-pointer header: while the object is free the header links it into
 * the pool's free list, while it is in use the header names its pool, which
 * is why ucs_mpool_put() needs only the object. Keeping the link outside the
 * object means the pool never writes into object memory, so what the
 * init callback set up survives any number of get/put cycles.
 *
 * get and put are O(1): a pop from and a push to the free list. The most
 * recently returned object is handed out first (it is likely still cached).
 *
 * Thread safety: none. A pool shared between threads must be protected by
 * the caller, around both get and put.
 */
#ifndef UCS_DATASTRUCT_MPOOL_H_
#define UCS_DATASTRUCT_MPOOL_H_

#include <ucs/type/status.h>
#include <ucs/debug/log.h>

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

BEGIN_C_DECLS

/** Value of ucs_mpool_params_t::max_objs meaning "no limit". */
#define UCS_MPOOL_UNLIMITED      UINT_MAX

/** Longest pool name kept for log messages (longer names are truncated). */
#define UCS_MPOOL_NAME_MAX       32

/**
 * Called once for each object, when the chunk holding it is allocated (not
 * on every get). Sets up state that outlives get/put cycles.
 *
 * @param obj  the object, aligned as requested.
 * @param arg  ucs_mpool_params_t::obj_init_arg.
 */
typedef void (*ucs_mpool_obj_init_cb_t)(void *obj, void *arg);

/** Pool parameters; start from ucs_mpool_params_reset(). */
typedef struct ucs_mpool_params {
    size_t                  obj_size;       /**< Object size in bytes, > 0 */
    size_t                  alignment;      /**< Object alignment, a power of
                                                 two; 0 selects 16. Values
                                                 below pointer size are
                                                 raised to it. */
    unsigned                objs_per_chunk; /**< Objects per allocation, > 0 */
    unsigned                max_objs;       /**< Most objects ever allocated,
                                                 or UCS_MPOOL_UNLIMITED */
    ucs_mpool_obj_init_cb_t obj_init;       /**< Optional, may be NULL */
    void                    *obj_init_arg;  /**< Passed to obj_init */
    const char              *name;          /**< For log messages; copied */
} ucs_mpool_params_t;

/** Header in front of every object. */
typedef union ucs_mpool_elem {
    union ucs_mpool_elem *next;   /* while free: next free object */
    uintptr_t            owner;   /* while in use: pool address, low bit set */
} ucs_mpool_elem_t;

/** Chunk bookkeeping, private to mpool.c. */
typedef struct ucs_mpool_chunk ucs_mpool_chunk_t;

/** The pool. Fields are private; use the functions below. */
typedef struct ucs_mpool {
    ucs_mpool_elem_t        *free_list;
    ucs_mpool_chunk_t       *chunks;
    size_t                  obj_size;
    size_t                  alignment;
    size_t                  elem_stride;  /* header + object, padded */
    unsigned                objs_per_chunk;
    unsigned                max_objs;
    unsigned                num_objs;     /* allocated so far, in use or free */
    ucs_mpool_obj_init_cb_t obj_init;
    void                    *obj_init_arg;
    char                    name[UCS_MPOOL_NAME_MAX];
} ucs_mpool_t;

/* An in-use header holds the pool address with this bit set; a free one
 * holds a (pointer-aligned) link, so the bit tells the two states apart. */
#define UCS_MPOOL_ELEM_IN_USE    ((uintptr_t)1)


/**
 * Fill @a params with defaults: no object size (must be set), alignment 16,
 * 64 objects per chunk, unlimited, no init callback, name "mpool".
 */
void ucs_mpool_params_reset(ucs_mpool_params_t *params);

/**
 * Initialize an empty pool. No memory is allocated until the first get.
 *
 * @return UCS_OK, or UCS_ERR_INVALID_PARAM (logged) for a zero size or
 *         chunk count or max_objs, a non-power-of-two alignment, or sizes
 *         that overflow.
 */
ucs_status_t ucs_mpool_init(ucs_mpool_t *mp, const ucs_mpool_params_t *params);

/**
 * Release every chunk. Objects not returned with ucs_mpool_put() are freed
 * as well, and a warning naming the pool and how many objects were still in
 * use is printed. The pool must be initialized again before further use.
 */
void ucs_mpool_cleanup(ucs_mpool_t *mp);

/**
 * Slow path of ucs_mpool_get(), called when the free list is empty:
 * allocates a chunk (calling the init callback for each of its objects) and
 * returns one object, or NULL when the pool reached max_objs or memory is
 * exhausted. Not meant to be called directly.
 */
void *ucs_mpool_get_grow(ucs_mpool_t *mp);

/**
 * Take an object from the pool. Its contents are what the init callback set
 * (first use) or what the previous user left (reuse).
 *
 * @return the object, or NULL when max_objs objects are in use or memory is
 *         exhausted. O(1); allocates a chunk only when no object is free.
 */
static inline void *ucs_mpool_get(ucs_mpool_t *mp)
{
    ucs_mpool_elem_t *elem = mp->free_list;

    if (ucs_unlikely(elem == NULL)) {
        return ucs_mpool_get_grow(mp);
    }

    mp->free_list = elem->next;
    elem->owner   = (uintptr_t)mp | UCS_MPOOL_ELEM_IN_USE;
    return elem + 1;
}

/**
 * Give back an object obtained from ucs_mpool_get() of any pool; the pool is
 * found from the object's header. The object's memory is left untouched.
 * O(1).
 */
static inline void ucs_mpool_put(void *obj)
{
    ucs_mpool_elem_t *elem = (ucs_mpool_elem_t*)obj - 1;
    ucs_mpool_t *mp;

    /* A clear bit means the object is already free: a double put. */
    ucs_assert(elem->owner & UCS_MPOOL_ELEM_IN_USE);
    mp            = (ucs_mpool_t*)(elem->owner & ~UCS_MPOOL_ELEM_IN_USE);
    elem->next    = mp->free_list;
    mp->free_list = elem;
}

/** Number of objects allocated so far (in use plus free). */
static inline unsigned ucs_mpool_num_objs(const ucs_mpool_t *mp)
{
    return mp->num_objs;
}

/** The pool's name, as given in the parameters. */
static inline const char *ucs_mpool_name(const ucs_mpool_t *mp)
{
    return mp->name;
}

END_C_DECLS

#endif
