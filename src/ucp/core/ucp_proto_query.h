/**
 * @file ucp_proto_query.h
 * What libucp would do with a message, for the in-tree tools (ucx_info -p).
 * Not part of upstream's API and not installed; the symbols are exported by
 * libucp for the tools only. Neighbour of ucp_proto_stats.h (what libucp did).
 */
#ifndef UCP_PROTO_QUERY_H_
#define UCP_PROTO_QUERY_H_

#include <ucp/api/ucp.h>

BEGIN_C_DECLS

/**
 * Print on stdout the protocol table of @a ep: which tag protocol each
 * message size takes, and how device memory is handled (the output of
 * UCX_PROTO_INFO). Defined in src/ucp/tag/ucp_proto_info.c.
 */
void ucp_proto_info_print(ucp_ep_h ep);

END_C_DECLS

#endif
