/**
 * @file types.h
 * Value types shared by the configuration engine and the public API:
 * log levels, ternary values, print flags. Numeric values follow upstream
 * UCX so that programs built against its headers interpret them the same.
 */
#ifndef UCS_CONFIG_TYPES_H
#define UCS_CONFIG_TYPES_H

#include <ucs/sys/compiler_def.h>

#include <sys/socket.h>

BEGIN_C_DECLS

/** Verbosity of a log message; a message is printed when its level is <= UCX_LOG_LEVEL. */
typedef enum {
    UCS_LOG_LEVEL_FATAL,       /**< the process cannot continue */
    UCS_LOG_LEVEL_ERROR,       /**< an operation failed and the caller is told */
    UCS_LOG_LEVEL_WARN,        /**< suspicious, but we carry on */
    UCS_LOG_LEVEL_DIAG,        /**< a silent adjustment worth knowing when debugging */
    UCS_LOG_LEVEL_INFO,        /**< one-time information */
    UCS_LOG_LEVEL_DEBUG,       /**< slow-path decisions (hook install, protocol choice) */
    UCS_LOG_LEVEL_TRACE,       /**< high volume */
    UCS_LOG_LEVEL_TRACE_REQ,   /**< every request */
    UCS_LOG_LEVEL_TRACE_DATA,  /**< every packet */
    UCS_LOG_LEVEL_TRACE_ASYNC, /**< asynchronous events */
    UCS_LOG_LEVEL_TRACE_FUNC,  /**< function entry */
    UCS_LOG_LEVEL_TRACE_POLL,  /**< every poll */
    UCS_LOG_LEVEL_LAST,
    UCS_LOG_LEVEL_PRINT        /**< always printed */
} ucs_log_level_t;

/** Value of a "yes/no/try/auto" option. */
typedef enum ucs_ternary_auto_value {
    UCS_NO   = 0,
    UCS_YES  = 1,
    UCS_TRY  = 2,
    UCS_AUTO = 3,
    UCS_TERNARY_LAST
} ucs_ternary_auto_value_t;

/** Value of an "on/off/auto" option. */
typedef enum ucs_on_off_auto_value {
    UCS_CONFIG_OFF  = 0,
    UCS_CONFIG_ON   = 1,
    UCS_CONFIG_AUTO = 2,
    UCS_CONFIG_ON_OFF_LAST
} ucs_on_off_auto_value_t;

/** What ucs_config_parser_print_opts() and ucp_config_print() include. */
typedef enum {
    UCS_CONFIG_PRINT_CONFIG          = UCS_BIT(0), /**< name=value lines */
    UCS_CONFIG_PRINT_HEADER          = UCS_BIT(1), /**< a title line */
    UCS_CONFIG_PRINT_DOC             = UCS_BIT(2), /**< documentation as comments */
    UCS_CONFIG_PRINT_HIDDEN          = UCS_BIT(3), /**< internal variables too */
    UCS_CONFIG_PRINT_COMMENT_DEFAULT = UCS_BIT(4)  /**< comment out lines at their default */
} ucs_config_print_flags_t;

/**
 * A list of strings read from a comma-separated value ("a,b,c"). The
 * configuration engine owns @a names and every string in it.
 */
typedef struct {
    char     **names; /**< @a count strings */
    unsigned count;   /**< number of strings */
    unsigned pad;     /**< keeps the layout of upstream's array fields */
} ucs_config_names_array_t;

/** How an allow list ("all", "a,b" or "^a,b") selects names. */
typedef enum {
    UCS_CONFIG_ALLOW_LIST_ALLOW_ALL, /**< "all": every name is allowed */
    UCS_CONFIG_ALLOW_LIST_ALLOW,     /**< only the listed names are allowed */
    UCS_CONFIG_ALLOW_LIST_NEGATE     /**< every name except the listed ones */
} ucs_config_allow_list_mode_t;

/** Value of an allow-list option such as UCX_TLS. */
typedef struct {
    ucs_config_names_array_t     array; /**< listed names (empty for ALLOW_ALL) */
    ucs_config_allow_list_mode_t mode;  /**< how to interpret @a array */
} ucs_config_allow_list_t;

/**
 * A socket address given by reference: @a addr points to a struct sockaddr_in,
 * sockaddr_in6 (or another family) of @a addrlen bytes, owned by the caller.
 * ucp_ep_params_t carries two of these, so the layout is upstream's.
 */
typedef struct ucs_sock_addr {
    const struct sockaddr *addr;    /**< the address; not copied by the type */
    socklen_t             addrlen;  /**< its length in bytes */
} ucs_sock_addr_t;

/**
 * Log settings of one component of a program that logs through UCS. A
 * binding (UCXX, for one) keeps one for itself and passes it to
 * ucs_log_dispatch(), which prints @a name with each line and drops lines of
 * files that do not match @a file_filter. The layout is upstream's, so a
 * binary built with upstream's headers hands us a struct we read right.
 */
typedef struct ucs_log_component_config {
    ucs_log_level_t log_level;   /**< lines above this level are dropped */
    char            name[16];    /**< printed with each line; "" for none */
    const char      *file_filter; /**< fnmatch() pattern on the source file's
                                       base name; NULL or "*" for all */
} ucs_log_component_config_t;

END_C_DECLS

#endif
