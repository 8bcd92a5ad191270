#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <ucs/debug/log.h>

#include <errno.h>
#include <execinfo.h>
#include <fnmatch.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

ucs_log_level_t ucs_log_level = UCS_LOG_LEVEL_WARN;

const char *ucs_log_level_names[] = {
    [UCS_LOG_LEVEL_FATAL]       = "fatal",
    [UCS_LOG_LEVEL_ERROR]       = "error",
    [UCS_LOG_LEVEL_WARN]        = "warn",
    [UCS_LOG_LEVEL_DIAG]        = "diag",
    [UCS_LOG_LEVEL_INFO]        = "info",
    [UCS_LOG_LEVEL_DEBUG]       = "debug",
    [UCS_LOG_LEVEL_TRACE]       = "trace",
    [UCS_LOG_LEVEL_TRACE_REQ]   = "req",
    [UCS_LOG_LEVEL_TRACE_DATA]  = "data",
    [UCS_LOG_LEVEL_TRACE_ASYNC] = "async",
    [UCS_LOG_LEVEL_TRACE_FUNC]  = "func",
    [UCS_LOG_LEVEL_TRACE_POLL]  = "poll",
    [UCS_LOG_LEVEL_LAST]        = NULL
};

/* One lock keeps lines of concurrent threads from interleaving and guards
 * the stream against a concurrent ucs_log_set_file(). */
static pthread_mutex_t ucs_log_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *ucs_log_stream         = NULL; /* NULL means stderr */
static int ucs_log_stream_owned     = 0;

static const char *ucs_log_basename(const char *path)
{
    const char *slash = strrchr(path, '/');
    return (slash == NULL) ? path : slash + 1;
}

static const char *ucs_log_level_tag(ucs_log_level_t level)
{
    if (level == UCS_LOG_LEVEL_PRINT) {
        return "print";
    }
    if ((unsigned)level < UCS_LOG_LEVEL_LAST) {
        return ucs_log_level_names[level];
    }
    return "?";
}

FILE *ucs_log_get_stream(void)
{
    return (ucs_log_stream == NULL) ? stderr : ucs_log_stream;
}

/* One line: time, pid:tid, file:line, the component (bindings), level, text. */
static void ucs_log_vprint(const char *file, unsigned line, const char *comp,
                           ucs_log_level_t level, const char *fmt, va_list ap)
{
    char message[1024];
    struct timeval tv;
    FILE *stream;

    vsnprintf(message, sizeof(message), fmt, ap);
    gettimeofday(&tv, NULL);

    pthread_mutex_lock(&ucs_log_lock);
    stream = ucs_log_get_stream();
    fprintf(stream, "[%lu.%06lu] [%d:%ld] %16s:%-4u %s%s%-5s %s\n",
            (unsigned long)tv.tv_sec, (unsigned long)tv.tv_usec, (int)getpid(),
            (long)syscall(SYS_gettid), ucs_log_basename(file), line, comp,
            (comp[0] == '\0') ? "" : " ", ucs_log_level_tag(level), message);
    fflush(stream);
    pthread_mutex_unlock(&ucs_log_lock);
}

void ucs_log_vdispatch(const char *file, unsigned line, const char *func,
                       ucs_log_level_t level, const char *fmt, va_list ap)
{
    ucs_log_vprint(file, line, "", level, fmt, ap);
    (void)func;
}

void ucs_log_dispatch(const char *file, unsigned line, const char *func,
                      ucs_log_level_t level,
                      ucs_log_component_config_t *comp_conf, const char *fmt,
                      ...)
{
    char comp[sizeof(comp_conf->name) + 1] = "";
    va_list ap;

    if (comp_conf != NULL) {
        if ((comp_conf->file_filter != NULL) &&
            (fnmatch(comp_conf->file_filter, ucs_log_basename(file), 0) != 0)) {
            return;
        }
        /* The caller's name need not be terminated within its 16 bytes. */
        memcpy(comp, comp_conf->name, sizeof(comp_conf->name));
        comp[sizeof(comp_conf->name)] = '\0';
    }

    va_start(ap, fmt);
    ucs_log_vprint(file, line, comp, level, fmt, ap);
    va_end(ap);
    (void)func;
}

void ucs_log_set_level(ucs_log_level_t level)
{
    __atomic_store_n(&ucs_log_level, level, __ATOMIC_RELAXED);
}

/* Expand %p (pid) and %h (host name) so that each rank of a job logs to its
 * own file when all of them share one UCX_LOG_FILE value. */
static void ucs_log_expand_path(const char *pattern, char *out, size_t max)
{
    char host[HOST_NAME_MAX + 1];
    size_t len = 0;
    const char *p;
    int n;

    for (p = pattern; (*p != '\0') && (len + 1 < max); ++p) {
        if ((p[0] == '%') && (p[1] == 'p')) {
            n = snprintf(out + len, max - len, "%d", (int)getpid());
        } else if ((p[0] == '%') && (p[1] == 'h')) {
            if (gethostname(host, sizeof(host)) != 0) {
                strcpy(host, "unknown");
            }
            host[sizeof(host) - 1] = '\0';
            n = snprintf(out + len, max - len, "%s", host);
        } else {
            out[len++] = *p;
            continue;
        }
        len += (n > 0) ? (size_t)n : 0;
        if (len >= max) {
            len = max - 1;
        }
        ++p;
    }
    out[len] = '\0';
}

ucs_status_t ucs_log_set_file(const char *path)
{
    char expanded[PATH_MAX];
    FILE *stream;
    int owned;

    if ((path == NULL) || (path[0] == '\0') || !strcmp(path, "stderr")) {
        stream = NULL;
        owned  = 0;
    } else if (!strcmp(path, "stdout")) {
        stream = stdout;
        owned  = 0;
    } else {
        ucs_log_expand_path(path, expanded, sizeof(expanded));
        stream = fopen(expanded, "a");
        if (stream == NULL) {
            fprintf(stderr, "UCX: cannot open log file '%s' (from '%s'): %s\n",
                    expanded, path, strerror(errno));
            return UCS_ERR_IO_ERROR;
        }
        owned = 1;
    }

    pthread_mutex_lock(&ucs_log_lock);
    if (ucs_log_stream_owned) {
        fclose(ucs_log_stream);
    }
    ucs_log_stream       = stream;
    ucs_log_stream_owned = owned;
    pthread_mutex_unlock(&ucs_log_lock);
    return UCS_OK;
}

void ucs_log_print_backtrace(FILE *stream)
{
    void *frames[64];
    char **symbols;
    int count, i;

    count   = backtrace(frames, ucs_static_array_size(frames));
    symbols = backtrace_symbols(frames, count);
    fprintf(stream, "==== backtrace (pid %d) ====\n", (int)getpid());
    for (i = 0; i < count; ++i) {
        fprintf(stream, "%3d  %s\n", i,
                (symbols != NULL) ? symbols[i] : "?");
    }
    fprintf(stream, "============================\n");
    free(symbols);
}

void ucs_fatal_error(const char *file, unsigned line, const char *func,
                     const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    ucs_log_vdispatch(file, line, func, UCS_LOG_LEVEL_FATAL, fmt, ap);
    va_end(ap);
    ucs_log_print_backtrace(ucs_log_get_stream());
    abort();
}
