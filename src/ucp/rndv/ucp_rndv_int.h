/**
 * @file ucp_rndv_int.h
 * The rendezvous state of a worker, shared by the files of src/ucp/rndv.
 */
#ifndef UCP_RNDV_INT_H_
#define UCP_RNDV_INT_H_

#include <ucp/rndv/ucp_rndv.h>

BEGIN_C_DECLS

struct ucp_rndv_frag_pool;

/** The key of the buffer a send is deciding about (ucp_rndv_send.c). */
typedef struct ucp_rndv_tx_key {
    void      *buffer;
    size_t    length;
    uct_mem_h memh;       /* NULL: empty */
    uint32_t  len;        /* packed, without trailing zeros */
    int       exportable;
    uint8_t   *bytes;     /* key_size bytes */
} ucp_rndv_tx_key_t;

struct ucp_rndv_worker {
    ucp_rndv_req_t            **slots;       /* id table: index = id low half - 1 */
    uint32_t                  *gens;         /* generation per slot */
    uint32_t                  num_slots;
    uint32_t                  hint;          /* no free slot below it */
    unsigned                  live;          /* requests in the table */
    ucs_list_link_t           done;          /* finished ops, for progress */
    unsigned                  ops_pending;   /* ops the transport still runs */
    ucs_list_link_t           waiters;       /* requests waiting for fragments */
    uint64_t                  next_keepalive_ns;
    uct_md_h                  ipc_md;        /* cuda_ipc: keys */
    uct_component_h           ipc_component; /* cuda_ipc: unpack */
    size_t                    key_size;
    uct_md_h                  copy_md;       /* cuda_cpy: fragment memory */
    ucp_rndv_host_lane_t      host_lane;     /* of worker->host_rma_iface */
    ucp_rndv_host_lane_t      *msg_host_lanes; /* per messaging iface: it
                                                  reads peers' memory itself
                                                  (md NULL: it does not) */
    struct ucp_rndv_frag_pool *pools[UCS_MEMORY_TYPE_LAST];
    ucs_list_link_t           free_reqs;     /* recycled ucp_rndv_req_t */
    ucs_list_link_t           free_ops;      /* recycled ucp_rndv_op_t */
    ucp_rndv_key_cache_t      *own_keys;     /* exportability of our keys */
    unsigned                  progress_calls;
    uint64_t                  pipe_pieces;   /* copies into device fragments */
    uint64_t stage_overlaps;                 /* background staging copies */
    ucp_rndv_tx_key_t         tx_key;
};

END_C_DECLS

#endif
