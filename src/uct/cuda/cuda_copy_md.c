#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "cuda_copy.h"
#include "cuda_topo.h"

#include <ucm/ucm_memtype.h>
#include <ucs/sys/sys.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * The cuda_cpy md: tells what memory a pointer is (for every CUDA allocator
 * kind, through the memory-type cache) and registers host memory with the
 * driver so that copies from and to it can run asynchronously. Device
 * memory needs no registration; registering it sets SYNC_MEMOPS so that a
 * blocking copy the application makes into it is complete when it returns.
 */

#define UCT_CUDA_COPY_RKEY_MAGIC 0x6b724343u /* "CCrk" */

typedef struct uct_cuda_copy_md {
    uct_md_t            super;
    ucs_memtype_cache_t *attached; /**< cache we attached to ucm events, or NULL */
} uct_cuda_copy_md_t;

typedef struct uct_cuda_copy_md_config {
    uct_md_config_t super;
    double          max_reg_ratio; /* accepted, see the field's doc */
} uct_cuda_copy_md_config_t;

static ucs_config_field_t uct_cuda_copy_md_config_fields[] = {
    {"MAX_REG_RATIO", "0.1",
     "Upstream's share of a GPU's memory its cuda_copy may map through the\n"
     "BAR1 window (UCXX sets 1.0 where BAR1 covers the whole memory). This\n"
     "transport maps nothing through BAR1: copies run on the GPU's copy\n"
     "engines from registered or pinned host memory, so the value changes\n"
     "nothing; it must lie in 0 .. 1.",
     ucs_offsetof(uct_cuda_copy_md_config_t, max_reg_ratio),
     UCS_CONFIG_TYPE_DOUBLE, 0},
    {NULL, NULL, NULL, 0, UCS_CONFIG_TYPE_INT, 0}
};

static ucs_config_table_entry_t uct_cuda_copy_md_config_table = {
    .name   = "cuda_cpy memory domain",
    .prefix = "CUDA_COPY_",
    .fields = uct_cuda_copy_md_config_fields,
    .size   = sizeof(uct_cuda_copy_md_config_t)
};

UCS_CONFIG_REGISTER_TABLE(uct_cuda_copy_md_config_table)

uint64_t uct_cuda_copy_proc_id(void)
{
    uint8_t boot_id[16] = {0};
    uint64_t pid_ns     = ucs_sys_get_pid_ns();
    uint64_t hash       = 0xcbf29ce484222325ull;
    uint64_t pid        = (uint64_t)getpid();
    size_t i;

    (void)ucs_sys_get_boot_id(boot_id);
    for (i = 0; i < sizeof(boot_id); ++i) {
        hash = (hash ^ boot_id[i]) * 0x100000001b3ull;
    }
    hash = (hash ^ pid_ns) * 0x100000001b3ull;
    return (hash ^ pid) * 0x100000001b3ull;
}

static void uct_cuda_copy_md_close(uct_md_h tl_md)
{
    uct_cuda_copy_md_t *md = ucs_container_of(tl_md, uct_cuda_copy_md_t, super);

    uct_cuda_sync_memops_unsubscribe();
    if (md->attached != NULL) {
        ucm_memtype_cache_detach(md->attached);
    }
    free(md);
}

static ucs_status_t uct_cuda_copy_md_query(uct_md_h md, uct_md_attr_t *attr)
{
    attr->cap.flags            = UCT_MD_FLAG_REG | UCT_MD_FLAG_ALLOC;
    attr->cap.max_alloc        = SIZE_MAX;
    attr->cap.max_reg          = SIZE_MAX;
    attr->cap.reg_mem_types    = UCS_BIT(UCS_MEMORY_TYPE_HOST) |
                                 UCS_BIT(UCS_MEMORY_TYPE_CUDA) |
                                 UCS_BIT(UCS_MEMORY_TYPE_CUDA_MANAGED);
    attr->cap.detect_mem_types = UCS_BIT(UCS_MEMORY_TYPE_CUDA) |
                                 UCS_BIT(UCS_MEMORY_TYPE_CUDA_MANAGED);
    attr->cap.alloc_mem_types  = UCS_BIT(UCS_MEMORY_TYPE_HOST) |
                                 UCS_BIT(UCS_MEMORY_TYPE_CUDA) |
                                 UCS_BIT(UCS_MEMORY_TYPE_CUDA_MANAGED);
    attr->cap.access_mem_types = UCS_BIT(UCS_MEMORY_TYPE_CUDA) |
                                 UCS_BIT(UCS_MEMORY_TYPE_CUDA_MANAGED);
    /* cuMemHostRegister: tens of microseconds plus page pinning. */
    attr->reg_cost             = ucs_linear_func_make(20e-6, 0.1e-9);
    attr->rkey_packed_size     = sizeof(uint32_t);
    snprintf(attr->component_name, sizeof(attr->component_name), "%s",
             UCT_CUDA_COPY_COMPONENT_NAME);
    return UCS_OK;
}

