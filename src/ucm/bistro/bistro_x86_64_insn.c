#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * x86_64 instruction length decoder and relocator.
 *
 * An instruction is: legacy prefixes, an optional REX byte, an opcode of
 * one to three bytes (or a VEX prefix and opcode), an optional ModRM byte
 * with optional SIB byte and displacement, and an optional immediate.
 * What follows the opcode is looked up in the tables below, written from
 * the opcode maps of the architecture manuals. Entries marked X are
 * instructions invalid in 64-bit mode or ones we choose not to move
 * (int3 could be a debugger's breakpoint, hlt and far transfers never
 * start a function); decoding them fails.
 */

#include <ucm/bistro/bistro_x86_64.h>

#include <string.h>

/* Table flags: what follows the opcode. */
#define M     0x01  /* ModRM byte (with SIB and displacement) */
#define I8    0x02  /* 8-bit immediate */
#define IZ    0x04  /* 16-bit immediate with 0x66, else 32-bit */
#define IV    0x08  /* 64-bit with REX.W, 16-bit with 0x66, else 32-bit */
#define I16   0x10  /* 16-bit immediate */
#define R8    0x20  /* 8-bit relative branch displacement */
#define RZ    0x40  /* 32-bit relative branch displacement */
#define X     0x80  /* refused */
#define SP    0x100 /* handled in code */

/* One-byte opcodes. Prefixes, REX and 0x0F never reach the table. */
static const uint16_t ucm_bistro_x86_map1[256] = {
    /* 0x00 */ M,  M,  M,  M,  I8, IZ, X,  X,  M,  M,  M,  M,  I8, IZ, X,  SP,
    /* 0x10 */ M,  M,  M,  M,  I8, IZ, X,  X,  M,  M,  M,  M,  I8, IZ, X,  X,
    /* 0x20 */ M,  M,  M,  M,  I8, IZ, SP, X,  M,  M,  M,  M,  I8, IZ, SP, X,
    /* 0x30 */ M,  M,  M,  M,  I8, IZ, SP, X,  M,  M,  M,  M,  I8, IZ, SP, X,
    /* 0x40 */ SP, SP, SP, SP, SP, SP, SP, SP, SP, SP, SP, SP, SP, SP, SP, SP,
    /* 0x50 */ 0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
    /* 0x60 */ X,  X,  X,  M,  SP, SP, SP, SP, IZ, M|IZ, I8, M|I8, 0, 0, 0, 0,
    /* 0x70 */ R8, R8, R8, R8, R8, R8, R8, R8, R8, R8, R8, R8, R8, R8, R8, R8,
    /* 0x80 */ M|I8, M|IZ, X, M|I8, M, M, M, M, M, M, M, M, M, M, M, M,
    /* 0x90 */ 0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  X,  0,  0,  0,  0,  0,
    /* 0xa0 */ SP, SP, SP, SP, 0,  0,  0,  0,  I8, IZ, 0,  0,  0,  0,  0,  0,
    /* 0xb0 */ I8, I8, I8, I8, I8, I8, I8, I8, IV, IV, IV, IV, IV, IV, IV, IV,
    /* 0xc0 */ M|I8, M|I8, I16, 0, SP, SP, M|I8, M|IZ, I16|I8, 0, I16, 0,
               X,  X,  X,  X,
    /* 0xd0 */ M,  M,  M,  M,  X,  X,  X,  0,  M,  M,  M,  M,  M,  M,  M,  M,
    /* 0xe0 */ R8, R8, R8, R8, I8, I8, I8, I8, RZ, RZ, X,  R8, 0,  0,  0,  0,
    /* 0xf0 */ SP, X,  SP, SP, X,  0,  SP, SP, 0,  0,  0,  0,  0,  0,  M,  M
};

