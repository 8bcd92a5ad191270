#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "self.h"

#include <ucs/sys/sys.h>
#include <ucs/debug/log.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * The self md: any host memory of the process is already "registered"
 * (nothing to pin or map), and a remote address is a local pointer, so an
 * rkey carries only the process identity that lets unpack refuse keys from
 * other processes.
 */

typedef struct uct_self_md {
    uct_md_t super;
} uct_self_md_t;

/* FNV-1a: enough to spread boot id, namespace and pid over 64 bits. */
static uint64_t uct_self_hash(uint64_t hash, const void *data, size_t length)
{
    const uint8_t *p = data;
    size_t i;

    for (i = 0; i < length; ++i) {
        hash ^= p[i];
        hash *= 0x100000001b3ull;
    }
    return hash;
}

uint64_t uct_self_proc_id(void)
{
    uint8_t boot_id[16] = {0};
    uint64_t pid_ns     = ucs_sys_get_pid_ns();
    pid_t pid           = getpid();
    uint64_t hash       = 0xcbf29ce484222325ull;

    /* Not cached: the pid changes in a forked child, whose addresses must
     * differ from its parent's. */
    (void)ucs_sys_get_boot_id(boot_id);
    hash = uct_self_hash(hash, boot_id, sizeof(boot_id));
    hash = uct_self_hash(hash, &pid_ns, sizeof(pid_ns));
    hash = uct_self_hash(hash, &pid, sizeof(pid));
    return hash;
}

void uct_self_blob_hdr_init(uct_self_blob_hdr_t *hdr, uint32_t magic)
{
    memset(hdr, 0, sizeof(*hdr));
    hdr->magic   = magic;
    hdr->version = UCT_SELF_ADDR_VERSION;
}

int uct_self_blob_hdr_is_valid(const uct_self_blob_hdr_t *hdr, uint32_t magic)
{
    return (hdr->magic == magic) && (hdr->version == UCT_SELF_ADDR_VERSION) &&
           (hdr->reserved[0] == 0) && (hdr->reserved[1] == 0) &&
           (hdr->reserved[2] == 0);
}

static void uct_self_md_close(uct_md_h md)
{
    free(ucs_container_of(md, uct_self_md_t, super));
}

static ucs_status_t uct_self_md_query(uct_md_h md, uct_md_attr_t *attr)
{
    attr->cap.flags            = UCT_MD_FLAG_REG | UCT_MD_FLAG_RKEY_PTR;
    attr->cap.max_alloc        = 0;
    attr->cap.max_reg          = SIZE_MAX;
    attr->cap.reg_mem_types    = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    attr->cap.detect_mem_types = 0;
    attr->cap.alloc_mem_types  = 0;
    attr->cap.access_mem_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    attr->reg_cost             = ucs_linear_func_make(0, 0);
    attr->rkey_packed_size     = sizeof(uct_self_packed_rkey_t);
    snprintf(attr->component_name, sizeof(attr->component_name), "%s",
             UCT_SELF_NAME);
    return UCS_OK;
}

static ucs_status_t uct_self_md_mem_reg(uct_md_h md, void *address, size_t length,
                                        unsigned flags, uct_mem_h *memh_p)
{
    /* Nothing to record; any non-NULL handle will do. */
    *memh_p = address;
    return UCS_OK;
}

static ucs_status_t uct_self_md_mem_dereg(uct_md_h md, uct_mem_h memh)
{
    return UCS_OK;
}

static ucs_status_t uct_self_md_mkey_pack(uct_md_h md, uct_mem_h memh,
                                          void *rkey_buffer)
{
    uct_self_packed_rkey_t packed;

    uct_self_blob_hdr_init(&packed.hdr, UCT_SELF_RKEY_MAGIC);
    packed.proc_id = uct_self_proc_id();
    memcpy(rkey_buffer, &packed, sizeof(packed));
    return UCS_OK;
}

static const uct_md_ops_t uct_self_md_ops = {
    .close              = uct_self_md_close,
    .query              = uct_self_md_query,
    .mem_alloc          = NULL, /* nothing to gain over malloc */
    .mem_free           = NULL,
    .mem_reg            = uct_self_md_mem_reg,
    .mem_dereg          = uct_self_md_mem_dereg,
    .mkey_pack          = uct_self_md_mkey_pack,
    .detect_memory_type = NULL, /* host memory only; recognises nothing */
    .mem_query          = NULL
};

static ucs_status_t uct_self_md_open(uct_component_t *component, const char *md_name,
                                     const uct_md_config_t *config, uct_md_h *md_p)
{
    uct_self_md_t *md;

    if (strcmp(md_name, UCT_SELF_NAME) != 0) {
        return UCS_ERR_NO_DEVICE;
    }

    md = calloc(1, sizeof(*md));
    if (md == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    md->super.ops       = &uct_self_md_ops;
    md->super.component = component;
    *md_p               = &md->super;
    return UCS_OK;
}

static ucs_status_t uct_self_rkey_unpack(uct_component_t *component,
                                         const void *rkey_buffer, uct_rkey_t *rkey_p,
                                         void **handle_p)
{
    uct_self_packed_rkey_t packed;

    memcpy(&packed, rkey_buffer, sizeof(packed));
    if (!uct_self_blob_hdr_is_valid(&packed.hdr, UCT_SELF_RKEY_MAGIC)) {
        ucs_debug("self: rejecting a malformed rkey (magic 0x%x version %u)",
                  packed.hdr.magic, packed.hdr.version);
        return UCS_ERR_INVALID_PARAM;
    }
    if (packed.proc_id != uct_self_proc_id()) {
        return UCS_ERR_UNREACHABLE;
    }

    /* Remote addresses are plain pointers: the key itself carries nothing. */
    *rkey_p   = 0;
    *handle_p = NULL;
    return UCS_OK;
}

static ucs_status_t uct_self_rkey_ptr(uct_component_t *component, uct_rkey_t rkey,
                                      void *handle, uint64_t remote_addr,
                                      void **local_addr_p)
{
    *local_addr_p = (void*)(uintptr_t)remote_addr;
    return UCS_OK;
}

static ucs_status_t uct_self_rkey_release(uct_component_t *component,
                                          uct_rkey_t rkey, void *handle)
{
    return UCS_OK;
}

uct_component_t uct_self_component = {
    .name               = UCT_SELF_NAME,
    .query_md_resources = uct_component_query_single_md,
    .md_open            = uct_self_md_open,
    .rkey_unpack        = uct_self_rkey_unpack,
    .rkey_ptr           = uct_self_rkey_ptr,
    .rkey_release       = uct_self_rkey_release,
    .md_config          = NULL, /* no md options */
    .flags              = 0,
    .tl_list            = UCS_LIST_INITIALIZER(uct_self_component.tl_list),
};
UCT_COMPONENT_REGISTER(&uct_self_component)
