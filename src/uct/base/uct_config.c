#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_md.h"

#include <ucs/debug/log.h>

#include <stdlib.h>
#include <string.h>

/*
 * md and iface configurations are handed out as bare pointers to the
 * component's options structure, yet uct_config_release() and
 * uct_config_modify() receive only that pointer. So each one is allocated
 * inside a bundle that remembers its table, right in front of the options:
 * the table is found again with ucs_container_of(), no lookup needed.
 */

#define UCT_CONFIG_BUNDLE_MAGIC 0x676663746375ull /* "uctcfg", catches foreign pointers */

typedef struct uct_config_bundle {
    uint64_t                       magic;
    const ucs_config_table_entry_t *table;
    /* The options structure; aligned for any field type it may hold. */
    char                           data[] __attribute__((aligned(16)));
} uct_config_bundle_t;

/* Components and transports without options still get a valid object. */
static const ucs_config_field_t uct_config_no_fields[] = {
    {NULL, NULL, NULL, 0, {NULL, NULL, NULL, NULL, NULL, NULL, 0, 0}, 0}
};

static ucs_config_table_entry_t uct_md_config_empty_entry = {
    .name   = "memory domain",
    .prefix = "",
    .fields = uct_config_no_fields,
    .size   = sizeof(uct_md_config_t),
    .next   = NULL
};

static ucs_config_table_entry_t uct_iface_config_empty_entry = {
    .name   = "interface",
    .prefix = "",
    .fields = uct_config_no_fields,
    .size   = sizeof(uct_iface_config_t),
    .next   = NULL
};

static uct_config_bundle_t *uct_config_bundle(void *config)
{
    uct_config_bundle_t *bundle = ucs_container_of(config, uct_config_bundle_t,
                                                   data);

    ucs_assert_always(bundle->magic == UCT_CONFIG_BUNDLE_MAGIC);
    return bundle;
}

/* Allocate a bundle for @a table and fill it from defaults, file and env. */
static ucs_status_t uct_config_read(const ucs_config_table_entry_t *table,
                                    size_t min_size, const char *env_prefix,
                                    const char *filename, void **config_p)
{
    size_t size = (table->size > min_size) ? table->size : min_size;
    uct_config_bundle_t *bundle;
    ucs_status_t status;

    bundle = calloc(1, sizeof(*bundle) + size);
    if (bundle == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    bundle->magic = UCT_CONFIG_BUNDLE_MAGIC;
    bundle->table = table;

    status = ucs_config_parser_fill_opts(bundle->data, table, env_prefix,
                                         filename);
    if (status != UCS_OK) {
        /* The engine has already named the offending variable. */
        free(bundle);
        return status;
    }

    *config_p = bundle->data;
    return UCS_OK;
}

ucs_status_t uct_md_config_read(uct_component_h component, const char *env_prefix,
                                const char *filename, uct_md_config_t **config_p)
{
    const ucs_config_table_entry_t *table = component->md_config;
    void *config;
    ucs_status_t status;

    if (table == NULL) {
        table = &uct_md_config_empty_entry;
    }

    status = uct_config_read(table, sizeof(uct_md_config_t), env_prefix,
                             filename, &config);
    if (status != UCS_OK) {
        return status;
    }

    *config_p = config;
    return UCS_OK;
}

ucs_status_t uct_md_iface_config_read(uct_md_h md, const char *tl_name,
                                      const char *env_prefix, const char *filename,
                                      uct_iface_config_t **config_p)
{
    const ucs_config_table_entry_t *table;
    void *config;
    ucs_status_t status;
    uct_tl_t *tl;

    tl = uct_component_find_tl(md->component, tl_name);
    if (tl == NULL) {
        ucs_error("component %s has no transport '%s'", md->component->name,
                  (tl_name != NULL) ? tl_name : "(null)");
        return UCS_ERR_NO_ELEM;
    }

    table = (tl->config != NULL) ? tl->config : &uct_iface_config_empty_entry;
    status = uct_config_read(table, sizeof(uct_iface_config_t), env_prefix,
                             filename, &config);
    if (status != UCS_OK) {
        return status;
    }

    *config_p = config;
    return UCS_OK;
}

void uct_config_release(void *config)
{
    uct_config_bundle_t *bundle;

    if (config == NULL) {
        return;
    }

    bundle = uct_config_bundle(config);
    ucs_config_parser_release_opts(bundle->data, bundle->table);
    bundle->magic = 0;
    free(bundle);
}

ucs_status_t uct_config_modify(void *config, const char *name, const char *value)
{
    const ucs_config_table_entry_t *table;
    char full_name[UCS_CONFIG_NAME_MAX];
    size_t prefix_len;
    ucs_status_t status;

    if ((config == NULL) || (name == NULL) || (value == NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }

    table  = uct_config_bundle(config)->table;
    status = ucs_config_parser_set_value(config, table, name, value);
    if (status != UCS_ERR_NO_ELEM) {
        return status;
    }

    /* Upstream callers name fields without the table's prefix ("SEG_SIZE"
     * for UCX_SELF_SEG_SIZE): accept that form too. */
    prefix_len = (table->prefix != NULL) ? strlen(table->prefix) : 0;
    if ((prefix_len == 0) || (strncmp(name, table->prefix, prefix_len) == 0)) {
        return status;
    }
    if ((size_t)snprintf(full_name, sizeof(full_name), "%s%s", table->prefix,
                         name) >= sizeof(full_name)) {
        return UCS_ERR_NO_ELEM;
    }
    return ucs_config_parser_set_value(config, table, full_name, value);
}
