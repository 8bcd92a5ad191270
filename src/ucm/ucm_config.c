#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <ucm/ucm_config.h>

#include <stddef.h>

const char *ucm_cuda_hook_mode_names[] = {
    [UCM_CUDA_HOOK_MODE_BISTRO] = "bistro",
    [UCM_CUDA_HOOK_MODE_RELOC]  = "reloc",
    [UCM_CUDA_HOOK_MODE_NONE]   = "none",
    [UCM_CUDA_HOOK_MODE_LAST]   = NULL
};

static const ucs_config_field_t ucm_config_fields[] = {
    {"CUDA_HOOK_MODE", "bistro",
     "How the CUDA driver allocation functions are hooked to learn the type\n"
     "of every allocation:\n"
     " bistro - patch the entry of each driver function; catches every\n"
     "          caller, including cudart (dynamic or static) calling through\n"
     "          cuGetProcAddress.\n"
     " reloc  - rewrite the GOT/PLT entries of loaded objects; catches only\n"
     "          code that links the driver functions by name.\n"
     " none   - install no hook; memory types are found by driver queries.",
     offsetof(ucm_config_t, cuda_hook_mode),
     UCS_CONFIG_TYPE_ENUM(ucm_cuda_hook_mode_names), 0},

    {NULL}
};

ucs_config_table_entry_t ucm_config_table = {
    .name   = "Memory hooks",
    .prefix = "MEM_",
    .fields = ucm_config_fields,
    .size   = sizeof(ucm_config_t)
};
UCS_CONFIG_REGISTER_TABLE(ucm_config_table)

ucs_status_t ucm_config_read(ucm_config_t *config)
{
    /* The structure holds only an enum, so nothing needs releasing. */
    return ucs_config_parser_fill_opts(config, &ucm_config_table, NULL, NULL);
}
