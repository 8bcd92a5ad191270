#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "tcp_md.h"

#include <ucs/debug/log.h>

#include <stdlib.h>
#include <string.h>

/* The families belong to the md, not the iface: they decide which devices
 * exist, and a device listed but unusable would fail worker creation. */
static ucs_config_field_t uct_tcp_md_config_fields[] = {
    {"AF_PRIO", "inet,inet6",
     "Address families the tcp transport uses, most preferred first: inet\n"
     "(IPv4), inet6 (IPv6) or both. A device is listed when it has an address\n"
     "of one of them, and its iface listens on the first family it has (for\n"
     "IPv6, a global address before a link-local one). Both sides of a\n"
     "connection must end up with the same family: set inet6 first on every\n"
     "host of an IPv6 network whose interfaces also carry IPv4 addresses.",
     offsetof(uct_tcp_md_config_t, af_prio), UCS_CONFIG_TYPE_STRING_ARRAY},

    {NULL}};

static ucs_config_table_entry_t uct_tcp_md_config_entry = {
    .name   = "TCP memory domain",
    .prefix = "TCP_",
    .fields = uct_tcp_md_config_fields,
    .size   = sizeof(uct_tcp_md_config_t)};
UCS_CONFIG_REGISTER_TABLE(uct_tcp_md_config_entry)


static void uct_tcp_md_close(uct_md_h md)
{
    free(md);
}

static ucs_status_t uct_tcp_md_query(uct_md_h md, uct_md_attr_t *md_attr)
{
    memset(md_attr, 0, sizeof(*md_attr));
    /* Data goes through the kernel from any host pointer: nothing to
     * register, no rkeys, only host memory reachable by the socket calls. */
    md_attr->cap.max_alloc        = 0;
    md_attr->cap.max_reg          = 0;
    md_attr->cap.flags            = 0;
    md_attr->cap.reg_mem_types    = 0;
    md_attr->cap.detect_mem_types = 0;
    md_attr->cap.alloc_mem_types  = 0;
    md_attr->cap.access_mem_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    md_attr->reg_cost             = ucs_linear_func_make(0, 0);
    md_attr->rkey_packed_size     = 0;
    snprintf(md_attr->component_name, sizeof(md_attr->component_name), "%s",
             UCT_TCP_NAME);
    return UCS_OK;
}

static const uct_md_ops_t uct_tcp_md_ops = {
    .close = uct_tcp_md_close,
    .query = uct_tcp_md_query
    /* mem_reg, mkey_pack, ...: NULL, so the public calls say unsupported */
};

static ucs_status_t uct_tcp_md_open(uct_component_t *component, const char *md_name,
                                    const uct_md_config_t *config, uct_md_h *md_p)
{
    const uct_tcp_md_config_t *md_config = (const uct_tcp_md_config_t *)config;
    uct_tcp_af_prio_t af_prio;
    ucs_status_t status;
    uct_tcp_md_t *md;

    if (strcmp(md_name, UCT_TCP_NAME) != 0) {
        ucs_error("tcp: no memory domain named '%s' (the only one is '%s')",
                  md_name, UCT_TCP_NAME);
        return UCS_ERR_NO_DEVICE;
    }

    status = uct_tcp_af_prio_parse((const char *const *)md_config->af_prio.names,
                                   md_config->af_prio.count, &af_prio);
    if (status != UCS_OK) {
        return status;
    }

    md = calloc(1, sizeof(*md));
    if (md == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    md->af_prio         = af_prio;
    md->super.ops       = &uct_tcp_md_ops;
    md->super.component = component;
    *md_p               = &md->super;
    return UCS_OK;
}

ucs_status_t uct_tcp_query_devices(uct_md_h md, uct_tl_device_resource_t **devices_p,
                                   unsigned *num_devices_p)
{
    const uct_tcp_md_t *tcp_md        = ucs_container_of(md, uct_tcp_md_t, super);
    uct_tl_device_resource_t *devices = NULL;
    uct_tcp_netif_name_t *names;
    unsigned count, i;
    ucs_status_t status;

    status = uct_tcp_netif_list(&tcp_md->af_prio, &names, &count);
    if (status != UCS_OK) {
        return status;
    }

    if (count > 0) {
        devices = calloc(count, sizeof(*devices));
        if (devices == NULL) {
            free(names);
            return UCS_ERR_NO_MEMORY;
        }
    }

    for (i = 0; i < count; ++i) {
        snprintf(devices[i].name, sizeof(devices[i].name), "%s", names[i].name);
        devices[i].type       = UCT_DEVICE_TYPE_NET;
        devices[i].sys_device = 0xff;
    }

    free(names);
    *devices_p     = devices;
    *num_devices_p = count;
    return UCS_OK;
}

/* TCP has no remote keys: a key that reaches us is a peer's mistake. */
static ucs_status_t uct_tcp_rkey_unpack(uct_component_t *component,
                                        const void *rkey_buffer, uct_rkey_t *rkey_p,
                                        void **handle_p)
{
    return UCS_ERR_UNSUPPORTED;
}

static ucs_status_t uct_tcp_rkey_release(uct_component_t *component, uct_rkey_t rkey,
                                         void *handle)
{
    return UCS_OK;
}

uct_component_t uct_tcp_component = {
    .name               = UCT_TCP_NAME,
    .query_md_resources = uct_component_query_single_md,
    .md_open            = uct_tcp_md_open,
    .rkey_unpack        = uct_tcp_rkey_unpack,
    .rkey_ptr           = NULL,
    .rkey_release       = uct_tcp_rkey_release,
    .md_config          = &uct_tcp_md_config_entry,
    .flags              = 0,
    .tl_list            = UCS_LIST_INITIALIZER(uct_tcp_component.tl_list)
};
UCT_COMPONENT_REGISTER(&uct_tcp_component)
