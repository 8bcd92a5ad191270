#!/bin/bash
# UCXX with GPU buffers on our libraries and on upstream's, in one run, on a
# machine with an NVIDIA GPU (docs/bindings.md):
#   1. install the wheels of $WHEELS (CPython 3.12: ucxx-cu13, libucxx-cu13,
#      libucx-cu13 -- upstream's UCX, the yardstick --, rmm-cu13, librmm-cu13,
#      rapids-logger) into a private site directory, no index needed;
#   2. test/bindings/ucxx_check.py for host, CuPy default-pool and
#      MemoryAsyncPool arrays, over ours (the maps must show our libucp) and
#      over the wheel's UCX;
#   3. UCXX's own ping-pong benchmark (ucxx.benchmarks.send_recv, CuPy
#      arrays, both processes on GPU 0) per size and case: ucxx-async (its
#      default progress mode "thread") with buffers reused and fresh, its
#      active messages, and ucxx-core with buffers reused; over ours and over
#      upstream's; 8 B shows the binding's own cost per message;
#   4. our ucx_perftest of the same sizes (tag_lat: a ping-pong like UCXX's;
#      tag_bw), with the raw copy of the same run;
#   5. tag against active messages through UCXX's asyncio API
#      (test/bindings/ucxx_bench_am.py), over ours and over upstream's.
# Logs (bench.log holds every benchmark's output) and summary.md go to
# $OUT (or ./gpu-bindings).
#
# usage: contrib/gpu-bindings.sh    (in a built tree: ./configure --with-cuda
#        && make; or set PREFIX to an installed prefix of ours)
# environment:
#   WHEELS=.dist/whl     the wheels (pip download --python-version 3.12)
#   PYTHON=python3       a CPython 3.12 with cupy and numpy
#   SIZES="8 65536 1048576 4194304 16777216 67108864 268435456"
#   CASES="ucxx-async:reuse ucxx-async:fresh ucxx-core:reuse"
#   OBJECT=cupy          the benchmark's object type (numpy: a CPU smoke test)
#   SKIP_CHECKS=1        benchmarks only
#   SKIP_BENCH=1         no UCXX benchmark (checks and ucx_perftest)
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$PWD/gpu-bindings}
wheels=${WHEELS:-$src/.dist/whl}
py=${PYTHON:-python3}
sizes=${SIZES:-"8 65536 1048576 4194304 16777216 67108864 268435456"}
cases=${CASES:-"ucxx-async:reuse ucxx-async:fresh ucxx-core:reuse"}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0

if [ -z "${PREFIX:-}" ]; then
    make -C "$src" -s install DESTDIR="$work/inst" > "$out/install.log" 2>&1 ||
        { echo "FAIL: make install (install.log)"; exit 1; }
    PREFIX="$work/inst$(sed -n 's/^prefix = //p' "$src/Makefile")"
