#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <ucs/sys/module.h>
#include <ucs/sys/sys.h>
#include <ucs/debug/log.h>
#include <ucs/config/global_opts.h>

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define UCS_MODULE_MAX      64
#define UCS_MODULE_NAME_MAX 64

typedef struct {
    char         framework[UCS_MODULE_NAME_MAX];
    char         name[UCS_MODULE_NAME_MAX];
    void         *handle;
    ucs_status_t status;
} ucs_module_entry_t;

/* Recursive: dlopen() runs constructors of the module and of libraries it
 * pulls in (libucm loads its own modules from its constructor), which call
 * back into the loader on this thread while the lock is held. */
static pthread_mutex_t ucs_module_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static ucs_module_entry_t ucs_modules[UCS_MODULE_MAX];
static unsigned ucs_module_count;

static const char *ucs_module_env_dirs(void)
{
    const char *dirs = ucs_global_opts.module_dir;
    return ((dirs == NULL) || (dirs[0] == '\0')) ? NULL : dirs;
}

int ucs_module_in_build_tree(void)
{
    char dir[PATH_MAX], build_dir[PATH_MAX];

    if (ucs_sys_get_object_dir((const void*)ucs_module_load, dir,
                               sizeof(dir)) != UCS_OK) {
        return 0;
    }
    /* Both sides resolved: configure records the path it was run from,
     * which may go through a symbolic link. */
    if (realpath(UCX_BUILD_DIR "/src/ucs/.libs", build_dir) == NULL) {
        return 0;
    }
    return !strcmp(dir, build_dir);
}

/* Invoke @a cb for each directory that may hold modules of the framework,
 * in search order; stops early when cb returns non-zero. */
static int ucs_module_foreach_dir(const char *framework, const char *name,
                                  int (*cb)(const char *dir, void *arg),
                                  void *arg)
{
    char dir[PATH_MAX];
    const char *dirs, *p, *end;
    DIR *d;
    struct dirent *ent;
    size_t len;
    int ret;

    dirs = ucs_module_env_dirs();
    for (p = dirs; (p != NULL) && (*p != '\0'); p = (*end == '\0') ? end : end + 1) {
        end = strchr(p, ':');
        if (end == NULL) {
            end = p + strlen(p);
        }
        len = (size_t)(end - p);
        if ((len == 0) || (len >= sizeof(dir))) {
            continue;
        }
        memcpy(dir, p, len);
        dir[len] = '\0';
        if ((ret = cb(dir, arg)) != 0) {
            return ret;
        }
    }

    if (ucs_module_in_build_tree()) {
        if (name != NULL) {
            snprintf(dir, sizeof(dir), "%s/src/%s/%s/.libs", UCX_BUILD_DIR,
                     framework, name);
            if ((ret = cb(dir, arg)) != 0) {
                return ret;
            }
        } else {
            snprintf(dir, sizeof(dir), "%s/src/%s", UCX_BUILD_DIR, framework);
            d = opendir(dir);
            while ((d != NULL) && ((ent = readdir(d)) != NULL)) {
                if ((ent->d_name[0] == '.') || (ent->d_type != DT_DIR) ||
                    (strlen(ent->d_name) > UCS_MODULE_NAME_MAX)) {
                    continue;
                }
                snprintf(dir, sizeof(dir), "%s/src/%s/%s/.libs", UCX_BUILD_DIR,
                         framework, ent->d_name);
                if ((ret = cb(dir, arg)) != 0) {
                    closedir(d);
                    return ret;
                }
            }
            if (d != NULL) {
                closedir(d);
            }
        }
    }

    if (ucs_sys_get_object_dir((const void*)ucs_module_load, dir,
                               sizeof(dir) - sizeof("/" UCX_MODULE_SUBDIR)) == UCS_OK) {
        strcat(dir, "/" UCX_MODULE_SUBDIR);
        return cb(dir, arg);
    }
    return 0;
}

static ucs_module_entry_t *ucs_module_find(const char *framework, const char *name)
{
    unsigned i;

    for (i = 0; i < ucs_module_count; ++i) {
        if (!strcmp(ucs_modules[i].framework, framework) &&
            !strcmp(ucs_modules[i].name, name)) {
            return &ucs_modules[i];
        }
    }
    return NULL;
}

typedef struct {
    const char         *file;
    ucs_module_entry_t *entry;
} ucs_module_open_ctx_t;

