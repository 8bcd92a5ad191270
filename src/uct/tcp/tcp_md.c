#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "tcp_md.h"
#include "tcp_wire.h"

#include <ucs/debug/log.h>
#include <ucs/sys/sys.h>

#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

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


/* Tokens are spread over the buckets by their low bits already (random
 * start, +1 each); a multiplicative mix keeps a crafted token from costing
 * more than a chain walk. */
static inline uint64_t uct_tcp_md_token_hash(uint64_t token)
{
    return token * 0x9e3779b97f4a7c15ull;
}

static int uct_tcp_md_region_equal(const ucs_hmap_elem_t *elem, const void *key,
                                   void *arg)
{
    return ucs_container_of(elem, uct_tcp_md_region_t, hash)->token ==
           *(const uint64_t*)key;
}

static void uct_tcp_md_close(uct_md_h tl_md)
{
    uct_tcp_md_t *md = ucs_container_of(tl_md, uct_tcp_md_t, super);
    ucs_hmap_iter_t iter;
    ucs_hmap_elem_t *elem;

    if (ucs_hmap_count(&md->regions) > 0) {
        ucs_debug("tcp md %p: %zu regions still registered at close", (void*)md,
                  ucs_hmap_count(&md->regions));
    }
    ucs_hmap_iter_init(&iter);
    while ((elem = ucs_hmap_iter_next(&md->regions, &iter)) != NULL) {
        free(ucs_container_of(elem, uct_tcp_md_region_t, hash));
    }
    ucs_hmap_cleanup(&md->regions);
    free(md);
}

