#!/bin/bash
# The project's main job (README "run the benchmark"): installs what is
# missing, builds an optimised tree and measures moving buffers between two
# processes on this machine with ucx_perftest -L.
#
# Rows: host memory over shared memory (posix) and TCP loopback (UCT), and
# UCP tag messages; on a machine with a GPU, UCP tag_bw for every allocator
# kind that matters (cudaMalloc, cudaMallocAsync, explicit pools with and
# without IPC handles, cuMemCreate with and without handles, chunked VMM,
# and async -> legacy) at 8 B, 64 KiB, 4 MiB and 64 MiB, on one GPU and from
# GPU0 to GPU1 when there are two, each row with the raw-copy reference and
# "% of raw". Without a GPU, one line says why the GPU rows are absent.
# BENCH_SKIP_BUILD=1 measures an existing build-release.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
dir="$src/build-release"

if [ "${BENCH_SKIP_BUILD:-0}" != 1 ]; then
    "$src/contrib/setup.sh"
    (cd "$src" && ./autogen.sh >/dev/null 2>&1)
    mkdir -p "$dir"
    (cd "$dir" && "$src/configure" >configure.out 2>&1) || { tail -30 "$dir/configure.out"; exit 1; }
    make -C "$dir" -j"$(nproc)" >"$dir/build.out" 2>&1 || { grep -E 'error' "$dir/build.out" | head; exit 1; }
fi

perf="$dir/src/tools/perf/ucx_perftest"
cpus=""
[ "$(nproc)" -ge 2 ] && cpus="-c 0,1"

"$dir/src/tools/info/ucx_info" -v | head -6
echo
echo "## Host memory, two processes on this machine (ucx_perftest -L)"
echo "## latency: am_lat (half round trip, us); bandwidth: am_bw (MB/s)"
for tl in posix:memory tcp:lo; do
    x=${tl%%:*}; d=${tl#*:}
    echo
    echo "### $x ($d)"
    "$perf" -L $cpus -x "$x" -d "$d" -t am_lat --sizes 8,1K -n 20000 -w 2000 2>/dev/null
    UCX_POSIX_SEG_SIZE=65600 "$perf" -L $cpus -x "$x" -d "$d" -t am_bw \
        --sizes 8K,64K -n 5000 -w 500 -D bcopy 2>/dev/null
done

echo
echo "## UCP tag messages, host memory (UCX_TLS as the environment gives it)"
"$perf" -L $cpus -t tag_lat --sizes 8,4K -n 20000 -w 2000 2>/dev/null
"$perf" -L $cpus -t tag_bw --sizes 64K,1M -n 2000 -w 200 2>/dev/null

# GPU rows: the GPUs ucx_info sees through the driver (the reason otherwise).
gpus=$("$dir/src/tools/info/ucx_info" -d 2>/dev/null | sed -n '/^# GPUs/,$p')
ngpu=$(grep -c '^#   GPU[0-9]*:' <<<"$gpus" || true)
echo
if [ "$ngpu" -eq 0 ]; then
    why=$(grep -m1 '< none' <<<"$gpus" | sed 's/^#   < none: //; s/ >$//')
    echo "# GPU rows are absent: no usable GPU here (${why:-ucx_info lists none})."
    exit 0
fi
grep '^#   GPU' <<<"$gpus"

# Sender,receiver kinds: the allocators people use, and the mixed pair that
# forces staging on one side. 200 messages per size keep the whole matrix
# well under two minutes; the 50 of warm-up let the staging pipeline grow
# its fragment pool (16 fragments) and the peer import them before the
# clock runs, as a long-running application's would have.
pairs="cuda cuda-async cuda-pool cuda-pool-noipc cuda-vmm cuda-vmm-noipc cuda-vmm-chunked cuda-async,cuda"
# -f prints our rows without the table's header, then upstream's box and
# rows for its scripts: only ours go into this table.
gpu_row() {
    local out rc=0
    out=$("$perf" -L $cpus -t tag_bw -m "$1" -a "$2" --sizes 8,64K,4M,64M -n 200 -w 50 -f \
              2>"$dir/bench-gpu.err") || rc=$?
    grep -E '^\| +[0-9]+ \|' <<<"$out" || true
    [ $rc -eq 0 ] || echo "| $1 (GPU $2): failed: $(tail -1 "$dir/bench-gpu.err")"
}
for devs in 0,0 $([ "$ngpu" -ge 2 ] && echo 0,1); do
    echo
    echo "## GPU memory, tag_bw, GPU ${devs%,*} -> GPU ${devs#*,} (two processes; % of raw = vs cuMemcpyDtoDAsync)"
    echo "| size | layout | iterations | overhead typ/avg/max (us) | MB/s GB/s | msg/s | raw GB/s, % raw | protocol/transport |"
    for p in $pairs; do
        echo "### $p"
        gpu_row "$p" "$devs"
    done
done
[ "$ngpu" -ge 2 ] || echo "# One GPU: the GPU0 -> GPU1 rows need two."
