#!/bin/bash
# Open MPI with GPU buffers of every allocation kind, over our libraries and
# over the system's own UCX, on a GPU machine (docs/openmpi.md):
#   - builds test/mpi/{mpi_p2p,mpi_osc,mpi_pingpong,mpi_blocking}.c with
#     mpicc -DHAVE_CUDA (mpi_blocking: blocking sends from a fresh buffer,
#     and a fresh pool, per size: first and later messages timed apart);
#   - runs each with 2 ranks, for each buffer kind (host, cuda, cuda-async,
#     cuda-pool, cuda-vmm), both ranks on one GPU and (with 2 GPUs) one rank
#     per GPU, over two stacks:
#       ours    PREFIX/lib first on LD_LIBRARY_PATH, UCX_TLS=sm,self,cuda
#       system  the distribution's UCX as installed (no LD_LIBRARY_PATH
#               change; Ubuntu's UCX is built without CUDA, so device
#               buffers are expected to crash it: recorded, not fatal)
#   - writes $OUT/mpi/summary.md (kind x placement x stack: pass, FAIL,
#     CRASH, TIMEOUT, with the 64 MiB ping-pong bandwidth and its % of a raw
#     cuMemcpy) and every log to $OUT/mpi/.
# Every mpirun runs under `timeout`; the whole script stops starting runs
# when its time budget (TIME_BUDGET seconds, default 280) would be exceeded,
# and marks what it skipped. Exits 1 if a run over our libraries did not
# pass, 0 otherwise (the system stack's results are information).
#
# usage: contrib/gpu-mpi.sh PREFIX     (our tree installed there: make install)
# environment: OUT (default ./gpu-mpi-out), CUDA_DIR (/usr/local/cuda),
#   NGPUS (from nvidia-smi), MPICC (mpicc), KINDS, PROGS, TIME_BUDGET, UCX_TLS_OURS (sm,self,cuda),
#   MPI_ARGS (more program arguments: --driver-api runs on the CI driver
#   model, test/cudasim, with its libcuda.so.1 first on LD_LIBRARY_PATH)
set -uo pipefail

prefix=${1:?usage: gpu-mpi.sh PREFIX}
prefix=$(realpath "$prefix")
src=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$PWD/gpu-mpi-out}/mpi
cuda_dir=${CUDA_DIR:-/usr/local/cuda}
mpicc=${MPICC:-mpicc}
kinds=${KINDS:-host cuda cuda-async cuda-pool cuda-vmm}
progs=${PROGS:-mpi_p2p mpi_osc mpi_pingpong mpi_blocking}
budget=${TIME_BUDGET:-280}
tls_ours=${UCX_TLS_OURS:-sm,self,cuda}
start=$SECONDS

mkdir -p "$out" "$out/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
summary=$out/summary.md
ours_failed=0

if [ ! -f "$prefix/lib/libucp.so.0" ]; then
    echo "FAIL: no $prefix/lib/libucp.so.0: install the tree there first"
    exit 1
fi

# ---- build ----
for p in $progs; do
    if ! "$mpicc" -O2 -Wall -DHAVE_CUDA -I"$cuda_dir/include" \
            -o "$out/bin/$p" "$src/test/mpi/$p.c" \
            -L"$cuda_dir/lib64" -Wl,-rpath,"$cuda_dir/lib64" -lcudart -lcuda \
            > "$out/build-$p.log" 2>&1; then
        echo "FAIL: $mpicc $p.c (see $out/build-$p.log)"
        cat "$out/build-$p.log"
        exit 1
    fi
done

ngpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
ngpus=${NGPUS:-$ngpus}
placements="one-gpu"
[ "${ngpus:-0}" -ge 2 ] && placements="one-gpu two-gpus"

