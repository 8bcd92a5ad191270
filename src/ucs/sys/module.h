/**
 * @file module.h
 * Loader for optional parts built as shared objects ("modules"), such as the
 * CUDA hooks (libucm_cuda.so) and CUDA transports (libuct_cuda.so). Keeping
 * them out of the core libraries lets everything run on machines without
 * CUDA: a module whose dependencies are missing is simply not loaded.
 *
 * A module of framework F named N is the file libF_N.so. It registers
 * itself from a constructor when loaded; the loader only finds and opens it.
 *
 * Search order, first match wins:
 *   1. the directories in UCX_MODULE_DIR (colon separated);
 *   2. when libucs runs from the build tree: src/F/N/.libs of that tree, so
 *      tests use freshly built modules without "make install";
 *   3. <directory of libucs>/ucx, where "make install" puts them.
 *
 * All functions are thread safe.
 */
#ifndef UCS_SYS_MODULE_H_
#define UCS_SYS_MODULE_H_

#include <ucs/type/status.h>

#include <stdio.h>

BEGIN_C_DECLS

/**
 * Load one module, once: later calls for the same module return UCS_OK
 * (or the first call's error) without touching the file system.
 *
 * @param framework  owning layer, e.g. "uct".
 * @param name       module name, e.g. "cuda".
 * @param handle_p   optional; receives the dlopen handle.
 * @return UCS_OK; UCS_ERR_NO_ELEM if no file was found; UCS_ERR_IO_ERROR if
 *         a file was found but could not be loaded (its reason is logged at
 *         debug level, e.g. a missing libcuda.so.1).
 */
ucs_status_t ucs_module_load(const char *framework, const char *name,
                             void **handle_p);

/**
 * Load every module of @a framework found on the search path.
 *
 * @return the number of modules loaded (already loaded ones included).
 */
unsigned ucs_module_load_all(const char *framework);

/** Print the search path, one directory per line, for ucx_info. */
void ucs_module_print_search_path(FILE *stream, const char *framework);

/** True when libucs itself was loaded from the build tree. */
int ucs_module_in_build_tree(void);

END_C_DECLS

#endif
