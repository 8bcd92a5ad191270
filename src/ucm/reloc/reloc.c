#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * GOT patching.
 *
 * For each loaded object (dl_iterate_phdr), the dynamic section gives the
 * symbol and string tables and two relocation tables: DT_JMPREL (the PLT's
 * JUMP_SLOT entries) and DT_RELA (GLOB_DAT entries among others). Each
 * relocation names a symbol and the GOT word the loader filled with its
 * address; patching writes the hook's address into that word. GOT words
 * are aligned, so the store is atomic and a concurrent caller jumps either
 * to the old target or to the hook.
 *
 * With full RELRO the GOT is read-only once loading is done; it is made
 * writable for the store and read-only again.
 */

#include <ucm/reloc/reloc_int.h>

#include <ucs/debug/log.h>
#include <ucs/sys/sys.h>

#include <dlfcn.h>
#include <elf.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__x86_64__)
#  define UCM_RELOC_TYPE_JUMP_SLOT  R_X86_64_JUMP_SLOT
#  define UCM_RELOC_TYPE_GLOB_DAT   R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#  define UCM_RELOC_TYPE_JUMP_SLOT  R_AARCH64_JUMP_SLOT
#  define UCM_RELOC_TYPE_GLOB_DAT   R_AARCH64_GLOB_DAT
#else
#  error "reloc: add the relocation types of this architecture"
#endif

#define UCM_RELOC_R_TYPE(_info)  ELF64_R_TYPE(_info)
#define UCM_RELOC_R_SYM(_info)   ELF64_R_SYM(_info)

typedef enum {
    UCM_RELOC_OP_APPLY,            /* write the hook */
    UCM_RELOC_OP_RESTORE,          /* write the original back */
    UCM_RELOC_OP_COUNT_UNPATCHED,  /* count entries not holding the hook */
    UCM_RELOC_OP_COUNT_SLOTS       /* count entries naming the symbol */
} ucm_reloc_op_t;

typedef struct {
    ucm_reloc_op_t          op;
    const ucm_reloc_patch_t *single;   /* only this patch, or all active */
    const char              *symbol;   /* for COUNT_SLOTS */
    unsigned                count;
} ucm_reloc_ctx_t;

/* What one loaded object needs for the scan. */
typedef struct {
    const struct dl_phdr_info *info;
    const ElfW(Sym)           *symtab;
    const char                *strtab;
    uintptr_t                 relro_start;
    uintptr_t                 relro_end;
} ucm_reloc_object_t;

static pthread_mutex_t ucm_reloc_lock = PTHREAD_MUTEX_INITIALIZER;
static UCS_LIST_HEAD(ucm_reloc_patches);

static int ucm_reloc_object_contains(const struct dl_phdr_info *info,
                                     const void *addr)
{
    uintptr_t start;
    int i;

    for (i = 0; i < info->dlpi_phnum; ++i) {
        if (info->dlpi_phdr[i].p_type != PT_LOAD) {
            continue;
        }
        start = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
        if (((uintptr_t)addr >= start) &&
            ((uintptr_t)addr < start + info->dlpi_phdr[i].p_memsz)) {
            return 1;
        }
    }
    return 0;
}

static void ucm_reloc_store(const ucm_reloc_object_t *obj, void **slot,
                            void *value)
{
    size_t page_size = ucs_get_page_size();
    uintptr_t page   = (uintptr_t)slot & ~(page_size - 1);
    int relro        = ((uintptr_t)slot >= obj->relro_start) &&
                       ((uintptr_t)slot < obj->relro_end);

    if (relro && (mprotect((void*)page, page_size,
                           PROT_READ | PROT_WRITE) != 0)) {
        ucs_debug("reloc: cannot make GOT page %p of '%s' writable: %m",
                  (void*)page, obj->info->dlpi_name);
        return;
    }

    __atomic_store_n(slot, value, __ATOMIC_RELEASE);

    if (relro) {
        mprotect((void*)page, page_size, PROT_READ);
    }
}

static void ucm_reloc_slot(ucm_reloc_ctx_t *ctx, const ucm_reloc_object_t *obj,
                           const ucm_reloc_patch_t *patch, void **slot)
{
    void *current = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

    switch (ctx->op) {
    case UCM_RELOC_OP_APPLY:
        if (current != patch->value) {
            ucm_reloc_store(obj, slot, patch->value);
            ++ctx->count;
        }
        break;
    case UCM_RELOC_OP_RESTORE:
        if (current == patch->value) {
            ucm_reloc_store(obj, slot, patch->prev_value);
            ++ctx->count;
        }
        break;
    case UCM_RELOC_OP_COUNT_UNPATCHED:
        ctx->count += (current != patch->value);
        break;
    default:
        break;
    }
}

