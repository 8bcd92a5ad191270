#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * Architecture-independent part of bistro: the list of patched functions,
 * the lock, and making the patched code writable for the moment of the
 * store. The architecture decides what to write (bistro_<arch>.c).
 */

#include <ucm/bistro/bistro_int.h>

#include <ucs/debug/log.h>
#include <ucs/sys/sys.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static pthread_mutex_t ucm_bistro_lock = PTHREAD_MUTEX_INITIALIZER;
static UCS_LIST_HEAD(ucm_bistro_points);
static unsigned ucm_bistro_strategies = (unsigned)UCS_MASK(UCM_BISTRO_STRATEGY_LAST);

#if !defined(__x86_64__)
/* Another architecture adds bistro_<arch>.c with these two functions. */
ucs_status_t ucm_bistro_arch_prepare(ucm_bistro_restore_point_t *rp,
                                     unsigned strategies)
{
    ucs_debug("bistro: binary patching is not implemented on this "
              "architecture");
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t ucm_bistro_arch_write(ucm_bistro_restore_point_t *rp,
                                   const uint8_t *expected,
                                   const uint8_t *bytes)
{
    return UCS_ERR_UNSUPPORTED;
}
#endif

static ucm_bistro_restore_point_t *ucm_bistro_find(const void *func)
{
    ucm_bistro_restore_point_t *rp;

    ucs_list_for_each(rp, &ucm_bistro_points, list) {
        if (rp->func == func) {
            return rp;
        }
    }
    return NULL;
}

/*
 * Replace the patch bytes of @a rp, making the pages writable for the
 * store. The pages keep their execute permission throughout, since other
 * threads may be running in them, and get their original protection back
 * afterwards.
 */
static ucs_status_t ucm_bistro_write(ucm_bistro_restore_point_t *rp,
                                     const uint8_t *expected,
                                     const uint8_t *bytes)
{
    size_t page_size = ucs_get_page_size();
    uintptr_t first  = (uintptr_t)rp->func & ~(page_size - 1);
    uintptr_t last   = ((uintptr_t)rp->func + rp->patch_len - 1) &
                       ~(page_size - 1);
    int prot[2], i, count = (first == last) ? 1 : 2;
    ucs_status_t status;

    for (i = 0; i < count; ++i) {
        prot[i] = ucm_bistro_mapping_prot((void*)(first + (i * page_size)));
        if (prot[i] < 0) {
            ucs_debug("bistro: %s: no mapping at %p", rp->name, rp->func);
            return UCS_ERR_IO_ERROR;
        }
    }

    for (i = 0; i < count; ++i) {
        if (mprotect((void*)(first + (i * page_size)), page_size,
                     prot[i] | PROT_WRITE) != 0) {
            ucs_debug("bistro: %s: cannot make %p writable: %m", rp->name,
                      rp->func);
            status = UCS_ERR_IO_ERROR;
            goto out_restore;
        }
    }

    status = ucm_bistro_arch_write(rp, expected, bytes);
    if (status == UCS_OK) {
        __builtin___clear_cache((char*)rp->func,
                                (char*)rp->func + rp->patch_len);
    }

out_restore:
    while (i-- > 0) {
        mprotect((void*)(first + (i * page_size)), page_size, prot[i]);
    }
    return status;
}

ucs_status_t ucm_bistro_patch(void *func, void *hook, const char *name,
                              void **orig_func_p,
                              ucm_bistro_restore_point_t **rp_p)
{
    ucm_bistro_restore_point_t *rp;
    ucs_status_t status;
    int created = 0;

    pthread_mutex_lock(&ucm_bistro_lock);

    rp = ucm_bistro_find(func);
    if ((rp != NULL) && rp->active) {
        ucs_debug("bistro: %s at %p is already patched", name, func);
        status = UCS_ERR_ALREADY_EXISTS;
        goto out;
    }

    if (rp == NULL) {
        rp = calloc(1, sizeof(*rp));
        if (rp == NULL) {
            status = UCS_ERR_NO_MEMORY;
            goto out;
        }

        rp->func = func;
        snprintf(rp->name, sizeof(rp->name), "%s", name);
        status = ucm_bistro_arch_prepare(rp, ucm_bistro_strategies);
        if (status != UCS_OK) {
            free(rp);
            goto out;
        }
        created = 1;
    }

    /* The hook and the way back must be in place before any thread can
     * take the jump. */
    status = ucm_bistro_code_write_ptr(rp->hook_slot, hook);
    if (status != UCS_OK) {
        goto out_free;
    }
    /* Atomic: a thread that already runs the hook (an earlier patch of the
     * same function) may read the pointer while it is stored again. */
    __atomic_store_n(orig_func_p, rp->trampoline, __ATOMIC_RELEASE);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);

    status = ucm_bistro_write(rp, rp->orig, rp->patch);
    if (status != UCS_OK) {
        ucs_debug("bistro: %s at %p: writing the patch failed: %s", name,
                  func, ucs_status_string(status));
        goto out_free;
    }

    rp->active = 1;
    if (created) {
        ucs_list_add_tail(&ucm_bistro_points, &rp->list);
    }
    if (rp_p != NULL) {
        *rp_p = rp;
    }
    ucs_debug("bistro: patched %s at %p -> %p (original via %p)", name, func,
              hook, rp->trampoline);
    goto out;

out_free:
    /* The generated code stays (it is never freed); the record may go. */
    if (created) {
        free(rp);
    }
out:
    pthread_mutex_unlock(&ucm_bistro_lock);
    return status;
}

ucs_status_t ucm_bistro_restore(ucm_bistro_restore_point_t *rp)
{
    ucs_status_t status;

    pthread_mutex_lock(&ucm_bistro_lock);
    if (!rp->active) {
        status = UCS_ERR_NO_ELEM;
    } else {
        status = ucm_bistro_write(rp, rp->patch, rp->orig);
        if (status == UCS_OK) {
            rp->active = 0;
            ucs_debug("bistro: restored %s at %p", rp->name, rp->func);
        } else {
            ucs_debug("bistro: cannot restore %s at %p: %s", rp->name,
                      rp->func, ucs_status_string(status));
        }
    }
    pthread_mutex_unlock(&ucm_bistro_lock);

    return status;
}

int ucm_bistro_is_patched(const ucm_bistro_restore_point_t *rp)
{
    return rp->active && !memcmp(rp->func, rp->patch, rp->patch_len);
}

ucm_bistro_strategy_t
ucm_bistro_restore_point_strategy(const ucm_bistro_restore_point_t *rp)
{
    return rp->strategy;
}

void *ucm_bistro_restore_point_func(const ucm_bistro_restore_point_t *rp)
{
    return rp->func;
}

void ucm_bistro_set_strategies(unsigned mask)
{
    pthread_mutex_lock(&ucm_bistro_lock);
    ucm_bistro_strategies = mask & UCS_MASK(UCM_BISTRO_STRATEGY_LAST);
    pthread_mutex_unlock(&ucm_bistro_lock);
}
