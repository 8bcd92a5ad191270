/* PLACEHOLDER: the configuration area replaces this file. */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif
#include <ucs/config/global_opts.h>
#include <stdlib.h>

ucs_global_opts_t ucs_global_opts = {UCS_LOG_LEVEL_WARN, NULL, NULL};

ucs_status_t ucs_global_opts_init(void)
{
    ucs_global_opts.module_dir = getenv("UCX_MODULE_DIR");
    return UCS_OK;
}

void ucs_global_opts_cleanup(void)
{
}
#include <ucs/config/parser.h>
ucs_status_t ucs_config_parser_print_all_opts(FILE *stream, const char *prefix,
                                              int flags)
{
    return UCS_ERR_NOT_IMPLEMENTED;
}
