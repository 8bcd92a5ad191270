#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "cma.h"

#include <ucs/sys/sys.h>
#include <ucs/debug/log.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/*
 * The cma md: the kernel reads any mapped memory of the peer, so there is
 * nothing to pin or map and registration is free; a key only says whose
 * memory it is.
 */

typedef struct uct_cma_md {
    uct_md_t super;
} uct_cma_md_t;

ucs_status_t uct_cma_errno_status(int err)
{
    switch (err) {
    case ESRCH:
        return UCS_ERR_CONNECTION_RESET; /* the peer is gone */
    case EFAULT:
        return UCS_ERR_INVALID_ADDR;     /* a range not mapped on one side */
    case EPERM:
        return UCS_ERR_REJECTED;         /* the kernel's ptrace check */
    case ENOMEM:
        return UCS_ERR_NO_MEMORY;
    case ENOSYS:
        return UCS_ERR_UNSUPPORTED;
    default:
        return UCS_ERR_IO_ERROR;
    }
}

int uct_cma_can_access(pid_t pid, uint64_t probe)
{
    uint8_t byte = 0;
    struct iovec local, remote;
    ssize_t ret;

    local.iov_base  = &byte;
    local.iov_len   = 1;
    remote.iov_base = (void*)(uintptr_t)probe;
    remote.iov_len  = 1;
    ret = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (ret != 1) {
        ucs_debug("cma: no access to the memory of pid %d: %s", (int)pid,
                  (ret < 0) ? strerror(errno) : "short read");
        return 0;
    }
    return byte == UCT_CMA_PROBE_VALUE;
}

static void uct_cma_md_close(uct_md_h md)
{
    free(ucs_container_of(md, uct_cma_md_t, super));
}

static ucs_status_t uct_cma_md_query(uct_md_h md, uct_md_attr_t *attr)
{
    attr->cap.flags            = UCT_MD_FLAG_REG | UCT_MD_FLAG_NEED_RKEY;
    attr->cap.max_alloc        = 0;
    attr->cap.max_reg          = SIZE_MAX;
    attr->cap.reg_mem_types    = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    attr->cap.detect_mem_types = 0;
    attr->cap.alloc_mem_types  = 0;
    attr->cap.access_mem_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    attr->reg_cost             = ucs_linear_func_make(0, 0);
    attr->rkey_packed_size     = sizeof(uct_cma_packed_rkey_t);
    snprintf(attr->component_name, sizeof(attr->component_name), "%s", UCT_CMA_NAME);
    return UCS_OK;
}

static ucs_status_t uct_cma_md_mem_reg(uct_md_h md, void *address, size_t length,
                                       unsigned flags, uct_mem_h *memh_p)
{
    /* Nothing to record; the handle only has to be non-NULL. */
    *memh_p = (address != NULL) ? address : (void*)uct_cma_md_mem_reg;
    return UCS_OK;
}

static ucs_status_t uct_cma_md_mem_dereg(uct_md_h md, uct_mem_h memh)
{
    return UCS_OK;
}

static ucs_status_t uct_cma_md_mkey_pack(uct_md_h md, uct_mem_h memh,
                                         void *rkey_buffer)
{
    uct_cma_packed_rkey_t packed;

    uct_cma_blob_hdr_init(&packed.hdr, UCT_CMA_RKEY_MAGIC);
    packed.node_id = uct_cma_node_id();
    packed.pid     = (uint64_t)getpid();
    memcpy(rkey_buffer, &packed, sizeof(packed));
    return UCS_OK;
}

static const uct_md_ops_t uct_cma_md_ops = {
    .close              = uct_cma_md_close,
    .query              = uct_cma_md_query,
    .mem_alloc          = NULL,
    .mem_free           = NULL,
    .mem_reg            = uct_cma_md_mem_reg,
    .mem_dereg          = uct_cma_md_mem_dereg,
    .mkey_pack          = uct_cma_md_mkey_pack,
    .detect_memory_type = NULL,
    .mem_query          = NULL
};

static ucs_status_t uct_cma_md_open(uct_component_t *component, const char *md_name,
                                    const uct_md_config_t *config, uct_md_h *md_p)
{
    uct_cma_md_t *md;

    if (strcmp(md_name, UCT_CMA_NAME) != 0) {
        return UCS_ERR_NO_DEVICE;
    }
    md = calloc(1, sizeof(*md));
    if (md == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    md->super.ops       = &uct_cma_md_ops;
    md->super.component = component;
    *md_p               = &md->super;
    return UCS_OK;
}

/* The unpacked key is the owner's pid; an ep compares it with its peer's. */
static ucs_status_t uct_cma_rkey_unpack(uct_component_t *component,
                                        const void *rkey_buffer, uct_rkey_t *rkey_p,
                                        void **handle_p)
{
    uct_cma_packed_rkey_t packed;

    memcpy(&packed, rkey_buffer, sizeof(packed));
    if (!uct_cma_blob_hdr_is_valid(&packed.hdr, UCT_CMA_RKEY_MAGIC) ||
        (packed.pid == 0) || (packed.pid > (uint64_t)INT32_MAX)) {
        ucs_debug("cma: rejecting a malformed rkey (magic 0x%x version %u)",
                  packed.hdr.magic, packed.hdr.version);
        return UCS_ERR_INVALID_PARAM;
    }
    if (packed.node_id != uct_cma_node_id()) {
        return UCS_ERR_UNREACHABLE; /* another kernel or PID namespace */
    }
    *rkey_p   = (uct_rkey_t)packed.pid;
    *handle_p = NULL;
    return UCS_OK;
}

static ucs_status_t uct_cma_rkey_release(uct_component_t *component,
                                         uct_rkey_t rkey, void *handle)
{
    return UCS_OK;
}

uct_component_t uct_cma_component = {
    .name               = UCT_CMA_NAME,
    .query_md_resources = uct_component_query_single_md,
    .md_open            = uct_cma_md_open,
    .rkey_unpack        = uct_cma_rkey_unpack,
    .rkey_ptr           = NULL,
    .rkey_release       = uct_cma_rkey_release,
    .md_config          = NULL,
    .flags              = 0,
    .tl_list            = UCS_LIST_INITIALIZER(uct_cma_component.tl_list),
};
UCT_COMPONENT_REGISTER(&uct_cma_component)
