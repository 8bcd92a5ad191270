# UCX_CHECK_FUZZ: --enable-fuzz builds the libFuzzer targets of test/fuzz.
# Every library is compiled with coverage instrumentation for the fuzzer
# (-fsanitize=fuzzer-no-link) and with ASan+UBSan, so that a fuzzed input
# which corrupts memory or hits undefined behaviour anywhere below the parser
# is a crash the fuzzer reports. Needs clang (configure CC=clang CXX=clang++).
# Call after UCX_CHECK_SANITIZERS: the sanitizers it did not add are added.
AC_DEFUN([UCX_CHECK_FUZZ], [
    AC_ARG_ENABLE([fuzz],
        [AS_HELP_STRING([--enable-fuzz],
                        [build the libFuzzer targets in test/fuzz (clang; implies ASan+UBSan) (default: no)])],
        [], [enable_fuzz=no])
    FUZZ_LDFLAGS=""
    AS_IF([test "x$enable_fuzz" = xyes], [
        AC_MSG_CHECKING([whether $CC supports -fsanitize=fuzzer])
        save_CFLAGS="$CFLAGS"
        CFLAGS="$CFLAGS -fsanitize=fuzzer"
        AC_LINK_IFELSE([AC_LANG_SOURCE([[
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return (int)(size & 0) + (data == NULL);
}
]])], [ucx_fuzz_ok=yes], [ucx_fuzz_ok=no])
        CFLAGS="$save_CFLAGS"
        AC_MSG_RESULT([$ucx_fuzz_ok])
        AS_IF([test "x$ucx_fuzz_ok" != xyes],
              [AC_MSG_ERROR([--enable-fuzz needs a compiler with libFuzzer: configure CC=clang CXX=clang++ (Debian: clang, libclang-rt-dev)])])
        ucx_fuzz_flags="-fsanitize=fuzzer-no-link -fno-omit-frame-pointer"
        AS_IF([test "x$enable_asan" != xyes],
              [ucx_fuzz_flags="$ucx_fuzz_flags -fsanitize=address"])
        AS_IF([test "x$enable_ubsan" != xyes],
              [ucx_fuzz_flags="$ucx_fuzz_flags -fsanitize=undefined -fno-sanitize-recover=undefined"])
        CFLAGS="$CFLAGS $ucx_fuzz_flags"
        CXXFLAGS="$CXXFLAGS $ucx_fuzz_flags"
        LDFLAGS="$LDFLAGS $ucx_fuzz_flags"
        FUZZ_LDFLAGS="-fsanitize=fuzzer"
        AC_DEFINE([UCS_HAVE_SANITIZER], [1], [Built with a sanitizer])
    ])
    AC_SUBST([FUZZ_LDFLAGS])
    AM_CONDITIONAL([HAVE_FUZZ], [test "x$enable_fuzz" = xyes])
])
