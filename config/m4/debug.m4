# UCX_CHECK_DEBUG: --enable-debug builds without optimisation and turns on
# internal assertions (UCS_ENABLE_ASSERT); a release build keeps -O3 -g.
AC_DEFUN([UCX_CHECK_DEBUG], [
    AC_ARG_ENABLE([debug],
        [AS_HELP_STRING([--enable-debug], [build with -O0 and internal assertions (default: no)])],
        [], [enable_debug=no])
    AS_IF([test "x$enable_debug" = xyes],
          [BASE_CFLAGS="-O0 -g3"
           AC_DEFINE([UCS_ENABLE_ASSERT], [1], [Enable internal assertions])],
          [BASE_CFLAGS="-O3 -g"])
    AC_SUBST([BASE_CFLAGS])
])
