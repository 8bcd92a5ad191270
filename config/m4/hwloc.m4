# UCX_CHECK_HWLOC: topology (GPU <-> NUMA node) comes from hwloc when present.
AC_DEFUN([UCX_CHECK_HWLOC], [
    AC_ARG_WITH([hwloc],
        [AS_HELP_STRING([--with-hwloc], [use hwloc for topology (default: if found)])],
        [], [with_hwloc=guess])
    have_hwloc=no
    ucx_hwloc_summary=no
    AS_IF([test "x$with_hwloc" != xno], [
        PKG_CHECK_MODULES([HWLOC], [hwloc], [have_hwloc=yes], [
            AS_IF([test "x$with_hwloc" = xyes], [AC_MSG_ERROR([--with-hwloc given but hwloc not found])])])
    ])
    AS_IF([test "x$have_hwloc" = xyes], [
        ucx_hwloc_summary="yes (`$PKG_CONFIG --modversion hwloc`)"
        AC_DEFINE([HAVE_HWLOC], [1], [hwloc available])])
    AM_CONDITIONAL([HAVE_HWLOC], [test "x$have_hwloc" = xyes])
])
