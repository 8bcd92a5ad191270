#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_component.h"

#include <uct/uct_init.h>
#include <ucs/debug/log.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The registry of components. Components and transports register from
 * constructors of libuct and of transport modules, which may be loaded from
 * any thread, while other threads list them; one lock guards the global list
 * and every component's transport list. It is recursive because a
 * transport's query_devices, called with the lock held by
 * uct_md_query_tl_resources(), may itself look a transport up.
 */
static pthread_mutex_t uct_component_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static UCS_LIST_HEAD(uct_component_list);

void uct_component_registry_lock(void)
{
    pthread_mutex_lock(&uct_component_lock);
}

void uct_component_registry_unlock(void)
{
    pthread_mutex_unlock(&uct_component_lock);
}

/* A component defined as a zeroed static has no initialised list head yet;
 * whichever of its constructors runs first initialises it. */
static void uct_component_init_tl_list(uct_component_t *component)
{
    if (component->tl_list.next == NULL) {
        ucs_list_head_init(&component->tl_list);
    }
}

static int uct_component_is_registered(const uct_component_t *component)
{
    uct_component_t *c;

    ucs_list_for_each(c, &uct_component_list, list) {
        if (c == component) {
            return 1;
        }
    }
    return 0;
}

static int uct_tl_is_registered(const uct_component_t *component, const uct_tl_t *tl)
{
    uct_tl_t *t;

    ucs_list_for_each(t, &component->tl_list, list) {
        if (t == tl) {
            return 1;
        }
    }
    return 0;
}

void uct_component_register(uct_component_t *component)
{
    uct_component_registry_lock();
    uct_component_init_tl_list(component);
    if (!uct_component_is_registered(component)) {
        ucs_list_add_tail(&uct_component_list, &component->list);
    }
    uct_component_registry_unlock();
}

void uct_component_unregister(uct_component_t *component)
{
    uct_component_registry_lock();
    if (uct_component_is_registered(component)) {
        ucs_list_del(&component->list);
    }
    uct_component_registry_unlock();
}

void uct_tl_register(uct_component_t *component, uct_tl_t *tl)
{
    uct_component_registry_lock();
    uct_component_init_tl_list(component);
    if (!uct_tl_is_registered(component, tl)) {
        ucs_list_add_tail(&component->tl_list, &tl->list);
    }
    uct_component_registry_unlock();
}

void uct_tl_unregister(uct_component_t *component, uct_tl_t *tl)
{
    uct_component_registry_lock();
    if ((component->tl_list.next != NULL) && uct_tl_is_registered(component, tl)) {
        ucs_list_del(&tl->list);
    }
    uct_component_registry_unlock();
}

uct_tl_t *uct_component_find_tl(uct_component_t *component, const char *tl_name)
{
    uct_tl_t *tl, *found = NULL;

    if (tl_name == NULL) {
        return NULL;
    }

    uct_component_registry_lock();
    if (component->tl_list.next != NULL) {
        ucs_list_for_each(tl, &component->tl_list, list) {
            if (strncmp(tl->name, tl_name, UCT_TL_NAME_MAX) == 0) {
                found = tl;
                break;
            }
        }
    }
    uct_component_registry_unlock();
    return found;
}

ucs_status_t uct_query_components(uct_component_h **components_p,
                                  unsigned *num_components_p)
{
    uct_component_h *components;
    uct_component_t *component;
    unsigned count = 0;

    /* Modules register their components from constructors; load them before
     * the first listing so that the answer is complete. */
    uct_load_modules();

    uct_component_registry_lock();
    /* One spare slot so that an empty list still gives a non-NULL array. */
    components = malloc(sizeof(*components) *
                        (ucs_list_length(&uct_component_list) + 1));
    if (components == NULL) {
        uct_component_registry_unlock();
        return UCS_ERR_NO_MEMORY;
    }
    ucs_list_for_each(component, &uct_component_list, list) {
        components[count++] = component;
    }
    uct_component_registry_unlock();

    *components_p     = components;
    *num_components_p = count;
    return UCS_OK;
}

void uct_release_component_list(uct_component_h *components)
{
    free(components);
}

ucs_status_t uct_component_query(uct_component_h component,
                                 uct_component_attr_t *component_attr)
{
    uct_md_resource_desc_t *resources = NULL;
    unsigned num_resources            = 0;
    ucs_status_t status;

    if (component_attr->field_mask & (UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT |
                                      UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES)) {
        status = component->query_md_resources(component, &resources,
                                                &num_resources);
        if (status != UCS_OK) {
            return status;
        }
    }

    if (component_attr->field_mask & UCT_COMPONENT_ATTR_FIELD_NAME) {
        snprintf(component_attr->name, sizeof(component_attr->name), "%s",
                 component->name);
    }
    if (component_attr->field_mask & UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT) {
        component_attr->md_resource_count = num_resources;
    }
    if ((component_attr->field_mask & UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES) &&
        (num_resources > 0)) {
        memcpy(component_attr->md_resources, resources,
               sizeof(*resources) * num_resources);
    }
    if (component_attr->field_mask & UCT_COMPONENT_ATTR_FIELD_FLAGS) {
        component_attr->flags = component->flags;
    }

    free(resources);
    return UCS_OK;
}

ucs_status_t uct_component_query_single_md(uct_component_t *component,
                                           uct_md_resource_desc_t **resources_p,
                                           unsigned *num_resources_p)
{
    uct_md_resource_desc_t *resource;

    resource = calloc(1, sizeof(*resource));
    if (resource == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    snprintf(resource->md_name, sizeof(resource->md_name), "%s", component->name);
    *resources_p     = resource;
    *num_resources_p = 1;
    return UCS_OK;
}

ucs_status_t uct_tl_single_device(const char *name, uct_device_type_t type,
                                  uct_tl_device_resource_t **devices_p,
                                  unsigned *num_devices_p)
{
    uct_tl_device_resource_t *device;

    device = calloc(1, sizeof(*device));
    if (device == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    snprintf(device->name, sizeof(device->name), "%s", name);
    device->type       = type;
    device->sys_device = 0xff;
    *devices_p         = device;
    *num_devices_p     = 1;
    return UCS_OK;
}
