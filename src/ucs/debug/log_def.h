/**
 * @file log_def.h
 * The logging entry point of UCS as programs outside the library call it.
 * A binding that logs through UCS keeps a ucs_log_component_config_t of its
 * own (its name, level and file filter) and calls ucs_log_dispatch() with
 * it, usually through ucs_log_component(). Installed at the path upstream
 * uses; the signature of ucs_log_dispatch() is upstream's (1.13 and later).
 */
#ifndef UCS_LOG_DEF_H_
#define UCS_LOG_DEF_H_

#include <ucs/config/types.h>
#include <ucs/sys/compiler_def.h>

#include <stdarg.h>

BEGIN_C_DECLS

/** Threshold of the library's own messages (UCX_LOG_LEVEL). */
extern ucs_log_level_t ucs_log_level;

/** Names of the levels as UCX_LOG_LEVEL accepts them ("fatal" .. "poll"), NULL-terminated. */
extern const char *ucs_log_level_names[];

/**
 * Print one log line (the callers' macros check the level first).
 *
 * The line carries a time stamp, the process and thread ids, the base name of
 * @a file with @a line, the name of the component (when @a comp_conf gives
 * one) and the level. It goes where UCX_LOG_FILE says (stderr by default).
 *
 * @param file       source file of the call.
 * @param line       source line.
 * @param function   calling function.
 * @param level      level of the message.
 * @param comp_conf  the caller's component; NULL for the library's own. A
 *                   line whose file does not match comp_conf->file_filter
 *                   is dropped.
 * @param format     printf format, followed by its arguments.
 */
void ucs_log_dispatch(const char *file, unsigned line, const char *function,
                      ucs_log_level_t level,
                      ucs_log_component_config_t *comp_conf,
                      const char *format, ...) UCS_F_PRINTF(6, 7);

/** True when a message of @a _level passes the threshold of component @a _comp. */
#define ucs_log_component_is_enabled(_level, _comp) \
    ucs_unlikely(((ucs_log_level_t)(_level)) <= \
                 ((const ucs_log_component_config_t*)(_comp))->log_level)

/** Log a message of @a _level for component @a _comp when its level allows. */
#define ucs_log_component(_level, _comp, _fmt, ...) \
    do { \
        if (ucs_log_component_is_enabled(_level, _comp)) { \
            ucs_log_dispatch(__FILE__, __LINE__, __func__, \
                             (ucs_log_level_t)(_level), (_comp), _fmt, \
                             ## __VA_ARGS__); \
        } \
    } while (0)

END_C_DECLS

#endif