static void ucm_reloc_match(ucm_reloc_ctx_t *ctx, const ucm_reloc_object_t *obj,
                            const char *name, void **slot)
{
    const ucm_reloc_patch_t *patch;

    if (ctx->op == UCM_RELOC_OP_COUNT_SLOTS) {
        ctx->count += !strcmp(name, ctx->symbol);
        return;
    }

    if (ctx->single != NULL) {
        if (!strcmp(name, ctx->single->symbol) &&
            !ucm_reloc_object_contains(obj->info, ctx->single->value)) {
            ucm_reloc_slot(ctx, obj, ctx->single, slot);
        }
        return;
    }

    ucs_list_for_each(patch, &ucm_reloc_patches, list) {
        if (!strcmp(name, patch->symbol) &&
            !ucm_reloc_object_contains(obj->info, patch->value)) {
            ucm_reloc_slot(ctx, obj, patch, slot);
        }
    }
}

static void ucm_reloc_scan_table(ucm_reloc_ctx_t *ctx,
                                 const ucm_reloc_object_t *obj,
                                 const ElfW(Rela) *table, size_t size)
{
    const ElfW(Rela) *rela;
    unsigned long type, sym;

    for (rela = table; (char*)(rela + 1) <= (char*)table + size; ++rela) {
        type = UCM_RELOC_R_TYPE(rela->r_info);
        sym  = UCM_RELOC_R_SYM(rela->r_info);
        if (((type != UCM_RELOC_TYPE_JUMP_SLOT) &&
             (type != UCM_RELOC_TYPE_GLOB_DAT)) || (sym == 0)) {
            continue;
        }

        ucm_reloc_match(ctx, obj,
                        obj->strtab + obj->symtab[sym].st_name,
                        (void**)(obj->info->dlpi_addr + rela->r_offset));
    }
}

static int ucm_reloc_phdr_cb(struct dl_phdr_info *info, size_t size,
                             void *arg)
{
    ucm_reloc_ctx_t *ctx          = arg;
    const ElfW(Dyn) *dyn          = NULL;
    const ElfW(Rela) *jmprel      = NULL, *rela = NULL;
    size_t jmprel_size            = 0, rela_size = 0;
    ucm_reloc_object_t obj        = {info, NULL, NULL, 0, 0};
    int i;

    for (i = 0; i < info->dlpi_phnum; ++i) {
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) {
            dyn = (const ElfW(Dyn)*)(info->dlpi_addr +
                                     info->dlpi_phdr[i].p_vaddr);
        } else if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO) {
            obj.relro_start = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
            obj.relro_end   = obj.relro_start + info->dlpi_phdr[i].p_memsz;
        }
    }

    if (dyn == NULL) {
        return 0;
    }

    for (; dyn->d_tag != DT_NULL; ++dyn) {
        switch (dyn->d_tag) {
        case DT_SYMTAB:
            obj.symtab = ucm_reloc_dyn_addr(info->dlpi_addr, dyn->d_un.d_ptr);
            break;
        case DT_STRTAB:
            obj.strtab = ucm_reloc_dyn_addr(info->dlpi_addr, dyn->d_un.d_ptr);
            break;
        case DT_JMPREL:
            jmprel = ucm_reloc_dyn_addr(info->dlpi_addr, dyn->d_un.d_ptr);
            break;
        case DT_PLTRELSZ:
            jmprel_size = dyn->d_un.d_val;
            break;
        case DT_RELA:
            rela = ucm_reloc_dyn_addr(info->dlpi_addr, dyn->d_un.d_ptr);
            break;
        case DT_RELASZ:
            rela_size = dyn->d_un.d_val;
            break;
        default:
            break;
        }
    }

    if ((obj.symtab == NULL) || (obj.strtab == NULL)) {
        return 0;
    }

    if (jmprel != NULL) {
        ucm_reloc_scan_table(ctx, &obj, jmprel, jmprel_size);
    }
    if (rela != NULL) {
        ucm_reloc_scan_table(ctx, &obj, rela, rela_size);
    }
    return 0;
}

