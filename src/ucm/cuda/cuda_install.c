#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * Installing the CUDA hooks.
 *
 * The module registers itself as the producer of memory-type events when
 * it is loaded; the hooks go in when the first handler for those events is
 * set (a process that never asks pays nothing). Only functions that the
 * loaded driver exports are hooked: the driver of an older CUDA lacks some.
 * Installation is all or nothing: if one exported function cannot be
 * hooked, a free could go unseen and a later lookup return a stale type,
 * so every hook is removed again and the failure reported once at warning
 * level; memory types then come from driver queries.
 */

#include <ucm/cuda/cudamem.h>
#include <ucm/event/event.h>
#include <ucm/ucm_config.h>
#include <ucm/ucm_memtype_provider.h>

#include <ucs/debug/log.h>

#include <dlfcn.h>

/* Name the driver is loaded under (the module links it). */
#define UCM_CUDA_DRIVER_NAME  "libcuda.so.1"

static int ucm_cuda_installed;
static ucm_cuda_hook_mode_t ucm_cuda_installed_mode;
static ucs_status_t ucm_cuda_install_status = UCS_OK; /* of a failed try */

static const char *ucm_cuda_mode_name(ucm_cuda_hook_mode_t mode)
{
    return ucm_cuda_hook_mode_names[mode];
}

static ucs_status_t ucm_cuda_hook_one(ucm_cuda_hook_t *hook,
                                      ucm_cuda_hook_mode_t mode)
{
    ucs_status_t status;

    if (mode == UCM_CUDA_HOOK_MODE_BISTRO) {
        /* bistro writes the trampoline address to orig_p before the patch
         * goes live. */
        return ucm_bistro_patch(hook->target, hook->hook, hook->symbol,
                                hook->orig_p, &hook->rp);
    }

    /* Hooks of other threads may read it (see UCM_CUDA_CALL_ORIG). */
    __atomic_store_n(hook->orig_p, hook->target, __ATOMIC_RELEASE);
    hook->reloc.symbol      = hook->symbol;
    hook->reloc.value       = hook->hook;
    hook->reloc.prev_value  = hook->target;
    status                  = ucm_reloc_modify(&hook->reloc);
    return status;
}

static void ucm_cuda_unhook_one(ucm_cuda_hook_t *hook,
                                ucm_cuda_hook_mode_t mode)
{
    ucs_status_t status;

    if (mode == UCM_CUDA_HOOK_MODE_BISTRO) {
        status = ucm_bistro_restore(hook->rp);
    } else {
        status = ucm_reloc_restore(&hook->reloc);
    }

    if (status != UCS_OK) {
        ucs_debug("cuda hooks: cannot remove the hook of %s: %s",
                  hook->symbol, ucs_status_string(status));
    }
    hook->installed = 0;
}

static void ucm_cuda_uninstall(void)
{
    ucm_cuda_hook_t *hook;

    for (hook = ucm_cuda_hooks; hook->symbol != NULL; ++hook) {
        if (hook->installed) {
            ucm_cuda_unhook_one(hook, ucm_cuda_installed_mode);
        }
    }

    if (ucm_cuda_installed) {
        ucs_debug("cuda hooks: removed (%s mode)",
                  ucm_cuda_mode_name(ucm_cuda_installed_mode));
    }

    /* Without hooks, the tables would go stale. */
    ucm_cuda_track_cleanup();
    __atomic_store_n(&ucm_cuda_installed, 0, __ATOMIC_RELEASE);
    ucm_cuda_install_status = UCS_OK;
}

/* An earlier hook may already cover the same code: some drivers export one
 * function under two names. */
static int ucm_cuda_target_hooked(const ucm_cuda_hook_t *hook)
{
    const ucm_cuda_hook_t *other;

    for (other = ucm_cuda_hooks; other != hook; ++other) {
        if (other->installed && (other->target == hook->target)) {
            return 1;
        }
    }
    return 0;
}

