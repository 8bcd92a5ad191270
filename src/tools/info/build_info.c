#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucx_info.h"

#include <ucp/api/ucp.h>
#include <ucs/sys/module.h>
#include <ucs/sys/sys.h>

#include <limits.h>

void ucx_info_print_version(FILE *stream)
{
    char dir[PATH_MAX];

    fprintf(stream, "# Library version: %s\n", ucp_get_version_string());
    if (ucs_sys_get_object_dir((const void*)ucp_get_version_string, dir,
                               sizeof(dir)) == UCS_OK) {
        fprintf(stream, "# Library path: %s/libucp.so.0\n", dir);
    }
    fprintf(stream, "# API headers version: %d.%d\n", UCP_API_MAJOR, UCP_API_MINOR);
    fprintf(stream, "# Configured with: %s\n", UCX_CONFIGURE_ARGS);
    fprintf(stream, "# CUDA: %s\n", UCX_CUDA_SUMMARY);
    fprintf(stream, "# Module search path:\n");
    ucs_module_print_search_path(stream, "uct");
}

/* One line per optional feature, as a C define, so the output can be
 * compared between builds with diff. */
void ucx_info_print_build_config(FILE *stream)
{
    fprintf(stream, "#define UCX_CONFIGURE_ARGS \"%s\"\n", UCX_CONFIGURE_ARGS);
    fprintf(stream, "#define UCX_BUILD_CC \"%s\"\n", UCX_BUILD_CC);
    fprintf(stream, "#define UCX_BUILD_CFLAGS \"%s\"\n", UCX_BUILD_CFLAGS);
    fprintf(stream, "#define UCX_VERSION \"%s\"\n", PACKAGE_VERSION);
#ifdef HAVE_CUDA
    fprintf(stream, "#define HAVE_CUDA 1\n");
#endif
#ifdef HAVE_HWLOC
    fprintf(stream, "#define HAVE_HWLOC 1\n");
#endif
#ifdef HAVE_VERBS
    fprintf(stream, "#define HAVE_VERBS 1\n");
#endif
#ifdef UCS_ENABLE_ASSERT
    fprintf(stream, "#define UCS_ENABLE_ASSERT 1\n");
#endif
#ifdef UCS_HAVE_SANITIZER
    fprintf(stream, "#define UCS_HAVE_SANITIZER 1\n");
#endif
}

void ucx_info_print_devices(FILE *stream)
{
    fprintf(stream, "# Memory domains and transports:\n");
    fprintf(stream, "#   (none: this build has no transports yet)\n");
}
