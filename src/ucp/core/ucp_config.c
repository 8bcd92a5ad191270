#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <ucp/core/ucp_config.h>
#include <ucp/api/ucp.h>
#include <ucs/debug/log.h>

#include <stddef.h>
#include <stdlib.h>

static const ucs_config_field_t ucp_config_fields[] = {
    {"TLS", "all",
     "Transports a context may use: 'all', a comma-separated list of\n"
     "transport names, or '^' and the transports to exclude.",
     offsetof(ucp_config_t, tls), UCS_CONFIG_TYPE_ALLOW_LIST},

    {"PROTO_INFO", "n",
     "Print, for every new endpoint configuration, which protocol serves\n"
     "which message size and memory type.",
     offsetof(ucp_config_t, proto_info), UCS_CONFIG_TYPE_BOOL},

    {NULL}
};

ucs_config_table_entry_t ucp_config_table_entry = {
    .name   = "UCP context",
    .prefix = "",
    .fields = ucp_config_fields,
    .size   = sizeof(ucp_config_t)
};

UCS_CONFIG_REGISTER_TABLE(ucp_config_table_entry)

ucs_status_t ucp_config_read(const char *env_prefix, const char *filename,
                             ucp_config_t **config_p)
{
    ucp_config_t *config;
    ucs_status_t status;

    if (config_p == NULL) {
        return UCS_ERR_INVALID_PARAM;
    }

    config = malloc(sizeof(*config));
    if (config == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    status = ucs_config_parser_fill_opts(config, &ucp_config_table_entry,
                                         env_prefix, filename);
    if (status != UCS_OK) {
        free(config);
        return status;
    }

    /* Only after a successful read: a file that failed to parse has been
     * reported already, and the check would report it again. */
    ucs_config_parser_warn_unknown_vars_once(env_prefix);
    if (filename != NULL) {
        ucs_config_parser_warn_unknown_file_keys(filename, env_prefix);
    }

    *config_p = config;
    return UCS_OK;
}

void ucp_config_release(ucp_config_t *config)
{
    if (config == NULL) {
        return;
    }
    ucs_config_parser_release_opts(config, &ucp_config_table_entry);
    free(config);
}

ucs_status_t ucp_config_modify(ucp_config_t *config, const char *name,
                               const char *value)
{
    if ((config == NULL) || (name == NULL) || (value == NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }
    return ucs_config_parser_set_value(config, &ucp_config_table_entry, name,
                                       value);
}

void ucp_config_print(const ucp_config_t *config, FILE *stream,
                      const char *title, ucs_config_print_flags_t print_flags)
{
    ucs_config_parser_print_opts(stream, title, config,
                                 &ucp_config_table_entry, print_flags);
}
