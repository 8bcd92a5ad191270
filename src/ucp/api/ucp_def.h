/**
 * @file ucp_def.h
 * Opaque handle types of the UCP API.
 */
#ifndef UCP_DEF_H_
#define UCP_DEF_H_

#include <ucs/type/status.h>

/**
 * Configuration of a UCP context, read from UCX_* environment variables by
 * ucp_config_read(). Opaque; the caller owns it and frees it with
 * ucp_config_release().
 */
typedef struct ucp_config ucp_config_t;

#endif
