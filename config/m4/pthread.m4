# AX_PTHREAD_SIMPLE: every library here uses threads (logging lock, module
# loader, async progress), so -pthread is mandatory, not optional.
AC_DEFUN([AX_PTHREAD_SIMPLE], [
    AC_CHECK_HEADER([pthread.h], [], [AC_MSG_ERROR([pthread.h is required])])
    CFLAGS="$CFLAGS -pthread"
    CXXFLAGS="$CXXFLAGS -pthread"
    LDFLAGS="$LDFLAGS -pthread"
])