fi
site=$work/site
"$py" -m pip install -q --no-index --no-deps --target "$site" "$wheels"/*.whl \
    > "$out/pip.log" 2>&1 || { echo "FAIL: pip install (pip.log)"; exit 1; }
export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH}
# A crash in a check's process prints the Python stacks into its log.
export PYTHONFAULTHANDLER=1

# Ours through the loader RAPIDS documents, or the wheel's own UCX.
with_lib() {
    local lib=$1; shift
    if [ "$lib" = ours ]; then
        env RAPIDS_LIBUCX_PREFER_SYSTEM_LIBRARY=true LD_LIBRARY_PATH="$PREFIX/lib" "$@"
    else
        env -u RAPIDS_LIBUCX_PREFER_SYSTEM_LIBRARY "$@"
    fi
}

if [ "${SKIP_CHECKS:-0}" != 1 ]; then
    with_lib ours timeout 900 "$py" "$src/test/bindings/ucxx_check.py" \
        --expect-lib "$PREFIX/lib" > "$out/check-ours.log" 2>&1 || failed=1
    with_lib upstream timeout 900 "$py" "$src/test/bindings/ucxx_check.py" \
        > "$out/check-upstream.log" 2>&1 || failed=1
    for lib in ours upstream; do
        echo "ucxx_check $lib: $(tail -1 "$out/check-$lib.log")"
    done
fi

iters_for() {
    if [ "$1" -ge 67108864 ]; then echo 30; elif [ "$1" -ge 4194304 ]; then echo 100; else echo 300; fi
}

# One benchmark run; prints the median bandwidth the benchmark reports.
bench() {
    local lib=$1 backend=$2 reuse=$3 size=$4 log
    log="$work/bench-$lib-$backend-$reuse-$size.log"
    local args=(-m ucxx.benchmarks.send_recv -l "$backend" -o "${OBJECT:-cupy}" --server-dev 0
                --client-dev 0 --n-bytes "$size" --n-iter "$(iters_for "$size")"
                --n-warmup-iter 5 --no-detailed-report)
    case $reuse in
    reuse) args+=(--reuse-alloc) ;;
    esac
    if with_lib "$lib" timeout 300 "$py" "${args[@]}" > "$log" 2>&1; then
        echo "$(sed -n 's/.*Bandwidth (median)[ |]*\([0-9.]* [KMGT]*i*B\/s\).*/\1/p' "$log" | head -1)," \
             "$(sed -n 's/.*Latency (median)[ |]*\([0-9]*\) ns.*/\1/p' "$log" | head -1) ns"
    else
        echo "failed"
    fi
    { echo "==== $lib $backend $reuse $size"; cat "$log"; } >> "$out/bench.log"
}

summary=$out/summary.md
: > "$summary"
[ "${SKIP_BENCH:-0}" = 1 ] || {
    echo "# UCXX ping-pong, CuPy arrays, both processes on GPU 0 (median bandwidth, median one-way latency: half the round trip)"
    echo
    for c in $cases; do
        backend=${c%%:*} reuse=${c#*:}
        echo "## $backend, $reuse"
        echo
        echo "| size | ours | upstream |"
        echo "|---|---|---|"
        for size in $sizes; do
            echo "| $size | $(bench ours "$backend" "$reuse" "$size") | $(bench upstream "$backend" "$reuse" "$size") |"
        done
        echo
    done
    # Tag against active messages in one asyncio harness (UCXX's benchmark
    # has no AM mode): test/bindings/ucxx_bench_am.py.
    for lib in ours upstream; do
        with_lib "$lib" timeout 900 "$py" "$src/test/bindings/ucxx_bench_am.py" \
            --object "${OBJECT:-cupy}" --sizes "$(echo $sizes | tr ' ' ',')" \
            > "$work/am-$lib.log" 2>&1 || failed=1
        { echo "==== ucxx_bench_am $lib"; cat "$work/am-$lib.log"; } >> "$out/bench.log"
    done
    echo "## ucxx-async, tag and AM (ucxx_bench_am.py; GB/s, median round trip)"
    echo
    echo "| size | tag ours | AM ours | tag upstream | AM upstream |"
    echo "|---|---|---|---|---|"
    for size in $sizes; do
        row="| $size"
        for lib in ours upstream; do
            for kind in tag am; do
                row+=" | $(awk -v s="$size" -v k="$kind" \
                    '$1 == s && $2 == k { printf "%s, %d ns", $3, $4 }' "$work/am-$lib.log")"
            done
        done
        echo "$row |"
    done
    echo
} > "$summary"

# Our ucx_perftest of the same sizes, two processes on GPU 0, with the raw
# copy of the same run (raw_gbs).
perf=$PREFIX/bin/ucx_perftest
csv_sizes=$(echo $sizes | tr ' ' ',')
for t in tag_lat tag_bw; do
    LD_LIBRARY_PATH="$PREFIX/lib" "$perf" -L -t "$t" -m cuda,cuda -a 0,0 --sizes "$csv_sizes" -n 100 -w 10 --csv \
        > "$work/perftest-$t.csv" 2> "$work/perftest-$t.err" || failed=1
    { echo "==== ucx_perftest $t"; cat "$work/perftest-$t.err"; } >> "$out/bench.log"
done
{
    echo "## our ucx_perftest, same run"
    echo
    for t in tag_lat tag_bw; do
        echo "### $t"
        echo '```'
        cat "$work/perftest-$t.csv"
        echo '```'
    done
} >> "$summary"
cat "$summary"
exit $failed
