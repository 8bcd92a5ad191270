/*
 * The x86_64 instruction decoder of bistro, on encodings met at function
 * entries (libcuda's, gcc's at -O0..-O3, with and without
 * -fcf-protection), and on those it must refuse.
 */
#include <gtest/gtest.h>

#if defined(__x86_64__)

#include <ucm/bistro/bistro_x86_64.h>

#include <cstring>
#include <vector>

namespace {

struct decode_case {
    const char           *what;
    std::vector<uint8_t> bytes;
    unsigned             length;
    int                  rip_disp;   /* -1: none */
    int                  branch;     /* ucm_bistro_x86_branch_t */
};

const decode_case g_known[] = {
    {"push %rbp", {0x55}, 1, -1, 0},
    {"push %r12", {0x41, 0x54}, 2, -1, 0},
    {"mov %rsp,%rbp", {0x48, 0x89, 0xe5}, 3, -1, 0},
    {"sub $0x8,%rsp", {0x48, 0x83, 0xec, 0x08}, 4, -1, 0},
    {"sub $0x1000,%rsp", {0x48, 0x81, 0xec, 0x00, 0x10, 0x00, 0x00}, 7, -1,
     0},
    {"cmpl $imm32,disp(%rip) (libcuda)",
     {0x81, 0x3d, 0x11, 0x22, 0x33, 0x44, 0x78, 0x56, 0x34, 0x12}, 10, 2, 0},
    {"cmpl $0,disp(%rip)", {0x83, 0x3d, 1, 2, 3, 4, 0x00}, 7, 2, 0},
    {"endbr64", {0xf3, 0x0f, 0x1e, 0xfa}, 4, -1, 0},
    {"mov disp(%rip),%rax", {0x48, 0x8b, 0x05, 1, 2, 3, 4}, 7, 3, 0},
    {"lea disp(%rip),%rdi", {0x48, 0x8d, 0x3d, 1, 2, 3, 4}, 7, 3, 0},
    {"mov %fs:0x28,%rax", {0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0}, 9,
     -1, 0},
    {"mov %rdi,-0x18(%rbp)", {0x48, 0x89, 0x7d, 0xe8}, 4, -1, 0},
    {"mov %edi,-0x14(%rbp)", {0x89, 0x7d, 0xec}, 3, -1, 0},
    {"movq $0,0x10(%rsp,%rax,8)",
     {0x48, 0xc7, 0x44, 0xc4, 0x10, 0, 0, 0, 0}, 9, -1, 0},
    {"movabs $imm64,%rax", {0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8}, 10, -1, 0},
    {"mov $imm32,%eax", {0xb8, 1, 2, 3, 4}, 5, -1, 0},
    {"mov $imm16,%ax", {0x66, 0xb8, 1, 2}, 4, -1, 0},
    {"xor %eax,%eax", {0x31, 0xc0}, 2, -1, 0},
    {"test %edi,%edi", {0x85, 0xff}, 2, -1, 0},
    {"testb $1,(%rdi)", {0xf6, 0x07, 0x01}, 3, -1, 0},
    {"testl $imm32,(%rdi)", {0xf7, 0x07, 1, 2, 3, 4}, 6, -1, 0},
    {"neg %eax", {0xf7, 0xd8}, 2, -1, 0},
    {"push $imm8", {0x6a, 0x10}, 2, -1, 0},
    {"nopw 0x0(%rax,%rax,1)", {0x66, 0x0f, 0x1f, 0x44, 0, 0}, 6, -1, 0},
    {"movzbl (%rdi),%eax", {0x0f, 0xb6, 0x07}, 3, -1, 0},
    {"movaps %xmm0,-0x40(%rbp)", {0x0f, 0x29, 0x45, 0xc0}, 4, -1, 0},
    {"pshufd $0,%xmm0,%xmm1", {0x66, 0x0f, 0x70, 0xc8, 0x00}, 5, -1, 0},
    {"pshufb disp(%rip),%xmm0",
     {0x66, 0x0f, 0x38, 0x00, 0x05, 1, 2, 3, 4}, 9, 5, 0},
    {"vmovdqu (%rsi),%ymm0", {0xc5, 0xfe, 0x6f, 0x06}, 4, -1, 0},
    {"vpxor disp(%rip),%ymm0,%ymm0 (3-byte VEX)",
     {0xc4, 0xe1, 0x7d, 0xef, 0x05, 1, 2, 3, 4}, 9, 5, 0},
    {"vzeroupper", {0xc5, 0xf8, 0x77}, 3, -1, 0},
    {"jmp *disp(%rip)", {0xff, 0x25, 1, 2, 3, 4}, 6, 2, 0},
    {"ret", {0xc3}, 1, -1, 0},
    {"jmp rel32", {0xe9, 1, 2, 3, 4}, 5, -1, UCM_BISTRO_X86_BRANCH_JMP},
    {"jmp rel8", {0xeb, 0x10}, 2, -1, UCM_BISTRO_X86_BRANCH_JMP},
    {"je rel8", {0x74, 0x10}, 2, -1, UCM_BISTRO_X86_BRANCH_JCC},
    {"jne rel32", {0x0f, 0x85, 1, 2, 3, 4}, 6, -1, UCM_BISTRO_X86_BRANCH_JCC},
    {"call rel32", {0xe8, 1, 2, 3, 4}, 5, -1, UCM_BISTRO_X86_BRANCH_CALL},
    {"lock cmpxchg %ecx,(%rdx)", {0xf0, 0x0f, 0xb1, 0x0a}, 4, -1, 0},
};

const std::vector<uint8_t> g_refused[] = {
    {0xcc},                    /* int3: perhaps a debugger's breakpoint */
    {0x0f, 0x0b},              /* ud2 */
    {0x67, 0x8b, 0x05, 0, 0, 0, 0}, /* 32-bit addressing */
    {0x62, 0xf1, 0x7c, 0x48, 0x10, 0x06}, /* EVEX */
    {0xc7, 0xf8, 0, 0, 0, 0},  /* xbegin: relative */
    {0x06},                    /* invalid in 64-bit mode */
    {0x48, 0x48, 0x89, 0xe5},  /* two REX prefixes */
    {0xf4},                    /* hlt */
};

} // namespace

