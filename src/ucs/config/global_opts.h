/**
 * @file global_opts.h
 * Process-wide options of libucs (UCX_LOG_LEVEL, UCX_LOG_FILE,
 * UCX_MODULE_DIR, ...), read once when libucs is loaded.
 *
 * PLACEHOLDER: the configuration area replaces this file.
 */
#ifndef UCS_CONFIG_GLOBAL_OPTS_H_
#define UCS_CONFIG_GLOBAL_OPTS_H_

#include <ucs/config/types.h>
#include <ucs/type/status.h>

BEGIN_C_DECLS

typedef struct {
    ucs_log_level_t log_level;  /* UCX_LOG_LEVEL */
    char            *log_file;  /* UCX_LOG_FILE */
    char            *module_dir; /* UCX_MODULE_DIR */
} ucs_global_opts_t;

extern ucs_global_opts_t ucs_global_opts;

ucs_status_t ucs_global_opts_init(void);
void ucs_global_opts_cleanup(void);

END_C_DECLS

#endif
