/**
 * @file bistro_x86_64.h
 * x86_64 instruction decoding for bistro: enough of the instruction set to
 * find the length of the instructions compilers put at function entries,
 * tell which ones depend on where they are (RIP-relative operands, relative
 * branches), and move them elsewhere.
 *
 * The decoder is conservative: anything it does not know is refused, so a
 * function with an unusual entry is left unpatched rather than broken.
 */
#ifndef UCM_BISTRO_BISTRO_X86_64_H_
#define UCM_BISTRO_BISTRO_X86_64_H_

#include <ucs/type/status.h>

#include <stddef.h>
#include <stdint.h>

BEGIN_C_DECLS

/** Longest x86 instruction. */
#define UCM_BISTRO_X86_INSN_MAX        15

/** Length of "jmp *0(%rip)" followed by the 8-byte target. */
#define UCM_BISTRO_X86_ABS_JMP_LEN     14

/** What kind of control transfer an instruction is, if any. */
typedef enum ucm_bistro_x86_branch {
    UCM_BISTRO_X86_BRANCH_NONE,     /**< falls through */
    UCM_BISTRO_X86_BRANCH_JMP,      /**< unconditional relative jump */
    UCM_BISTRO_X86_BRANCH_JCC,      /**< conditional relative jump or loop */
    UCM_BISTRO_X86_BRANCH_CALL      /**< relative call */
} ucm_bistro_x86_branch_t;

/** One decoded instruction. */
typedef struct ucm_bistro_x86_insn {
    uint8_t                 length;      /**< bytes */
    int8_t                  rip_disp;    /**< offset of the 32-bit
                                              displacement of a RIP-relative
                                              operand, or -1 */
    int8_t                  rel_offset;  /**< offset of a relative branch
                                              displacement, or -1 */
    uint8_t                 rel_size;    /**< 1 or 4 when rel_offset >= 0 */
    ucm_bistro_x86_branch_t branch;      /**< relative control transfer */
} ucm_bistro_x86_insn_t;

/**
 * Decode the instruction at @a code.
 *
 * @param code  instruction bytes.
 * @param max   readable bytes at @a code (at least the instruction).
 * @param insn  filled on success.
 * @return UCS_OK; UCS_ERR_UNSUPPORTED for an encoding the decoder does not
 *         know or that is invalid in 64-bit mode; UCS_ERR_BUFFER_TOO_SMALL
 *         when the instruction runs past @a max.
 */
ucs_status_t ucm_bistro_x86_decode(const uint8_t *code, size_t max,
                                   ucm_bistro_x86_insn_t *insn);

/**
 * Copy one instruction from @a src_addr to @a dst_addr (where it will run),
 * writing the bytes into @a dst: RIP-relative displacements are adjusted so
 * the operand addresses the same memory; an unconditional relative jump
 * becomes an absolute jump to the same target. Conditional branches and
 * calls are refused, because the code after them would run from the
 * copy.
 *
 * @param insn      decoded instruction at @a src_addr.
 * @param src_addr  where the instruction is now.
 * @param dst       buffer for the relocated bytes.
 * @param dst_max   its size.
 * @param dst_addr  address the bytes will run at.
 * @param len_p     receives the number of bytes written.
 * @return UCS_OK; UCS_ERR_UNSUPPORTED for a branch that cannot move or a
 *         RIP-relative operand out of +-2 GiB reach of @a dst_addr;
 *         UCS_ERR_BUFFER_TOO_SMALL.
 */
ucs_status_t ucm_bistro_x86_relocate(const ucm_bistro_x86_insn_t *insn,
                                     const uint8_t *src_addr, uint8_t *dst,
                                     size_t dst_max, uintptr_t dst_addr,
                                     size_t *len_p);

/**
 * Write "jmp *0(%rip); .quad target" (UCM_BISTRO_X86_ABS_JMP_LEN bytes).
 */
void ucm_bistro_x86_abs_jmp(uint8_t *dst, uintptr_t target);

END_C_DECLS

#endif