static ucs_status_t ucm_cuda_install_mode(ucm_cuda_hook_mode_t mode)
{
    unsigned count = 0;
    ucm_cuda_hook_t *hook;
    ucs_status_t status;
    void *driver;

    driver = dlopen(UCM_CUDA_DRIVER_NAME, RTLD_LAZY | RTLD_NOLOAD);
    if (driver == NULL) {
        ucs_warn("CUDA memory hooks not installed: %s is not loaded (%s); "
                 "memory types will come from driver queries",
                 UCM_CUDA_DRIVER_NAME, dlerror());
        return UCS_ERR_UNSUPPORTED;
    }

    __atomic_store_n(&ucm_cuda_installed_mode, mode, __ATOMIC_RELAXED);
    for (hook = ucm_cuda_hooks; hook->symbol != NULL; ++hook) {
        hook->target = dlsym(driver, hook->symbol);
        if (hook->target == NULL) {
            ucs_debug("cuda hooks: the driver does not export %s",
                      hook->symbol);
            continue;
        }

        if ((mode == UCM_CUDA_HOOK_MODE_BISTRO) &&
            ucm_cuda_target_hooked(hook)) {
            ucs_debug("cuda hooks: %s is the same code as an earlier hook",
                      hook->symbol);
            continue;
        }

        status = ucm_cuda_hook_one(hook, mode);
        if (status != UCS_OK) {
            ucs_warn_once("CUDA memory hooks not installed (%s mode): "
                          "hooking %s failed: %s; memory types will come "
                          "from driver queries (set UCX_LOG_LEVEL=debug "
                          "for details)", ucm_cuda_mode_name(mode),
                          hook->symbol, ucs_status_string(status));
            dlclose(driver);
            ucm_cuda_uninstall();
            return status;
        }

        hook->installed = 1;
        ++count;
    }

    /* The module links the driver, so it stays loaded without this
     * reference. */
    dlclose(driver);

    ucs_debug("cuda hooks: %u driver functions hooked in %s mode", count,
              ucm_cuda_mode_name(mode));
    __atomic_store_n(&ucm_cuda_installed, 1, __ATOMIC_RELEASE);
    return UCS_OK;
}

static ucs_status_t ucm_cuda_install(int events)
{
    ucm_config_t config;
    ucs_status_t status;

    if (ucm_cuda_installed) {
        return UCS_OK;
    }

    if (ucm_cuda_install_status != UCS_OK) {
        /* Failed before; said so then. */
        return ucm_cuda_install_status;
    }

    status = ucm_config_read(&config);
    if (status != UCS_OK) {
        return status; /* the engine named the bad variable */
    }

    if (config.cuda_hook_mode == UCM_CUDA_HOOK_MODE_NONE) {
        ucs_debug("cuda hooks: disabled by UCX_MEM_CUDA_HOOK_MODE=none");
        status = UCS_ERR_UNSUPPORTED;
    } else {
        status = ucm_cuda_install_mode(
                (ucm_cuda_hook_mode_t)config.cuda_hook_mode);
    }

    ucm_cuda_install_status = status;
    return status;
}

static ucs_status_t ucm_cuda_test(int events)
{
    ucm_cuda_hook_t *hook;

    if (!ucm_cuda_installed) {
        return UCS_ERR_UNSUPPORTED;
    }

    for (hook = ucm_cuda_hooks; hook->symbol != NULL; ++hook) {
        if (!hook->installed) {
            continue;
        }

        if ((ucm_cuda_installed_mode == UCM_CUDA_HOOK_MODE_BISTRO) ?
            !ucm_bistro_is_patched(hook->rp) :
            (ucm_reloc_count_unpatched(&hook->reloc) != 0)) {
            ucs_debug("cuda hooks: the hook of %s was removed", hook->symbol);
            return UCS_ERR_NO_ELEM;
        }
    }

    return UCS_OK;
}

/* Read without the install lock by the memory-type glue, hence atomic. */
static ucm_cuda_hook_mode_t ucm_cuda_hook_mode(void)
{
    if (!__atomic_load_n(&ucm_cuda_installed, __ATOMIC_ACQUIRE)) {
        return UCM_CUDA_HOOK_MODE_NONE;
    }
    return __atomic_load_n(&ucm_cuda_installed_mode, __ATOMIC_RELAXED);
}

static ucm_event_installer_t ucm_cuda_installer = {
    .name            = "cuda",
    .events          = UCM_EVENT_MEM_TYPE_ALLOC | UCM_EVENT_MEM_TYPE_FREE,
    .install         = ucm_cuda_install,
    .uninstall       = ucm_cuda_uninstall,
    .test            = ucm_cuda_test,
    .report_existing = ucm_cuda_track_report_existing
};

/* The module is linked with -z nodelete: its hooks and trampolines may be
 * running in other threads at any time, so it never goes away and needs
 * no destructor. */
static const ucm_memtype_provider_t ucm_cuda_memtype_provider = {
    .name          = "cuda",
    .resolve       = ucm_cuda_resolve,
    .hook_mode     = ucm_cuda_hook_mode,
    .alloc_is_live = ucm_cuda_track_is_live
};

static void UCS_F_CTOR ucm_cuda_module_init(void)
{
    ucm_event_installer_add(&ucm_cuda_installer);
    ucm_memtype_set_provider(&ucm_cuda_memtype_provider);
}
