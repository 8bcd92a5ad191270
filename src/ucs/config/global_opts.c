#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <ucs/config/global_opts.h>
#include <ucs/debug/log.h>

#include <stddef.h>

/* The log level is read by the enum parser, which stores an unsigned. */
_Static_assert(sizeof(ucs_log_level_t) == sizeof(unsigned),
               "ucs_log_level_t must be stored as unsigned");

ucs_global_opts_t ucs_global_opts = {
    .log_level   = UCS_LOG_LEVEL_WARN,
    .log_file    = NULL,
    .module_dir  = NULL,
    .config_file = NULL
};

static const ucs_config_field_t ucs_global_opts_fields[] = {
    {"LOG_LEVEL", "warn",
     "Threshold of log messages: a message is printed when its level is at\n"
     "or below this one.",
     offsetof(ucs_global_opts_t, log_level), UCS_CONFIG_TYPE_LOG_LEVEL},

    {"LOG_FILE", "stderr",
     "Where log messages go: stderr, stdout or a file path, in which %p\n"
     "stands for the process id and %h for the host name.",
     offsetof(ucs_global_opts_t, log_file), UCS_CONFIG_TYPE_STRING},

    {"MODULE_DIR", "",
     "Colon-separated directories searched for loadable modules before the\n"
     "installation directory.",
     offsetof(ucs_global_opts_t, module_dir), UCS_CONFIG_TYPE_STRING},

    {"CONFIG_FILE", "",
     "Configuration file of UCX_NAME=value lines, read before the\n"
     "environment (which wins). Taken from the environment only; empty for\n"
     "none.",
     offsetof(ucs_global_opts_t, config_file), UCS_CONFIG_TYPE_STRING},

    {NULL}
};

ucs_config_table_entry_t ucs_global_opts_table_entry = {
    .name   = "UCS global options",
    .prefix = "",
    .fields = ucs_global_opts_fields,
    .size   = sizeof(ucs_global_opts_t)
};

ucs_status_t ucs_global_opts_init(void)
{
    ucs_status_t status, dfl_status;

    /* Registered here rather than by a constructor of this file, because
     * the libucs constructor that calls us may run before that one. */
    ucs_config_register_table(&ucs_global_opts_table_entry);

    status = ucs_config_parser_fill_opts(&ucs_global_opts,
                                         &ucs_global_opts_table_entry, NULL,
                                         NULL);
    if (status != UCS_OK) {
        /* The error is reported and returned to the user; logging and the
         * module loader still need usable values meanwhile. */
        dfl_status = ucs_config_parser_fill_defaults(
                &ucs_global_opts, &ucs_global_opts_table_entry);
        if (dfl_status != UCS_OK) {
            ucs_global_opts.log_level = UCS_LOG_LEVEL_WARN;
        }
        return status;
    }

    ucs_log_set_level(ucs_global_opts.log_level);
    return ucs_log_set_file(ucs_global_opts.log_file);
}

void ucs_global_opts_cleanup(void)
{
    ucs_config_parser_release_opts(&ucs_global_opts,
                                   &ucs_global_opts_table_entry);
    ucs_config_unregister_table(&ucs_global_opts_table_entry);
}
