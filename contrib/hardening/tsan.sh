#!/bin/bash
# ThreadSanitizer run of the multi-threaded tests: the memtype cache from
# many threads, uct and ucp workers in UCS_THREAD_MODE_MULTI, hooks patched
# while other threads call the hooked functions, the event bus, config
# reads from many threads; where configure found CUDA, also the threaded
# tests of gtest_cuda on the driver model (test/cudasim, built with the same
# flags): CUDA hooks installed, reinstalled and fired from several threads
# feeding the memtype cache, cuda_copy/cuda_ipc from a thread without a
# context. Builds its own tree (the libraries, the model and the gtest
# binaries only) and fails on any report: TSan makes the process exit 66.
#
# usage: contrib/hardening/tsan.sh BUILD_DIR
# Last line: N passed, M failed, K skipped (googletest's counts of both
# binaries; a report or a crash adds one failure per binary).
set -uo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
build=$1
mkdir -p "$build"
build=$(cd "$build" && pwd)
jobs=$(nproc)

# Tests that start threads (grep -l std::thread test/gtest) and the ucp
# worker in MULTI mode.
filter='memtype_cache_mt.*:memtype_cache.*:test_uct_worker_mt.*:ucm_bistro.*'
filter+=':ucm_events.*:test_ucp_worker.*:tls/test_ucp_tag_loopback.threads*'
filter+=':tl/test_uct_posix_2proc.four_sender*:ucs_config_engine.*:ucs_config_child.*'

tsan="-fsanitize=thread -g -O1"
if [ ! -f "$build/config.status" ]; then
    (cd "$build" && "$src/configure" --disable-static CFLAGS="$tsan" CXXFLAGS="$tsan" \
        LDFLAGS="-fsanitize=thread" >configure.out 2>&1) ||
        { tail -20 "$build/configure.out"; echo "0 passed, 1 failed, 0 skipped"; exit 1; }
fi
for d in src/ucs src/ucm src/uct src/ucp; do
    make -C "$build/$d" -j"$jobs" >>"$build/build.out" 2>&1 ||
        { grep -E 'error' "$build/build.out" | head; echo "0 passed, 1 failed, 0 skipped"; exit 1; }
done
have_cuda=0
grep -q '^#define HAVE_CUDA 1' "$build/config.h" 2>/dev/null && have_cuda=1
targets=(gtest)
if [ $have_cuda -eq 1 ]; then
    make -C "$build/test/cudasim" -j"$jobs" >>"$build/build.out" 2>&1 ||
        { grep -E 'error' "$build/build.out" | head; echo "0 passed, 1 failed, 0 skipped"; exit 1; }
    targets+=(gtest_cuda)
fi
make -C "$build/test/gtest" -j"$jobs" "${targets[@]}" >>"$build/build.out" 2>&1 ||
    { grep -E 'error' "$build/build.out" | head; echo "0 passed, 1 failed, 0 skipped"; exit 1; }

passed=0
failed=0
skipped=0

# Run one binary with a filter, add googletest's counts to the totals; a
# ThreadSanitizer report, or an exit without a googletest failure (crash,
# timeout), counts as one more failure.
run_suite() {
    local name=$1 filter=$2; shift 2
    local log="$build/tsan-$name.log" rc p f s reports
    # second_deadlock_stack: lock-order reports name both acquisitions.
    TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1 exitcode=66" \
        timeout -k 10 900 "$@" --gtest_filter="$filter" >"$log" 2>&1
    rc=$?
    p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
    f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
    s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
    p=${p:-0}; f=${f:-0}; s=${s:-0}
    reports=$(grep -c '^WARNING: ThreadSanitizer' "$log")
    echo "[tsan] $name: $p passed, $f failed, $s skipped, $reports ThreadSanitizer" \
         "reports (exit $rc)"
    if [ "$reports" -gt 0 ] || { [ $rc -ne 0 ] && [ "$f" -eq 0 ]; }; then
        f=$((f + 1))
        grep -A12 '^WARNING: ThreadSanitizer' "$log" | head -60
    fi
    grep -E '^\[  FAILED  \] [a-z]' "$log" | head
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
}

run_suite gtest "$filter" "$build/test/gtest/gtest"

# gtest_cuda: the tests that start threads (grep -l std::thread
# test/gtest/cuda), each in its own forked child as every CUDA test.
cuda_filter='ucm_cuda.threads_*:ucm_cuda.hooks_reinstalled_*'
cuda_filter+=':memtype_e2e.threads_*:cuda_threads.*'
cuda_filter+=':test_uct_cuda_copy.*_from_a_thread_*:test_uct_cuda_ipc.*_from_a_thread_*'
if [ $have_cuda -eq 1 ]; then
    run_suite gtest_cuda "$cuda_filter" \
        env LD_LIBRARY_PATH="$build/test/cudasim/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        "$build/test/gtest/gtest_cuda"
else
    echo "[tsan] gtest_cuda: SKIPPED (configure found no CUDA toolkit)"
fi

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
