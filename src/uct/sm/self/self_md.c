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

uint64_t uct_self_proc_id(void)
{
    pid_t pid = getpid();

    /* Not cached: the pid changes in a forked child, whose addresses must
     * differ from its parent's. */
    return uct_fnv1a64(uct_blob_node_id(), &pid, sizeof(pid));
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
