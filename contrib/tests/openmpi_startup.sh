#!/bin/bash
# Open MPI never hangs in MPI_Init over our libraries, whatever the heap
# does meanwhile: test/mpi/mpi_init_churn (two threads allocating and
# freeing with heap trimming forced, so Open MPI's memory hooks report
# unmaps to libucm from inside free() while MPI_Init loads and initialises
# our libraries; then one-sided epochs) runs RUNS times in a row (default
# 20) with 2 ranks, with no UCX_TLS and Open MPI's memory hooks reporting
# to libucm (opal_common_ucx_opal_mem_hooks 1), each under a 60 s deadline. Every rank must map our
# libucp. See docs/hooks.md.
#
# usage (as contrib/run-tests.sh runs it): SRC_DIR=... BUILD_DIR=... openmpi_startup.sh
set -uo pipefail
src=${SRC_DIR:?SRC_DIR not set}
build=$(realpath "${BUILD_DIR:?BUILD_DIR not set}")
runs=${RUNS:-20}

command -v mpicc >/dev/null && command -v mpirun >/dev/null ||
    { echo "SKIP: Open MPI (openmpi-bin, libopenmpi-dev) not installed"; exit 77; }
if grep -qE -- '-fsanitize=(address|fuzzer|thread)' "$build/Makefile" 2>/dev/null; then
    echo "SKIP: instrumented tree: Debian's Open MPI plugins cannot load it; the in-tree build (contrib/intree-check.sh) runs this test"
    exit 77
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpicc -O1 -Wall -Werror -o "$work/mpi_init_churn" "$src/test/mpi/mpi_init_churn.c" -lpthread ||
    { echo "FAIL: mpicc mpi_init_churn.c"; exit 1; }
libs="$build/src/ucp/.libs:$build/src/uct/.libs:$build/src/ucs/.libs:$build/src/ucm/.libs"
root=()
[ "$(id -u)" -eq 0 ] && root=(--allow-run-as-root)

hung=0 failed=0
for i in $(seq 1 "$runs"); do
    out=$work/run.$i.out
    LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    timeout -k 5 60 mpirun "${root[@]}" --oversubscribe -np 2 \
        --mca pml ucx --mca osc ucx --mca btl self \
        --mca pml_ucx_tls any --mca pml_ucx_devices any \
        --mca opal_common_ucx_opal_mem_hooks 1 \
        -x LD_LIBRARY_PATH "$work/mpi_init_churn" >"$out" 2>&1
    rc=$?
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        hung=$((hung + 1)); echo "run $i: HUNG (killed after 60 s)"; tail -5 "$out"
    elif [ $rc -ne 0 ] || ! grep -q "mpi_init_churn: 2 ranks OK" "$out"; then
        failed=$((failed + 1)); echo "run $i: FAILED (exit $rc)"; tail -10 "$out"
    elif [ "$(grep -c "libucp: $build/src/ucp/.libs/libucp.so" "$out")" -ne 2 ]; then
        failed=$((failed + 1)); echo "run $i: a rank did not map our libucp"; grep libucp "$out"
    fi
done
echo "$runs runs: $((runs - hung - failed)) clean, $hung hung, $failed failed"
[ $hung -eq 0 ] && [ $failed -eq 0 ]
