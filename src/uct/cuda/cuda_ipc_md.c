#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "cuda_ipc.h"

#include <ucs/sys/sys.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * The cuda_ipc md and component. Registration only records the range: the
 * export itself (costly) happens when the key is packed, and is cached per
 * allocation by cuda_ipc_export.c, so packing the same buffer again is a
 * lookup.
 */

static ucs_config_field_t uct_cuda_ipc_md_config_fields[] = {
    {"EXPORTABLE_DEFAULT_POOL", "n",
     "Make each device's current stream-ordered memory pool IPC-capable when\n"
     "the md opens: if it is the driver's default pool (never exportable), a\n"
     "pool with POSIX-fd handles becomes the device's current pool, so plain\n"
     "cudaMallocAsync/cuMemAllocAsync memory moves zero-copy. Affects the whole\n"
     "process; the pool stays current after the md closes (allocations may\n"
     "still use it). See docs/cuda-transports.md for its costs.",
     ucs_offsetof(uct_cuda_ipc_md_config_t, exportable_default_pool),
     UCS_CONFIG_TYPE_BOOL, 0},

    {NULL, NULL, NULL, 0, UCS_CONFIG_TYPE_INT, 0}
};

static ucs_config_table_entry_t uct_cuda_ipc_md_config_table = {
    .name   = "cuda_ipc memory domain",
    .prefix = "CUDA_IPC_",
    .fields = uct_cuda_ipc_md_config_fields,
    .size   = sizeof(uct_cuda_ipc_md_config_t)
};
UCS_CONFIG_REGISTER_TABLE(uct_cuda_ipc_md_config_table)

/*
 * UCX_CUDA_IPC_EXPORTABLE_DEFAULT_POOL: the driver's default pool of a
 * device has no shareable handle type, so its memory cannot be exported.
 * Replacing it, as the current pool, by one created with POSIX-fd handles
 * makes every later plain cuMemAllocAsync exportable. A pool somebody else
 * made current (the application's, or ours from an earlier md) is left as
 * it is. Ours is never destroyed: allocations the application made from it
 * may outlive the md, and the driver would free them with it.
 */
static void uct_cuda_ipc_md_make_pool_exportable(CUdevice dev)
{
    CUmemoryPool current, deflt, pool;
    cuuint64_t threshold = 0;
    CUmemPoolProps props;

    if ((cuDeviceGetMemPool(&current, dev) != CUDA_SUCCESS) ||
        (cuDeviceGetDefaultMemPool(&deflt, dev) != CUDA_SUCCESS)) {
        ucs_debug("cuda_ipc: device %d has no memory pools", (int)dev);
        return;
    }
    if (current != deflt) {
        ucs_debug("cuda_ipc: device %d: current pool %p is not the default one, "
                  "left as it is", (int)dev, (void*)current);
        return;
    }
    memset(&props, 0, sizeof(props));
    props.allocType     = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes   = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id   = (int)dev;
    if (cuMemPoolCreate(&pool, &props) != CUDA_SUCCESS) {
        ucs_warn("cuda_ipc: device %d: cannot create an IPC-capable memory pool;"
                 " cuMemAllocAsync memory stays unexportable", (int)dev);
        return;
    }
    /* Keep what the default pool keeps (the application may have set it). */
    if ((cuMemPoolGetAttribute(deflt, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                               &threshold) == CUDA_SUCCESS) &&
        (cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                               &threshold) != CUDA_SUCCESS)) {
        ucs_debug("cuda_ipc: device %d: release threshold not copied", (int)dev);
    }
    if (cuDeviceSetMemPool(dev, pool) != CUDA_SUCCESS) {
        ucs_warn("cuda_ipc: device %d: cannot make the IPC-capable pool current",
                 (int)dev);
        (void)cuMemPoolDestroy(pool); /* nothing was allocated from it */
        return;
    }
    ucs_debug("cuda_ipc: device %d: IPC-capable pool %p is now current "
              "(release threshold %llu)", (int)dev, (void*)pool,
              (unsigned long long)threshold);
}

static void uct_cuda_ipc_md_close(uct_md_h md)
{
    free(ucs_container_of(md, uct_cuda_ipc_md_t, super));
}

static ucs_status_t uct_cuda_ipc_md_query(uct_md_h md, uct_md_attr_t *attr)
{
    attr->cap.flags            = UCT_MD_FLAG_REG | UCT_MD_FLAG_NEED_RKEY |
                                 UCT_MD_FLAG_EXPORTABLE;
    attr->cap.max_alloc        = 0;
    attr->cap.max_reg          = SIZE_MAX;
    attr->cap.reg_mem_types    = UCS_BIT(UCS_MEMORY_TYPE_CUDA);
    attr->cap.detect_mem_types = 0;
    attr->cap.alloc_mem_types  = 0;
    attr->cap.access_mem_types = UCS_BIT(UCS_MEMORY_TYPE_CUDA);
    /* A first export: ~0.85 ms (GPU-FACTS.md); later ones are cache hits. */
    attr->reg_cost             = ucs_linear_func_make(1e-6, 0);
    attr->rkey_packed_size     = uct_cuda_ipc_rkey_max_size();
    snprintf(attr->component_name, sizeof(attr->component_name), "%s",
             UCT_CUDA_IPC_NAME);
    return UCS_OK;
}

