#!/bin/bash
# The project's main job (README "run the benchmark"): installs what is
# missing, builds an optimised tree and reports what this machine offers.
# Until ucx_perftest lands (issue "ucx_perftest for every CUDA allocator
# kind"), the report is ucx_info's version, build and device listing.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
dir="$src/build-release"

"$src/contrib/setup.sh"
(cd "$src" && ./autogen.sh >/dev/null 2>&1)
mkdir -p "$dir"
(cd "$dir" && "$src/configure" >configure.out 2>&1) || { tail -30 "$dir/configure.out"; exit 1; }
make -C "$dir" -j"$(nproc)" >"$dir/build.out" 2>&1 || { grep -E 'error' "$dir/build.out" | head; exit 1; }

"$dir/src/tools/info/ucx_info" -v -d
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=index,name,memory.total --format=csv
else
    echo "# No NVIDIA GPU on this machine: GPU rows are absent."
fi
