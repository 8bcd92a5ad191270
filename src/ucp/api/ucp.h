/**
 * @file ucp.h
 * The UCP API: the interface MPI libraries and language bindings use.
 *
 * Names, signatures and numeric values follow upstream UCX (>= 1.13) so that
 * programs built against upstream's headers run on this library unchanged.
 * Only functions this library implements are declared here.
 */
#ifndef UCP_H_
#define UCP_H_

#include <ucp/api/ucp_def.h>
#include <ucp/api/ucp_version.h>
#include <ucs/config/types.h>
#include <ucs/memory/memory_type.h>
#include <ucs/type/status.h>

#include <stdio.h>

BEGIN_C_DECLS

/**
 * Read the UCP configuration from the environment.
 *
 * Variables are named UCX_<NAME>, or UCX_<env_prefix>_<NAME> when
 * @a env_prefix is given (the prefixed form wins). Each value is checked: a
 * malformed one fails the call with an error message naming the variable, the
 * value and the accepted forms. UCX_* variables that no component knows are
 * reported once, at warning level, with the closest known name.
 *
 * @param env_prefix  optional extra prefix, may be NULL.
 * @param filename    a configuration file to read before the environment, or
 *                    NULL for the default search (UCX_CONFIG_FILE).
 * @param config_p    receives the new configuration, owned by the caller.
 * @return UCS_OK, UCS_ERR_INVALID_PARAM for a bad value, UCS_ERR_NO_MEMORY.
 */
ucs_status_t ucp_config_read(const char *env_prefix, const char *filename,
                             ucp_config_t **config_p);

/**
 * Free a configuration returned by ucp_config_read().
 *
 * @param config  may be NULL.
 */
void ucp_config_release(ucp_config_t *config);

/**
 * Change one value of a configuration, as if UCX_<name>=<value> were set.
 *
 * @param config  configuration to change.
 * @param name    variable name without the UCX_ prefix, e.g. "TLS".
 * @param value   new value, checked like an environment value.
 * @return UCS_OK; UCS_ERR_NO_ELEM for an unknown name; UCS_ERR_INVALID_PARAM
 *         for a malformed value (the old value is kept).
 */
ucs_status_t ucp_config_modify(ucp_config_t *config, const char *name,
                               const char *value);

/**
 * Print a configuration.
 *
 * @param config       configuration to print.
 * @param stream       output stream.
 * @param title        optional header line text.
 * @param print_flags  what to print (ucs_config_print_flags_t).
 */
void ucp_config_print(const ucp_config_t *config, FILE *stream,
                      const char *title, ucs_config_print_flags_t print_flags);

/**
 * Version of the library actually loaded (which may differ from the
 * headers the program was built with).
 */
void ucp_get_version(unsigned *major_version, unsigned *minor_version,
                     unsigned *release_number);

/** The loaded library's version as "major.minor.release". */
const char *ucp_get_version_string(void);

END_C_DECLS

#endif