# Outcome of one run from its exit status and log.
classify() { # rc log prog
    local rc=$1 log=$2 prog=$3
    if [ "$rc" -eq 0 ] && grep -q "^$prog: 2 ranks OK" "$log"; then
        echo pass
    elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        echo TIMEOUT
    elif [ "$rc" -ge 128 ] ||
         grep -qiE 'exited on signal|segmentation fault|core dumped|SIGSEGV|SIGBUS|bus error' "$log"; then
        echo CRASH
    elif [ "$rc" -eq 77 ]; then
        echo SKIP
    else
        echo FAIL
    fi
}

# The 64 MiB bandwidth line of a ping-pong log: "GB/s (% of raw)".
bandwidth() {
    awk '$1 == "bw" && $2 == 67108864 { printf "%.1f GB/s (%.0f%%)", $3, $5 }' "$1"
}

rows=()
run_one() { # stack kind placement prog
    local stack=$1 kind=$2 place=$3 prog=$4 limit=30 rc res bw=""
    local log="$out/$prog.$kind.$place.$stack.log"
    local args=("$kind" ${MPI_ARGS:-}) env=()
    [ "$prog" = mpi_pingpong ] && limit=60 && args+=(-i 300)
    [ "$place" = one-gpu ] && args+=(--one-gpu)
    if [ $((SECONDS - start + limit)) -gt "$budget" ]; then
        rows+=("| $kind | $place | $stack | $prog | skipped (time budget) | |")
        return
    fi
    if [ "$stack" = ours ]; then
        env=(-x LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
             -x UCX_TLS="$tls_ours")
    fi
    timeout -k 5 "$limit" mpirun --allow-run-as-root --oversubscribe -np 2 \
        --mca pml ucx --mca osc ucx --mca btl self \
        --mca pml_ucx_tls any --mca pml_ucx_devices any "${env[@]}" \
        "$out/bin/$prog" "${args[@]}" > "$log" 2>&1
    rc=$?
    res=$(classify $rc "$log" "$prog")
    if [ "$stack" = ours ] && ! grep -q "libucp: $prefix/lib/libucp.so" "$log" &&
       [ "$res" = pass ]; then
        res="FAIL (not our libucp)"
    fi
    [ "$prog" = mpi_pingpong ] && [ "$res" = pass ] && bw=$(bandwidth "$log")
    rows+=("| $kind | $place | $stack | $prog | $res (rc $rc) | $bw |")
    echo "$kind $place $stack $prog: $res (rc $rc) $bw"
    if [ "$stack" = ours ] && [ "$res" != pass ]; then
        ours_failed=1
    fi
}

# Ours first (the result that matters), then the system stack.
for stack in ours system; do
    for place in $placements; do
        for kind in $kinds; do
            for prog in $progs; do
                run_one "$stack" "$kind" "$place" "$prog"
            done
        done
    done
done

{
    echo "# Open MPI with GPU buffers ($(date -u +%Y-%m-%d))"
    echo
    echo "$(mpirun --version 2>/dev/null | head -1); GPUs: ${ngpus:-0};" \
         "ours: $prefix/lib, UCX_TLS=$tls_ours; system: $(ucx_info -v 2>/dev/null |
         grep -m1 -o 'version=[^ ]*' || dpkg-query -W -f='libucx0 ${Version}' libucx0 2>/dev/null || echo unknown)"
    echo
    echo "Command: contrib/gpu-mpi.sh $prefix; logs next to this file."
    echo "MCA: --mca pml ucx --mca osc ucx --mca btl self --mca pml_ucx_tls any --mca pml_ucx_devices any"
    echo
    echo "| kind | placement | stack | program | result | 64 MiB bandwidth (% of raw cuMemcpy) |"
    echo "|---|---|---|---|---|---|"
    printf '%s\n' "${rows[@]}"
    echo
    echo "## Ping-pong tables (ours)"
    for f in "$out"/mpi_pingpong.*.ours.log; do
        [ -f "$f" ] || continue
        echo
        echo "### $(basename "$f" .log)"
        echo '```'
        grep -E '^(#|lat|bw)' "$f"
        echo '```'
    done
} > "$summary"

echo "summary: $summary ($((SECONDS - start)) s)"
exit $ours_failed