static ucs_status_t uct_tcp_md_mem_reg(uct_md_h tl_md, void *address, size_t length,
                                       unsigned flags, uct_mem_h *memh_p)
{
    uct_tcp_md_t *md = ucs_container_of(tl_md, uct_tcp_md_t, super);
    uct_tcp_md_region_t *region;

    region = calloc(1, sizeof(*region));
    if (region == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    region->token  = md->token_next++;
    region->base   = (uintptr_t)address;
    region->length = length;
    ucs_hmap_insert(&md->regions, &region->hash, uct_tcp_md_token_hash(region->token));
    ucs_trace("tcp md %p: registered %p+%zu as token 0x%llx", (void*)md, address,
              length, (unsigned long long)region->token);
    *memh_p = region;
    return UCS_OK;
}

static ucs_status_t uct_tcp_md_mem_dereg(uct_md_h tl_md, uct_mem_h memh)
{
    uct_tcp_md_t *md            = ucs_container_of(tl_md, uct_tcp_md_t, super);
    uct_tcp_md_region_t *region = memh;

    if (ucs_hmap_remove(&md->regions, &region->hash) != UCS_OK) {
        ucs_error("tcp md %p: deregistering a handle it did not register", (void*)md);
        return UCS_ERR_INVALID_PARAM;
    }
    if (region->refs > 0) {
        ucs_debug("tcp md %p: region %p+%llu deregistered while %u get responses "
                  "read it: they stop", (void*)md, (void*)(uintptr_t)region->base,
                  (unsigned long long)region->length, region->refs);
        region->dead = 1;
        return UCS_OK;
    }
    free(region);
    return UCS_OK;
}

static ucs_status_t uct_tcp_md_mkey_pack(uct_md_h tl_md, uct_mem_h memh,
                                         void *rkey_buffer)
{
    const uct_tcp_md_region_t *region = memh;
    uct_tcp_rkey_t key;

    key.magic   = htole32(UCT_TCP_RKEY_MAGIC);
    key.version = htole32(UCT_TCP_WIRE_VERSION);
    key.base    = htole64(region->base);
    key.length  = htole64(region->length);
    key.token   = htole64(region->token);
    memcpy(rkey_buffer, &key, sizeof(key));
    return UCS_OK;
}

uct_tcp_md_region_t *uct_tcp_md_region_get(uct_tcp_md_t *md, uint64_t token,
                                           uint64_t address, uint64_t length)
{
    uct_tcp_md_region_t *region;
    ucs_hmap_elem_t *elem;

    elem = ucs_hmap_lookup(&md->regions, uct_tcp_md_token_hash(token), &token);
    if (elem == NULL) {
        return NULL;
    }
    region = ucs_container_of(elem, uct_tcp_md_region_t, hash);
    if ((address < region->base) || (length > region->length) ||
        (address - region->base > region->length - length)) {
        return NULL;
    }
    ++region->refs;
    return region;
}

void uct_tcp_md_region_put(uct_tcp_md_region_t *region)
{
    if ((--region->refs == 0) && region->dead) {
        free(region);
    }
}

static ucs_status_t uct_tcp_md_query(uct_md_h md, uct_md_attr_t *md_attr)
{
    memset(md_attr, 0, sizeof(*md_attr));
    /* Sends take any host pointer; registration only names memory a peer
     * may read with get zcopy. */
    md_attr->cap.max_alloc        = 0;
    md_attr->cap.max_reg          = SIZE_MAX;
    md_attr->cap.flags            = UCT_MD_FLAG_REG | UCT_MD_FLAG_NEED_RKEY;
    md_attr->cap.reg_mem_types    = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    md_attr->cap.detect_mem_types = 0;
    md_attr->cap.alloc_mem_types  = 0;
    md_attr->cap.access_mem_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    md_attr->reg_cost             = ucs_linear_func_make(50e-9, 0);
    md_attr->rkey_packed_size     = sizeof(uct_tcp_rkey_t);
    snprintf(md_attr->component_name, sizeof(md_attr->component_name), "%s",
             UCT_TCP_NAME);
    return UCS_OK;
}

static const uct_md_ops_t uct_tcp_md_ops = {
    .close     = uct_tcp_md_close,
    .query     = uct_tcp_md_query,
    .mem_reg   = uct_tcp_md_mem_reg,
    .mem_dereg = uct_tcp_md_mem_dereg,
    .mkey_pack = uct_tcp_md_mkey_pack
};

/* A random first token, so that keys of an earlier process (or of another
 * md) do not name this md's regions by accident. */
static uint64_t uct_tcp_md_first_token(void)
{
    uint64_t value;

    if (getrandom(&value, sizeof(value), GRND_NONBLOCK) != (ssize_t)sizeof(value)) {
        value = ucs_get_time_ns() ^ ((uint64_t)getpid() << 32);
    }
    return value | 1;
}

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

    status = ucs_hmap_init(&md->regions, uct_tcp_md_region_equal, NULL);
    if (status != UCS_OK) {
        free(md);
        return status;
    }
    md->token_next      = uct_tcp_md_first_token();
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

/* The unpacked key is the packed one in host byte order (tcp_get.c reads
 * it); a blob that is not a tcp key of this wire version is refused here,
 * before any get is built on it. */
static ucs_status_t uct_tcp_rkey_unpack(uct_component_t *component,
                                        const void *rkey_buffer, uct_rkey_t *rkey_p,
                                        void **handle_p)
{
    uct_tcp_rkey_t wire, *key;

    memcpy(&wire, rkey_buffer, sizeof(wire));
    if ((le32toh(wire.magic) != UCT_TCP_RKEY_MAGIC) ||
        (le32toh(wire.version) != UCT_TCP_WIRE_VERSION) ||
        (le64toh(wire.base) + le64toh(wire.length) < le64toh(wire.base))) {
        ucs_debug("tcp: remote key is not a tcp key of wire version %d "
                  "(magic 0x%x, version %u)", UCT_TCP_WIRE_VERSION,
                  le32toh(wire.magic), le32toh(wire.version));
        return UCS_ERR_INVALID_PARAM;
    }
    key = malloc(sizeof(*key));
    if (key == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    key->magic   = UCT_TCP_RKEY_MAGIC;
    key->version = UCT_TCP_WIRE_VERSION;
    key->base    = le64toh(wire.base);
    key->length  = le64toh(wire.length);
    key->token   = le64toh(wire.token);
    *rkey_p      = (uintptr_t)key;
    *handle_p    = NULL;
    return UCS_OK;
}

static ucs_status_t uct_tcp_rkey_release(uct_component_t *component, uct_rkey_t rkey,
                                         void *handle)
{
    free((void*)rkey);
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
