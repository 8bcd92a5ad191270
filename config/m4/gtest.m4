# UCX_CHECK_GTEST: the unit tests use the system googletest (Debian:
# libgtest-dev), never a bundled copy.
AC_DEFUN([UCX_CHECK_GTEST], [
    have_gtest=no
    ucx_gtest_summary="no (install libgtest-dev to build the tests)"
    AC_LANG_PUSH([C++])
    save_LIBS="$LIBS"
    LIBS="-lgtest $LIBS"
    AC_MSG_CHECKING([for googletest])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <gtest/gtest.h>]],
                                    [[testing::InitGoogleTest(); return RUN_ALL_TESTS();]])],
                   [have_gtest=yes], [])
    AC_MSG_RESULT([$have_gtest])
    LIBS="$save_LIBS"
    AC_LANG_POP([C++])
    AS_IF([test "x$have_gtest" = xyes], [ucx_gtest_summary=yes])
    AM_CONDITIONAL([HAVE_GTEST], [test "x$have_gtest" = xyes])
])
