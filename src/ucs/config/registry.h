/**
 * @file registry.h
 * The process-wide list of registered tables and of the environment prefixes
 * fills have used (internal to src/ucs/config). Each has its own lock, so
 * a table callback may record prefixes; see parser.h for the public
 * registration functions.
 */
#ifndef UCS_CONFIG_REGISTRY_H_
#define UCS_CONFIG_REGISTRY_H_

#include <ucs/config/parser.h>

BEGIN_C_DECLS

/** Environment prefixes remembered; later ones are not remembered. */
#define UCS_CONFIG_ENV_PREFIXES_MAX  16

/** A prefix as remembered: "FOO" for UCX_FOO_<NAME>. */
typedef char ucs_config_env_prefix_t[UCS_CONFIG_NAME_MAX];

/** Visit a table; a non-zero return stops the walk and is returned. */
typedef int (*ucs_config_table_cb_t)(const ucs_config_table_entry_t *entry,
                                     void *arg);

/**
 * Call @a cb for each registered table, in registration order, with the
 * registry lock held: @a cb must not register or unregister tables.
 * @return the first non-zero value @a cb returned, or 0.
 */
int ucs_config_registry_foreach(ucs_config_table_cb_t cb, void *arg);

/**
 * Remember that variables UCX_<prefix>_<NAME> are in use, so that the
 * unknown-variable check accepts them. @a prefix has @a len characters and
 * no trailing '_'. Thread safe.
 */
void ucs_config_registry_add_env_prefix(const char *prefix, size_t len);

/**
 * Copy the remembered prefixes into @a prefixes.
 * @return how many were copied.
 */
unsigned ucs_config_registry_get_env_prefixes(
        ucs_config_env_prefix_t prefixes[UCS_CONFIG_ENV_PREFIXES_MAX]);

END_C_DECLS

#endif
