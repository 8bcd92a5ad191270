#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * x86_64 patching strategies (the reasoning is in docs/hooks.md).
 *
 * OPCODE: the first byte of the function becomes 0xE9, "jmp rel32". The
 * next four bytes are left as they are and serve as the displacement, so
 * the jump lands at func + 5 + (int32 of bytes 1..4), where we place a pad
 * that jumps to the hook. Only one byte changes, and a single byte store
 * is atomic: a thread that already executed the first instruction runs on
 * through bytes that did not change, and a thread arriving at the entry
 * runs either the old instruction or the complete jump. The trampoline
 * holds only the first instruction, relocated, and jumps back to the
 * second. The price: the pad must go at one exact address, which has to
 * be free.
 *
 * JUMP: "jmp rel32" to a pad next to the function, written as one atomic
 * 8- or 16-byte compare-and-swap of the aligned block holding the five
 * bytes. A thread arriving at the entry sees old or new bytes, never a mix.
 * A thread that has executed some but not all of the overwritten
 * instructions would resume inside the jump; this cannot happen when the
 * first instruction is five bytes or longer, and is otherwise a window of a
 * few cycles, which is why OPCODE is preferred.
 *
 * Pads jump through an aligned pointer slot ("jmp *slot(%rip)"), so
 * re-patching with another hook is one atomic pointer store.
 */

#include <ucm/bistro/bistro_int.h>
#include <ucm/bistro/bistro_x86_64.h>

#include <ucs/debug/log.h>

#include <inttypes.h>
#include <string.h>

#if defined(__x86_64__)

/* "jmp rel32" */
#define UCM_BISTRO_X86_JMP_LEN      5
/* "jmp *disp32(%rip)" */
#define UCM_BISTRO_X86_PAD_LEN      6
/* Reach of a 32-bit displacement, less a margin for the size of the code
 * placed there. */
#define UCM_BISTRO_X86_REACH        (0x7fffffffull - 0x10000ull)
/* The trampoline: relocated instructions and the jump back. */
#define UCM_BISTRO_X86_TRAMP_MAX    64

typedef struct {
    ucm_bistro_x86_insn_t insn[UCM_BISTRO_X86_JMP_LEN];
    unsigned              count;
    unsigned              length;   /* bytes covered */
} ucm_bistro_x86_prologue_t;

static void ucm_bistro_x86_log_bytes(const ucm_bistro_restore_point_t *rp,
                                     const char *why)
{
    const uint8_t *p = rp->func;

    ucs_debug("bistro: not patching %s at %p: %s (entry bytes %02x %02x %02x "
              "%02x %02x %02x %02x %02x %02x %02x %02x %02x)", rp->name,
              rp->func, why, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7],
              p[8], p[9], p[10], p[11]);
}

/* Decode whole instructions from the entry until @a min_len bytes are
 * covered. Every one must be movable; an unconditional jump may only be
 * the last. */
static ucs_status_t
ucm_bistro_x86_decode_prologue(ucm_bistro_restore_point_t *rp,
                               unsigned min_len,
                               ucm_bistro_x86_prologue_t *prologue)
{
    const uint8_t *code = rp->func;
    ucm_bistro_x86_insn_t *insn;
    ucs_status_t status;

    prologue->count  = 0;
    prologue->length = 0;
    while (prologue->length < min_len) {
        insn   = &prologue->insn[prologue->count];
        status = ucm_bistro_x86_decode(code + prologue->length,
                                       UCM_BISTRO_X86_INSN_MAX, insn);
        if (status != UCS_OK) {
            ucm_bistro_x86_log_bytes(rp, "unknown instruction encoding");
            return UCS_ERR_UNSUPPORTED;
        }

        if ((insn->branch == UCM_BISTRO_X86_BRANCH_JCC) ||
            (insn->branch == UCM_BISTRO_X86_BRANCH_CALL)) {
            ucm_bistro_x86_log_bytes(rp, "relative call or branch in the "
                                         "bytes to move");
            return UCS_ERR_UNSUPPORTED;
        }

        ++prologue->count;
        prologue->length += insn->length;

        if ((insn->branch == UCM_BISTRO_X86_BRANCH_JMP) &&
            (prologue->length < min_len)) {
            /* What follows the jump is not ours to overwrite. */
            ucm_bistro_x86_log_bytes(rp, "function shorter than the patch");
            return UCS_ERR_UNSUPPORTED;
        }
    }

    return UCS_OK;
}

/* Build the trampoline: the prologue instructions, relocated, then a jump
 * back to the first instruction not moved. */
