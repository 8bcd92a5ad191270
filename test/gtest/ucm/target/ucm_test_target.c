#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * Functions for the bistro and reloc tests, loaded with dlopen().
 *
 * The bistro targets are written in assembly so that their first
 * instructions are exactly the ones a test means to patch (a compiler
 * would choose its own); each documents its entry and what it returns.
 * One target is plain C, to patch whatever the compiler emitted.
 */
#include <dlfcn.h>
#include <sys/types.h>
#include <unistd.h>

#if defined(__x86_64__)
__asm__(
    "    .section .data\n"
    "    .p2align 2\n"
    "ucm_test_target_seven:\n"          /* local: reached RIP-relative */
    "    .long 7\n"
    "    .text\n"

    /* The entry of libcuda's API functions: push %rbp; mov %rsp,%rbp;
     * push %r12; sub $8,%rsp; a 10-byte cmpl with a RIP-relative operand.
     * Returns 2x+1. */
    "    .globl ucm_test_target_cuda_like\n"
    "    .type ucm_test_target_cuda_like, @function\n"
    "    .p2align 4\n"
    "ucm_test_target_cuda_like:\n"
    "    push %rbp\n"
    "    mov %rsp, %rbp\n"
    "    push %r12\n"
    "    sub $0x8, %rsp\n"
    "    cmpl $0x12345678, ucm_test_target_seven(%rip)\n"
    "    lea 1(%rdi,%rdi), %eax\n"
    "    add $0x8, %rsp\n"
    "    pop %r12\n"
    "    pop %rbp\n"
    "    ret\n"
    "    .size ucm_test_target_cuda_like, .-ucm_test_target_cuda_like\n"

    /* The same entry, for the thread-safety test. Returns 2x+1. */
    "    .globl ucm_test_target_hammer_opcode\n"
    "    .type ucm_test_target_hammer_opcode, @function\n"
    "    .p2align 4\n"
    "ucm_test_target_hammer_opcode:\n"
    "    push %rbp\n"
    "    mov %rsp, %rbp\n"
    "    push %r12\n"
    "    sub $0x8, %rsp\n"
    "    cmpl $0x12345678, ucm_test_target_seven(%rip)\n"
    "    lea 1(%rdi,%rdi), %eax\n"
    "    add $0x8, %rsp\n"
    "    pop %r12\n"
    "    pop %rbp\n"
    "    ret\n"
    "    .size ucm_test_target_hammer_opcode, .-ucm_test_target_hammer_opcode\n"

    /* For the test that takes the opcode pad's address away: bytes 1..4
     * unlike any other target's, so its pad page is not shared with
     * theirs. Returns 2x+1. */
    "    .globl ucm_test_target_fallback\n"
    "    .type ucm_test_target_fallback, @function\n"
    "    .p2align 4\n"
    "ucm_test_target_fallback:\n"
    "    push %rbx\n"
    "    mov %rdi, %rbx\n"
    "    lea 1(%rbx,%rbx), %eax\n"
    "    pop %rbx\n"
    "    ret\n"
    "    .size ucm_test_target_fallback, .-ucm_test_target_fallback\n"

    /* First instruction RIP-relative and 6 bytes long. Returns x+7, so a
     * wrongly relocated displacement reads another value. */
    "    .globl ucm_test_target_rip_first\n"
    "    .type ucm_test_target_rip_first, @function\n"
    "    .p2align 4\n"
    "ucm_test_target_rip_first:\n"
    "    mov ucm_test_target_seven(%rip), %eax\n"
    "    add %edi, %eax\n"
    "    ret\n"
    "    .size ucm_test_target_rip_first, .-ucm_test_target_rip_first\n"

    /* The same, for the thread-safety test of the jump strategy. */
    "    .globl ucm_test_target_hammer_jump\n"
    "    .type ucm_test_target_hammer_jump, @function\n"
    "    .p2align 4\n"
    "ucm_test_target_hammer_jump:\n"
    "    mov ucm_test_target_seven(%rip), %eax\n"
    "    add %edi, %eax\n"
    "    ret\n"
    "    .size ucm_test_target_hammer_jump, .-ucm_test_target_hammer_jump\n"

    /* The entry gcc emits with -fcf-protection. Returns 3x. */
    "    .globl ucm_test_target_endbr\n"
    "    .type ucm_test_target_endbr, @function\n"
    "    .p2align 4\n"
    "ucm_test_target_endbr:\n"
    "    endbr64\n"
    "    push %rbp\n"
    "    mov %rsp, %rbp\n"
    "    lea (%rdi,%rdi,2), %eax\n"
    "    pop %rbp\n"
    "    ret\n"
    "    .size ucm_test_target_endbr, .-ucm_test_target_endbr\n"

    /* A conditional branch within the first five bytes. Returns 5 for
     * x != 0, else 9. */
    "    .globl ucm_test_target_jcc_early\n"
    "    .type ucm_test_target_jcc_early, @function\n"
    "    .p2align 4\n"
    "ucm_test_target_jcc_early:\n"
    "    test %edi, %edi\n"
    "    je 1f\n"
    "    mov $5, %eax\n"
    "    ret\n"
    "1:  mov $9, %eax\n"
    "    ret\n"
    "    .size ucm_test_target_jcc_early, .-ucm_test_target_jcc_early\n"

    /* The same, to be patched successfully: restore points live on, so
     * the refused one must stay a function that is never patched. */
    "    .globl ucm_test_target_jcc_early_ok\n"
    "    .type ucm_test_target_jcc_early_ok, @function\n"
    "    .p2align 4\n"
    "ucm_test_target_jcc_early_ok:\n"
    "    test %edi, %edi\n"
    "    je 1f\n"
    "    mov $5, %eax\n"
    "    ret\n"
    "1:  mov $9, %eax\n"
    "    ret\n"
    "    .size ucm_test_target_jcc_early_ok, .-ucm_test_target_jcc_early_ok\n"

    /* A relative call as the first instruction. Returns x+4. */
    "    .globl ucm_test_target_call_first\n"
    "    .type ucm_test_target_call_first, @function\n"
    "    .p2align 4\n"
    "ucm_test_target_call_first:\n"
    "    call 1f\n"
    "    ret\n"
    "1:  lea 4(%rdi), %eax\n"
    "    ret\n"
    "    .size ucm_test_target_call_first, .-ucm_test_target_call_first\n"
);
#endif

int ucm_test_target_c_offset = 11;

int ucm_test_target_c(int x);
int ucm_test_target_call_getppid(void);
void *ucm_test_target_dlopen(const char *name);

/* Whatever the compiler makes of it. Returns 5x + 11. */
int ucm_test_target_c(int x)
{
    return (x * 5) + ucm_test_target_c_offset;
}

/* A call to libc through this object's PLT/GOT, for the reloc tests. */
int ucm_test_target_call_getppid(void)
{
    return (int)getppid();
}

/* dlopen() from this object, whose DT_RUNPATH (or DT_RPATH) names the
 * directory of the test libraries: a bare name is found only through it.
 * Not a tail call: at -O2 the compiler would make it a jump, and dlopen()
 * would then see our caller (the test binary, whose run path lacks the
 * test libraries) as the caller, with glibc's loader as with our hook. */
void *ucm_test_target_dlopen(const char *name)
{
    void *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);

    __asm__ __volatile__("" ::: "memory");
    return handle;
}
