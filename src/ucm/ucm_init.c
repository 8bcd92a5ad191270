#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucm_init.h"

#include <ucs/sys/module.h>
#include <ucs/debug/log.h>

static unsigned ucm_module_count;

unsigned ucm_loaded_module_count(void)
{
    return ucm_module_count;
}

static void UCS_F_CTOR ucm_init(void)
{
    ucm_module_count = ucs_module_load_all("ucm");
    ucs_debug("libucm: %u hook module(s) loaded", ucm_module_count);
}