static ucs_status_t
ucm_bistro_x86_build_trampoline(ucm_bistro_restore_point_t *rp,
                                const ucm_bistro_x86_prologue_t *prologue)
{
    const uint8_t *src = rp->func;
    uint8_t buf[UCM_BISTRO_X86_TRAMP_MAX];
    size_t offset = 0, len;
    ucs_status_t status;
    uint8_t *tramp;
    unsigned i;

    tramp = ucm_bistro_code_alloc(rp->func, UCM_BISTRO_X86_REACH,
                                  sizeof(buf), 16);
    if (tramp == NULL) {
        ucm_bistro_x86_log_bytes(rp, "no code memory within reach");
        return UCS_ERR_NO_MEMORY;
    }

    for (i = 0; i < prologue->count; ++i) {
        status = ucm_bistro_x86_relocate(&prologue->insn[i], src, buf + offset,
                                         sizeof(buf) - offset,
                                         (uintptr_t)tramp + offset, &len);
        if (status != UCS_OK) {
            ucm_bistro_x86_log_bytes(rp, "instruction cannot be relocated");
            return status;
        }
        src    += prologue->insn[i].length;
        offset += len;
    }

    /* After a moved unconditional jump nothing else runs. */
    if (prologue->insn[prologue->count - 1].branch !=
        UCM_BISTRO_X86_BRANCH_JMP) {
        ucm_bistro_x86_abs_jmp(buf + offset, (uintptr_t)src);
        offset += UCM_BISTRO_X86_ABS_JMP_LEN;
    }

    status = ucm_bistro_code_write(tramp, buf, offset);
    if (status != UCS_OK) {
        return status;
    }

    rp->trampoline = tramp;
    return UCS_OK;
}

/* "jmp *slot(%rip)" at @a pad. */
static ucs_status_t ucm_bistro_x86_write_pad(uint8_t *pad, void **slot)
{
    uint8_t buf[UCM_BISTRO_X86_PAD_LEN] = {0xff, 0x25};
    int64_t disp = (int64_t)(uintptr_t)slot -
                   (int64_t)((uintptr_t)pad + UCM_BISTRO_X86_PAD_LEN);
    int32_t disp32;

    if ((disp < INT32_MIN) || (disp > INT32_MAX)) {
        return UCS_ERR_NO_MEMORY;
    }

    disp32 = (int32_t)disp;
    memcpy(buf + 2, &disp32, sizeof(disp32));
    return ucm_bistro_code_write(pad, buf, sizeof(buf));
}

