/**
 * @file ucp_config.h
 * The UCP context configuration behind ucp_config_read() and friends (see
 * ucp.h for their contracts). Its table, "UCP context", is registered when
 * libucp is loaded, so `ucx_info -c` lists it.
 *
 * Variables:
 *   UCX_TLS  transports a context may use: "all" (default), "a,b" or "^a,b".
 *            Names: self, posix (alias shm, sm), tcp, cuda_copy, cuda_ipc
 *            (alias cuda), or any transport name a component reports.
 *   UCX_PROTO_INFO  print the protocol chosen per message size and memory
 *            type when an endpoint is created.
 */
#ifndef UCP_CONFIG_H_
#define UCP_CONFIG_H_

#include <ucp/api/ucp_def.h>
#include <ucs/config/parser.h>

BEGIN_C_DECLS

/** Options of a UCP context; filled and owned through the ucp_config_* API. */
struct ucp_config {
    ucs_config_allow_list_t tls;        /**< UCX_TLS */
    int                     proto_info; /**< UCX_PROTO_INFO */
};

/** The "UCP context" table describing struct ucp_config. */
extern ucs_config_table_entry_t ucp_config_table_entry;

END_C_DECLS

#endif