static int ucs_module_try_open(const char *dir, void *arg)
{
    ucs_module_open_ctx_t *ctx = arg;
    char path[PATH_MAX];
    void *handle;

    snprintf(path, sizeof(path), "%s/%s", dir, ctx->file);
    if (access(path, R_OK) != 0) {
        return 0;
    }

    /* RTLD_LOCAL: a module's symbols stay private; it reaches the core
     * libraries through its own DT_NEEDED entries. */
    handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        ucs_debug("module %s found but not loaded: %s", path, dlerror());
        ctx->entry->status = UCS_ERR_IO_ERROR;
        return 1;
    }

    ucs_debug("loaded module %s", path);
    ctx->entry->handle = handle;
    ctx->entry->status = UCS_OK;
    return 1;
}

ucs_status_t ucs_module_load(const char *framework, const char *name,
                             void **handle_p)
{
    char file[2 * UCS_MODULE_NAME_MAX + 16];
    ucs_module_open_ctx_t ctx;
    ucs_module_entry_t *entry;
    ucs_status_t status;

    if ((strlen(framework) >= UCS_MODULE_NAME_MAX) ||
        (strlen(name) >= UCS_MODULE_NAME_MAX) || (strchr(name, '/') != NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }

    pthread_mutex_lock(&ucs_module_lock);
    entry = ucs_module_find(framework, name);
    if (entry == NULL) {
        if (ucs_module_count == UCS_MODULE_MAX) {
            pthread_mutex_unlock(&ucs_module_lock);
            ucs_error("too many modules (%d) loaded", UCS_MODULE_MAX);
            return UCS_ERR_EXCEEDS_LIMIT;
        }
        entry = &ucs_modules[ucs_module_count++];
        snprintf(entry->framework, sizeof(entry->framework), "%s", framework);
        snprintf(entry->name, sizeof(entry->name), "%s", name);
        entry->handle = NULL;
        entry->status = UCS_ERR_NO_ELEM;

        snprintf(file, sizeof(file), "lib%s_%s.so", framework, name);
        ctx.file  = file;
        ctx.entry = entry;
        ucs_module_foreach_dir(framework, name, ucs_module_try_open, &ctx);
        if (entry->status == UCS_ERR_NO_ELEM) {
            ucs_debug("module %s not found on the search path", file);
        }
    }

    status = entry->status;
    if ((handle_p != NULL) && (status == UCS_OK)) {
        *handle_p = entry->handle;
    }
    pthread_mutex_unlock(&ucs_module_lock);
    return status;
}

typedef struct {
    const char *framework;
    unsigned   loaded;
} ucs_module_scan_ctx_t;

static int ucs_module_scan_dir(const char *dir, void *arg)
{
    ucs_module_scan_ctx_t *ctx = arg;
    char prefix[UCS_MODULE_NAME_MAX + 8];
    char name[UCS_MODULE_NAME_MAX];
    struct dirent *ent;
    size_t plen, nlen;
    DIR *d;

    d = opendir(dir);
    if (d == NULL) {
        return 0;
    }

    plen = (size_t)snprintf(prefix, sizeof(prefix), "lib%s_", ctx->framework);
    while ((ent = readdir(d)) != NULL) {
        nlen = strlen(ent->d_name);
        /* Only the plain ".so" name: versioned copies are the same module. */
        if ((nlen <= plen + 3) || strncmp(ent->d_name, prefix, plen) ||
            strcmp(ent->d_name + nlen - 3, ".so") ||
            (nlen - plen - 3 >= sizeof(name))) {
            continue;
        }
        memcpy(name, ent->d_name + plen, nlen - plen - 3);
        name[nlen - plen - 3] = '\0';
        if (ucs_module_load(ctx->framework, name, NULL) == UCS_OK) {
            ++ctx->loaded;
        }
    }
    closedir(d);
    return 0;
}

unsigned ucs_module_load_all(const char *framework)
{
    ucs_module_scan_ctx_t ctx = {framework, 0};

    unsigned i, loaded = 0;

    ucs_module_foreach_dir(framework, NULL, ucs_module_scan_dir, &ctx);

    /* Count distinct modules: the same one may sit in several directories. */
    pthread_mutex_lock(&ucs_module_lock);
    for (i = 0; i < ucs_module_count; ++i) {
        loaded += !strcmp(ucs_modules[i].framework, framework) &&
                  (ucs_modules[i].status == UCS_OK);
    }
    pthread_mutex_unlock(&ucs_module_lock);
    return loaded;
}

static int ucs_module_print_dir(const char *dir, void *arg)
{
    fprintf((FILE*)arg, "#   %s\n", dir);
    return 0;
}

void ucs_module_print_search_path(FILE *stream, const char *framework)
{
    ucs_module_foreach_dir(framework, NULL, ucs_module_print_dir, stream);
}