/* Two-byte opcodes 0x0F xx. 0x38 and 0x3A lead to three-byte maps. */
static const uint16_t ucm_bistro_x86_map2[256] = {
    /* 0x00 */ M,  M,  M,  M,  X,  0,  0,  0,  0,  0,  X,  X,  X,  M,  0,  X,
    /* 0x10 */ M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,
    /* 0x20 */ M,  M,  M,  M,  X,  X,  X,  X,  M,  M,  M,  M,  M,  M,  M,  M,
    /* 0x30 */ 0,  0,  0,  0,  0,  0,  X,  0,  SP, X,  SP, X,  X,  X,  X,  X,
    /* 0x40 */ M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,
    /* 0x50 */ M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,
    /* 0x60 */ M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,
    /* 0x70 */ M|I8, M|I8, M|I8, M|I8, M, M, M, 0, M, M, X, X, M, M, M, M,
    /* 0x80 */ RZ, RZ, RZ, RZ, RZ, RZ, RZ, RZ, RZ, RZ, RZ, RZ, RZ, RZ, RZ, RZ,
    /* 0x90 */ M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,
    /* 0xa0 */ 0,  0,  0,  M,  M|I8, M, X, X, 0, 0, 0,  M,  M|I8, M, M, M,
    /* 0xb0 */ M,  M,  M,  M,  M,  M,  M,  M,  M,  X,  M|I8, M, M, M, M, M,
    /* 0xc0 */ M,  M,  M|I8, M, M|I8, M|I8, M|I8, M, 0, 0, 0, 0, 0, 0, 0, 0,
    /* 0xd0 */ M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,
    /* 0xe0 */ M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,
    /* 0xf0 */ M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  M,  X
};

/* Decoding state of one instruction. */
typedef struct {
    const uint8_t *code;
    size_t        max;
    size_t        pos;
    int           opsize16;   /* 0x66 prefix */
    int           rex_w;
} ucm_bistro_x86_cursor_t;

static int ucm_bistro_x86_next(ucm_bistro_x86_cursor_t *c, uint8_t *byte)
{
    if ((c->pos >= c->max) || (c->pos >= UCM_BISTRO_X86_INSN_MAX)) {
        return 0;
    }

    *byte = c->code[c->pos++];
    return 1;
}

/* ModRM, SIB and displacement. Records where a RIP-relative displacement
 * is. Returns the ModRM byte, or -1 when the bytes run out. */
static int ucm_bistro_x86_modrm(ucm_bistro_x86_cursor_t *c,
                                ucm_bistro_x86_insn_t *insn)
{
    uint8_t modrm, sib, mod, rm;
    size_t disp = 0;

    if (!ucm_bistro_x86_next(c, &modrm)) {
        return -1;
    }

    mod = modrm >> 6;
    rm  = modrm & 7;
    if (mod != 3) {
        if (rm == 4) {
            if (!ucm_bistro_x86_next(c, &sib)) {
                return -1;
            }
            /* Base 101 with mod 00 is a 32-bit absolute displacement, not
             * RIP-relative: SIB addressing never involves RIP. */
            if ((mod == 0) && ((sib & 7) == 5)) {
                disp = 4;
            }
        } else if ((mod == 0) && (rm == 5)) {
            insn->rip_disp = (int8_t)c->pos;
            disp           = 4;
        }

        if (mod == 1) {
            disp = 1;
        } else if (mod == 2) {
            disp = 4;
        }
    }

    c->pos += disp;
    return modrm;
}

/* VEX-encoded instruction, from the byte after C4/C5. */
static ucs_status_t ucm_bistro_x86_vex(ucm_bistro_x86_cursor_t *c,
                                       uint8_t vex, ucm_bistro_x86_insn_t *insn,
                                       size_t *imm)
{
    uint8_t byte, opcode, map;

    if (!ucm_bistro_x86_next(c, &byte)) {
        return UCS_ERR_BUFFER_TOO_SMALL;
    }

    if (vex == 0xc5) {
        map = 1;
    } else {
        map = byte & 0x1f;
        if (!ucm_bistro_x86_next(c, &byte)) {
            return UCS_ERR_BUFFER_TOO_SMALL;
        }
    }

    if (!ucm_bistro_x86_next(c, &opcode)) {
        return UCS_ERR_BUFFER_TOO_SMALL;
    }

    switch (map) {
    case 1:
        /* vzeroupper/vzeroall have no ModRM. */
        if (opcode == 0x77) {
            return UCS_OK;
        }
        *imm = (((opcode >= 0x70) && (opcode <= 0x73)) || (opcode == 0xc2) ||
                ((opcode >= 0xc4) && (opcode <= 0xc6))) ? 1 : 0;
        break;
    case 2:
        *imm = 0;
        break;
    case 3:
        *imm = 1;
        break;
    default:
        return UCS_ERR_UNSUPPORTED;
    }

    return (ucm_bistro_x86_modrm(c, insn) < 0) ? UCS_ERR_BUFFER_TOO_SMALL :
           UCS_OK;
}

