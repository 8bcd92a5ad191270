#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * Loaded by the reloc tests only after a patch is in place: its GOT must
 * be patched by the dlopen() hook.
 */
#include <sys/types.h>
#include <unistd.h>

int ucm_test_late_call_getppid(void);

int ucm_test_late_call_getppid(void)
{
    return (int)getppid();
}
