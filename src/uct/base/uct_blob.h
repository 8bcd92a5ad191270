/**
 * @file uct_blob.h
 * Pieces shared by transports whose addresses and packed keys are blobs of
 * their own making (self, cma): a header that says what a blob is and in
 * which format, so that garbage and other kinds of blob are refused, and a
 * hash of the identity of this kernel instance and PID namespace.
 */
#ifndef UCT_BLOB_H_
#define UCT_BLOB_H_

#include <ucs/sys/compiler_def.h>
#include <ucs/sys/sys.h>

#include <stddef.h>
#include <stdint.h>
#include <string.h>

BEGIN_C_DECLS

/** Start of an address or packed key. */
typedef struct uct_blob_hdr {
    uint32_t magic;       /**< which kind of blob */
    uint8_t  version;     /**< its format */
    uint8_t  reserved[3]; /**< zero; non-zero means a newer or corrupt blob */
} UCS_S_PACKED uct_blob_hdr_t;

static inline void uct_blob_hdr_init(uct_blob_hdr_t *hdr, uint32_t magic,
                                     uint8_t version)
{
    memset(hdr, 0, sizeof(*hdr));
    hdr->magic   = magic;
    hdr->version = version;
}

/** Whether @a hdr is a well-formed header of a blob of kind @a magic. */
static inline int uct_blob_hdr_is_valid(const uct_blob_hdr_t *hdr, uint32_t magic,
                                        uint8_t version)
{
    return (hdr->magic == magic) && (hdr->version == version) &&
           (hdr->reserved[0] == 0) && (hdr->reserved[1] == 0) &&
           (hdr->reserved[2] == 0);
}

#define UCT_FNV1A64_INIT 0xcbf29ce484222325ull

/** FNV-1a of @a length bytes, continuing from @a hash. */
static inline uint64_t uct_fnv1a64(uint64_t hash, const void *data, size_t length)
{
    const uint8_t *p = (const uint8_t*)data;
    size_t i;

    for (i = 0; i < length; ++i) {
        hash = (hash ^ p[i]) * 0x100000001b3ull;
    }
    return hash;
}

/** Node id (ucs_sys_get_node_id()) and PID namespace hashed: equal exactly
 *  for processes of one node whose pids name the same processes. Not cached,
 *  so that it stays right in a child of fork() that callers combine with its
 *  own pid. */
static inline uint64_t uct_blob_node_id(void)
{
    uint8_t node_id[16] = {0};
    uint64_t pid_ns     = ucs_sys_get_pid_ns();

    (void)ucs_sys_get_node_id(node_id);
    return uct_fnv1a64(uct_fnv1a64(UCT_FNV1A64_INIT, node_id, sizeof(node_id)), &pid_ns,
                       sizeof(pid_ns));
}

END_C_DECLS

#endif