static ucs_status_t uct_cuda_copy_md_detect_memory_type(uct_md_h md,
                                                        const void *address,
                                                        size_t length,
                                                        ucs_memory_type_t *mem_type_p)
{
    uct_cuda_mem_desc_t desc;
    ucs_status_t status;

    status = uct_cuda_mem_describe(address, length, &desc);
    if (status != UCS_OK) {
        return status;
    }
    if ((desc.mem_type != UCS_MEMORY_TYPE_CUDA) &&
        (desc.mem_type != UCS_MEMORY_TYPE_CUDA_MANAGED)) {
        return UCS_ERR_INVALID_ADDR;
    }
    *mem_type_p = desc.mem_type;
    return UCS_OK;
}

static ucs_status_t uct_cuda_copy_md_mem_query(uct_md_h md, const void *address,
                                               size_t length,
                                               uct_md_mem_attr_t *mem_attr)
{
    uct_cuda_mem_desc_t desc;
    ucs_status_t status;

    status = uct_cuda_mem_describe(address, length, &desc);
    if (status != UCS_OK) {
        return status;
    }
    if ((desc.mem_type != UCS_MEMORY_TYPE_CUDA) &&
        (desc.mem_type != UCS_MEMORY_TYPE_CUDA_MANAGED)) {
        return UCS_ERR_INVALID_ADDR;
    }

    if (mem_attr->field_mask & UCT_MD_MEM_ATTR_FIELD_MEM_TYPE) {
        mem_attr->mem_type = desc.mem_type;
    }
    if (mem_attr->field_mask & UCT_MD_MEM_ATTR_FIELD_SYS_DEV) {
        mem_attr->sys_dev = uct_cuda_device_sys_dev(desc.device);
    }
    if (mem_attr->field_mask & UCT_MD_MEM_ATTR_FIELD_BASE_ADDRESS) {
        mem_attr->base_address = (desc.base != NULL) ? desc.base : (void*)address;
    }
    if (mem_attr->field_mask & UCT_MD_MEM_ATTR_FIELD_ALLOC_LENGTH) {
        mem_attr->alloc_length = (desc.base != NULL) ? desc.length : length;
    }
    return UCS_OK;
}

