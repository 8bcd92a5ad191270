#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <ucp/core/ucp_int.h>

#include <stdlib.h>
#include <string.h>

/* A generic datatype: the application's callbacks and context. Allocated
 * 16-byte aligned, so the low class bits of its address are free. */
typedef struct ucp_dt_generic {
    ucp_generic_dt_ops_t ops;
    void                 *context;
} __attribute__((aligned(16))) ucp_dt_generic_t;

static inline unsigned ucp_dt_class(ucp_datatype_t datatype)
{
    return (unsigned)(datatype & UCP_DATATYPE_CLASS_MASK);
}

static inline ucp_dt_generic_t *ucp_dt_to_generic(ucp_datatype_t datatype)
{
    return (ucp_dt_generic_t*)(uintptr_t)(datatype & ~(uint64_t)UCP_DATATYPE_CLASS_MASK);
}

ucs_status_t ucp_dt_create_generic(const ucp_generic_dt_ops_t *ops,
                                   void *context, ucp_datatype_t *datatype_p)
{
    ucp_dt_generic_t *dt;

    if ((ops == NULL) || (datatype_p == NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }
    dt = aligned_alloc(16, sizeof(*dt));
    if (dt == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    dt->ops     = *ops;
    dt->context = context;
    *datatype_p = (ucp_datatype_t)(uintptr_t)dt | UCP_DATATYPE_GENERIC;
    return UCS_OK;
}

void ucp_dt_destroy(ucp_datatype_t datatype)
{
    if (ucp_dt_class(datatype) == UCP_DATATYPE_GENERIC) {
        free(ucp_dt_to_generic(datatype));
    }
}

ucs_status_t ucp_dt_state_init(ucp_dt_state_t *state, const void *buffer,
                               size_t count, ucp_datatype_t datatype, int recv)
{
    const ucp_dt_iov_t *iov = buffer;
    ucp_dt_generic_t *gen;
    size_t i;

    state->buffer   = (void*)buffer;
    state->count    = count;
    state->datatype = datatype;
    state->generic  = NULL;
    state->length   = 0;
    switch (ucp_dt_class(datatype)) {
    case UCP_DATATYPE_CONTIG:
        state->length = count * (size_t)(datatype >> UCP_DATATYPE_SHIFT);
        return UCS_OK;
    case UCP_DATATYPE_IOV:
        for (i = 0; i < count; ++i) {
            state->length += iov[i].length;
        }
        return UCS_OK;
    case UCP_DATATYPE_GENERIC:
        gen            = ucp_dt_to_generic(datatype);
        state->generic = recv ? gen->ops.start_unpack(gen->context, (void*)buffer, count) :
                                gen->ops.start_pack(gen->context, buffer, count);
        state->length  = gen->ops.packed_size(state->generic);
        return UCS_OK;
    default:
        ucs_error("ucp: unsupported datatype 0x%llx", (unsigned long long)datatype);
        return UCS_ERR_INVALID_PARAM;
    }
}

void ucp_dt_state_finish(ucp_dt_state_t *state)
{
    if (state->generic != NULL) {
        ucp_dt_to_generic(state->datatype)->ops.finish(state->generic);
        state->generic = NULL;
    }
}

/* Copy between the packed stream [offset, offset + length) and the pieces
 * of an IOV; @a to_iov selects the direction. */
static void ucp_dt_iov_copy(ucp_dt_state_t *state, size_t offset, void *packed,
                            size_t length, int to_iov)
{
    const ucp_dt_iov_t *iov = state->buffer;
    size_t i, pos = 0, skip, n;
    char *p = packed;

    for (i = 0; (i < state->count) && (length > 0); ++i) {
        if (offset >= pos + iov[i].length) {
            pos += iov[i].length;
            continue;
        }
        skip = offset - pos;
        n    = iov[i].length - skip;
        n    = (n < length) ? n : length;
        if (to_iov) {
            memcpy((char*)iov[i].buffer + skip, p, n);
        } else {
            memcpy(p, (char*)iov[i].buffer + skip, n);
        }
        p      += n;
        offset += n;
        length -= n;
        pos    += iov[i].length;
    }
}

size_t ucp_dt_pack(ucp_dt_state_t *state, size_t offset, void *dest,
                   size_t length)
{
    switch (ucp_dt_class(state->datatype)) {
    case UCP_DATATYPE_CONTIG:
        memcpy(dest, (char*)state->buffer + offset, length);
        return length;
    case UCP_DATATYPE_IOV:
        ucp_dt_iov_copy(state, offset, dest, length, 0);
        return length;
    default:
        return ucp_dt_to_generic(state->datatype)->ops.pack(state->generic,
                                                            offset, dest, length);
    }
}

ucs_status_t ucp_dt_unpack(ucp_dt_state_t *state, size_t offset,
                           const void *src, size_t length)
{
    if (offset >= state->length) {
        return UCS_OK;
    }
    if (length > state->length - offset) {
        length = state->length - offset; /* truncated: keep what fits */
    }
    switch (ucp_dt_class(state->datatype)) {
    case UCP_DATATYPE_CONTIG:
        memcpy((char*)state->buffer + offset, src, length);
        return UCS_OK;
    case UCP_DATATYPE_IOV:
        ucp_dt_iov_copy(state, offset, (void*)src, length, 1);
        return UCS_OK;
    default:
        return ucp_dt_to_generic(state->datatype)->ops.unpack(state->generic,
                                                              offset, src, length);
    }
}

ucs_status_t ucp_dt_query(ucp_datatype_t datatype, ucp_datatype_attr_t *attr)
{
    unsigned dt_class = datatype & UCP_DATATYPE_CLASS_MASK;
    const void *buffer;
    ucp_dt_state_t state;
    ucs_status_t status;
    size_t count;

    if (attr == NULL) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (!(attr->field_mask & UCP_DATATYPE_ATTR_FIELD_PACKED_SIZE)) {
        return UCS_OK; /* nothing asked */
    }
    buffer = (attr->field_mask & UCP_DATATYPE_ATTR_FIELD_BUFFER) ? attr->buffer : NULL;
    count  = (attr->field_mask & UCP_DATATYPE_ATTR_FIELD_COUNT) ? attr->count : 1;
    if ((dt_class != UCP_DATATYPE_CONTIG) && (buffer == NULL) && (count > 0)) {
        /* the entries (IOV) or the callbacks' input (generic) are needed */
        return UCS_ERR_INVALID_PARAM;
    }
    status = ucp_dt_state_init(&state, buffer, count, datatype, 0);
    if (status != UCS_OK) {
        return status;
    }
    attr->packed_size = state.length;
    ucp_dt_state_finish(&state);
    return UCS_OK;
}
