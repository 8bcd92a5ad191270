#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <ucs/sys/init.h>
#include <ucs/config/global_opts.h>
#include <ucs/debug/log.h>

static ucs_status_t ucs_global_init_status = UCS_OK;

ucs_status_t ucs_init_status(void)
{
    return ucs_global_init_status;
}

static void UCS_F_CTOR ucs_init(void)
{
    ucs_global_init_status = ucs_global_opts_init();
    ucs_debug("libucs " PACKAGE_VERSION " loaded, init status: %s",
              ucs_status_string(ucs_global_init_status));
}

static void UCS_F_DTOR ucs_cleanup(void)
{
    ucs_global_opts_cleanup();
}