static ucs_status_t ucm_bistro_x86_prepare_opcode(ucm_bistro_restore_point_t *rp)
{
    const uint8_t *code = rp->func;
    ucm_bistro_x86_prologue_t prologue;
    ucs_status_t status;
    int32_t disp;
    intptr_t pad;
    void **slot;

    status = ucm_bistro_x86_decode_prologue(rp, 1, &prologue);
    if (status != UCS_OK) {
        return status;
    }

    if (code[0] == 0xe9) {
        /* Already a rel32 jump: changing nothing would patch nothing. */
        return UCS_ERR_UNSUPPORTED;
    }

    memcpy(&disp, code + 1, sizeof(disp));
    pad = (intptr_t)code + UCM_BISTRO_X86_JMP_LEN + disp;
    if (pad <= 0) {
        return UCS_ERR_INVALID_ADDR;
    }

    status = ucm_bistro_code_alloc_at((void*)pad, UCM_BISTRO_X86_PAD_LEN);
    if (status != UCS_OK) {
        ucs_debug("bistro: %s: pad address 0x%" PRIxPTR " is not free",
                  rp->name, (uintptr_t)pad);
        return status;
    }

    slot = ucm_bistro_code_alloc((void*)pad, UCM_BISTRO_X86_REACH,
                                 sizeof(*slot), sizeof(*slot));
    if (slot == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    status = ucm_bistro_x86_build_trampoline(rp, &prologue);
    if (status != UCS_OK) {
        return status;
    }

    status = ucm_bistro_x86_write_pad((uint8_t*)pad, slot);
    if (status != UCS_OK) {
        return status;
    }

    rp->hook_slot = slot;
    rp->orig[0]   = code[0];
    rp->patch[0]  = 0xe9;
    rp->patch_len = 1;
    rp->strategy  = UCM_BISTRO_STRATEGY_OPCODE;
    ucs_debug("bistro: %s at %p: opcode patch, pad at 0x%" PRIxPTR
              ", first instruction %u bytes", rp->name, rp->func,
              (uintptr_t)pad, prologue.insn[0].length);
    return UCS_OK;
}

static ucs_status_t ucm_bistro_x86_prepare_jump(ucm_bistro_restore_point_t *rp)
{
    const uint8_t *code = rp->func;
    uintptr_t addr      = (uintptr_t)code;
    ucm_bistro_x86_prologue_t prologue;
    ucs_status_t status;
    uint8_t *pad;
    int32_t disp;

    /* The five bytes must sit in one aligned 8- or 16-byte block, which
     * one compare-and-swap replaces. */
    if (((addr & 7) + UCM_BISTRO_X86_JMP_LEN > 8) &&
        ((addr & 15) + UCM_BISTRO_X86_JMP_LEN > 16)) {
        ucm_bistro_x86_log_bytes(rp, "entry crosses a 16-byte boundary "
                                     "within the patch");
        return UCS_ERR_UNSUPPORTED;
    }

    status = ucm_bistro_x86_decode_prologue(rp, UCM_BISTRO_X86_JMP_LEN,
                                            &prologue);
    if (status != UCS_OK) {
        return status;
    }

    /* Pad and its slot together: "jmp *2(%rip)", 2 bytes, the slot. */
    pad = ucm_bistro_code_alloc(code, UCM_BISTRO_X86_REACH, 16, 8);
    if (pad == NULL) {
        ucm_bistro_x86_log_bytes(rp, "no code memory within reach");
        return UCS_ERR_NO_MEMORY;
    }

    status = ucm_bistro_x86_build_trampoline(rp, &prologue);
    if (status != UCS_OK) {
        return status;
    }

    status = ucm_bistro_x86_write_pad(pad, (void**)(pad + 8));
    if (status != UCS_OK) {
        return status;
    }

    disp = (int32_t)((intptr_t)pad - (intptr_t)(addr + UCM_BISTRO_X86_JMP_LEN));
    rp->hook_slot = (void**)(pad + 8);
    rp->patch[0]  = 0xe9;
    memcpy(rp->patch + 1, &disp, sizeof(disp));
    memcpy(rp->orig, code, UCM_BISTRO_X86_JMP_LEN);
    rp->patch_len = UCM_BISTRO_X86_JMP_LEN;
    rp->strategy  = UCM_BISTRO_STRATEGY_JUMP;
    ucs_debug("bistro: %s at %p: jump patch over %u instruction(s)%s",
              rp->name, rp->func, prologue.count,
              (prologue.insn[0].length < UCM_BISTRO_X86_JMP_LEN) ?
              " (a thread preempted inside them while patching is not "
              "protected)" : "");
    return UCS_OK;
}

ucs_status_t ucm_bistro_arch_prepare(ucm_bistro_restore_point_t *rp,
                                     unsigned strategies)
{
    ucs_status_t status = UCS_ERR_UNSUPPORTED;

    if (strategies & UCS_BIT(UCM_BISTRO_STRATEGY_OPCODE)) {
        status = ucm_bistro_x86_prepare_opcode(rp);
        if (status == UCS_OK) {
            return UCS_OK;
        }
    }

    if (strategies & UCS_BIT(UCM_BISTRO_STRATEGY_JUMP)) {
        status = ucm_bistro_x86_prepare_jump(rp);
    }

    return status;
}

/*
 * The patch is swapped in with compare-and-swap instructions written in
 * assembly, not with the __atomic builtins: code bytes are not data of the
 * memory model, and ThreadSanitizer keeps no writable shadow for the code
 * of the modules loaded before it started (libcuda.so.1 of a program linked
 * with -lcuda), so an instrumented atomic write to them crashes inside TSan
 * (reads are fine). A one-byte patch is swapped with its aligned qword.
 */
static int ucm_bistro_x86_cas8(void *ptr, uint64_t expected, uint64_t desired)
{
    uint8_t ok;

    __asm__ __volatile__("lock cmpxchgq %3, %1\n\tsetz %0"
                         : "=q"(ok), "+m"(*(volatile uint64_t*)ptr), "+a"(expected)
                         : "r"(desired)
                         : "memory", "cc");
    return ok;
}

static int ucm_bistro_x86_cas16(void *ptr, uint64_t *expected,
                                const uint64_t *desired)
{
    uint64_t lo = expected[0], hi = expected[1];
    uint8_t ok;

    __asm__ __volatile__("lock cmpxchg16b %1\n\tsetz %0"
                         : "=q"(ok), "+m"(*(volatile uint64_t(*)[2])ptr),
                           "+a"(lo), "+d"(hi)
                         : "b"(desired[0]), "c"(desired[1])
                         : "memory", "cc");
    return ok;
}

ucs_status_t ucm_bistro_arch_write(ucm_bistro_restore_point_t *rp,
                                   const uint8_t *expected,
                                   const uint8_t *bytes)
{
    uintptr_t addr = (uintptr_t)rp->func;
    unsigned len   = rp->patch_len;
    uint64_t old[2], new[2];
    unsigned offset;

    if ((addr & 7) + len <= 8) {
        offset = addr & 7;
        old[0] = __atomic_load_n((uint64_t*)(addr - offset), __ATOMIC_SEQ_CST);
        if (memcmp((uint8_t*)old + offset, expected, len) != 0) {
            return UCS_ERR_BUSY;
        }
        new[0] = old[0];
        memcpy((uint8_t*)new + offset, bytes, len);
        return ucm_bistro_x86_cas8((void*)(addr - offset), old[0], new[0]) ?
               UCS_OK : UCS_ERR_BUSY;
    }

    if ((addr & 15) + len <= 16) {
        offset = addr & 15;
        memcpy(old, (void*)(addr - offset), sizeof(old));
        if (memcmp((uint8_t*)old + offset, expected, len) != 0) {
            return UCS_ERR_BUSY;
        }
        memcpy(new, old, sizeof(new));
        memcpy((uint8_t*)new + offset, bytes, len);
        return ucm_bistro_x86_cas16((void*)(addr - offset), old, new) ?
               UCS_OK : UCS_ERR_BUSY;
    }

    return UCS_ERR_UNSUPPORTED;
}

#endif /* __x86_64__ */
