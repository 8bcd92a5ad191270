#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <ucp/api/ucp.h>

void ucp_get_version(unsigned *major_version, unsigned *minor_version,
                     unsigned *release_number)
{
    *major_version  = UCX_MAJOR_VERSION;
    *minor_version  = UCX_MINOR_VERSION;
    *release_number = UCX_PATCH_VERSION;
}

const char *ucp_get_version_string(void)
{
    return PACKAGE_VERSION;
}
