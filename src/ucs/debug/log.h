/**
 * @file log.h
 * Logging for every layer. A message carries its level, the process id and
 * the source location. The level check is a single load and compare so that
 * disabled debug/trace calls cost nothing on fast paths.
 *
 * The level comes from UCX_LOG_LEVEL and the destination from UCX_LOG_FILE
 * (see ucs_global_opts); both may be changed at run time. All functions are
 * thread safe.
 */
#ifndef UCS_DEBUG_LOG_H_
#define UCS_DEBUG_LOG_H_

#include <ucs/config/types.h>
#include <ucs/debug/log_def.h>
#include <ucs/type/status.h>

#include <stdarg.h>
#include <stdio.h>

BEGIN_C_DECLS

/**
 * va_list flavour of ucs_log_dispatch(), for the library's own messages
 * (no component).
 */
void ucs_log_vdispatch(const char *file, unsigned line, const char *func,
                       ucs_log_level_t level, const char *fmt, va_list ap);

/** Set the threshold. Messages above it are dropped. */
void ucs_log_set_level(ucs_log_level_t level);

/**
 * Send messages to @a path instead of stderr. "stdout" and "stderr" are
 * accepted as names; in a path, "%p" expands to the process id and "%h" to
 * the host name, so every process of a job gets its own file.
 *
 * @return UCS_OK, or UCS_ERR_IO_ERROR (with an error printed on stderr
 *         naming the path and errno) when the file cannot be opened.
 */
ucs_status_t ucs_log_set_file(const char *path);

/** Stream messages currently go to. */
FILE *ucs_log_get_stream(void);

/**
 * Print a message, a backtrace (where available) and abort. Used for broken
 * internal invariants only; errors caused by the user or a peer are returned
 * as a status instead.
 */
void ucs_fatal_error(const char *file, unsigned line, const char *func,
                     const char *fmt, ...) UCS_F_PRINTF(4, 5) UCS_F_NORETURN;

/** Write the current call stack to @a stream (one frame per line). */
void ucs_log_print_backtrace(FILE *stream);

/** True when a message of @a _level would be printed. */
#define ucs_log_is_enabled(_level) \
    ucs_unlikely(((ucs_log_level_t)(_level)) <= ucs_log_level)

#define ucs_log(_level, _fmt, ...) \
    do { \
        if (ucs_log_is_enabled(_level)) { \
            ucs_log_dispatch(__FILE__, __LINE__, __func__, (_level), NULL, \
                             _fmt, ## __VA_ARGS__); \
        } \
    } while (0)

#define ucs_error(_fmt, ...)       ucs_log(UCS_LOG_LEVEL_ERROR, _fmt, ## __VA_ARGS__)
#define ucs_warn(_fmt, ...)        ucs_log(UCS_LOG_LEVEL_WARN, _fmt, ## __VA_ARGS__)
#define ucs_diag(_fmt, ...)        ucs_log(UCS_LOG_LEVEL_DIAG, _fmt, ## __VA_ARGS__)
#define ucs_info(_fmt, ...)        ucs_log(UCS_LOG_LEVEL_INFO, _fmt, ## __VA_ARGS__)
#define ucs_debug(_fmt, ...)       ucs_log(UCS_LOG_LEVEL_DEBUG, _fmt, ## __VA_ARGS__)
#define ucs_trace(_fmt, ...)       ucs_log(UCS_LOG_LEVEL_TRACE, _fmt, ## __VA_ARGS__)
#define ucs_trace_req(_fmt, ...)   ucs_log(UCS_LOG_LEVEL_TRACE_REQ, _fmt, ## __VA_ARGS__)
#define ucs_trace_data(_fmt, ...)  ucs_log(UCS_LOG_LEVEL_TRACE_DATA, _fmt, ## __VA_ARGS__)
#define ucs_trace_async(_fmt, ...) ucs_log(UCS_LOG_LEVEL_TRACE_ASYNC, _fmt, ## __VA_ARGS__)
#define ucs_trace_func(_fmt, ...)  ucs_log(UCS_LOG_LEVEL_TRACE_FUNC, _fmt, ## __VA_ARGS__)
#define ucs_trace_poll(_fmt, ...)  ucs_log(UCS_LOG_LEVEL_TRACE_POLL, _fmt, ## __VA_ARGS__)

/** Print a warning only the first time this call site is reached. */
#define ucs_warn_once(_fmt, ...) \
    do { \
        static int _warned = 0; \
        if (!__atomic_exchange_n(&_warned, 1, __ATOMIC_RELAXED)) { \
            ucs_warn(_fmt, ## __VA_ARGS__); \
        } \
    } while (0)

#define ucs_fatal(_fmt, ...) \
    ucs_fatal_error(__FILE__, __LINE__, __func__, "Fatal: " _fmt, ## __VA_ARGS__)

/* Assertions guard internal invariants; compiled in with --enable-debug. */
#ifdef UCS_ENABLE_ASSERT
#  define ucs_assert(_cond) \
    do { \
        if (ucs_unlikely(!(_cond))) { \
            ucs_fatal_error(__FILE__, __LINE__, __func__, \
                            "Assertion `%s' failed", #_cond); \
        } \
    } while (0)
#else
#  define ucs_assert(_cond) do { (void)sizeof(_cond); } while (0)
#endif

/** An assertion that is checked in every build (cheap, slow-path only). */
#define ucs_assert_always(_cond) \
    do { \
        if (ucs_unlikely(!(_cond))) { \
            ucs_fatal_error(__FILE__, __LINE__, __func__, \
                            "Assertion `%s' failed", #_cond); \
        } \
    } while (0)

END_C_DECLS

#endif
