/**
 * @file bistro.h
 * Binary instrumentation ("bistro"): redirect a function to a hook by
 * patching the first bytes of its code, so that every caller is caught,
 * however it found the function (direct call, PLT, dlsym,
 * cuGetProcAddress, static linking).
 *
 * The overwritten instruction(s) are copied, relocated, into an executable
 * trampoline that ends with a jump back into the function; the trampoline
 * is the "original function" the hook calls. Patching is safe while other
 * threads call the function (see docs/hooks.md for why, per strategy).
 *
 * Trampolines and other generated code are never freed: a thread may still
 * be running them after a patch is removed. Restore points are owned by
 * bistro and live for the rest of the process; patching a function again
 * reuses its restore point and trampoline.
 *
 * Architecture code lives in bistro_<arch>.c; on an architecture without
 * it every call returns UCS_ERR_UNSUPPORTED.
 *
 * All functions are thread safe (one lock serialises patching).
 */
#ifndef UCM_BISTRO_BISTRO_H_
#define UCM_BISTRO_BISTRO_H_

#include <ucs/type/status.h>

BEGIN_C_DECLS

/** Handle of one patched function. */
typedef struct ucm_bistro_restore_point ucm_bistro_restore_point_t;

/** How a patch redirects its function (see docs/hooks.md). */
typedef enum ucm_bistro_strategy {
    /** Only the first byte is rewritten, into a jump opcode whose 32-bit
     *  displacement is the original next four bytes; the jump lands on a
     *  small pad placed at exactly that address. One byte changes, so no
     *  thread can ever see a half-written instruction. */
    UCM_BISTRO_STRATEGY_OPCODE,
    /** A 5-byte relative jump to a pad near the function, written with one
     *  atomic store. Used when the OPCODE pad address is not available. */
    UCM_BISTRO_STRATEGY_JUMP,
    UCM_BISTRO_STRATEGY_LAST
} ucm_bistro_strategy_t;

/**
 * Redirect @a func to @a hook.
 *
 * @param func         entry point to patch.
 * @param hook         function with the same signature.
 * @param name         for log messages (copied).
 * @param orig_func_p  receives the address that calls the original
 *                     function; written before the patch becomes visible,
 *                     so a hook reading it never sees NULL.
 * @param rp_p         receives the restore point (optional).
 *
 * @return UCS_OK; UCS_ERR_ALREADY_EXISTS if @a func is already patched by
 *         bistro; UCS_ERR_UNSUPPORTED when the first instructions cannot be
 *         relocated safely (unknown encoding, relative branch, ...) or the
 *         architecture is not supported; UCS_ERR_NO_MEMORY when no
 *         executable memory can be placed near @a func; UCS_ERR_IO_ERROR
 *         when the code cannot be made writable. On error nothing is
 *         patched, and the reason is logged at debug level.
 */
ucs_status_t ucm_bistro_patch(void *func, void *hook, const char *name,
                              void **orig_func_p,
                              ucm_bistro_restore_point_t **rp_p);

/**
 * Remove the patch of @a rp, restoring the original bytes.
 *
 * @return UCS_OK; UCS_ERR_NO_ELEM if it is not patched;
 *         UCS_ERR_BUSY if the patched bytes were changed by someone else
 *         (they are left alone).
 */
ucs_status_t ucm_bistro_restore(ucm_bistro_restore_point_t *rp);

/**
 * Whether the patch of @a rp is in place: applied and the bytes at the
 * function entry still those bistro wrote.
 */
int ucm_bistro_is_patched(const ucm_bistro_restore_point_t *rp);

/** Strategy @a rp uses. */
ucm_bistro_strategy_t
ucm_bistro_restore_point_strategy(const ucm_bistro_restore_point_t *rp);

/** The patched function of @a rp. */
void *ucm_bistro_restore_point_func(const ucm_bistro_restore_point_t *rp);

/**
 * Strategies bistro may use, as a mask of UCS_BIT(ucm_bistro_strategy_t);
 * all by default. For tests, which force the fallback strategy. Applies to
 * functions patched for the first time afterwards.
 */
void ucm_bistro_set_strategies(unsigned mask);

END_C_DECLS

#endif
