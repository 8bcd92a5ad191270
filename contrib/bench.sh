#!/bin/bash
# The project's main job (README "run the benchmark"): installs what is
# missing, builds an optimised tree and measures moving buffers between two
# processes on this machine with ucx_perftest -L.
#
# Rows today: host memory over shared memory (posix) and TCP loopback. GPU
# rows (every CUDA allocator kind, one GPU and across GPUs) join when the
# CUDA transports and UCP tests land (issues 6, 8, 9); until then a machine
# with a GPU gets a line saying so.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
dir="$src/build-release"

"$src/contrib/setup.sh"
(cd "$src" && ./autogen.sh >/dev/null 2>&1)
mkdir -p "$dir"
(cd "$dir" && "$src/configure" >configure.out 2>&1) || { tail -30 "$dir/configure.out"; exit 1; }
make -C "$dir" -j"$(nproc)" >"$dir/build.out" 2>&1 || { grep -E 'error' "$dir/build.out" | head; exit 1; }

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
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    nvidia-smi -L
    echo "# GPU rows: the CUDA transports and ucx_perftest's CUDA memory kinds are not in this build yet (issues 6, 8, 9)."
else
    echo "# No NVIDIA GPU on this machine: GPU rows are absent."
fi
