# UCX_CHECK_SANITIZERS: --enable-asan / --enable-ubsan instrument the
# libraries, modules, tools and tests alike, so one run covers every layer.
AC_DEFUN([UCX_CHECK_SANITIZERS], [
    AC_ARG_ENABLE([asan],
        [AS_HELP_STRING([--enable-asan], [build with AddressSanitizer (default: no)])],
        [], [enable_asan=no])
    AC_ARG_ENABLE([ubsan],
        [AS_HELP_STRING([--enable-ubsan], [build with UndefinedBehaviorSanitizer (default: no)])],
        [], [enable_ubsan=no])
    SAN_FLAGS=""
    AS_IF([test "x$enable_asan" = xyes], [SAN_FLAGS="$SAN_FLAGS -fsanitize=address"])
    AS_IF([test "x$enable_ubsan" = xyes],
          [SAN_FLAGS="$SAN_FLAGS -fsanitize=undefined -fno-sanitize-recover=undefined"])
    AS_IF([test -n "$SAN_FLAGS"],
          [SAN_FLAGS="$SAN_FLAGS -fno-omit-frame-pointer"
           CFLAGS="$CFLAGS $SAN_FLAGS"
           CXXFLAGS="$CXXFLAGS $SAN_FLAGS"
           LDFLAGS="$LDFLAGS $SAN_FLAGS"
           AC_DEFINE([UCS_HAVE_SANITIZER], [1], [Built with a sanitizer])])
    AM_CONDITIONAL([HAVE_SANITIZER], [test -n "$SAN_FLAGS"])
])
