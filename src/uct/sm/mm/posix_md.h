/**
 * @file posix_md.h
 * The "posix" component and memory domain: shareable host memory.
 *
 * What the md can do, and why:
 *  - mem_alloc gives host memory backed by a memfd segment (mm_seg.h); its
 *    packed key lets a process on the same host map it (rkey_unpack), after
 *    which put/get are plain memcpy and rkey_ptr exposes the mapping.
 *  - registering arbitrary existing memory for remote access is NOT
 *    supported (no UCT_MD_FLAG_REG): memory that is not a shared file cannot
 *    be mapped by a peer, and copying through process_vm_readv/writev is a
 *    different transport (a syscall per access, ptrace permission). Local
 *    buffers of zcopy operations need no registration (no NEED_MEMH).
 *
 * Thread safety: md calls and rkey calls may come from any thread; they
 * share no mutable state.
 */
#ifndef UCT_POSIX_MD_H_
#define UCT_POSIX_MD_H_

#include "mm_seg.h"

#include <uct/base/uct_md.h>

BEGIN_C_DECLS

/** The posix component (md "posix", transport "posix"). */
extern uct_component_t uct_posix_component;

/** md options: none of its own yet (UCX_POSIX_*, through the base table). */
typedef struct uct_posix_md_config {
    uct_md_config_t super;
} uct_posix_md_config_t;

/** An open posix md. */
typedef struct uct_posix_md {
    uct_md_t super;
} uct_posix_md_t;

/** An unpacked remote key: the peer's range and where it is mapped here. */
typedef struct uct_posix_rkey {
    uint64_t     remote_base; /**< peer's address of the start of its memory */
    uint64_t     length;      /**< bytes accessible */
    char         *local_base; /**< the same bytes mapped in this process */
    uct_mm_seg_t seg;         /**< the mapping */
} uct_posix_rkey_t;

/**
 * Local address of [remote_addr, remote_addr + length) of an unpacked rkey,
 * or NULL when the range is not inside the peer's memory (or the rkey is
 * UCT_INVALID_RKEY). Inline because every put/get calls it.
 */
static inline void *uct_posix_rkey_translate(uct_rkey_t tl_rkey, uint64_t remote_addr,
                                             size_t length)
{
    const uct_posix_rkey_t *rkey = (const uct_posix_rkey_t*)tl_rkey;
    uint64_t offset;

    if (ucs_unlikely(tl_rkey == UCT_INVALID_RKEY)) {
        return NULL;
    }
    /* Written so that no sum can overflow: offset wraps when the address is
     * below the base, and then fails the comparison. */
    offset = remote_addr - rkey->remote_base;
    if (ucs_unlikely((length > rkey->length) || (offset > rkey->length - length))) {
        return NULL;
    }
    return rkey->local_base + offset;
}

END_C_DECLS

#endif
