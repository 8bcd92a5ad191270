/**
 * @file bistro_int.h
 * What the architecture-independent part of bistro (bistro.c, the code
 * memory in bistro_code.c) and an architecture (bistro_<arch>.c) share.
 *
 * An architecture prepares a patch (plans it, builds the trampoline and
 * pads in code memory, fills the bytes to write) and writes bytes into the
 * patched function atomically. bistro.c does the bookkeeping, the locking
 * and the page protection around those two steps.
 */
#ifndef UCM_BISTRO_BISTRO_INT_H_
#define UCM_BISTRO_BISTRO_INT_H_

#include <ucm/bistro/bistro.h>
#include <ucs/datastruct/list.h>

#include <stddef.h>
#include <stdint.h>

BEGIN_C_DECLS

/** Longest patch an architecture writes. */
#define UCM_BISTRO_PATCH_MAX   16

struct ucm_bistro_restore_point {
    ucs_list_link_t       list;       /**< in the list of patched functions */
    void                  *func;      /**< patched entry */
    char                  name[64];   /**< for log messages */
    ucm_bistro_strategy_t strategy;
    void                  *trampoline;/**< calls the original function */
    void                  **hook_slot;/**< aligned word the pads jump through */
    uint8_t               orig[UCM_BISTRO_PATCH_MAX];  /**< bytes replaced */
    uint8_t               patch[UCM_BISTRO_PATCH_MAX]; /**< bytes written */
    unsigned              patch_len;
    int                   active;     /**< the patch is written */
};


/*
 * Architecture interface.
 */

/**
 * Plan the patch of rp->func: choose a strategy among @a strategies
 * (mask of UCS_BIT(ucm_bistro_strategy_t)), build the trampoline and the
 * pads (the pads jump through *rp->hook_slot, which the caller fills), and
 * fill rp->orig, rp->patch, rp->patch_len, rp->strategy, rp->trampoline,
 * rp->hook_slot. Must not modify the function.
 *
 * @return UCS_OK, or an error after logging the reason at debug level.
 */
ucs_status_t ucm_bistro_arch_prepare(ucm_bistro_restore_point_t *rp,
                                     unsigned strategies);

/**
 * Replace the rp->patch_len bytes at rp->func, which must currently equal
 * @a expected, with @a bytes, in a way no thread can observe half done.
 * The pages are already writable.
 *
 * @return UCS_OK, UCS_ERR_BUSY when the current bytes differ from
 *         @a expected, UCS_ERR_UNSUPPORTED when no atomic store covers them.
 */
ucs_status_t ucm_bistro_arch_write(ucm_bistro_restore_point_t *rp,
                                   const uint8_t *expected,
                                   const uint8_t *bytes);


/*
 * Executable memory for trampolines and pads (bistro_code.c). Called with
 * the bistro lock held. Nothing is ever freed.
 */

/**
 * Allocate @a size bytes of code memory aligned to @a align, whose every
 * byte lies within @a distance of @a near (both directions).
 *
 * @return the address, or NULL when no memory can be placed there.
 */
void *ucm_bistro_code_alloc(const void *near, size_t distance, size_t size,
                            size_t align);

/**
 * Claim exactly [@a addr, @a addr + @a size) as code memory, mapping the
 * pages it needs if they are free.
 *
 * @return UCS_OK; UCS_ERR_ALREADY_EXISTS when a byte is in use (by bistro
 *         or by any other mapping); UCS_ERR_INVALID_ADDR for an address
 *         user space cannot map.
 */
ucs_status_t ucm_bistro_code_alloc_at(void *addr, size_t size);

/**
 * Copy @a size bytes to code memory at @a dst (allocated above).
 * @return UCS_OK or UCS_ERR_IO_ERROR when the pages cannot be made
 *         writable (a security policy forbidding writable code).
 */
ucs_status_t ucm_bistro_code_write(void *dst, const void *src, size_t size);

/** Store a pointer into an aligned word of code memory, atomically. */
ucs_status_t ucm_bistro_code_write_ptr(void **dst, void *value);

/**
 * Protection (PROT_*) of the mapping that contains @a addr, from
 * /proc/self/maps.
 * @return the protection, or -1 when no mapping contains @a addr.
 */
int ucm_bistro_mapping_prot(const void *addr);

END_C_DECLS

#endif
