/**
 * @file init.h
 * Library-wide initialisation of libucs. It runs from the library
 * constructor, before any user call, so that logging and options are in
 * place for every layer above.
 */
#ifndef UCS_SYS_INIT_H_
#define UCS_SYS_INIT_H_

#include <ucs/type/status.h>

BEGIN_C_DECLS

/**
 * Outcome of reading the global options at load time. A constructor cannot
 * fail, so a bad UCX_* value is reported (error message naming the variable)
 * and remembered here; ucp_init() and the tools return it to the user.
 */
ucs_status_t ucs_init_status(void);

END_C_DECLS

#endif
