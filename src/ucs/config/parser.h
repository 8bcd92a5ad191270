/* PLACEHOLDER: the configuration area replaces this file. */
#ifndef UCS_CONFIG_PARSER_H_
#define UCS_CONFIG_PARSER_H_
#include <ucs/config/types.h>
#include <ucs/type/status.h>
#include <stdio.h>
BEGIN_C_DECLS
ucs_status_t ucs_config_parser_print_all_opts(FILE *stream, const char *prefix,
                                              int flags);
END_C_DECLS
#endif