static ucs_status_t uct_cuda_ipc_md_mem_reg(uct_md_h md, void *address,
                                            size_t length, unsigned flags,
                                            uct_mem_h *memh_p)
{
    uct_cuda_ipc_memh_t *memh;

    memh = malloc(sizeof(*memh));
    if (memh == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    memh->address = address;
    memh->length  = length;
    *memh_p       = memh;
    return UCS_OK;
}

static ucs_status_t uct_cuda_ipc_md_mem_dereg(uct_md_h md, uct_mem_h memh)
{
    free(memh);
    return UCS_OK;
}

static ucs_status_t uct_cuda_ipc_md_mkey_pack(uct_md_h md, uct_mem_h tl_memh,
                                              void *rkey_buffer)
{
    uct_cuda_ipc_memh_t *memh = tl_memh;
    uct_cuda_ipc_key_t key;
    ucs_status_t status;

    status = uct_cuda_ipc_export(memh->address, memh->length, &key);
    if (status != UCS_OK) {
        return status;
    }
    uct_cuda_ipc_rkey_pack(&key, rkey_buffer);
    return UCS_OK;
}

static const uct_md_ops_t uct_cuda_ipc_md_ops = {
    .close              = uct_cuda_ipc_md_close,
    .query              = uct_cuda_ipc_md_query,
    .mem_alloc          = NULL,
    .mem_free           = NULL,
    .mem_reg            = uct_cuda_ipc_md_mem_reg,
    .mem_dereg          = uct_cuda_ipc_md_mem_dereg,
    .mkey_pack          = uct_cuda_ipc_md_mkey_pack,
    .detect_memory_type = NULL, /* cuda_cpy's job */
    .mem_query          = NULL
};

static ucs_status_t uct_cuda_ipc_md_open(uct_component_t *component,
                                         const char *md_name,
                                         const uct_md_config_t *config,
                                         uct_md_h *md_p)
{
    uct_cuda_ipc_md_t *md;

    if (strcmp(md_name, UCT_CUDA_IPC_NAME) != 0) {
        return UCS_ERR_NO_DEVICE;
    }

    md = calloc(1, sizeof(*md));
    if (md == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    if (((const uct_cuda_ipc_md_config_t*)config)->exportable_default_pool) {
        int dev, count = uct_cuda_device_count();

        for (dev = 0; dev < count; ++dev) {
            uct_cuda_ipc_md_make_pool_exportable((CUdevice)dev);
        }
    }
    md->super.ops       = &uct_cuda_ipc_md_ops;
    md->super.component = component;
    *md_p               = &md->super;
    return UCS_OK;
}

static ucs_status_t uct_cuda_ipc_query_md_resources(uct_component_t *component,
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

/**
 * Unpack a peer's key: check its format, then whether this process could
 * ever import it. Mapping is left to the first put/get (it depends on the
 * iface's device).
 */
static ucs_status_t uct_cuda_ipc_rkey_unpack(uct_component_t *component,
                                             const void *rkey_buffer,
                                             uct_rkey_t *rkey_p, void **handle_p)
{
    uct_cuda_ipc_key_t local;
    uct_cuda_ipc_rkey_t *rkey;
    ucs_status_t status;

    rkey = malloc(sizeof(*rkey));
    if (rkey == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    status = uct_cuda_ipc_rkey_parse(rkey_buffer, &rkey->key);
    if (status != UCS_OK) {
        goto err_free;
    }

    uct_cuda_ipc_fill_owner(&local);
    if (rkey->key.kind == UCT_CUDA_IPC_KIND_NONE) {
        ucs_debug("cuda_ipc: peer memory 0x%lx is not exportable",
                  (unsigned long)rkey->key.remote_base);
        status = UCS_ERR_UNREACHABLE;
        goto err_free;
    }
    if (memcmp(local.node_id, rkey->key.node_id, sizeof(local.node_id)) ||
        (local.uid != rkey->key.uid)) {
        ucs_debug("cuda_ipc: key from another host or user (uid %u)",
                  rkey->key.uid);
        status = UCS_ERR_UNREACHABLE;
        goto err_free;
    }

    *rkey_p   = (uintptr_t)rkey;
    *handle_p = NULL;
    return UCS_OK;

err_free:
    free(rkey);
    return status;
}

static ucs_status_t uct_cuda_ipc_rkey_release(uct_component_t *component,
                                              uct_rkey_t rkey, void *handle)
{
    free((void*)(uintptr_t)rkey);
    return UCS_OK;
}

static ucs_status_t uct_cuda_ipc_rkey_device_id(uct_component_t *component,
                                                uct_rkey_t rkey, uint8_t id[16])
{
    const uct_cuda_ipc_rkey_t *r = (const uct_cuda_ipc_rkey_t*)(uintptr_t)rkey;

    if (uct_cuda_ipc_uuid_unknown(r->key.device_uuid)) {
        return UCS_ERR_UNSUPPORTED; /* a version 1 key */
    }
    memcpy(id, r->key.device_uuid, 16);
    return UCS_OK;
}

uct_component_t uct_cuda_ipc_component = {
    .name               = UCT_CUDA_IPC_NAME,
    .query_md_resources = uct_cuda_ipc_query_md_resources,
    .md_open            = uct_cuda_ipc_md_open,
    .rkey_unpack        = uct_cuda_ipc_rkey_unpack,
    .rkey_ptr           = NULL,
    .rkey_release       = uct_cuda_ipc_rkey_release,
    .rkey_device_id     = uct_cuda_ipc_rkey_device_id,
    .md_config          = &uct_cuda_ipc_md_config_table,
    .flags              = 0,
    .tl_list            = UCS_LIST_INITIALIZER(uct_cuda_ipc_component.tl_list),
    .list               = UCS_LIST_INITIALIZER(uct_cuda_ipc_component.list)
};
UCT_COMPONENT_REGISTER(&uct_cuda_ipc_component)
