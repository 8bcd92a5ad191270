#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucx_info.h"

#include <tools/perf/perf_memory.h>
#include <ucm/ucm_config.h>
#include <ucp/api/ucp.h>
#include <ucs/memory/memtype_cache.h>

#include <string.h>

/*
 * ucx_info -e: whether the CUDA memory hooks work in this process. It does
 * what an application does (ucp_init, which attaches the memory-type cache
 * when a cuda transport is present), then allocates one device buffer and
 * looks whether the cache learned of it: the hooks saw the allocation only
 * if it did. Nothing here is inferred from the configuration alone.
 */
void ucx_info_print_hooks(FILE *stream)
{
    const perf_mem_kind_t *kind = perf_mem_kind_find("cuda");
    ucs_memtype_cache_t *cache  = NULL;
    ucs_memtype_info_t info;
    ucp_context_h context       = NULL;
    size_t regions_before       = 0;
    ucp_params_t params;
    perf_mem_buf_t buf;
    ucm_config_t config;
    const char *why;
    ucs_status_t status;

    fprintf(stream, "#\n# Memory hooks\n");
    if (ucm_config_read(&config) != UCS_OK) {
        fprintf(stream, "#   UCX_MEM_CUDA_HOOK_MODE: invalid value (see the error above)\n");
        return;
    }
    fprintf(stream, "#   UCX_MEM_CUDA_HOOK_MODE: %s\n",
            ucm_cuda_hook_mode_names[config.cuda_hook_mode]);

    why = perf_mem_kind_unavailable(kind);
    if (why != NULL) {
        fprintf(stream, "#   CUDA: not available (%s): no hooks to install\n", why);
        return;
    }

    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_TAG;
    status = ucp_init(&params, NULL, &context);
    if (status != UCS_OK) {
        fprintf(stream, "#   ucp_init() failed: %s\n", ucs_status_string(status));
        return;
    }
    if (ucs_memtype_cache_get_global(&cache) != UCS_OK) {
        cache = NULL;
    }
    if ((cache != NULL) && ucs_memtype_cache_is_enabled(cache)) {
        regions_before = ucs_memtype_cache_num_regions(cache);
    }

    if (perf_mem_alloc(kind, 1 << 20, 0, &buf) != UCS_OK) {
        fprintf(stream, "#   cannot allocate device memory to check the hooks\n");
    } else {
        memset(&info, 0, sizeof(info));
        info.mem_type = UCS_MEMORY_TYPE_UNKNOWN;
        if ((cache != NULL) &&
            (ucs_memtype_cache_lookup(cache, buf.ptr, 1, &info) != UCS_OK)) {
            info.mem_type = UCS_MEMORY_TYPE_UNKNOWN;
        }
        if (cache == NULL) {
            fprintf(stream, "#   memory-type cache: none in this process\n");
        } else if (!ucs_memtype_cache_is_enabled(cache)) {
            fprintf(stream, "#   memory-type cache: disabled (hooks not installed, or mode "
                    "reloc/none): every lookup asks the driver\n");
        } else if (ucs_memtype_cache_num_regions(cache) > regions_before) {
            fprintf(stream, "#   memory-type cache: attached; CUDA hooks installed: a "
                    "cuMemAlloc/cudaMalloc reached it (%zu regions known)\n",
                    ucs_memtype_cache_num_regions(cache));
        } else {
            fprintf(stream, "#   memory-type cache: enabled, but a device allocation did "
                    "not reach it: CUDA hooks NOT active (no cuda transport attached it?)\n");
        }
        fprintf(stream, "#   lookup of that allocation: %s, device %d\n",
                ucs_memory_type_names[info.mem_type], info.device);
        perf_mem_free(&buf);
    }
    ucp_cleanup(context);
}
