#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * The dlopen() hook of reloc: after every successful dlopen() the active
 * patches are applied again, which reaches the objects just loaded (the
 * scan skips GOT entries that already hold the hook).
 *
 * Interposing dlopen() changes one thing the caller can observe: the
 * dynamic loader searches the DT_RPATH/DT_RUNPATH of the object that
 * called dlopen(), and that is now libucm. So for a bare file name, the
 * hook searches the caller's paths itself, in the loader's order:
 * DT_RPATH (when there is no DT_RUNPATH), LD_LIBRARY_PATH, DT_RUNPATH; then
 * it lets the loader try its cache and default directories.
 */

#include <ucm/reloc/reloc_int.h>

#include <ucs/debug/log.h>

#include <dlfcn.h>
#include <elf.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef void *(*ucm_reloc_dlopen_func_t)(const char *filename, int flags);

static void *ucm_reloc_dlopen_hook(const char *filename, int flags);

ucm_reloc_patch_t ucm_reloc_dlopen_patch = {
    .symbol = "dlopen",
    .value  = (void*)ucm_reloc_dlopen_hook
};

static pthread_mutex_t ucm_reloc_dlopen_lock = PTHREAD_MUTEX_INITIALIZER;
static int ucm_reloc_dlopen_installed;

static void *ucm_reloc_dlopen_orig(const char *filename, int flags)
{
    ucm_reloc_dlopen_func_t orig =
        (ucm_reloc_dlopen_func_t)ucm_reloc_dlopen_patch.prev_value;

    return orig(filename, flags);
}

/* DT_RPATH and DT_RUNPATH of a loaded object, or NULL. */
static void ucm_reloc_dlopen_paths(const struct link_map *lm,
                                   const char **rpath, const char **runpath)
{
    ElfW(Addr) rpath_off = 0, runpath_off = 0;
    const char *strtab   = NULL;
    const ElfW(Dyn) *dyn;
    int has_rpath = 0, has_runpath = 0;

    for (dyn = lm->l_ld; (dyn != NULL) && (dyn->d_tag != DT_NULL); ++dyn) {
        if (dyn->d_tag == DT_STRTAB) {
            strtab = ucm_reloc_dyn_addr(lm->l_addr, dyn->d_un.d_ptr);
        } else if (dyn->d_tag == DT_RPATH) {
            rpath_off = dyn->d_un.d_val;
            has_rpath = 1;
        } else if (dyn->d_tag == DT_RUNPATH) {
            runpath_off = dyn->d_un.d_val;
            has_runpath = 1;
        }
    }

    *rpath   = ((strtab != NULL) && has_rpath) ? (strtab + rpath_off) : NULL;
    *runpath = ((strtab != NULL) && has_runpath) ? (strtab + runpath_off) :
               NULL;
}

/* Directory of the object, for $ORIGIN. */
static int ucm_reloc_dlopen_origin(const struct link_map *lm, char *buf,
                                   size_t max)
{
    ssize_t len;
    char *slash;

    if ((lm->l_name != NULL) && (lm->l_name[0] != '\0')) {
        len = (ssize_t)strlen(lm->l_name);
        if ((size_t)len >= max) {
            return 0;
        }
        memcpy(buf, lm->l_name, len + 1);
    } else {
        /* The main program has no name in its link map. */
        len = readlink("/proc/self/exe", buf, max - 1);
        if (len <= 0) {
            return 0;
        }
        buf[len] = '\0';
    }

    slash = strrchr(buf, '/');
    if (slash == NULL) {
        return 0;
    }
    *slash = '\0';
    return 1;
}

/* Write @a dir with $ORIGIN expanded, then "/" and @a filename. */
static int ucm_reloc_dlopen_build_path(const struct link_map *lm,
                                       const char *dir, size_t dir_len,
                                       const char *filename, char *path,
                                       size_t max)
{
    char origin[PATH_MAX];
    size_t out = 0, skip, len;
    const char *p = dir, *end = dir + dir_len;

    while (p < end) {
        skip = 0;
        if (((size_t)(end - p) >= 7) && !strncmp(p, "$ORIGIN", 7)) {
            skip = 7;
        } else if (((size_t)(end - p) >= 9) && !strncmp(p, "${ORIGIN}", 9)) {
            skip = 9;
        } else if (*p == '$') {
            return 0; /* $LIB, $PLATFORM: left to the loader */
        }

        if (skip != 0) {
            if (!ucm_reloc_dlopen_origin(lm, origin, sizeof(origin))) {
                return 0;
            }
            len = strlen(origin);
            if (out + len >= max) {
                return 0;
            }
            memcpy(path + out, origin, len);
            out += len;
            p   += skip;
        } else {
            if (out + 1 >= max) {
                return 0;
            }
            path[out++] = *p++;
        }
    }

    if (out == 0) {
        path[out++] = '.'; /* an empty entry is the current directory */
    }

    len = strlen(filename);
    if (out + 1 + len >= max) {
        return 0;
    }
    path[out++] = '/';
    memcpy(path + out, filename, len + 1);
    return 1;
}