/* Size of the immediate an opcode's table flags ask for. */
static size_t ucm_bistro_x86_imm_size(const ucm_bistro_x86_cursor_t *c,
                                      uint16_t flags)
{
    size_t size = 0;

    if (flags & I8) {
        size += 1;
    }
    if (flags & I16) {
        size += 2;
    }
    if (flags & IZ) {
        size += (c->opsize16 && !c->rex_w) ? 2 : 4;
    }
    if (flags & IV) {
        size += c->rex_w ? 8 : (c->opsize16 ? 2 : 4);
    }
    return size;
}

ucs_status_t ucm_bistro_x86_decode(const uint8_t *code, size_t max,
                                   ucm_bistro_x86_insn_t *insn)
{
    ucm_bistro_x86_cursor_t c = {code, max, 0, 0, 0};
    uint8_t byte, opcode;
    ucs_status_t status;
    int modrm, one_byte_map = 0;
    uint16_t flags;
    size_t imm = 0;

    insn->rip_disp   = -1;
    insn->rel_offset = -1;
    insn->rel_size   = 0;
    insn->branch     = UCM_BISTRO_X86_BRANCH_NONE;

    /* Legacy prefixes. */
    for (;;) {
        if (!ucm_bistro_x86_next(&c, &byte)) {
            return UCS_ERR_BUFFER_TOO_SMALL;
        }

        if (byte == 0x66) {
            c.opsize16 = 1;
        } else if (byte == 0x67) {
            /* 32-bit addressing changes what ModRM means for RIP; never
             * seen in entry code, so not worth handling. */
            return UCS_ERR_UNSUPPORTED;
        } else if ((byte != 0xf0) && (byte != 0xf2) && (byte != 0xf3) &&
                   (byte != 0x2e) && (byte != 0x3e) && (byte != 0x26) &&
                   (byte != 0x36) && (byte != 0x64) && (byte != 0x65)) {
            break;
        }
    }

    /* REX must come right before the opcode. */
    if ((byte & 0xf0) == 0x40) {
        c.rex_w = !!(byte & 0x08);
        if (!ucm_bistro_x86_next(&c, &byte)) {
            return UCS_ERR_BUFFER_TOO_SMALL;
        }
        if (((byte & 0xf0) == 0x40) || (byte == 0x66) || (byte == 0xf2) ||
            (byte == 0xf3) || (byte == 0xf0)) {
            return UCS_ERR_UNSUPPORTED;
        }
    }
    opcode = byte;

    if ((opcode == 0xc4) || (opcode == 0xc5)) {
        if (c.rex_w) {
            return UCS_ERR_UNSUPPORTED; /* REX before VEX is invalid */
        }
        status = ucm_bistro_x86_vex(&c, opcode, insn, &imm);
        if (status != UCS_OK) {
            return status;
        }
        c.pos += imm;
        goto out;
    }

    if (opcode == 0x0f) {
        if (!ucm_bistro_x86_next(&c, &opcode)) {
            return UCS_ERR_BUFFER_TOO_SMALL;
        }

        if ((opcode == 0x38) || (opcode == 0x3a)) {
            /* Three-byte maps: every opcode has ModRM, 0F 3A adds imm8. */
            if (!ucm_bistro_x86_next(&c, &byte)) {
                return UCS_ERR_BUFFER_TOO_SMALL;
            }
            flags = M | ((opcode == 0x3a) ? I8 : 0);
        } else {
            flags = ucm_bistro_x86_map2[opcode];
            if (flags & RZ) {
                insn->branch = UCM_BISTRO_X86_BRANCH_JCC;
            }
        }
    } else {
        one_byte_map = 1;
        flags        = ucm_bistro_x86_map1[opcode];
        if (flags & SP) {
            switch (opcode) {
            case 0xa0: case 0xa1: case 0xa2: case 0xa3:
                /* mov with a 64-bit absolute address */
                flags = 0;
                imm   = 8;
                break;
            case 0xf6:
            case 0xf7:
                /* test r/m, imm (reg field 0 or 1) has an immediate; the
                 * other forms of this group do not. */
                if ((c.pos >= max) || (((code[c.pos] >> 3) & 7) > 1)) {
                    flags = M;
                } else {
                    flags = M | ((opcode == 0xf6) ? I8 : IZ);
                }
                break;
            default:
                /* A prefix after the opcode position, or 0x0F handled
                 * above: not a valid instruction start here. */
                return UCS_ERR_UNSUPPORTED;
            }
        }

        if ((opcode >= 0x70) && (opcode <= 0x7f)) {
            insn->branch = UCM_BISTRO_X86_BRANCH_JCC;
        } else if ((opcode >= 0xe0) && (opcode <= 0xe3)) {
            insn->branch = UCM_BISTRO_X86_BRANCH_JCC;
        } else if (opcode == 0xe8) {
            insn->branch = UCM_BISTRO_X86_BRANCH_CALL;
        } else if ((opcode == 0xe9) || (opcode == 0xeb)) {
            insn->branch = UCM_BISTRO_X86_BRANCH_JMP;
        }
    }

    if (flags & X) {
        return UCS_ERR_UNSUPPORTED;
    }

    if (flags & M) {
        modrm = ucm_bistro_x86_modrm(&c, insn);
        if (modrm < 0) {
            return UCS_ERR_BUFFER_TOO_SMALL;
        }
        /* xbegin (C7 F8) carries a relative displacement. */
        if (one_byte_map && (opcode == 0xc7) && (modrm == 0xf8)) {
            return UCS_ERR_UNSUPPORTED;
        }
    }

    if (flags & (R8 | RZ)) {
        /* An operand-size prefix makes a near branch 16-bit on some CPUs
         * and not on others. */
        if (c.opsize16) {
            return UCS_ERR_UNSUPPORTED;
        }
        insn->rel_offset = (int8_t)c.pos;
        insn->rel_size   = (flags & R8) ? 1 : 4;
        c.pos           += insn->rel_size;
    }

    c.pos += imm + ucm_bistro_x86_imm_size(&c, flags);

out:
    if ((c.pos > max) || (c.pos > UCM_BISTRO_X86_INSN_MAX)) {
        return UCS_ERR_BUFFER_TOO_SMALL;
    }

    insn->length = (uint8_t)c.pos;
    return UCS_OK;
}

