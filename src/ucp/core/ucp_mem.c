#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * Memory registration (ucp_mem_map) and remote keys.
 *
 * A region is registered with every md of the context that can register its
 * memory type; with UCP_MEM_MAP_ALLOCATE it is allocated by the first md that
 * can allocate it (posix: shared memory another process can map), else by
 * malloc and registered.
 *
 * Packed remote key, version 1:
 *   magic u32 "UCPK", version u16, count u16, mem_type u8, pad[3],
 *   size u32 (the whole packed key), address u64, length u64, rma_id u64
 *   (the region's identity, checked by the target of RMA requests), then
 *   per md: comp_len u8, component name, rkey_len u16, the md's packed key.
 * ucp_ep_rkey_unpack() gets no length from the application, so the key says
 * its own size; every entry is checked to lie inside it, and the entry for
 * our md must be exactly the size that md unpacks.
 */

#include <ucp/core/ucp_int.h>

#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#define UCP_RKEY_MAGIC   0x4b504355u /* "UCPK" */
#define UCP_RKEY_VERSION 1
#define UCP_RKEY_MAX_SIZE 65536

struct ucp_mem {
    ucp_context_h     context;
    void              *address;
    size_t            length;
    ucs_memory_type_t mem_type;
    int               alloc_md;    /* md that allocated it, -1: none */
    int               malloced;    /* we malloc'ed it */
    size_t            mmapped;     /* bytes we mmap'ed at a fixed address */
    uct_mem_h         *uct_memh;   /* per md of the context, or NULL */
    uint64_t          rma_id;      /* remote requests name it so, 0: none */
};

struct ucp_rkey {
    uct_component_h   component;
    uct_rkey_bundle_t bundle;
    uint64_t          address;
    size_t            length;
    ucs_memory_type_t mem_type;
    uint64_t          rma_id;
};

typedef struct {
    uint32_t magic;
    uint16_t version;
    uint16_t count;
    uint8_t  mem_type;
    uint8_t  pad[3];
    uint32_t size;
    uint64_t address;
    uint64_t length;
    uint64_t rma_id;  /* the region's identity for RMA requests */
} ucp_rkey_header_t;

static void ucp_mem_release(ucp_mem_h memh)
{
    ucp_context_h context = memh->context;
    unsigned i;

    ucp_rma_region_remove(memh->rma_id);
    for (i = 0; i < context->num_mds; ++i) {
        if ((memh->uct_memh[i] == NULL) || ((int)i == memh->alloc_md)) {
            continue;
        }
        uct_md_mem_dereg(context->mds[i].md, memh->uct_memh[i]);
    }
    if (memh->alloc_md >= 0) {
        uct_md_mem_free(context->mds[memh->alloc_md].md,
                        memh->uct_memh[memh->alloc_md]);
    }
    if (memh->malloced) {
        free(memh->address);
    }
    if (memh->mmapped > 0) {
        munmap(memh->address, memh->mmapped);
    }
    free(memh->uct_memh);
    free(memh);
}

/*
 * Host memory exactly at the caller's address (UCP_MEM_MAP_FIXED), when no
 * memory domain offers it: what Open MPI's symmetric heap asks for (every PE
 * maps its heap at the same address). The range must be page aligned and
 * free; MAP_FIXED_NOREPLACE never replaces a mapping that is there.
 */
static ucs_status_t ucp_mem_allocate_fixed_host(ucp_mem_h memh)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t length;
    void *ptr;

    if ((memh->address == NULL) || ((uintptr_t)memh->address % page)) {
        ucs_error("ucp_mem_map: UCP_MEM_MAP_FIXED needs a page-aligned address "
                  "(%zu bytes), not %p", page, memh->address);
        return UCS_ERR_INVALID_PARAM;
    }
    if (memh->length > SIZE_MAX - page) {
        ucs_error("ucp_mem_map: %zu bytes at %p: too large", memh->length,
                  memh->address);
        return UCS_ERR_NO_MEMORY;
    }
    length = (memh->length + page - 1) / page * page;
    ptr    = mmap(memh->address, length, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (ptr == MAP_FAILED) {
        ucs_error("ucp_mem_map: cannot allocate %zu bytes at %p: %s", length,
                  memh->address,
                  (errno == EEXIST) ? "the range is already mapped" : strerror(errno));
        return (errno == EINVAL) ? UCS_ERR_INVALID_PARAM : UCS_ERR_NO_MEMORY;
    }
    if (ptr != memh->address) {
        /* a kernel older than 4.17 took the flag for a hint */
        munmap(ptr, length);
        ucs_error("ucp_mem_map: cannot allocate %zu bytes at %p: the kernel "
                  "placed them elsewhere", length, memh->address);
        return UCS_ERR_NO_MEMORY;
    }
    memh->mmapped = length;
    ucs_debug("ucp: mapped %zu bytes at fixed address %p", length, ptr);
    return UCS_OK;
}

static ucs_status_t ucp_mem_allocate(ucp_mem_h memh, unsigned flags)
{
    ucp_context_h context = memh->context;
    size_t length;
    void *address;
    unsigned i;

    for (i = 0; i < context->num_mds; ++i) {
        const uct_md_attr_t *attr = &context->mds[i].attr;
        if (!(attr->cap.flags & UCT_MD_FLAG_ALLOC) ||
            !(attr->cap.alloc_mem_types & UCS_BIT(memh->mem_type))) {
            continue;
        }
        length  = memh->length;
        address = memh->address;
        if (uct_md_mem_alloc(context->mds[i].md, &length, &address, memh->mem_type,
                             ((flags & UCP_MEM_MAP_FIXED) ? UCT_MD_MEM_FLAG_FIXED : 0) |
                             UCT_MD_MEM_ACCESS_ALL, "ucp_mem_map",
                             &memh->uct_memh[i]) == UCS_OK) {
            memh->address  = address;
            memh->alloc_md = (int)i;
            ucs_debug("ucp: allocated %zu bytes at %p with md %s", memh->length,
                      address, context->mds[i].md_name);
            return UCS_OK;
        }
    }
    if ((memh->mem_type == UCS_MEMORY_TYPE_HOST) && (flags & UCP_MEM_MAP_FIXED)) {
        return ucp_mem_allocate_fixed_host(memh);
    }
    if ((memh->mem_type != UCS_MEMORY_TYPE_HOST) || (flags & UCP_MEM_MAP_FIXED)) {
        ucs_error("ucp_mem_map: no memory domain can allocate %s memory%s",
                  ucs_memory_type_names[memh->mem_type],
                  (flags & UCP_MEM_MAP_FIXED) ? " at a fixed address" : "");
        return UCS_ERR_UNSUPPORTED;
    }
    if (posix_memalign(&memh->address, 64, memh->length) != 0) {
        return UCS_ERR_NO_MEMORY;
    }
    memh->malloced = 1;
    return UCS_OK;
}

ucs_status_t ucp_mem_map(ucp_context_h context, const ucp_mem_map_params_t *params,
                         ucp_mem_h *memh_p)
{
    unsigned flags = 0, i;
    ucs_status_t status;
    ucp_mem_h memh;

    if ((params == NULL) || (memh_p == NULL) ||
        !(params->field_mask & UCP_MEM_MAP_PARAM_FIELD_LENGTH)) {
        ucs_error("ucp_mem_map: the length is required");
        return UCS_ERR_INVALID_PARAM;
    }
    if (params->field_mask & UCP_MEM_MAP_PARAM_FIELD_FLAGS) {
        flags = params->flags;
    }
    if (!(flags & UCP_MEM_MAP_ALLOCATE) && (params->length > 0) &&
        (!(params->field_mask & UCP_MEM_MAP_PARAM_FIELD_ADDRESS) ||
         (params->address == NULL))) {
        ucs_error("ucp_mem_map: an address is required without UCP_MEM_MAP_ALLOCATE");
        return UCS_ERR_INVALID_PARAM;
    }

    memh = calloc(1, sizeof(*memh));
    if (memh == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    memh->uct_memh = calloc(context->num_mds + 1, sizeof(*memh->uct_memh));
    if (memh->uct_memh == NULL) {
        free(memh);
        return UCS_ERR_NO_MEMORY;
    }
    memh->context  = context;
    memh->alloc_md = -1;
    memh->length   = params->length;
    memh->address  = (params->field_mask & UCP_MEM_MAP_PARAM_FIELD_ADDRESS) ?
                     params->address : NULL;
    if ((params->field_mask & UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE) &&
        (params->memory_type < UCS_MEMORY_TYPE_UNKNOWN)) {
        memh->mem_type = params->memory_type;
    } else if (flags & UCP_MEM_MAP_ALLOCATE) {
        memh->mem_type = UCS_MEMORY_TYPE_HOST;
    } else {
        memh->mem_type = context->memtype_lookup(memh->address, memh->length);
    }
    if (memh->length == 0) {
        *memh_p = memh; /* a valid handle that maps nothing */
        return UCS_OK;
    }

    if (flags & UCP_MEM_MAP_ALLOCATE) {
        status = ucp_mem_allocate(memh, flags);
        if (status != UCS_OK) {
            goto err;
        }
    }
    for (i = 0; i < context->num_mds; ++i) {
        const uct_md_attr_t *attr = &context->mds[i].attr;
        if (((int)i == memh->alloc_md) || !(attr->cap.flags & UCT_MD_FLAG_REG) ||
            !(attr->cap.reg_mem_types & UCS_BIT(memh->mem_type))) {
            continue;
        }
        status = uct_md_mem_reg(context->mds[i].md, memh->address, memh->length,
                                UCT_MD_MEM_ACCESS_ALL, &memh->uct_memh[i]);
        if (status != UCS_OK) {
            ucs_debug("ucp: md %s did not register %p: %s", context->mds[i].md_name,
                      memh->address, ucs_status_string(status));
            memh->uct_memh[i] = NULL;
        }
    }
    status = ucp_rma_region_add(context, memh->address, memh->length,
                                memh->mem_type, &memh->rma_id);
    if (status != UCS_OK) {
        goto err;
    }
    *memh_p = memh;
    return UCS_OK;

err:
    ucp_mem_release(memh);
    return status;
}

ucs_status_t ucp_mem_unmap(ucp_context_h context, ucp_mem_h memh)
{
    if ((memh == NULL) || (memh->context != context)) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucp_mem_release(memh);
    return UCS_OK;
}

ucs_status_t ucp_mem_query(const ucp_mem_h memh, ucp_mem_attr_t *attr)
{
    if (attr->field_mask & UCP_MEM_ATTR_FIELD_ADDRESS) {
        attr->address = memh->address;
    }
    if (attr->field_mask & UCP_MEM_ATTR_FIELD_LENGTH) {
        attr->length = memh->length;
    }
    if (attr->field_mask & UCP_MEM_ATTR_FIELD_MEM_TYPE) {
        attr->mem_type = memh->mem_type;
    }
    return UCS_OK;
}

ucs_status_t ucp_mem_advise(ucp_context_h context, ucp_mem_h memh,
                            ucp_mem_advise_params_t *params)
{
    uint64_t mask = UCP_MEM_ADVISE_PARAM_FIELD_ADDRESS |
                    UCP_MEM_ADVISE_PARAM_FIELD_LENGTH |
                    UCP_MEM_ADVISE_PARAM_FIELD_ADVICE;
    uintptr_t start, end;

    (void)context;
    if ((params == NULL) || ((params->field_mask & mask) != mask)) {
        return UCS_ERR_INVALID_PARAM;
    }
    start = (uintptr_t)params->address;
    end   = start + params->length;
    if ((start < (uintptr_t)memh->address) || (end < start) ||
        (end > (uintptr_t)memh->address + memh->length)) {
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK; /* advice only: every md maps eagerly */
}

ucs_status_t ucp_rkey_pack(ucp_context_h context, ucp_mem_h memh,
                           void **rkey_buffer_p, size_t *size_p)
{
    ucp_rkey_header_t hdr;
    size_t size, comp_len;
    uint16_t len16;
    unsigned i;
    char *buf, *p;

    memset(&hdr, 0, sizeof(hdr));
    size = sizeof(hdr);
    for (i = 0; i < context->num_mds; ++i) {
        if (memh->uct_memh[i] != NULL) {
            size += 1 + strlen(context->mds[i].component_name) + 2 +
                    context->mds[i].attr.rkey_packed_size;
            ++hdr.count;
        }
    }
    buf = malloc(size);
    if (buf == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    hdr.magic    = UCP_RKEY_MAGIC;
    hdr.version  = UCP_RKEY_VERSION;
    hdr.mem_type = (uint8_t)memh->mem_type;
    hdr.size     = (uint32_t)size;
    hdr.address  = (uintptr_t)memh->address;
    hdr.length   = memh->length;
    hdr.rma_id   = memh->rma_id;
    memcpy(buf, &hdr, sizeof(hdr));
    p = buf + sizeof(hdr);
    for (i = 0; i < context->num_mds; ++i) {
        if (memh->uct_memh[i] == NULL) {
            continue;
        }
        comp_len = strlen(context->mds[i].component_name);
        *p++     = (char)comp_len;
        memcpy(p, context->mds[i].component_name, comp_len);
        p    += comp_len;
        len16 = (uint16_t)context->mds[i].attr.rkey_packed_size;
        memcpy(p, &len16, 2);
        p += 2;
        if ((len16 > 0) &&
            (uct_md_mkey_pack(context->mds[i].md, memh->uct_memh[i], p) != UCS_OK)) {
            free(buf);
            return UCS_ERR_IO_ERROR;
        }
        p += len16;
    }
    *rkey_buffer_p = buf;
    *size_p        = size;
    return UCS_OK;
}

void ucp_rkey_buffer_release(void *rkey_buffer)
{
    free(rkey_buffer);
}

ucs_status_t ucp_ep_rkey_unpack(ucp_ep_h ep, const void *rkey_buffer,
                                ucp_rkey_h *rkey_p)
{
    ucp_context_h context = ep->worker->context;
    const ucp_md_entry_t *md =
        &context->mds[context->rscs[ep->wiface->rsc_index].md_index];
    const char *p = (const char*)rkey_buffer + sizeof(ucp_rkey_header_t), *end;
    ucp_rkey_header_t hdr;
    ucs_status_t status;
    ucp_rkey_h rkey;
    uint16_t len16;
    uint8_t comp_len;
    unsigned i;

    memcpy(&hdr, rkey_buffer, sizeof(hdr));
    if ((hdr.magic != UCP_RKEY_MAGIC) || (hdr.version != UCP_RKEY_VERSION) ||
        (hdr.mem_type >= UCS_MEMORY_TYPE_UNKNOWN) || (hdr.size < sizeof(hdr)) ||
        (hdr.size > UCP_RKEY_MAX_SIZE) || (hdr.address + hdr.length < hdr.address)) {
        ucs_error("ucp_ep_rkey_unpack: not a packed remote key of this library");
        return UCS_ERR_INVALID_PARAM;
    }
    end = (const char*)rkey_buffer + hdr.size;
    for (i = 0; i < hdr.count; ++i) {
        if (end - p < 1) {
            goto err_truncated;
        }
        comp_len = (uint8_t)*p++;
        if (end - p < comp_len + 2) {
            goto err_truncated;
        }
        memcpy(&len16, p + comp_len, 2);
        if (end - (p + comp_len + 2) < len16) {
            goto err_truncated;
        }
        if ((comp_len == strlen(md->component_name)) &&
            !memcmp(p, md->component_name, comp_len)) {
            if (len16 != md->attr.rkey_packed_size) {
                ucs_error("ucp_ep_rkey_unpack: %s key of %u bytes, expected %zu",
                          md->component_name, len16, md->attr.rkey_packed_size);
                return UCS_ERR_INVALID_PARAM;
            }
            rkey = calloc(1, sizeof(*rkey));
            if (rkey == NULL) {
                return UCS_ERR_NO_MEMORY;
            }
            status = uct_rkey_unpack(md->component, p + comp_len + 2, &rkey->bundle);
            if (status != UCS_OK) {
                free(rkey);
                return status;
            }
            rkey->component = md->component;
            goto out;
        }
        p += comp_len + 2 + len16;
    }
    /* No transport of the ep can use the memory directly: RMA goes over
     * active messages (src/ucp/rma) and ucp_rkey_ptr() is unreachable. */
    ucs_debug("ucp: no key for %s in a packed rkey of %u entries: RMA over "
              "active messages", md->component_name, hdr.count);
    rkey = calloc(1, sizeof(*rkey));
    if (rkey == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
out:
    rkey->address  = hdr.address;
    rkey->length   = hdr.length;
    rkey->mem_type = (ucs_memory_type_t)hdr.mem_type;
    rkey->rma_id   = hdr.rma_id;
    *rkey_p        = rkey;
    return UCS_OK;

err_truncated:
    ucs_error("ucp_ep_rkey_unpack: entry %u runs past the key's %u bytes", i,
              hdr.size);
    return UCS_ERR_INVALID_PARAM;
}

ucs_status_t ucp_rkey_ptr(ucp_rkey_h rkey, uint64_t raddr, void **addr_p)
{
    if ((raddr < rkey->address) || (raddr >= rkey->address + rkey->length)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (rkey->component == NULL) {
        return UCS_ERR_UNREACHABLE;
    }
    return (uct_rkey_ptr(rkey->component, &rkey->bundle, raddr, addr_p) == UCS_OK) ?
           UCS_OK : UCS_ERR_UNREACHABLE;
}

void ucp_rkey_destroy(ucp_rkey_h rkey)
{
    if (rkey->component != NULL) {
        uct_rkey_release(rkey->component, &rkey->bundle);
    }
    free(rkey);
}

void ucp_rkey_region(ucp_rkey_h rkey, uint64_t *id_p, uint64_t *address_p,
                     uint64_t *length_p)
{
    *id_p      = rkey->rma_id;
    *address_p = rkey->address;
    *length_p  = rkey->length;
}

ucs_status_t ucp_memh_pack(ucp_mem_h memh, const ucp_memh_pack_params_t *params,
                           void **buffer_p, size_t *buffer_size_p)
{
    uint64_t flags = ((params != NULL) &&
                      (params->field_mask & UCP_MEMH_PACK_PARAM_FIELD_FLAGS)) ?
                     params->flags : 0;

    if ((memh == NULL) || (buffer_p == NULL) || (buffer_size_p == NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (flags & UCP_MEMH_PACK_FLAG_EXPORT) {
        ucs_debug("ucp_memh_pack: exported memory handles are not supported");
        return UCS_ERR_UNSUPPORTED;
    }
    if (flags != 0) {
        return UCS_ERR_INVALID_PARAM;
    }
    return ucp_rkey_pack(memh->context, memh, buffer_p, buffer_size_p);
}

void ucp_memh_buffer_release(void *buffer,
                             const ucp_memh_buffer_release_params_t *params)
{
    (void)params;
    ucp_rkey_buffer_release(buffer);
}

/* -1, 0 or 1 as @a a is below, equal to or above @a b. */
static int ucp_rkey_cmp_u64(uint64_t a, uint64_t b)
{
    return (a > b) - (a < b);
}

ucs_status_t ucp_rkey_compare(ucp_worker_h worker, ucp_rkey_h rkey1, ucp_rkey_h rkey2,
                              const ucp_rkey_compare_params_t *params, int *result)
{
    /* What the packed key names: two unpacks of one buffer are equal. */
    const uint64_t a[] = {(uintptr_t)rkey1->component, rkey1->rma_id,
                          rkey1->address, rkey1->length, (uint64_t)rkey1->mem_type};
    const uint64_t b[] = {(uintptr_t)rkey2->component, rkey2->rma_id,
                          rkey2->address, rkey2->length, (uint64_t)rkey2->mem_type};
    unsigned i;
    int r = 0;

    (void)worker;
    if ((rkey1 == NULL) || (rkey2 == NULL) || (params == NULL) ||
        (params->field_mask != 0) || (result == NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }
    for (i = 0; (i < sizeof(a) / sizeof(a[0])) && (r == 0); ++i) {
        r = ucp_rkey_cmp_u64(a[i], b[i]);
    }
    *result = r;
    return UCS_OK;
}
