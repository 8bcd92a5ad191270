/*
 * libucs_signal: a library that loaders of UCX list (RAPIDS' libucx opens
 * libucs, libucs_signal, libuct and libucp in that order). In upstream UCX it
 * keeps an application from replacing the error-signal handlers that libucs
 * installs. This library installs no such handlers (errors are returned as
 * statuses; a crash is left to the application's or the OS's handling), so
 * there is nothing to protect: it interposes nothing and exports only
 * ucs_orig_sigaction(), the caller's way to reach libc's sigaction() past
 * any interposer. See docs/bindings.md.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <ucs/signal/ucs_signal.h>

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>

typedef int (*ucs_signal_sigaction_func_t)(int, const struct sigaction *,
                                           struct sigaction *);

int ucs_orig_sigaction(int signum, const struct sigaction *act, struct sigaction *oldact)
{
    static ucs_signal_sigaction_func_t libc_sigaction = NULL;
    ucs_signal_sigaction_func_t func;

    func = __atomic_load_n(&libc_sigaction, __ATOMIC_ACQUIRE);
    if (func == NULL) {
        /* The next definition after this library: libc's, or that of an
         * interposer loaded before us, which is what a caller asking for
         * "the original" wants. */
        func = (ucs_signal_sigaction_func_t)dlsym(RTLD_NEXT, "sigaction");
        if (func == NULL) {
            errno = ENOSYS;
            return -1;
        }
        __atomic_store_n(&libc_sigaction, func, __ATOMIC_RELEASE);
    }
    return func(signum, act, oldact);
}