void ucm_bistro_x86_abs_jmp(uint8_t *dst, uintptr_t target)
{
    static const uint8_t jmp_rip[6] = {0xff, 0x25, 0, 0, 0, 0};

    memcpy(dst, jmp_rip, sizeof(jmp_rip));
    memcpy(dst + sizeof(jmp_rip), &target, sizeof(target));
}

static int64_t ucm_bistro_x86_read_rel(const uint8_t *p, unsigned size)
{
    int32_t rel32;

    if (size == 1) {
        return (int8_t)p[0];
    }

    memcpy(&rel32, p, sizeof(rel32));
    return rel32;
}

ucs_status_t ucm_bistro_x86_relocate(const ucm_bistro_x86_insn_t *insn,
                                     const uint8_t *src_addr, uint8_t *dst,
                                     size_t dst_max, uintptr_t dst_addr,
                                     size_t *len_p)
{
    uintptr_t next = (uintptr_t)src_addr + insn->length;
    int64_t disp;
    int32_t disp32;

    if (insn->branch == UCM_BISTRO_X86_BRANCH_JMP) {
        if (dst_max < UCM_BISTRO_X86_ABS_JMP_LEN) {
            return UCS_ERR_BUFFER_TOO_SMALL;
        }
        disp = ucm_bistro_x86_read_rel(src_addr + insn->rel_offset,
                                       insn->rel_size);
        ucm_bistro_x86_abs_jmp(dst, next + disp);
        *len_p = UCM_BISTRO_X86_ABS_JMP_LEN;
        return UCS_OK;
    }

    if (insn->branch != UCM_BISTRO_X86_BRANCH_NONE) {
        /* The instructions after a moved call or conditional branch would
         * run from the copy with no way back into the function. */
        return UCS_ERR_UNSUPPORTED;
    }

    if (dst_max < insn->length) {
        return UCS_ERR_BUFFER_TOO_SMALL;
    }

    memcpy(dst, src_addr, insn->length);
    if (insn->rip_disp >= 0) {
        /* The operand is at next + disp; from the copy it must still be. */
        memcpy(&disp32, src_addr + insn->rip_disp, sizeof(disp32));
        disp = (int64_t)(next + disp32) -
               (int64_t)(dst_addr + insn->length);
        if ((disp < INT32_MIN) || (disp > INT32_MAX)) {
            return UCS_ERR_UNSUPPORTED;
        }
        disp32 = (int32_t)disp;
        memcpy(dst + insn->rip_disp, &disp32, sizeof(disp32));
    }

    *len_p = insn->length;
    return UCS_OK;
}
