#!/bin/bash
# UCXX, RAPIDS' binding, on our libraries: its Python package from PyPI
# (installed by contrib/setup.sh into /opt/ucxx-venv) loads our libucp
# instead of the one in its libucx wheel, and test/bindings/ucxx_check.py
# runs its asyncio and core APIs between two processes with host buffers
# (the GPU kinds run on the GPU machine, contrib/gpu-bindings.sh); UCXX's
# benchmark and test/bindings/ucxx_bench_am.py run their ping-pongs.
# Skipped (77) when the venv is missing.
set -uo pipefail
src=${SRC_DIR:?SRC_DIR not set}
build=${BUILD_DIR:?BUILD_DIR not set}
venv=${UCXX_VENV:-/opt/ucxx-venv}
if ! "$venv/bin/python" -c 'import ucxx' >/dev/null 2>&1; then
    echo "SKIPPED: no UCXX in $venv (contrib/setup.sh installs it from PyPI)"
    exit 77
fi
# A sanitizer build's libraries need their runtime preloaded into python.
if grep -q -- '-fsanitize' "$build/Makefile"; then
    echo "SKIPPED: sanitizer build (python would need the sanitizer runtime preloaded)"
    exit 77
fi
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
make -C "$build" -s install DESTDIR="$stage" >/dev/null 2>&1 ||
    { echo "FAIL: make install"; exit 1; }
prefix="$stage$(sed -n 's/^prefix = //p' "$build/Makefile")"
# The loader RAPIDS documents: try the normal search path first.
RAPIDS_LIBUCX_PREFER_SYSTEM_LIBRARY=true LD_LIBRARY_PATH="$prefix/lib" \
    timeout 600 "$venv/bin/python" "$src/test/bindings/ucxx_check.py" \
    --expect-lib "$prefix/lib" --kinds host
rc=$?
run_ours() {
    RAPIDS_LIBUCX_PREFER_SYSTEM_LIBRARY=true LD_LIBRARY_PATH="$prefix/lib" \
        timeout 120 "$venv/bin/python" "$@"
}

# UCXX's own ping-pong benchmark with its core API: the application thread
# posts while UCXX's progress thread sleeps on the worker's fd, and UCXX
# sets UCX_RNDV_THRESH=8192, so 16 KiB and up go by rendezvous (these hung
# before ucp_worker_arm's wake-up of the sleeper).
for size in 8 16384 65536 1048576; do
    if run_ours -m ucxx.benchmarks.send_recv -l ucxx-core -o numpy --n-bytes $size \
        --n-iter 200 --reuse-alloc > "$stage/bench.log" 2>&1; then
        echo "PASS ucxx-core benchmark $size: $(grep -m1 'Bandwidth (median)' "$stage/bench.log" | tr -s ' |' ' ')"
    else
        tail -5 "$stage/bench.log"
        echo "FAIL ucxx-core benchmark $size"
        rc=1
    fi
done
# Tag and active messages through the asyncio API, echoes checked.
if run_ours "$src/test/bindings/ucxx_bench_am.py" --object numpy \
    --sizes 8,65536,4194304 --iters 50 > "$stage/am.log" 2>&1; then
    echo "PASS ucxx_bench_am:" $(cat "$stage/am.log" | tr '\n' ';')
else
    cat "$stage/am.log"
    echo "FAIL ucxx_bench_am"
    rc=1
fi

# UCXX's C++ API: RMA through its memory handles (test/bindings/ucxx_rma.cc),
# built as a user of the wheels builds it (libucxx's headers, the libucx
# wheel's UCX headers) and run on ours.
site=$("$venv/bin/python" -c 'import libucxx, os; print(os.path.dirname(os.path.dirname(libucxx.__file__)))')
libs="$prefix/lib:$site/libucxx/lib64:$site/librmm/lib64:$site/rapids_logger/lib64"
if command -v g++ >/dev/null &&
   g++ -std=c++17 -O1 -I"$site/libucxx/include" -I"$site/libucx/include" \
       "$src/test/bindings/ucxx_rma.cc" -o "$stage/ucxx_rma" -L"$site/libucxx/lib64" -lucxx \
       -L"$prefix/lib" -Wl,-rpath-link="$prefix/lib" -lucp -lucs 2>"$stage/rma.err"; then
    for size in 8 65536 4194304 67108864; do
        if LD_LIBRARY_PATH="$libs" timeout 60 "$stage/ucxx_rma" $size; then
            echo "PASS ucxx_rma $size"
        else
            echo "FAIL ucxx_rma $size"
            rc=1
        fi
    done
else
    cat "$stage/rma.err"
    echo "FAIL: ucxx_rma.cc does not build against the wheels' headers"
    rc=1
fi
exit $rc
