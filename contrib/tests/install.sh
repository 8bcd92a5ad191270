#!/bin/bash
# "make install" into a scratch prefix: the installed ucx_info runs, the
# headers and pkg-config files let a client program build and run.
set -euo pipefail
# DESTDIR keeps the configured prefix inside the staging tree (libtool
# refuses to relink for another prefix).
destdir="$BUILD_DIR/test-install"
rm -rf "$destdir"
make -C "$BUILD_DIR" -s install DESTDIR="$destdir" >/dev/null
configured_prefix=$(sed -n 's/^prefix = //p' "$BUILD_DIR/Makefile")
prefix="$destdir$configured_prefix"

export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
"$prefix/bin/ucx_info" -v | grep -q 'Library version'
"$prefix/bin/ucx_info" -c | grep -q '^UCX_LOG_LEVEL='
# libucs.so and libucs_signal.so too: RAPIDS' libucx loader opens these names.
for so in libucs.so.0 libucm.so.0 libuct.so.0 libucp.so.0 libucs_signal.so.0 \
          libucs.so libucs_signal.so libuct.so libucp.so; do
    test -e "$prefix/lib/$so" || { echo "missing $so"; exit 1; }
done
for h in ucp/api/ucp.h ucp/api/ucp_def.h ucp/api/ucp_version.h ucs/type/status.h \
         ucs/config/types.h ucs/sys/compiler_def.h ucs/memory/memory_type.h \
         uct/api/uct.h uct/api/v2/uct_v2.h ucs/sys/topo_device.h ucs/debug/log_def.h \
         ucm/api/ucm.h; do
    test -f "$prefix/include/$h" || { echo "missing header $h"; exit 1; }
done

export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
cflags=$(pkg-config --define-prefix --cflags ucx)
libs=$(pkg-config --define-prefix --libs ucx)
echo "pkg-config ucx: $cflags $libs"
grep -q -- "-lucp" <<<"$libs"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/client.c" <<'C'
#include <ucp/api/ucp.h>
#include <stdio.h>
#include <string.h>
int main(void)
{
    unsigned major, minor, release;
    ucp_config_t *config;
    ucp_get_version(&major, &minor, &release);
    if (strcmp(ucs_status_string(UCS_ERR_NO_MEMORY), "Out of memory") != 0) return 1;
    if (ucp_config_read(NULL, NULL, &config) != UCS_OK) return 2;
    ucp_config_release(config);
    printf("client: %s (%u.%u.%u), headers %d.%d\n", ucp_get_version_string(),
           major, minor, release, UCP_API_MAJOR, UCP_API_MINOR);
    return 0;
}
C
# A sanitizer build's libraries need the same runtime in the client.
# ... and the same compiler (the sanitizer tree is built by clang).
build_cflags=$(sed -n 's/^CFLAGS = //p' "$BUILD_DIR/Makefile")
build_cc=$(sed -n 's/^CC = //p' "$BUILD_DIR/Makefile")
${build_cc:-cc} -std=c11 -Wall -Werror $build_cflags $cflags "$work/client.c" -o "$work/client" $libs
"$work/client"
# The v2 transport header compiles on its own from the installed tree.
cat >"$work/uct_v2.c" <<'C'
#include <uct/api/v2/uct_v2.h>
ucs_status_t (*estimate)(uct_iface_h, uct_perf_attr_t *) = uct_iface_estimate_perf;
C
${build_cc:-cc} -std=c11 -Wall -Werror $build_cflags $cflags -c "$work/uct_v2.c" -o "$work/uct_v2.o"

# A CMake project finds the installation by find_package(ucx) and links the
# imported targets; the staged tree is found from the config files' place.
if command -v cmake >/dev/null; then
    mkdir -p "$work/cmake-src" "$work/cmake-build"
    cp "$work/client.c" "$work/cmake-src/client.c"
    cat >"$work/cmake-src/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(ucx_cmake_client C)
find_package(ucx 1.13 REQUIRED)
add_executable(client client.c)
target_link_libraries(client PRIVATE ucx::ucp ucx::ucs)
CMAKE
    cmake -S "$work/cmake-src" -B "$work/cmake-build" -Ducx_DIR="$prefix/lib/cmake/ucx" \
        -DCMAKE_C_COMPILER="${build_cc:-cc}" -DCMAKE_C_FLAGS="$build_cflags" >"$work/cmake.log" 2>&1 ||
        { cat "$work/cmake.log"; echo "cmake: find_package(ucx) failed"; exit 1; }
    cmake --build "$work/cmake-build" >>"$work/cmake.log" 2>&1 ||
        { cat "$work/cmake.log"; echo "cmake: the client does not build"; exit 1; }
    "$work/cmake-build/client" | sed 's/^/cmake /'
    # a newer major than ours is refused
    cat >"$work/cmake-src/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(ucx_cmake_client C)
find_package(ucx 2.0 QUIET)
if(ucx_FOUND)
    message(FATAL_ERROR "find_package(ucx 2.0) accepted a 1.x installation")
endif()
CMAKE
    rm -rf "$work/cmake-build"
    cmake -S "$work/cmake-src" -B "$work/cmake-build" -Ducx_DIR="$prefix/lib/cmake/ucx" \
        >"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; echo "cmake: version 2.0 was not refused"; exit 1; }
    echo "cmake: find_package(ucx 1.13) builds and runs; find_package(ucx 2.0) is refused"
else
    echo "cmake: not installed, find_package(ucx) not checked"
fi
rm -rf "$destdir"
