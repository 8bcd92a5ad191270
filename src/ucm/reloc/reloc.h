/**
 * @file reloc.h
 * Relocation hooks ("reloc"): redirect calls to a function by rewriting
 * the GOT entries through which other shared objects reach it.
 *
 * Every loaded object's dynamic relocations of type JUMP_SLOT (calls
 * through the PLT) and GLOB_DAT (function pointers taken by address) that
 * name the symbol get the hook's address. Objects loaded later are
 * patched too: reloc hooks dlopen() itself the same way and applies the
 * active patches to what each dlopen() brought in.
 *
 * What reloc cannot see: calls inside the object that defines the
 * function, calls through pointers obtained from dlsym() or
 * cuGetProcAddress(), and statically linked callers. bistro (bistro.h)
 * catches those.
 *
 * The object that contains the hook is never patched, so the hook module
 * may call the symbol directly without looping. All functions are thread
 * safe.
 */
#ifndef UCM_RELOC_RELOC_H_
#define UCM_RELOC_RELOC_H_

#include <ucs/datastruct/list.h>
#include <ucs/type/status.h>

BEGIN_C_DECLS

/** One symbol to redirect. Owned by the caller, alive while active. */
typedef struct ucm_reloc_patch {
    const char      *symbol;      /**< name, without version */
    void            *value;       /**< hook address */
    void            *prev_value;  /**< original function: set it (e.g. from
                                       dlsym() on the defining library) or
                                       leave NULL to resolve the symbol in
                                       the global scope */
    ucs_list_link_t list;         /**< internal */
} ucm_reloc_patch_t;

/**
 * Redirect @a patch->symbol to @a patch->value in every loaded object
 * and in objects loaded later.
 *
 * @return UCS_OK; UCS_ERR_NO_ELEM when prev_value is NULL and the symbol
 *         is not found; UCS_ERR_ALREADY_EXISTS when @a patch is active.
 */
ucs_status_t ucm_reloc_modify(ucm_reloc_patch_t *patch);

/**
 * Undo ucm_reloc_modify(): every GOT entry that holds the hook gets the
 * original function again, and new objects are no longer patched.
 *
 * @return UCS_OK or UCS_ERR_NO_ELEM when @a patch is not active.
 */
ucs_status_t ucm_reloc_restore(ucm_reloc_patch_t *patch);

/**
 * Number of GOT entries for @a patch->symbol in the loaded objects (other
 * than the hook's) that do not hold the hook, i.e. calls reloc would miss.
 * 0 for an intact active patch.
 */
unsigned ucm_reloc_count_unpatched(const ucm_reloc_patch_t *patch);

/**
 * Number of GOT entries for @a symbol in the loaded objects, whatever
 * they hold. For tests and diagnostics.
 */
unsigned ucm_reloc_count_slots(const char *symbol);

END_C_DECLS

#endif