TEST(ucm_bistro_decode, lengths_of_entry_instructions)
{
    for (const decode_case &c : g_known) {
        std::vector<uint8_t> buf = c.bytes;
        buf.resize(32, 0x90);
        ucm_bistro_x86_insn_t insn;

        ASSERT_EQ(UCS_OK, ucm_bistro_x86_decode(buf.data(), buf.size(),
                                                &insn)) << c.what;
        EXPECT_EQ(c.length, insn.length) << c.what;
        EXPECT_EQ(c.rip_disp, insn.rip_disp) << c.what;
        EXPECT_EQ(c.branch, (int)insn.branch) << c.what;
    }
}

TEST(ucm_bistro_decode, refuses_unknown_or_unsafe_encodings)
{
    for (const std::vector<uint8_t> &bytes : g_refused) {
        std::vector<uint8_t> buf = bytes;
        buf.resize(32, 0x90);
        ucm_bistro_x86_insn_t insn;

        EXPECT_NE(UCS_OK, ucm_bistro_x86_decode(buf.data(), buf.size(), &insn))
                << "first byte 0x" << std::hex << (int)bytes[0];
    }
}

TEST(ucm_bistro_decode, truncated_instruction_is_reported)
{
    const uint8_t bytes[] = {0x48, 0x8b, 0x05, 1, 2};
    ucm_bistro_x86_insn_t insn;

    EXPECT_EQ(UCS_ERR_BUFFER_TOO_SMALL,
              ucm_bistro_x86_decode(bytes, sizeof(bytes), &insn));
}

TEST(ucm_bistro_decode, relocated_rip_operand_addresses_the_same_memory)
{
    /* mov disp(%rip),%rax at src, moved 0x1000 bytes down. */
    uint8_t src[16] = {0x48, 0x8b, 0x05, 0x10, 0x00, 0x00, 0x00};
    uint8_t dst[16];
    ucm_bistro_x86_insn_t insn;
    size_t len;
    int32_t disp;

    ASSERT_EQ(UCS_OK, ucm_bistro_x86_decode(src, sizeof(src), &insn));
    uintptr_t dst_addr = (uintptr_t)src - 0x1000;
    ASSERT_EQ(UCS_OK, ucm_bistro_x86_relocate(&insn, src, dst, sizeof(dst),
                                              dst_addr, &len));
    ASSERT_EQ(7u, len);
    memcpy(&disp, dst + 3, sizeof(disp));
    EXPECT_EQ((uintptr_t)src + 7 + 0x10, dst_addr + 7 + (intptr_t)disp);
}

TEST(ucm_bistro_decode, relocation_out_of_reach_is_refused)
{
    uint8_t src[16] = {0x48, 0x8b, 0x05, 0x00, 0x00, 0x00, 0x00};
    uint8_t dst[16];
    ucm_bistro_x86_insn_t insn;
    size_t len;

    ASSERT_EQ(UCS_OK, ucm_bistro_x86_decode(src, sizeof(src), &insn));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              ucm_bistro_x86_relocate(&insn, src, dst, sizeof(dst),
                                      (uintptr_t)src + (5ull << 30), &len));
}

TEST(ucm_bistro_decode, moved_jump_keeps_its_target_and_calls_are_refused)
{
    uint8_t jmp[16] = {0xeb, 0x10};
    uint8_t call[16] = {0xe8, 0, 0, 0, 0};
    uint8_t dst[32];
    ucm_bistro_x86_insn_t insn;
    uintptr_t target;
    size_t len;

    ASSERT_EQ(UCS_OK, ucm_bistro_x86_decode(jmp, sizeof(jmp), &insn));
    ASSERT_EQ(UCS_OK, ucm_bistro_x86_relocate(&insn, jmp, dst, sizeof(dst),
                                              (uintptr_t)dst, &len));
    ASSERT_EQ((size_t)UCM_BISTRO_X86_ABS_JMP_LEN, len);
    memcpy(&target, dst + 6, sizeof(target));
    EXPECT_EQ((uintptr_t)jmp + 2 + 0x10, target);

    ASSERT_EQ(UCS_OK, ucm_bistro_x86_decode(call, sizeof(call), &insn));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              ucm_bistro_x86_relocate(&insn, call, dst, sizeof(dst),
                                      (uintptr_t)dst, &len));
}

#endif /* __x86_64__ */
