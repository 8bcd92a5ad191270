#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

/*
 * cuGetProcAddress: how cudart (and hook code) find entry points. It returns
 * the very functions the library exports (GPU-FACTS.md "Symbols"): the
 * newest flavour not newer than the caller's CUDA version, e.g.
 * "cuMemAlloc" -> cuMemAlloc_v2, and with CU_GET_PROC_ADDRESS_PER_THREAD_
 * DEFAULT_STREAM the _ptsz/_ptds twin, e.g. "cuMemAllocAsync" ->
 * cuMemAllocAsync_ptsz. Patching exported symbols therefore catches calls
 * made through it. Works before cuInit, as in the driver.
 */
#include "cudasim.h"
#include "sim_symbols.h"

#include <string.h>

/* First table entry named @a name, or sim_proc_count. */
static size_t sim_proc_lower(const char *name)
{
    size_t lo = 0, hi = sim_proc_count, mid;

    while (lo < hi) {
        mid = (lo + hi) / 2;
        if (strcmp(sim_proc_table[mid].name, name) < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

static void *sim_export_find(const char *name)
{
    size_t lo = 0, hi = sim_export_count, mid;
    int cmp;

    while (lo < hi) {
        mid = (lo + hi) / 2;
        cmp = strcmp(sim_exports[mid].name, name);
        if (cmp == 0) {
            return sim_exports[mid].fn;
        }
        if (cmp < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return NULL;
}

static CUresult sim_get_proc(const char *symbol, void **pfn, int cudaVersion,
                             cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status_p)
{
    const sim_proc_entry_t *best = NULL;
    CUdriverProcAddressQueryResult qres;
    size_t i;
    int known = 0;

    if ((symbol == NULL) || (pfn == NULL) ||
        (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                               CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (i = sim_proc_lower(symbol);
         (i < sim_proc_count) && (strcmp(sim_proc_table[i].name, symbol) == 0);
         ++i) {
        known = 1;
        if (sim_proc_table[i].version <= cudaVersion) {
            best = &sim_proc_table[i]; /* sorted: the last fit is newest */
        }
    }

    *pfn = NULL;
    if (best != NULL) {
        *pfn = ((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) &&
                (best->fn_pt != NULL)) ? best->fn_pt : best->fn;
        qres = CU_GET_PROC_ADDRESS_SUCCESS;
    } else if (known) {
        qres = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    } else if (sim_proc_count == 0) {
        /* Built without cudaTypedefs.h: exact names are all we know. */
        *pfn = sim_export_find(symbol);
        qres = (*pfn != NULL) ? CU_GET_PROC_ADDRESS_SUCCESS :
                                CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    } else {
        /* Versioned names ("cuMemAlloc_v2") are not found either. */
        qres = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    }
    if (status_p != NULL) {
        /* The H200's driver reports a miss through the status and returns
         * CUDA_SUCCESS; without a status there is only the return code. */
        *status_p = qres;
        return CUDA_SUCCESS;
    }
    return (*pfn != NULL) ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                          cuuint64_t flags)
{
    return sim_get_proc(symbol, pfn, cudaVersion, flags, NULL);
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                             cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus)
{
    return sim_get_proc(symbol, pfn, cudaVersion, flags, symbolStatus);
}
