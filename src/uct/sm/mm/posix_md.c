#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "posix_md.h"

#include <ucs/debug/log.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * Packed remote key. Self-describing and versioned: a magic word, the
 * version, the kind of segment, its own size, and a checksum over every
 * other byte, so that a corrupt or truncated key is recognised before any
 * field is used. Fields are in host byte order: keys only make sense on
 * the host that packed them.
 */
#define UCT_POSIX_RKEY_MAGIC    0x4b525055u /* "UPRK" little endian */
#define UCT_POSIX_RKEY_VERSION  1u
#define UCT_POSIX_RKEY_KIND_MEMFD 1u

/* Largest length a key may claim: beyond any real mapping, below overflow. */
#define UCT_POSIX_RKEY_MAX_LENGTH (1ull << 48)

typedef struct UCS_S_PACKED uct_posix_packed_rkey {
    uint32_t magic;
    uint8_t  version;
    uint8_t  kind;
    uint16_t size;     /**< sizeof(uct_posix_packed_rkey_t) */
    uint32_t pid;      /**< owner of the memory file */
    int32_t  fd;       /**< its descriptor in the owner */
    uint64_t inode;    /**< of the memory file */
    uint64_t address;  /**< owner's address of the start */
    uint64_t length;   /**< bytes of the allocation */
    uint32_t reserved; /**< zero */
    uint32_t checksum; /**< FNV-1a of all bytes above */
} uct_posix_packed_rkey_t;

/** What uct_md_mem_alloc() hands out. */
typedef struct uct_posix_memh {
    uct_mm_seg_t seg;
} uct_posix_memh_t;

static ucs_config_field_t uct_posix_md_config_fields[] = {
    {NULL, NULL, NULL, 0, UCS_CONFIG_TYPE_INT, 0}
};

/* Not registered for printing: it has no option of its own yet. */
static ucs_config_table_entry_t uct_posix_md_config_table = {
    .name   = "posix memory domain",
    .prefix = "POSIX_",
    .fields = uct_posix_md_config_fields,
    .size   = sizeof(uct_posix_md_config_t)
};

static uint32_t uct_posix_rkey_checksum(const uct_posix_packed_rkey_t *packed)
{
    const uint8_t *p = (const uint8_t*)packed;
    uint32_t hash    = 2166136261u;
    size_t i;

    for (i = 0; i < offsetof(uct_posix_packed_rkey_t, checksum); ++i) {
        hash = (hash ^ p[i]) * 16777619u;
    }
    return hash;
}

static void uct_posix_md_close(uct_md_h tl_md)
{
    free(tl_md);
}

static ucs_status_t uct_posix_md_query(uct_md_h tl_md, uct_md_attr_t *md_attr)
{
    (void)tl_md;

    memset(md_attr, 0, sizeof(*md_attr));
    md_attr->cap.max_alloc        = UCT_POSIX_RKEY_MAX_LENGTH;
    md_attr->cap.max_reg          = 0;
    md_attr->cap.flags            = UCT_MD_FLAG_ALLOC | UCT_MD_FLAG_NEED_RKEY |
                                    UCT_MD_FLAG_RKEY_PTR | UCT_MD_FLAG_EXPORTABLE;
    md_attr->cap.reg_mem_types    = 0;
    md_attr->cap.detect_mem_types = 0;
    md_attr->cap.alloc_mem_types  = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    md_attr->cap.access_mem_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    /* Allocation is a few system calls plus page faults on first touch. */
    md_attr->reg_cost             = ucs_linear_func_make(10e-6, 0.0);
    md_attr->rkey_packed_size     = sizeof(uct_posix_packed_rkey_t);
    snprintf(md_attr->component_name, sizeof(md_attr->component_name), "%s",
             uct_posix_component.name);
    return UCS_OK;
}

