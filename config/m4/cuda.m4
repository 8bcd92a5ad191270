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
            UCX_CHECK_NVCC
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
    AM_CONDITIONAL([HAVE_NVCC], [test "x$have_nvcc" = xyes])
    AC_SUBST([CUDA_CPPFLAGS])
    AC_SUBST([CUDA_LDFLAGS])
    AM_CONDITIONAL([HAVE_CUDA], [test "x$have_cuda" = xyes])
])

# UCX_CHECK_NVCC: nvcc, to build the batched copy kernel of the cuda_ipc
# transport to PTX (src/uct/cuda/cuda_copy_kernel.cu). Optional: without it
# (or with NVCC=no) the transport issues every copy with cuMemcpyAsync.
AC_DEFUN([UCX_CHECK_NVCC], [
    AC_ARG_VAR([NVCC], [CUDA compiler for the copy kernel's PTX (no: none)])
    have_nvcc=no
    AS_IF([test "x$NVCC" != xno], [
        AC_PATH_PROG([NVCC], [nvcc], [], [$ucx_cuda_dir/bin$PATH_SEPARATOR$PATH])
        AS_IF([test -n "$NVCC"], [
            AC_MSG_CHECKING([whether $NVCC builds PTX])
            printf 'extern "C" __global__ void k(int *p) { *p = 1; }\n' > conftest.cu
            AS_IF([$NVCC -ptx -arch=compute_75 -Wno-deprecated-gpu-targets \
                       -o conftest.ptx conftest.cu >&AS_MESSAGE_LOG_FD 2>&1 &&
                   grep -q '\.entry' conftest.ptx],
                  [have_nvcc=yes], [NVCC=""])
            rm -f conftest.cu conftest.ptx
            AC_MSG_RESULT([$have_nvcc])
        ])
    ])
    AS_IF([test "x$have_nvcc" = xyes],
          [AC_DEFINE([HAVE_CUDA_COPY_KERNEL], [1],
                     [The batched copy kernel is built (nvcc found)])
           ucx_cuda_summary="$ucx_cuda_summary, copy kernel by $NVCC"],
          [ucx_cuda_summary="$ucx_cuda_summary, no copy kernel (no nvcc)"])
])
