#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucx_info.h"

/* ucx_info -d, GPU part, in a build without the CUDA headers. */
void ucx_info_print_gpus(FILE *stream)
{
    fprintf(stream, "#\n# GPUs\n#   < not listed: ucx_info was built without the CUDA "
            "headers (configure --with-cuda) >\n");
}