static ucs_status_t uct_posix_mem_alloc(uct_md_h tl_md, size_t *length_p,
                                        void **address_p, ucs_memory_type_t mem_type,
                                        ucs_sys_device_t sys_dev, unsigned flags,
                                        const char *alloc_name, uct_mem_h *memh_p)
{
    uct_posix_memh_t *memh;
    ucs_status_t status;
    char name[64];

    (void)tl_md;

    if (mem_type != UCS_MEMORY_TYPE_HOST) {
        return UCS_ERR_UNSUPPORTED;
    }
    if ((*length_p == 0) || (*length_p > UCT_POSIX_RKEY_MAX_LENGTH)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (flags & UCT_MD_MEM_FLAG_FIXED) {
        /* We never map at a caller-chosen address. */
        return UCS_ERR_UNSUPPORTED;
    }

    memh = malloc(sizeof(*memh));
    if (memh == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    snprintf(name, sizeof(name), "ucx-posix-mem:%s",
             (alloc_name != NULL) ? alloc_name : "");
    status = uct_mm_seg_create(name, *length_p, 0, &memh->seg);
    if (status != UCS_OK) {
        free(memh);
        return status;
    }

    *length_p  = memh->seg.length;
    *address_p = memh->seg.address;
    *memh_p    = memh;
    return UCS_OK;
}

static ucs_status_t uct_posix_mem_free(uct_md_h tl_md, uct_mem_h tl_memh)
{
    uct_posix_memh_t *memh = tl_memh;

    (void)tl_md;
    uct_mm_seg_destroy(&memh->seg);
    free(memh);
    return UCS_OK;
}

static ucs_status_t uct_posix_mkey_pack(uct_md_h tl_md, uct_mem_h tl_memh,
                                        void *rkey_buffer)
{
    const uct_posix_memh_t *memh = tl_memh;
    uct_posix_packed_rkey_t packed;

    (void)tl_md;

    memset(&packed, 0, sizeof(packed));
    packed.magic    = UCT_POSIX_RKEY_MAGIC;
    packed.version  = UCT_POSIX_RKEY_VERSION;
    packed.kind     = UCT_POSIX_RKEY_KIND_MEMFD;
    packed.size     = sizeof(packed);
    packed.pid      = (uint32_t)getpid();
    packed.fd       = memh->seg.fd;
    packed.inode    = memh->seg.inode;
    packed.address  = (uintptr_t)memh->seg.address;
    packed.length   = memh->seg.length;
    packed.checksum = uct_posix_rkey_checksum(&packed);
    memcpy(rkey_buffer, &packed, sizeof(packed));
    return UCS_OK;
}

/* Every check a key from another process must pass before it is used. */
static int uct_posix_rkey_is_valid(const uct_posix_packed_rkey_t *packed)
{
    return (packed->magic == UCT_POSIX_RKEY_MAGIC) &&
           (packed->version == UCT_POSIX_RKEY_VERSION) &&
           (packed->kind == UCT_POSIX_RKEY_KIND_MEMFD) &&
           (packed->size == sizeof(*packed)) &&
           (packed->checksum == uct_posix_rkey_checksum(packed)) &&
           (packed->reserved == 0) && ((int32_t)packed->pid > 0) &&
           (packed->fd >= 0) && (packed->length > 0) &&
           (packed->length <= UCT_POSIX_RKEY_MAX_LENGTH) &&
           (packed->address <= UINT64_MAX - packed->length);
}

static ucs_status_t uct_posix_rkey_unpack(uct_component_t *component,
                                          const void *rkey_buffer, uct_rkey_t *rkey_p,
                                          void **handle_p)
{
    uct_posix_packed_rkey_t packed;
    uct_posix_rkey_t *rkey;
    ucs_status_t status;

    (void)component;

    if (rkey_buffer == NULL) {
        return UCS_ERR_INVALID_PARAM;
    }

    /* Copy first: the buffer may be unaligned, and must be read only once. */
    memcpy(&packed, rkey_buffer, sizeof(packed));
    if (!uct_posix_rkey_is_valid(&packed)) {
        ucs_debug("posix: rejecting corrupt or unknown rkey (magic 0x%x version %u)",
                  packed.magic, packed.version);
        return UCS_ERR_INVALID_PARAM;
    }

    rkey = malloc(sizeof(*rkey));
    if (rkey == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    status = uct_mm_seg_attach((pid_t)packed.pid, packed.fd, packed.inode,
                               packed.length, 0, &rkey->seg);
    if (status != UCS_OK) {
        ucs_debug("posix: cannot map rkey of pid %u fd %d: %s", packed.pid,
                  packed.fd, ucs_status_string(status));
        free(rkey);
        /* A well-formed key whose memory cannot be reached is unreachable,
         * whatever the reason (owner gone, other host, fd reused) -- except
         * our own fd limit, which the user must be told about. */
        return (status == UCS_ERR_EXCEEDS_LIMIT) ? status : UCS_ERR_UNREACHABLE;
    }

    rkey->remote_base = packed.address;
    rkey->length      = packed.length;
    rkey->local_base  = rkey->seg.address;
    *rkey_p           = (uintptr_t)rkey;
    *handle_p         = rkey;
    return UCS_OK;
}

static ucs_status_t uct_posix_rkey_ptr(uct_component_t *component, uct_rkey_t rkey,
                                       void *handle, uint64_t remote_addr,
                                       void **local_addr_p)
{
    void *ptr;

    (void)component;
    (void)handle;

    ptr = uct_posix_rkey_translate(rkey, remote_addr, 0);
    if (ptr == NULL) {
        return UCS_ERR_INVALID_ADDR;
    }
    *local_addr_p = ptr;
    return UCS_OK;
}

static ucs_status_t uct_posix_rkey_release(uct_component_t *component, uct_rkey_t rkey,
                                           void *handle)
{
    uct_posix_rkey_t *posix_rkey = handle;

    (void)component;
    (void)rkey;

    if (posix_rkey == NULL) {
        return UCS_ERR_INVALID_PARAM;
    }
    uct_mm_seg_detach(&posix_rkey->seg);
    free(posix_rkey);
    return UCS_OK;
}

static const uct_md_ops_t uct_posix_md_ops = {
    .close              = uct_posix_md_close,
    .query              = uct_posix_md_query,
    .mem_alloc          = uct_posix_mem_alloc,
    .mem_free           = uct_posix_mem_free,
    .mem_reg            = NULL,
    .mem_dereg          = NULL,
    .mkey_pack          = uct_posix_mkey_pack,
    .detect_memory_type = NULL,
    .mem_query          = NULL
};

static ucs_status_t uct_posix_md_open(uct_component_t *component, const char *md_name,
                                      const uct_md_config_t *config, uct_md_h *md_p)
{
    uct_posix_md_t *md;

    (void)config;

    if (strcmp(md_name, "posix") != 0) {
        return UCS_ERR_NO_DEVICE;
    }

    md = calloc(1, sizeof(*md));
    if (md == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    md->super.ops       = &uct_posix_md_ops;
    md->super.component = component;
    *md_p               = &md->super;
    return UCS_OK;
}

uct_component_t uct_posix_component = {
    .name               = "posix",
    .query_md_resources = uct_component_query_single_md,
    .md_open            = uct_posix_md_open,
    .rkey_unpack        = uct_posix_rkey_unpack,
    .rkey_ptr           = uct_posix_rkey_ptr,
    .rkey_release       = uct_posix_rkey_release,
    .md_config          = &uct_posix_md_config_table,
    .flags              = 0,
    .tl_list            = UCS_LIST_INITIALIZER(uct_posix_component.tl_list),
    .list               = UCS_LIST_INITIALIZER(uct_posix_component.list)
};

UCT_COMPONENT_REGISTER(&uct_posix_component)
