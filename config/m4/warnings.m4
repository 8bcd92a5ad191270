# UCX_CHECK_WARNINGS: the warning set every C file is held to; --enable-werror
# (used by CI) turns them into errors.
AC_DEFUN([UCX_CHECK_WARNINGS], [
    AC_ARG_ENABLE([werror],
        [AS_HELP_STRING([--enable-werror], [treat compiler warnings as errors (default: no)])],
        [], [enable_werror=no])
    WARN_CFLAGS="-Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -Wshadow -Wpointer-arith -Wmissing-prototypes -Wstrict-prototypes"
    # -Wno-mismatched-tags: googletest's TEST(ucp_config, ...) declares a class
    # named like the C API's struct ucp_config; clang warns about a Microsoft
    # ABI detail that does not apply here (gcc ignores the option).
    WARN_CXXFLAGS="-Wall -Wno-unused-parameter -Wno-missing-field-initializers -Wno-mismatched-tags"
    AS_IF([test "x$enable_werror" = xyes],
          [WARN_CFLAGS="$WARN_CFLAGS -Werror"
           WARN_CXXFLAGS="$WARN_CXXFLAGS -Werror"])
    AC_SUBST([WARN_CFLAGS])
    AC_SUBST([WARN_CXXFLAGS])
])
