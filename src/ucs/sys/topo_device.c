#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <ucs/sys/topo_device.h>
#include <ucs/sys/topo_numa.h>
#include <ucs/debug/log.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>

/*
 * The table only grows: a number handed out stays valid for the life of the
 * process, so it may be stored anywhere (a memory-type cache entry, a pool)
 * without reference counting. The last number is kept for "unknown".
 */
#define UCS_TOPO_DEVICE_MAX UCS_SYS_DEVICE_ID_UNKNOWN

static pthread_mutex_t ucs_topo_device_lock = PTHREAD_MUTEX_INITIALIZER;
static ucs_sys_bus_id_t ucs_topo_devices[UCS_TOPO_DEVICE_MAX];
static unsigned ucs_topo_device_count;

ucs_status_t ucs_topo_bus_id_parse(const char *name, ucs_sys_bus_id_t *bus_id)
{
    unsigned long domain;
    unsigned bus, slot, function;
    int end = -1;

    /* sscanf alone would also take spaces, signs and "0x". */
    if ((name == NULL) || (name[strspn(name, "0123456789abcdefABCDEF:.")] != '\0') ||
        (sscanf(name, "%lx:%x:%x.%x%n", &domain, &bus, &slot, &function, &end) != 4) ||
        (end < 0) || (name[end] != '\0') || (domain > UINT32_MAX) || (bus > 0xff) ||
        (slot > 0x1f) || (function > 7)) {
        return UCS_ERR_INVALID_PARAM;
    }
    bus_id->domain   = (uint32_t)domain;
    bus_id->bus      = (uint8_t)bus;
    bus_id->slot     = (uint8_t)slot;
    bus_id->function = (uint8_t)function;
    return UCS_OK;
}

const char *ucs_topo_bus_id_str(const ucs_sys_bus_id_t *bus_id, char *buf, size_t max)
{
    snprintf(buf, max, "%04x:%02x:%02x.%x", (unsigned)bus_id->domain,
             (unsigned)bus_id->bus, (unsigned)bus_id->slot, (unsigned)bus_id->function);
    return buf;
}

static int ucs_topo_bus_id_equal(const ucs_sys_bus_id_t *a, const ucs_sys_bus_id_t *b)
{
    return (a->domain == b->domain) && (a->bus == b->bus) && (a->slot == b->slot) &&
           (a->function == b->function);
}

ucs_status_t ucs_topo_find_device_by_bus_id(const ucs_sys_bus_id_t *bus_id,
                                            ucs_sys_device_t *sys_dev)
{
    ucs_status_t status = UCS_OK;
    char name[UCS_SYS_BUS_ID_STR_MAX];
    unsigned i;

    pthread_mutex_lock(&ucs_topo_device_lock);
    for (i = 0; i < ucs_topo_device_count; ++i) {
        if (ucs_topo_bus_id_equal(&ucs_topo_devices[i], bus_id)) {
            break;
        }
    }
    if (i == ucs_topo_device_count) {
        if (i < UCS_TOPO_DEVICE_MAX) {
            ucs_topo_devices[i] = *bus_id;
            ++ucs_topo_device_count;
            ucs_debug("topo: system device %u is PCI %s", i,
                      ucs_topo_bus_id_str(bus_id, name, sizeof(name)));
        } else {
            status = UCS_ERR_EXCEEDS_LIMIT;
        }
    }
    pthread_mutex_unlock(&ucs_topo_device_lock);

    *sys_dev = (status == UCS_OK) ? (ucs_sys_device_t)i : UCS_SYS_DEVICE_ID_UNKNOWN;
    return status;
}

ucs_status_t ucs_topo_find_device_by_bdf_name(const char *name, ucs_sys_device_t *sys_dev)
{
    ucs_sys_bus_id_t bus_id;

    *sys_dev = UCS_SYS_DEVICE_ID_UNKNOWN;
    if (ucs_topo_bus_id_parse(name, &bus_id) != UCS_OK) {
        ucs_debug("topo: '%s' is not a PCI bus id", (name != NULL) ? name : "(null)");
        return UCS_ERR_INVALID_PARAM;
    }
    return ucs_topo_find_device_by_bus_id(&bus_id, sys_dev);
}

ucs_status_t ucs_topo_get_device_bus_id(ucs_sys_device_t sys_dev,
                                        ucs_sys_bus_id_t *bus_id)
{
    ucs_status_t status = UCS_ERR_NO_ELEM;

    pthread_mutex_lock(&ucs_topo_device_lock);
    if (sys_dev < ucs_topo_device_count) {
        *bus_id = ucs_topo_devices[sys_dev];
        status  = UCS_OK;
    }
    pthread_mutex_unlock(&ucs_topo_device_lock);
    return status;
}

const char *ucs_topo_sys_device_bdf_name(ucs_sys_device_t sys_dev, char *buf, size_t max)
{
    ucs_sys_bus_id_t bus_id;

    if (ucs_topo_get_device_bus_id(sys_dev, &bus_id) != UCS_OK) {
        snprintf(buf, max, "unknown");
        return buf;
    }
    return ucs_topo_bus_id_str(&bus_id, buf, max);
}

int ucs_topo_sys_device_numa_node(ucs_sys_device_t sys_dev)
{
    char name[UCS_SYS_BUS_ID_STR_MAX];
    ucs_sys_bus_id_t bus_id;

    if (ucs_topo_get_device_bus_id(sys_dev, &bus_id) != UCS_OK) {
        ucs_debug("topo: system device %u is not known: no NUMA node", (unsigned)sys_dev);
        return UCS_NUMA_NODE_UNKNOWN;
    }
    return ucs_topo_numa_node_of_pci(ucs_topo_bus_id_str(&bus_id, name, sizeof(name)));
}
