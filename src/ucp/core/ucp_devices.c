/*
 * UCX_NET_DEVICES, UCX_SHM_DEVICES, UCX_ACC_DEVICES, UCX_SELF_DEVICES: which
 * devices of each kind a context may use. The kind is what the transport
 * reports (uct_tl_resource_desc_t::dev_type), so the filter knows no
 * transport by name; the names are the transports' device names ("eth0",
 * "lo" for tcp, "memory" for shared memory, "cuda" for the GPU copy
 * transports), as ucx_info -d prints them.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <ucp/core/ucp_int.h>

#include <string.h>

static const char *ucp_devices_var_names[] = {
    [UCT_DEVICE_TYPE_NET]  = "UCX_NET_DEVICES",
    [UCT_DEVICE_TYPE_SHM]  = "UCX_SHM_DEVICES",
    [UCT_DEVICE_TYPE_ACC]  = "UCX_ACC_DEVICES",
    [UCT_DEVICE_TYPE_SELF] = "UCX_SELF_DEVICES",
};

static int ucp_devices_listed(const ucs_config_allow_list_t *list, const char *dev_name)
{
    unsigned i;

    for (i = 0; i < list->array.count; ++i) {
        if (!strcmp(list->array.names[i], dev_name)) {
            return 1;
        }
    }
    return 0;
}

int ucp_devices_allowed(const ucp_config_t *config, uct_device_type_t type,
                        const char *dev_name)
{
    const ucs_config_allow_list_t *list;

    if ((unsigned)type >= UCT_DEVICE_TYPE_LAST) {
        return 1; /* a kind without a variable is not filtered */
    }
    list = &config->devices[type];
    return ucs_config_allow_list_admits(list, ucp_devices_listed(list, dev_name));
}

void ucp_devices_check_names(const ucp_config_t *config,
                             const uct_tl_resource_desc_t *seen, unsigned num_seen)
{
    const ucs_config_allow_list_t *list;
    unsigned type, i, k;
    int found;

    for (type = 0; type < UCT_DEVICE_TYPE_LAST; ++type) {
        list = &config->devices[type];
        for (i = 0; i < list->array.count; ++i) {
            found = 0;
            for (k = 0; (k < num_seen) && !found; ++k) {
                found = (seen[k].dev_type == type) &&
                        !strcmp(seen[k].dev_name, list->array.names[i]);
            }
            if (!found) {
                ucs_warn("%s: device '%s' is not offered by any transport on "
                         "this host (ucx_info -d lists them)",
                         ucp_devices_var_names[type], list->array.names[i]);
            }
        }
    }
}