/* Try @a filename in each directory of the colon-separated @a dirs. */
static void *ucm_reloc_dlopen_try_dirs(const struct link_map *lm,
                                       const char *dirs, const char *filename,
                                       int flags)
{
    char path[PATH_MAX];
    const char *p, *end;
    void *handle;

    for (p = dirs; (p != NULL) && (*p != '\0');
         p = (*end == '\0') ? end : (end + 1)) {
        end = strchr(p, ':');
        if (end == NULL) {
            end = p + strlen(p);
        }

        if (!ucm_reloc_dlopen_build_path(lm, p, (size_t)(end - p), filename,
                                         path, sizeof(path)) ||
            (access(path, F_OK) != 0)) {
            continue;
        }

        /* The file may be of another architecture: then keep looking, as
         * the loader does. */
        handle = ucm_reloc_dlopen_orig(path, flags);
        if (handle != NULL) {
            return handle;
        }
    }
    return NULL;
}

static void *ucm_reloc_dlopen_search(const char *filename, int flags,
                                     const void *caller)
{
    const char *rpath, *runpath, *ld_path;
    struct link_map *lm = NULL;
    void *handle;
    Dl_info info;

    if ((filename == NULL) || (strchr(filename, '/') != NULL) ||
        !dladdr1(caller, &info, (void**)&lm, RTLD_DL_LINKMAP) ||
        (lm == NULL)) {
        return ucm_reloc_dlopen_orig(filename, flags);
    }

    ucm_reloc_dlopen_paths(lm, &rpath, &runpath);
    if ((rpath == NULL) && (runpath == NULL)) {
        return ucm_reloc_dlopen_orig(filename, flags);
    }

    /* Already loaded under that name: NOLOAD with the caller's flags has
     * the effect dlopen() would have (reference, RTLD_GLOBAL promotion). */
    handle = ucm_reloc_dlopen_orig(filename, flags | RTLD_NOLOAD);
    if (handle != NULL) {
        return handle;
    }

    ld_path = secure_getenv("LD_LIBRARY_PATH");
    if (runpath == NULL) {
        handle = ucm_reloc_dlopen_try_dirs(lm, rpath, filename, flags);
    } else {
        handle = ucm_reloc_dlopen_try_dirs(lm, ld_path, filename, flags);
        if (handle == NULL) {
            handle = ucm_reloc_dlopen_try_dirs(lm, runpath, filename, flags);
        }
    }

    return (handle != NULL) ? handle : ucm_reloc_dlopen_orig(filename, flags);
}

static void *ucm_reloc_dlopen_hook(const char *filename, int flags)
{
    void *handle;

    handle = ucm_reloc_dlopen_search(filename, flags,
                                     __builtin_return_address(0));
    if (handle != NULL) {
        ucm_reloc_apply_all();
    }
    return handle;
}

ucs_status_t ucm_reloc_dlopen_install(void)
{
    ucs_status_t status = UCS_OK;

    pthread_mutex_lock(&ucm_reloc_dlopen_lock);
    if (!ucm_reloc_dlopen_installed) {
        status = ucm_reloc_modify_nodlopen(&ucm_reloc_dlopen_patch);
        ucm_reloc_dlopen_installed = (status == UCS_OK);
    }
    pthread_mutex_unlock(&ucm_reloc_dlopen_lock);
    return status;
}

void ucm_reloc_dlopen_remove(void)
{
    pthread_mutex_lock(&ucm_reloc_dlopen_lock);
    if (ucm_reloc_dlopen_installed && (ucm_reloc_active_count() == 0)) {
        ucm_reloc_restore(&ucm_reloc_dlopen_patch);
        ucm_reloc_dlopen_installed = 0;
    }
    pthread_mutex_unlock(&ucm_reloc_dlopen_lock);
}
