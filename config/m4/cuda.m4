# UCX_CHECK_CUDA: finds the CUDA toolkit's driver API header and library.
# Only the modules in src/ucm/cuda and src/uct/cuda (and test/cudasim) use it,
# so the core libraries build identically with or without CUDA.
# Each API family is detected on its own, so hooks for functions an older
# toolkit lacks are left out at build time instead of breaking the build.
AC_DEFUN([UCX_CHECK_CUDA], [
    AC_ARG_WITH([cuda],
        [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@],
                        [CUDA toolkit directory (default: use /usr/local/cuda if present)])],
        [], [with_cuda=guess])
    have_cuda=no
    ucx_cuda_summary="no"
    CUDA_CPPFLAGS=""
    CUDA_LDFLAGS=""
    AS_CASE(["x$with_cuda"],
        [xno], [ucx_cuda_summary="no (disabled)"],
        [xyes|xguess], [ucx_cuda_dir=/usr/local/cuda],
        [ucx_cuda_dir="$with_cuda"])
    AS_IF([test "x$with_cuda" != xno], [
        save_CPPFLAGS="$CPPFLAGS"
        save_LDFLAGS="$LDFLAGS"
        CUDA_CPPFLAGS="-I$ucx_cuda_dir/include"
        for d in lib64/stubs lib/stubs lib64 lib targets/x86_64-linux/lib/stubs; do
            AS_IF([test -d "$ucx_cuda_dir/$d"], [CUDA_LDFLAGS="$CUDA_LDFLAGS -L$ucx_cuda_dir/$d"])
        done
        CPPFLAGS="$CPPFLAGS $CUDA_CPPFLAGS"
        LDFLAGS="$LDFLAGS $CUDA_LDFLAGS"
        AC_CHECK_HEADER([cuda.h], [
            AC_CHECK_LIB([cuda], [cuInit], [have_cuda=yes])])
        AS_IF([test "x$have_cuda" = xyes], [
            AC_CHECK_DECLS([cuMemAllocAsync, cuMemAllocFromPoolAsync, cuMemPoolExportPointer,
                            cuMemCreate, cuMemRetainAllocationHandle, cuGetProcAddress],
                           [], [], [[#include <cuda.h>]])
            AC_CHECK_DECLS([CU_MEM_HANDLE_TYPE_FABRIC], [], [], [[#include <cuda.h>]])
            AC_COMPUTE_INT([ucx_cuda_version], [CUDA_VERSION], [[#include <cuda.h>]])
            ucx_cuda_summary="yes ($ucx_cuda_dir, CUDA_VERSION $ucx_cuda_version)"
            AC_DEFINE([HAVE_CUDA], [1], [CUDA driver API available])
        ], [
            AS_IF([test "x$with_cuda" != xguess],
                  [AC_MSG_ERROR([--with-cuda given but cuda.h/libcuda not found under $ucx_cuda_dir])])
            ucx_cuda_summary="no (not found under $ucx_cuda_dir)"
            CUDA_CPPFLAGS=""
            CUDA_LDFLAGS=""
        ])
        CPPFLAGS="$save_CPPFLAGS"
        LDFLAGS="$save_LDFLAGS"
    ])
    AC_SUBST([CUDA_CPPFLAGS])
    AC_SUBST([CUDA_LDFLAGS])
    AM_CONDITIONAL([HAVE_CUDA], [test "x$have_cuda" = xyes])
])
