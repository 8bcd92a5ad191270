# UCX_CHECK_VERBS: rdma-core's libibverbs, for the verbs transport to come.
AC_DEFUN([UCX_CHECK_VERBS], [
    AC_ARG_WITH([verbs],
        [AS_HELP_STRING([--with-verbs], [use rdma-core libibverbs (default: if found)])],
        [], [with_verbs=guess])
    have_verbs=no
    ucx_verbs_summary=no
    AS_IF([test "x$with_verbs" != xno], [
        AC_CHECK_HEADER([infiniband/verbs.h], [
            AC_CHECK_LIB([ibverbs], [ibv_get_device_list], [have_verbs=yes])])
        AS_IF([test "x$have_verbs" != xyes && test "x$with_verbs" = xyes],
              [AC_MSG_ERROR([--with-verbs given but libibverbs not found])])
    ])
    AS_IF([test "x$have_verbs" = xyes], [
        ucx_verbs_summary=yes
        VERBS_LIBS="-libverbs"
        AC_DEFINE([HAVE_VERBS], [1], [libibverbs available])])
    AC_SUBST([VERBS_LIBS])
    AM_CONDITIONAL([HAVE_VERBS], [test "x$have_verbs" = xyes])
])
