/**
 * @file global_opts.h
 * Process-wide options of libucs, read once when libucs is loaded (from the
 * defaults, the configuration file and the environment; see parser.h) and
 * listed by `ucx_info -c`:
 *
 *   UCX_LOG_LEVEL    threshold of log messages (default warn)
 *   UCX_LOG_FILE     where log messages go (default stderr; %p and %h expand
 *                    to the process id and host name)
 *   UCX_MODULE_DIR   extra directories searched for loadable modules
 *   UCX_CONFIG_FILE  configuration file to read (default: none)
 */
#ifndef UCS_CONFIG_GLOBAL_OPTS_H_
#define UCS_CONFIG_GLOBAL_OPTS_H_

#include <ucs/config/parser.h>
#include <ucs/config/types.h>
#include <ucs/type/status.h>

BEGIN_C_DECLS

typedef struct {
    ucs_log_level_t log_level;   /**< UCX_LOG_LEVEL */
    char            *log_file;   /**< UCX_LOG_FILE */
    char            *module_dir; /**< UCX_MODULE_DIR, ':'-separated; may be "" */
    char            *config_file;/**< UCX_CONFIG_FILE as read; "" for none */
} ucs_global_opts_t;

/**
 * The options in effect. Filled by ucs_global_opts_init(); the strings are
 * owned by libucs. Tests may point a field elsewhere for a while but must
 * restore it before libucs is unloaded.
 */
extern ucs_global_opts_t ucs_global_opts;

/** Table of the options above ("UCS global options"), registered by init. */
extern ucs_config_table_entry_t ucs_global_opts_table_entry;

/**
 * Register the global table, read the options and apply the log level and
 * log file. Called once from the libucs constructor.
 *
 * @return UCS_OK; UCS_ERR_INVALID_PARAM for a bad value (an error naming the
 *         variable was logged, and every option keeps its default);
 *         UCS_ERR_IO_ERROR when the configuration file or the log file
 *         cannot be opened; UCS_ERR_NO_MEMORY.
 */
ucs_status_t ucs_global_opts_init(void);

/** Free the options and unregister the table; called when libucs unloads. */
void ucs_global_opts_cleanup(void);

END_C_DECLS

#endif
