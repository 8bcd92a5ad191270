#!/bin/bash
# ThreadSanitizer run of the multi-threaded tests: the memtype cache from
# many threads, uct and ucp workers in UCS_THREAD_MODE_MULTI, hooks patched
# while other threads call the hooked functions, the event bus, config
# reads from many threads. Builds its own tree (the libraries and the gtest
# binary only) and fails on any report: TSan makes the process exit 66.
#
# usage: contrib/hardening/tsan.sh BUILD_DIR
# Last line: N passed, M failed, K skipped (googletest's counts; a report
# or a crash adds one failure).
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
make -C "$build/test/gtest" -j"$jobs" gtest >>"$build/build.out" 2>&1 ||
    { grep -E 'error' "$build/build.out" | head; echo "0 passed, 1 failed, 0 skipped"; exit 1; }

log="$build/tsan.log"
# second_deadlock_stack: lock-order reports name both acquisitions.
TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1 exitcode=66" \
    timeout -k 10 900 "$build/test/gtest/gtest" --gtest_filter="$filter" >"$log" 2>&1
rc=$?
p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
p=${p:-0}; f=${f:-0}; s=${s:-0}
reports=$(grep -c '^WARNING: ThreadSanitizer' "$log")
echo "[tsan] $p passed, $f failed, $s skipped, $reports ThreadSanitizer reports (exit $rc)"
if [ "$reports" -gt 0 ] || { [ $rc -ne 0 ] && [ "$f" -eq 0 ]; }; then
    f=$((f + 1))
    grep -A12 '^WARNING: ThreadSanitizer' "$log" | head -60
fi
grep -E '^\[  FAILED  \] [a-z]' "$log" | head
echo "$p passed, $f failed, $s skipped"
[ "$f" -eq 0 ]
