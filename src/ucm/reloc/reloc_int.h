/**
 * @file reloc_int.h
 * Shared by reloc.c (GOT patching) and reloc_dlopen.c (the dlopen hook).
 */
#ifndef UCM_RELOC_RELOC_INT_H_
#define UCM_RELOC_RELOC_INT_H_

#include <ucm/reloc/reloc.h>

#include <link.h>

BEGIN_C_DECLS

/**
 * Address that the dynamic-section entry @a ptr refers to in an object
 * loaded at @a base. glibc rewrites some entries to absolute addresses
 * when it loads an object and leaves others (and other loaders leave all)
 * as offsets; an offset is below the load address, an absolute address is
 * not.
 */
static inline void *ucm_reloc_dyn_addr(ElfW(Addr) base, ElfW(Addr) ptr)
{
    return (void*)((ptr < base) ? (base + ptr) : ptr);
}

/** Apply every active patch to every loaded object (after a dlopen). */
void ucm_reloc_apply_all(void);

/** Start patching dlopen(), once, so new objects get the patches too. */
ucs_status_t ucm_reloc_dlopen_install(void);

/** Stop patching dlopen() (when no other patch is active). */
void ucm_reloc_dlopen_remove(void);

/**
 * ucm_reloc_modify() without installing the dlopen hook, for the dlopen
 * hook itself.
 */
ucs_status_t ucm_reloc_modify_nodlopen(ucm_reloc_patch_t *patch);

/** The patch of dlopen() itself (reloc_dlopen.c). */
extern ucm_reloc_patch_t ucm_reloc_dlopen_patch;

/** Number of active patches other than the dlopen hook's. */
unsigned ucm_reloc_active_count(void);

END_C_DECLS

#endif
