#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_md.h"
#include <uct/api/v2/uct_v2.h>

#include <ucs/debug/log.h>

#include <stdlib.h>
#include <string.h>

/*
 * Public md and rkey calls: argument checks that every md would repeat, then
 * one call through the md's ops table. Optional ops left NULL by a
 * transport answer UCS_ERR_UNSUPPORTED here, so transports need no stubs.
 */

ucs_status_t uct_md_open(uct_component_h component, const char *md_name,
                         const uct_md_config_t *config, uct_md_h *md_p)
{
    ucs_status_t status;
    uct_md_h md;

    if ((component == NULL) || (md_name == NULL) || (config == NULL) ||
        (md_p == NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }

    status = component->md_open(component, md_name, config, &md);
    if (status != UCS_OK) {
        ucs_debug("component %s: failed to open md '%s': %s", component->name,
                  md_name, ucs_status_string(status));
        return status;
    }

    /* Transports should set it; make sure the base can rely on it. */
    if (md->component == NULL) {
        md->component = component;
    }
    ucs_assert(md->ops->close != NULL);
    ucs_assert(md->ops->query != NULL);
    *md_p = md;
    return UCS_OK;
}

void uct_md_close(uct_md_h md)
{
    md->ops->close(md);
}

ucs_status_t uct_md_query(uct_md_h md, uct_md_attr_t *md_attr)
{
    ucs_status_t status;

    memset(md_attr, 0, sizeof(*md_attr));
    status = md->ops->query(md, md_attr);
    if (status != UCS_OK) {
        return status;
    }

    if (md_attr->component_name[0] == '\0') {
        snprintf(md_attr->component_name, sizeof(md_attr->component_name), "%s",
                 md->component->name);
    }
    return UCS_OK;
}

/* Append the devices of @a tl to the growing @a *resources_p array. */
static ucs_status_t uct_md_append_tl_resources(uct_md_h md, uct_tl_t *tl,
                                               uct_tl_resource_desc_t **resources_p,
                                               unsigned *num_resources_p)
{
    uct_tl_device_resource_t *devices = NULL;
    uct_tl_resource_desc_t *resources, *rsc;
    unsigned num_devices = 0, i;
    ucs_status_t status;

    status = tl->query_devices(md, &devices, &num_devices);
    if (status != UCS_OK) {
        /* A transport without usable devices is not an error of the md. */
        ucs_debug("md %s: transport %s has no devices: %s", md->component->name,
                  tl->name, ucs_status_string(status));
        return UCS_OK;
    }

    if (num_devices == 0) {
        free(devices);
        return UCS_OK;
    }

    resources = realloc(*resources_p,
                        sizeof(*resources) * (*num_resources_p + num_devices));
    if (resources == NULL) {
        free(devices);
        return UCS_ERR_NO_MEMORY;
    }

    for (i = 0; i < num_devices; ++i) {
        rsc = &resources[*num_resources_p + i];
        memset(rsc, 0, sizeof(*rsc));
        snprintf(rsc->tl_name, sizeof(rsc->tl_name), "%s", tl->name);
        snprintf(rsc->dev_name, sizeof(rsc->dev_name), "%s", devices[i].name);
        rsc->dev_type   = devices[i].type;
        rsc->sys_device = devices[i].sys_device;
    }

    *resources_p      = resources;
    *num_resources_p += num_devices;
    free(devices);
    return UCS_OK;
}

ucs_status_t uct_md_query_tl_resources(uct_md_h md,
                                       uct_tl_resource_desc_t **resources_p,
                                       unsigned *num_resources_p)
{
    uct_component_t *component        = md->component;
    uct_tl_resource_desc_t *resources = NULL;
    unsigned num_resources            = 0;
    ucs_status_t status               = UCS_OK;
    uct_tl_t *tl;

    uct_component_registry_lock();
    if (component->tl_list.next != NULL) {
        ucs_list_for_each(tl, &component->tl_list, list) {
            status = uct_md_append_tl_resources(md, tl, &resources, &num_resources);
            if (status != UCS_OK) {
                break;
            }
        }
    }
    uct_component_registry_unlock();

    if (status != UCS_OK) {
        free(resources);
        return status;
    }

    *resources_p     = resources;
    *num_resources_p = num_resources;
    return UCS_OK;
}

void uct_release_tl_resource_list(uct_tl_resource_desc_t *resources)
{
    free(resources);
}

ucs_status_t uct_md_mem_reg(uct_md_h md, void *address, size_t length,
                            unsigned flags, uct_mem_h *memh_p)
{
    if ((length == 0) || (address == NULL) || (memh_p == NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (md->ops->mem_reg == NULL) {
        return UCS_ERR_UNSUPPORTED;
    }
    return md->ops->mem_reg(md, address, length, flags, memh_p);
}

ucs_status_t uct_md_mem_dereg(uct_md_h md, uct_mem_h memh)
{
    if (md->ops->mem_dereg == NULL) {
        return UCS_ERR_UNSUPPORTED;
    }
    return md->ops->mem_dereg(md, memh);
}

ucs_status_t uct_md_mem_alloc_on_device(uct_md_h md, size_t *length_p,
                                        void **address_p, ucs_memory_type_t mem_type,
                                        uint8_t sys_dev, unsigned flags,
                                        const char *alloc_name, uct_mem_h *memh_p)
{
    if ((length_p == NULL) || (*length_p == 0) || (address_p == NULL) ||
        (memh_p == NULL) || (mem_type >= UCS_MEMORY_TYPE_LAST)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (md->ops->mem_alloc == NULL) {
        return UCS_ERR_UNSUPPORTED;
    }
    return md->ops->mem_alloc(md, length_p, address_p, mem_type, sys_dev, flags,
                              (alloc_name != NULL) ? alloc_name : "uct", memh_p);
}

ucs_status_t uct_md_mem_alloc(uct_md_h md, size_t *length_p, void **address_p,
                              ucs_memory_type_t mem_type, unsigned flags,
                              const char *alloc_name, uct_mem_h *memh_p)
{
    return uct_md_mem_alloc_on_device(md, length_p, address_p, mem_type,
                                      UCS_SYS_DEVICE_ID_UNKNOWN, flags, alloc_name,
                                      memh_p);
}

ucs_status_t uct_md_mem_free(uct_md_h md, uct_mem_h memh)
{
    if (md->ops->mem_free == NULL) {
        return UCS_ERR_UNSUPPORTED;
    }
    return md->ops->mem_free(md, memh);
}

ucs_status_t uct_md_detect_memory_type(uct_md_h md, const void *address,
                                       size_t length, ucs_memory_type_t *mem_type_p)
{
    /* An md that detects nothing recognises no address. */
    if (md->ops->detect_memory_type == NULL) {
        return UCS_ERR_INVALID_ADDR;
    }
    return md->ops->detect_memory_type(md, address, length, mem_type_p);
}

ucs_status_t uct_md_mem_query(uct_md_h md, const void *address, size_t length,
                              uct_md_mem_attr_t *mem_attr)
{
    if (md->ops->mem_query == NULL) {
        return UCS_ERR_UNSUPPORTED;
    }
    return md->ops->mem_query(md, address, length, mem_attr);
}

ucs_status_t uct_md_mem_fence(uct_md_h md, const void *address, size_t length)
{
    if (md->ops->mem_fence == NULL) {
        return UCS_ERR_UNSUPPORTED;
    }
    return md->ops->mem_fence(md, address, length);
}

ucs_status_t uct_md_mkey_pack(uct_md_h md, uct_mem_h memh, void *rkey_buffer)
{
    if (md->ops->mkey_pack == NULL) {
        return UCS_ERR_UNSUPPORTED;
    }
    return md->ops->mkey_pack(md, memh, rkey_buffer);
}

ucs_status_t uct_rkey_unpack(uct_component_h component, const void *rkey_buffer,
                             uct_rkey_bundle_t *rkey_ob)
{
    ucs_status_t status;

    rkey_ob->rkey   = UCT_INVALID_RKEY;
    rkey_ob->handle = NULL;
    rkey_ob->type   = NULL;

    if (rkey_buffer == NULL) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (component->rkey_unpack == NULL) {
        return UCS_ERR_UNSUPPORTED;
    }

    status = component->rkey_unpack(component, rkey_buffer, &rkey_ob->rkey,
                                    &rkey_ob->handle);
    if (status != UCS_OK) {
        rkey_ob->rkey   = UCT_INVALID_RKEY;
        rkey_ob->handle = NULL;
        return status;
    }

    /* Remember who unpacked it, for uct_rkey_ptr/release sanity checks. */
    rkey_ob->type = component;
    return UCS_OK;
}

ucs_status_t uct_rkey_ptr(uct_component_h component, uct_rkey_bundle_t *rkey_ob,
                          uint64_t remote_addr, void **addr_p)
{
    if (component->rkey_ptr == NULL) {
        return UCS_ERR_UNSUPPORTED;
    }
    return component->rkey_ptr(component, rkey_ob->rkey, rkey_ob->handle,
                               remote_addr, addr_p);
}

ucs_status_t uct_rkey_device_id(uct_component_h component, uct_rkey_t rkey,
                                uint8_t id[16])
{
    if (component->rkey_device_id == NULL) {
        return UCS_ERR_UNSUPPORTED;
    }
    return component->rkey_device_id(component, rkey, id);
}

ucs_status_t uct_rkey_release(uct_component_h component,
                              const uct_rkey_bundle_t *rkey_ob)
{
    if (component->rkey_release == NULL) {
        return UCS_OK;
    }
    return component->rkey_release(component, rkey_ob->rkey, rkey_ob->handle);
}
