/**
 * @file ucs_signal.h
 * libucs_signal.so.0, kept for loaders that open it by name (docs/bindings.md).
 */
#ifndef UCS_SIGNAL_UCS_SIGNAL_H_
#define UCS_SIGNAL_UCS_SIGNAL_H_

#include <ucs/sys/compiler_def.h>

#include <signal.h>

BEGIN_C_DECLS

/**
 * Call the sigaction() that follows libucs_signal in the symbol search order
 * (libc's), bypassing any definition that precedes it.
 *
 * @return as sigaction(); -1 with errno ENOSYS when none can be found.
 */
int ucs_orig_sigaction(int signum, const struct sigaction *act, struct sigaction *oldact);

END_C_DECLS

#endif