static unsigned ucm_reloc_scan(ucm_reloc_op_t op, const ucm_reloc_patch_t *single,
                               const char *symbol)
{
    ucm_reloc_ctx_t ctx = {op, single, symbol, 0};

    dl_iterate_phdr(ucm_reloc_phdr_cb, &ctx);
    return ctx.count;
}

static int ucm_reloc_is_active(const ucm_reloc_patch_t *patch)
{
    const ucm_reloc_patch_t *elem;

    ucs_list_for_each(elem, &ucm_reloc_patches, list) {
        if (elem == patch) {
            return 1;
        }
    }
    return 0;
}

ucs_status_t ucm_reloc_modify_nodlopen(ucm_reloc_patch_t *patch)
{
    unsigned count;

    if (patch->prev_value == NULL) {
        patch->prev_value = dlsym(RTLD_DEFAULT, patch->symbol);
        if (patch->prev_value == NULL) {
            ucs_debug("reloc: symbol '%s' not found", patch->symbol);
            return UCS_ERR_NO_ELEM;
        }
    }

    pthread_mutex_lock(&ucm_reloc_lock);
    if (ucm_reloc_is_active(patch)) {
        pthread_mutex_unlock(&ucm_reloc_lock);
        return UCS_ERR_ALREADY_EXISTS;
    }
    ucs_list_add_tail(&ucm_reloc_patches, &patch->list);
    count = ucm_reloc_scan(UCM_RELOC_OP_APPLY, patch, NULL);
    pthread_mutex_unlock(&ucm_reloc_lock);

    ucs_debug("reloc: '%s' -> %p (original %p), %u GOT entries written",
              patch->symbol, patch->value, patch->prev_value, count);
    return UCS_OK;
}

ucs_status_t ucm_reloc_modify(ucm_reloc_patch_t *patch)
{
    ucs_status_t status;

    /* dlopen first, so no object loaded meanwhile escapes the patch. */
    status = ucm_reloc_dlopen_install();
    if (status != UCS_OK) {
        return status;
    }

    status = ucm_reloc_modify_nodlopen(patch);
    if ((status != UCS_OK) && (ucm_reloc_active_count() == 0)) {
        ucm_reloc_dlopen_remove();
    }
    return status;
}

ucs_status_t ucm_reloc_restore(ucm_reloc_patch_t *patch)
{
    unsigned count;

    pthread_mutex_lock(&ucm_reloc_lock);
    if (!ucm_reloc_is_active(patch)) {
        pthread_mutex_unlock(&ucm_reloc_lock);
        return UCS_ERR_NO_ELEM;
    }
    ucs_list_del(&patch->list);
    count = ucm_reloc_scan(UCM_RELOC_OP_RESTORE, patch, NULL);
    pthread_mutex_unlock(&ucm_reloc_lock);

    ucs_debug("reloc: '%s' restored in %u GOT entries", patch->symbol, count);

    if ((patch != &ucm_reloc_dlopen_patch) &&
        (ucm_reloc_active_count() == 0)) {
        ucm_reloc_dlopen_remove();
    }
    return UCS_OK;
}

void ucm_reloc_apply_all(void)
{
    pthread_mutex_lock(&ucm_reloc_lock);
    ucm_reloc_scan(UCM_RELOC_OP_APPLY, NULL, NULL);
    pthread_mutex_unlock(&ucm_reloc_lock);
}

unsigned ucm_reloc_active_count(void)
{
    const ucm_reloc_patch_t *patch;
    unsigned count = 0;

    pthread_mutex_lock(&ucm_reloc_lock);
    ucs_list_for_each(patch, &ucm_reloc_patches, list) {
        count += (patch != &ucm_reloc_dlopen_patch);
    }
    pthread_mutex_unlock(&ucm_reloc_lock);
    return count;
}

unsigned ucm_reloc_count_unpatched(const ucm_reloc_patch_t *patch)
{
    unsigned count;

    pthread_mutex_lock(&ucm_reloc_lock);
    count = ucm_reloc_scan(UCM_RELOC_OP_COUNT_UNPATCHED, patch, NULL);
    pthread_mutex_unlock(&ucm_reloc_lock);
    return count;
}

unsigned ucm_reloc_count_slots(const char *symbol)
{
    unsigned count;

    pthread_mutex_lock(&ucm_reloc_lock);
    count = ucm_reloc_scan(UCM_RELOC_OP_COUNT_SLOTS, NULL, symbol);
    pthread_mutex_unlock(&ucm_reloc_lock);
    return count;
}
