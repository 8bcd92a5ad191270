#!/bin/bash
# Open MPI (Debian's 4.1, built against upstream UCX) runs unchanged over our
# libraries: pml/ucx for point-to-point and collectives, osc/ucx for
# one-sided. Builds test/mpi/*.c with mpicc and runs p2p and osc with 2 and
# 4 ranks (host buffers, then device buffers of every CUDA allocation kind
# on the driver model, ranks spread over its two devices), the ping-pong
# benchmark once with small sizes,
# our build's libraries first on LD_LIBRARY_PATH. Asserts that every rank
# mapped OUR libucp (the programs print /proc/self/maps' libucp) and that
# pml ucx was selected (--mca pml ucx makes MPI_Init fail otherwise; the
# pml_base_verbose output is checked too), and that no error was logged
# (MPI_Finalize closes endpoints in order: no "failed peer"). See
# docs/openmpi.md.
#
# usage (as contrib/run-tests.sh runs it): SRC_DIR=... BUILD_DIR=... openmpi.sh
set -uo pipefail
src=${SRC_DIR:?SRC_DIR not set}
build=$(realpath "${BUILD_DIR:?BUILD_DIR not set}")

if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
    if [ "$(id -u)" -eq 0 ] &&
       DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin \
           libopenmpi-dev >/dev/null 2>&1; then
        echo "installed Debian's Open MPI"
    else
        echo "Open MPI (openmpi-bin, libopenmpi-dev) is not installed and cannot be"
        exit 77
    fi
fi

. "$src/contrib/tests/lib/ompi.sh"
ompi_skip_instrumented "$build"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
libs=$(ompi_our_libs "$build")
for l in ucp uct ucs ucm; do
    test -f "$build/src/$l/.libs/lib$l.so.0" || { echo "FAIL: lib$l.so.0 not built"; exit 1; }
done

failed=0
for prog in mpi_p2p mpi_p2p_modes mpi_coll mpi_osc mpi_pingpong; do
    mpicc -O1 -Wall -Werror -o "$work/$prog" "$src/test/mpi/$prog.c" ||
        { echo "FAIL: mpicc $prog.c"; exit 1; }
done

# Device-buffer builds run on the CUDA driver model (test/cudasim): cudart
# cannot run there, so the programs allocate through the driver API
# (--driver-api); on a GPU machine contrib/gpu-mpi.sh runs the same
# programs with cudart allocations.
cuda_dir=${CUDA_DIR:-/usr/local/cuda}
sim="$build/test/cudasim/.libs"
gpu_kinds=""
if [ -f "$cuda_dir/include/cuda.h" ] && [ -f "$sim/libcuda.so.1" ] &&
   [ -f "$build/src/uct/cuda/.libs/libuct_cuda.so" ]; then
    gpu_kinds="cuda cuda-async cuda-pool cuda-vmm"
    for prog in mpi_p2p mpi_osc mpi_blocking; do
        mpicc -O1 -Wall -Werror -DHAVE_CUDA -I"$cuda_dir/include" \
            -o "$work/${prog}_cuda" "$src/test/mpi/$prog.c" \
            -L"$cuda_dir/lib64" -lcudart -lcuda ||
            { echo "FAIL: mpicc -DHAVE_CUDA $prog.c"; exit 1; }
    done
else
    echo "note: no CUDA toolkit, driver model or cuda transports: device-buffer runs skipped"
fi

root=("${ompi_root_args[@]}")

# run NAME NP LIBPATH PROGRAM ARGS...: one mpirun over our libraries, checked.
run() {
    local name=$1 np=$2 lp=$3 prog=$4 exe=$5
    shift 5
    local out="$work/$name.$np.out" rc ours selected
    # UCX_TLS_MPI=default: the transports a user gets (no UCX_TLS at all)
    local tls=(-x UCX_TLS="${UCX_TLS_MPI:-posix,self,tcp}")
    [ "${UCX_TLS_MPI:-}" = default ] && tls=()
    # pml_ucx_tls/devices any: Open MPI 4.1 enables pml ucx only on the
    # InfiniBand transports it lists unless told otherwise.
    LD_LIBRARY_PATH="$lp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    timeout -k 5 90 mpirun "${root[@]}" --oversubscribe -np "$np" \
        --mca pml ucx --mca osc ucx --mca btl self \
        --mca pml_ucx_tls any --mca pml_ucx_devices any \
        --mca pml_base_verbose 10 \
        -x LD_LIBRARY_PATH "${tls[@]}" \
        "$exe" "$@" >"$out" 2>&1
    rc=$?
    ours=$(grep -c "libucp: $build/src/ucp/.libs/libucp.so" "$out")
    selected=$(grep -c "select: component ucx selected" "$out")
    if [ $rc -ne 0 ]; then
        echo "FAIL: $name with $np ranks: mpirun exit $rc"; tail -20 "$out"; failed=1
    elif [ "$ours" -ne "$np" ]; then
        echo "FAIL: $name with $np ranks: $ours of $np ranks loaded $build's libucp"
        grep "libucp:" "$out"; failed=1
    elif [ "$selected" -lt "$np" ]; then
        echo "FAIL: $name with $np ranks: pml ucx selected by $selected ranks"
        grep -i "select" "$out" | head; failed=1
    elif ! grep -q "^$prog: $np ranks OK" "$out"; then
        echo "FAIL: $name with $np ranks did not report OK"; tail -20 "$out"; failed=1
    elif grep -q "failed peer\|\] *error\|ucp.*error" "$out"; then
        # an orderly MPI_Finalize must not look like a failure
        echo "FAIL: $name with $np ranks logged errors"; grep -i "error" "$out" | head; failed=1
    else
        echo "ok: $name with $np ranks (pml ucx, our libucp)"
    fi
}

for prog in mpi_p2p mpi_p2p_modes mpi_coll mpi_osc; do
    for np in 2 4; do
        run "$prog" $np "$libs" "$prog" "$work/$prog"
    done
done
run mpi_pingpong 2 "$libs" mpi_pingpong "$work/mpi_pingpong" -i 50 -m 4194304 -b 33554432
for kind in $gpu_kinds; do
    for prog in mpi_p2p mpi_osc; do
        for np in 2 4; do
            UCX_TLS_MPI=posix,self,tcp,cuda_copy,cuda_ipc \
            run "$prog.$kind" $np "$libs:$sim" "$prog" "$work/${prog}_cuda" \
                "$kind" --driver-api
        done
    done
done
# Blocking sends from fresh buffers (a fresh pool per size), with the
# default transports: every byte of the last message of each size checked.
for kind in $gpu_kinds; do
    UCX_TLS_MPI=default run "mpi_blocking.$kind" 2 "$libs:$sim" mpi_blocking \
        "$work/mpi_blocking_cuda" "$kind" --driver-api -r 1 -m 4194304
done
exit $failed