static ucs_status_t uct_cuda_copy_md_mem_reg(uct_md_h md, void *address,
                                             size_t length, unsigned flags,
                                             uct_mem_h *memh_p)
{
    uct_cuda_copy_memh_t *memh;
    uct_cuda_mem_desc_t desc;
    ucs_status_t status;
    CUcontext ctx;
    CUresult res;

    status = uct_cuda_mem_describe(address, length, &desc);
    if (status != UCS_OK) {
        return status;
    }

    memh = calloc(1, sizeof(*memh));
    if (memh == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    memh->address      = address;
    memh->length       = length;
    memh->alloc_type   = UCS_MEMORY_TYPE_UNKNOWN;
    memh->retained_dev = -1;

    if ((desc.mem_type == UCS_MEMORY_TYPE_CUDA) ||
        (desc.mem_type == UCS_MEMORY_TYPE_CUDA_MANAGED)) {
        uct_cuda_set_sync_memops(address);
    } else if ((desc.alloc_kind != UCS_MEMTYPE_ALLOC_HOST_PINNED) && (length > 0)) {
        /* Pinning needs a context: a thread without one works in device 0's
         * primary context, as mem_alloc does. If pinning fails, copies are
         * still correct, only synchronous. */
        res = cuMemHostRegister(address, length, CU_MEMHOSTREGISTER_PORTABLE);
        if ((res == CUDA_ERROR_INVALID_CONTEXT) && (uct_cuda_ctx_ensure(&ctx) == UCS_OK)) {
            res = cuMemHostRegister(address, length, CU_MEMHOSTREGISTER_PORTABLE);
        }
        if (res == CUDA_SUCCESS) {
            memh->host_registered = 1;
        } else if (res != CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED) {
            ucs_log((flags & UCT_MD_MEM_FLAG_HIDE_ERRORS) ? UCS_LOG_LEVEL_DEBUG :
                                                             UCS_LOG_LEVEL_DIAG,
                    "cuda_cpy: cuMemHostRegister(%p, %zu) failed: %s; copies "
                    "from it will be synchronous", address, length,
                    uct_cuda_cu_name(res));
        }
    }

    *memh_p = memh;
    return UCS_OK;
}

static ucs_status_t uct_cuda_copy_md_mem_dereg(uct_md_h md, uct_mem_h tl_memh)
{
    uct_cuda_copy_memh_t *memh = tl_memh;
    ucs_status_t status        = UCS_OK;

    if (memh->host_registered) {
        status = UCT_CUDA_CALL(UCS_LOG_LEVEL_ERROR,
                               cuMemHostUnregister(memh->address));
    }
    free(memh);
    return status;
}

/*
 * The primary context of the device that is @a sys_dev, current (pushed)
 * and retained, for an allocation on that device; -1 when the current
 * context serves (no device asked, it is the current one, or it cannot be
 * had: logged, and the memory then goes to the current device).
 */
static int uct_cuda_copy_md_enter_device(ucs_sys_device_t sys_dev)
{
    int ordinal = uct_cuda_sys_dev_ordinal(sys_dev);
    CUdevice current;
    CUcontext ctx;

    if ((ordinal < 0) ||
        ((cuCtxGetDevice(&current) == CUDA_SUCCESS) && (current == ordinal))) {
        return -1;
    }
    if (cuDevicePrimaryCtxRetain(&ctx, (CUdevice)ordinal) != CUDA_SUCCESS) {
        ucs_debug("cuda_cpy: no context on device %d: allocating on the current one",
                  ordinal);
        return -1;
    }
    if (cuCtxPushCurrent(ctx) != CUDA_SUCCESS) {
        (void)cuDevicePrimaryCtxRelease((CUdevice)ordinal);
        return -1;
    }
    return ordinal;
}

/*
 * Allocation for the layers above: pinned host memory (bounce buffers),
 * device memory from cuMemAlloc -- legacy-IPC capable, so staging fragments
 * made here are exportable by cuda_ipc -- and managed memory. Device memory
 * goes to @a sys_dev's GPU when one is named, else to the current one.
 */
static ucs_status_t uct_cuda_copy_md_mem_alloc(uct_md_h md, size_t *length_p,
                                               void **address_p,
                                               ucs_memory_type_t mem_type,
                                               ucs_sys_device_t sys_dev,
                                               unsigned flags, const char *alloc_name,
                                               uct_mem_h *memh_p)
{
    size_t length = (*length_p > 0) ? *length_p : 1;
    int device    = -1;
    uct_cuda_copy_memh_t *memh;
    CUdeviceptr dptr = 0;
    ucs_status_t status;
    CUcontext ctx;
    void *ptr    = NULL;

    if ((flags & UCT_MD_MEM_FLAG_FIXED) ||
        ((mem_type != UCS_MEMORY_TYPE_HOST) && (mem_type != UCS_MEMORY_TYPE_CUDA) &&
         (mem_type != UCS_MEMORY_TYPE_CUDA_MANAGED))) {
        return UCS_ERR_UNSUPPORTED;
    }

    status = uct_cuda_ctx_ensure(&ctx);
    if (status != UCS_OK) {
        return status;
    }

    memh = calloc(1, sizeof(*memh));
    if (memh == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    if (mem_type == UCS_MEMORY_TYPE_CUDA) {
        device = uct_cuda_copy_md_enter_device(sys_dev);
    }

    /* Running out of memory is an answer the caller acts on (staging falls
     * back, a tool reports it), not an error of ours: debug level here. */
    switch (mem_type) {
    case UCS_MEMORY_TYPE_HOST:
        status = UCT_CUDA_CALL(UCS_LOG_LEVEL_DEBUG,
                               cuMemHostAlloc(&ptr, length, CU_MEMHOSTALLOC_PORTABLE));
        break;
    case UCS_MEMORY_TYPE_CUDA:
        status = UCT_CUDA_CALL(UCS_LOG_LEVEL_DEBUG, cuMemAlloc(&dptr, length));
        ptr    = (void*)(uintptr_t)dptr;
        break;
    default:
        status = UCT_CUDA_CALL(UCS_LOG_LEVEL_DEBUG,
                               cuMemAllocManaged(&dptr, length, CU_MEM_ATTACH_GLOBAL));
        ptr    = (void*)(uintptr_t)dptr;
        break;
    }
    if (status == UCS_OK) {
        if (mem_type != UCS_MEMORY_TYPE_HOST) {
            uct_cuda_set_sync_memops(ptr);
        }
    }
    if (device >= 0) {
        (void)cuCtxPopCurrent(&ctx);
        if (status != UCS_OK) {
            (void)cuDevicePrimaryCtxRelease((CUdevice)device);
        }
    }
    if (status != UCS_OK) {
        free(memh);
        return UCS_ERR_NO_MEMORY;
    }

    memh->address      = ptr;
    memh->length       = length;
    memh->alloc_type   = mem_type;
    memh->retained_dev = device;
    ucs_debug("cuda_cpy: allocated %zu bytes of %s memory at %p for %s%s", length,
              ucs_memory_type_names[mem_type], ptr,
              (alloc_name != NULL) ? alloc_name : "?",
              (device >= 0) ? " on another device than the current one" : "");
    *length_p  = length;
    *address_p = ptr;
    *memh_p    = memh;
    return UCS_OK;
}

static ucs_status_t uct_cuda_copy_md_mem_free(uct_md_h md, uct_mem_h tl_memh)
{
    uct_cuda_copy_memh_t *memh = tl_memh;
    ucs_status_t status;

    if (memh->alloc_type == UCS_MEMORY_TYPE_HOST) {
        status = UCT_CUDA_CALL(UCS_LOG_LEVEL_ERROR, cuMemFreeHost(memh->address));
    } else if ((memh->alloc_type == UCS_MEMORY_TYPE_CUDA) ||
               (memh->alloc_type == UCS_MEMORY_TYPE_CUDA_MANAGED)) {
        status = UCT_CUDA_CALL(UCS_LOG_LEVEL_ERROR,
                               cuMemFree((CUdeviceptr)(uintptr_t)memh->address));
        if (memh->retained_dev >= 0) {
            /* After the free: the context must outlive its memory. */
            (void)cuDevicePrimaryCtxRelease((CUdevice)memh->retained_dev);
        }
    } else {
        return UCS_ERR_INVALID_PARAM; /* a registration, not an allocation */
    }
    free(memh);
    return status;
}

static ucs_status_t uct_cuda_copy_md_mkey_pack(uct_md_h md, uct_mem_h memh,
                                               void *rkey_buffer)
{
    uint32_t magic = UCT_CUDA_COPY_RKEY_MAGIC;

    /* Addresses are local pointers: the key only says what it is. */
    memcpy(rkey_buffer, &magic, sizeof(magic));
    return UCS_OK;
}

/* A request is taking device memory (uct_md_mem_fence): whatever the
 * address, the work to wait for is on the calling thread's streams. */
static ucs_status_t uct_cuda_copy_md_mem_fence(uct_md_h md, const void *address,
                                               size_t length)
{
    (void)md;
    (void)address;
    return (length == 0) ? UCS_OK : uct_cuda_wait_app_streams();
}

static const uct_md_ops_t uct_cuda_copy_md_ops = {
    .close              = uct_cuda_copy_md_close,
    .query              = uct_cuda_copy_md_query,
    .mem_alloc          = uct_cuda_copy_md_mem_alloc,
    .mem_free           = uct_cuda_copy_md_mem_free,
    .mem_reg            = uct_cuda_copy_md_mem_reg,
    .mem_dereg          = uct_cuda_copy_md_mem_dereg,
    .mkey_pack          = uct_cuda_copy_md_mkey_pack,
    .detect_memory_type = uct_cuda_copy_md_detect_memory_type,
    .mem_query          = uct_cuda_copy_md_mem_query,
    .mem_fence          = uct_cuda_copy_md_mem_fence
};

static ucs_status_t uct_cuda_copy_md_open(uct_component_t *component,
                                          const char *md_name,
                                          const uct_md_config_t *config,
                                          uct_md_h *md_p)
{
    ucs_status_t status = UCS_ERR_NO_ELEM;
    ucs_memtype_cache_t *cache;
    uct_cuda_copy_md_t *md;
    double max_reg_ratio;

    if (strcmp(md_name, UCT_CUDA_COPY_COMPONENT_NAME) != 0) {
        return UCS_ERR_NO_DEVICE;
    }
    max_reg_ratio = ((const uct_cuda_copy_md_config_t*)config)->max_reg_ratio;
    if (!(max_reg_ratio >= 0.0) || (max_reg_ratio > 1.0)) {
        ucs_error("cuda_copy: UCX_CUDA_COPY_MAX_REG_RATIO=%g is not in 0 .. 1",
                  max_reg_ratio);
        return UCS_ERR_INVALID_PARAM;
    }

    md = calloc(1, sizeof(*md));
    if (md == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    md->super.ops       = &uct_cuda_copy_md_ops;
    md->super.component = component;

    /* Keep the process-wide memory-type cache fed by the CUDA allocation
     * events of ucm, with the driver query on a miss. Without it (no hooks
     * module) lookups miss and uct_cuda_mem_describe() asks the driver. */
    if ((ucs_memtype_cache_get_global(&cache) == UCS_OK) &&
        ((status = ucm_memtype_cache_attach(cache)) == UCS_OK)) {
        md->attached = cache;
    } else {
        ucs_debug("cuda_cpy: memory-type cache not attached to ucm events (%s): "
                  "every lookup queries the driver",
                  ucs_status_string(status));
    }

    uct_cuda_sync_memops_subscribe();
    *md_p = &md->super;
    return UCS_OK;
}

static ucs_status_t uct_cuda_copy_query_md_resources(uct_component_t *component,
                                                     uct_md_resource_desc_t **resources_p,
                                                     unsigned *num_resources_p)
{
    if (uct_cuda_device_count() == 0) {
        *resources_p     = NULL;
        *num_resources_p = 0;
        return UCS_OK;
    }
    return uct_component_query_single_md(component, resources_p, num_resources_p);
}

static ucs_status_t uct_cuda_copy_rkey_unpack(uct_component_t *component,
                                              const void *rkey_buffer,
                                              uct_rkey_t *rkey_p, void **handle_p)
{
    uint32_t magic;

    memcpy(&magic, rkey_buffer, sizeof(magic));
    if (magic != UCT_CUDA_COPY_RKEY_MAGIC) {
        return UCS_ERR_INVALID_PARAM;
    }
    *rkey_p   = 0;
    *handle_p = NULL;
    return UCS_OK;
}

static ucs_status_t uct_cuda_copy_rkey_release(uct_component_t *component,
                                               uct_rkey_t rkey, void *handle)
{
    return UCS_OK;
}

uct_component_t uct_cuda_copy_component = {
    .name               = UCT_CUDA_COPY_COMPONENT_NAME,
    .query_md_resources = uct_cuda_copy_query_md_resources,
    .md_open            = uct_cuda_copy_md_open,
    .rkey_unpack        = uct_cuda_copy_rkey_unpack,
    .rkey_ptr           = NULL,
    .rkey_release       = uct_cuda_copy_rkey_release,
    .md_config          = &uct_cuda_copy_md_config_table,
    .flags              = 0,
    .tl_list            = UCS_LIST_INITIALIZER(uct_cuda_copy_component.tl_list),
    .list               = UCS_LIST_INITIALIZER(uct_cuda_copy_component.list)
};
UCT_COMPONENT_REGISTER(&uct_cuda_copy_component)
