#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <ucs/datastruct/mpool.h>
#include <ucs/debug/log.h>

#include <stdio.h>
#include <stdlib.h>

#define UCS_MPOOL_DEFAULT_ALIGNMENT      16
#define UCS_MPOOL_DEFAULT_OBJS_PER_CHUNK 64

/* One malloc'ed block: this header, padding, then the object slots. */
struct ucs_mpool_chunk {
    ucs_mpool_chunk_t *next;
    unsigned          num_objs;
};


static inline size_t ucs_mpool_align_up(size_t value, size_t alignment)
{
    return (value + alignment - 1) & ~(alignment - 1);
}

void ucs_mpool_params_reset(ucs_mpool_params_t *params)
{
    params->obj_size       = 0;
    params->alignment      = UCS_MPOOL_DEFAULT_ALIGNMENT;
    params->objs_per_chunk = UCS_MPOOL_DEFAULT_OBJS_PER_CHUNK;
    params->max_objs       = UCS_MPOOL_UNLIMITED;
    params->obj_init       = NULL;
    params->obj_init_arg   = NULL;
    params->name           = "mpool";
}

ucs_status_t ucs_mpool_init(ucs_mpool_t *mp, const ucs_mpool_params_t *params)
{
    const char *name = (params->name != NULL) ? params->name : "mpool";
    size_t alignment = params->alignment;
    size_t stride;

    if (alignment == 0) {
        alignment = UCS_MPOOL_DEFAULT_ALIGNMENT;
    }
    if (alignment & (alignment - 1)) {
        ucs_error("mpool '%s': alignment %zu is not a power of two", name,
                  alignment);
        return UCS_ERR_INVALID_PARAM;
    }
    /* The header right before each object must itself be aligned. */
    if (alignment < sizeof(ucs_mpool_elem_t)) {
        alignment = sizeof(ucs_mpool_elem_t);
    }

    if ((params->obj_size == 0) || (params->objs_per_chunk == 0) ||
        (params->max_objs == 0)) {
        ucs_error("mpool '%s': invalid obj_size %zu / objs_per_chunk %u / "
                  "max_objs %u", name, params->obj_size,
                  params->objs_per_chunk, params->max_objs);
        return UCS_ERR_INVALID_PARAM;
    }

    /* Chunk sizes are computed in ucs_mpool_get_grow(); bounding every term
     * by a quarter of the address space here rules out overflow there. */
    if ((params->obj_size > SIZE_MAX / 4) || (alignment > SIZE_MAX / 4)) {
        ucs_error("mpool '%s': obj_size %zu / alignment %zu is too large",
                  name, params->obj_size, alignment);
        return UCS_ERR_INVALID_PARAM;
    }
    stride = ucs_mpool_align_up(sizeof(ucs_mpool_elem_t) + params->obj_size,
                                alignment);
    if (stride > (SIZE_MAX / 4) / params->objs_per_chunk) {
        ucs_error("mpool '%s': %u objects of %zu bytes do not fit in a chunk",
                  name, params->objs_per_chunk, stride);
        return UCS_ERR_INVALID_PARAM;
    }

    mp->free_list      = NULL;
    mp->chunks         = NULL;
    mp->obj_size       = params->obj_size;
    mp->alignment      = alignment;
    mp->elem_stride    = stride;
    mp->objs_per_chunk = params->objs_per_chunk;
    mp->max_objs       = params->max_objs;
    mp->num_objs       = 0;
    mp->obj_init       = params->obj_init;
    mp->obj_init_arg   = params->obj_init_arg;
    snprintf(mp->name, sizeof(mp->name), "%s", name);

    ucs_debug("mpool '%s': object size %zu alignment %zu stride %zu, "
              "%u per chunk, max %u", mp->name, mp->obj_size, mp->alignment,
              mp->elem_stride, mp->objs_per_chunk, mp->max_objs);
    return UCS_OK;
}

void ucs_mpool_cleanup(ucs_mpool_t *mp)
{
    ucs_mpool_chunk_t *chunk, *next;
    ucs_mpool_elem_t *elem;
    unsigned num_free = 0;

    /* Counting here rather than on every get/put keeps the fast path free
     * of bookkeeping. */
    for (elem = mp->free_list; elem != NULL; elem = elem->next) {
        ++num_free;
    }

    if (num_free != mp->num_objs) {
        ucs_warn("mpool '%s': %u of %u objects were not returned to the pool",
                 mp->name, mp->num_objs - num_free, mp->num_objs);
    }

    for (chunk = mp->chunks; chunk != NULL; chunk = next) {
        next = chunk->next;
        free(chunk);
    }

    ucs_debug("mpool '%s': released %u objects", mp->name, mp->num_objs);
    mp->chunks    = NULL;
    mp->free_list = NULL;
    mp->num_objs  = 0;
}

void *ucs_mpool_get_grow(ucs_mpool_t *mp)
{
    unsigned count = mp->objs_per_chunk;
    ucs_mpool_chunk_t *chunk;
    ucs_mpool_elem_t *elem;
    uintptr_t first_obj;
    size_t chunk_size;
    unsigned i;

    if (mp->num_objs >= mp->max_objs) {
        /* Expected under load when a limit is set: not an error. */
        ucs_debug("mpool '%s': all %u objects are in use", mp->name,
                  mp->max_objs);
        return NULL;
    }

    if (count > mp->max_objs - mp->num_objs) {
        count = mp->max_objs - mp->num_objs;
    }

    /* Room for the chunk header, the first object's header, padding up to
     * the alignment, and the slots. */
    chunk_size = sizeof(*chunk) + sizeof(ucs_mpool_elem_t) +
                 (mp->alignment - 1) + ((size_t)count * mp->elem_stride);
    chunk      = malloc(chunk_size);
    if (chunk == NULL) {
        ucs_error("mpool '%s': failed to allocate a chunk of %zu bytes "
                  "(%u objects)", mp->name, chunk_size, count);
        return NULL;
    }

    chunk->num_objs = count;
    chunk->next     = mp->chunks;
    mp->chunks      = chunk;

    first_obj = ucs_mpool_align_up((uintptr_t)(chunk + 1) +
                                   sizeof(ucs_mpool_elem_t), mp->alignment);

    /* Push in reverse so that objects are handed out in address order. */
    for (i = count; i-- > 0;) {
        elem = (ucs_mpool_elem_t*)(first_obj + (i * mp->elem_stride)) - 1;
        if (mp->obj_init != NULL) {
            mp->obj_init(elem + 1, mp->obj_init_arg);
        }
        elem->next    = mp->free_list;
        mp->free_list = elem;
    }

    mp->num_objs += count;
    ucs_debug("mpool '%s': added a chunk of %u objects, %u in total",
              mp->name, count, mp->num_objs);
    return ucs_mpool_get(mp);
}
