/**
 * @file ucm_config.h
 * Options of the memory hooks (UCX_MEM_*), read with the configuration
 * engine of libucs so that a bad value is an error naming the variable and
 * `ucx_info -c` lists them.
 */
#ifndef UCM_CONFIG_H_
#define UCM_CONFIG_H_

#include <ucs/config/parser.h>
#include <ucs/type/status.h>

BEGIN_C_DECLS

/** How the CUDA driver hooks are installed (UCX_MEM_CUDA_HOOK_MODE). */
typedef enum ucm_cuda_hook_mode {
    /** Patch the entry of each driver function (catches every caller,
     *  including cuGetProcAddress users and static cudart). */
    UCM_CUDA_HOOK_MODE_BISTRO,
    /** Rewrite GOT/PLT entries of loaded objects (catches only callers
     *  that link the driver functions by name). */
    UCM_CUDA_HOOK_MODE_RELOC,
    /** Install nothing; memory types come from driver queries. */
    UCM_CUDA_HOOK_MODE_NONE,
    UCM_CUDA_HOOK_MODE_LAST
} ucm_cuda_hook_mode_t;

/** Values of the options; filled by ucm_config_read(). */
typedef struct ucm_config {
    unsigned cuda_hook_mode;   /**< ucm_cuda_hook_mode_t */
} ucm_config_t;

/** Names of ucm_cuda_hook_mode_t values, NULL-terminated. */
extern const char *ucm_cuda_hook_mode_names[];

/** The UCX_MEM_* table, registered when libucm is loaded. */
extern ucs_config_table_entry_t ucm_config_table;

/**
 * Read the options from the defaults, the configuration file and the
 * environment. Thread safe.
 *
 * @param [out] config  filled on success.
 * @return UCS_OK or UCS_ERR_INVALID_PARAM for a bad value (an error naming
 *         the variable and the accepted values is logged).
 */
ucs_status_t ucm_config_read(ucm_config_t *config);

END_C_DECLS

#endif
