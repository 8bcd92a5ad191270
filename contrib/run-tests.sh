#!/bin/bash
# Runs every test suite of one build tree and prints, as its last line,
#   N passed, M failed, K skipped
# counting each googletest test and each shell test. Exits non-zero on any
# failure.
#
# usage: contrib/run-tests.sh BUILD_DIR [LABEL]
# RUN_GTEST=no leaves the googletest binaries out (contrib/intree-check.sh:
# make check has just run them in that tree).
set -uo pipefail

build=$(cd "$1" && pwd)
label=${2:-$(basename "$build")}
src=$(cd "$(dirname "$0")/.." && pwd)
logdir="$build/test-logs"
mkdir -p "$logdir"

# The same conditions wherever this runs: tests that kill or abort
# children on purpose leave no core files in the checkout, and none reads
# the caller's terminal (a closed stdin would hand fd 0 to the first file
# a test opens).
ulimit -c 0
exec </dev/null

passed=0
failed=0
skipped=0

# Add the counts googletest printed in its closing lines to the totals.
count_gtest() {
    local log=$1 rc=$2 p f s
    p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
    f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
    s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
    p=${p:-0}; f=${f:-0}; s=${s:-0}
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        # Crashed or aborted before googletest could report: one failure.
        f=1
    fi
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
    echo "[$label] $(basename "$log" .log): $p passed, $f failed, $s skipped"
}

run_gtest() {
    local name=$1; shift
    local log="$logdir/$name.log"
    # A hang must fail the run, not stall CI: each suite gets 15 minutes.
    timeout -k 10 900 "$@" >"$log" 2>&1
    local rc=$?
    count_gtest "$log" $rc
    if [ $rc -ne 0 ]; then
        grep -E '^\[  FAILED  \]|Failure|ERROR|Sanitizer' "$log" | head -40
    fi
    grep '^\[  SKIPPED \] [a-z]' "$log" | sed "s/^/[$label] /"
}

# A suite that does not build counts as one failed test; the others still run.
build_suite() {
    local target=$1 log="$logdir/build-$1.log"
    if ! make -C "$build/test/gtest" -s "$target" >"$log" 2>&1; then
        echo "[$label] building $target: FAILED"
        grep -E 'error' "$log" | head -20
        failed=$((failed + 1))
        return 1
    fi
}

if [ "${RUN_GTEST:-yes}" = no ]; then
    :
elif build_suite gtest; then
    run_gtest gtest "$build/test/gtest/gtest"
fi

if [ "${RUN_GTEST:-yes}" = no ]; then
    :
elif grep -q '^#define HAVE_CUDA 1' "$build/config.h" 2>/dev/null; then
    if ! build_suite gtest_cuda; then
        :
    elif [ "${CUDASIM:-yes}" = no ]; then
        run_gtest gtest_cuda "$build/test/gtest/gtest_cuda"
    else
        run_gtest gtest_cuda env LD_LIBRARY_PATH="$build/test/cudasim/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
            "$build/test/gtest/gtest_cuda"
    fi
else
    echo "[$label] gtest_cuda: SKIPPED (configure found no CUDA toolkit; CUDA tests not run)"
fi

# Shell tests: each script is one test; exit 0 pass, 77 skip, else fail.
for t in "$src"/contrib/tests/*.sh; do
    name=$(basename "$t" .sh)
    log="$logdir/sh-$name.log"
    SRC_DIR="$src" BUILD_DIR="$build" timeout -k 10 600 bash "$t" >"$log" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then
        passed=$((passed + 1))
    elif [ $rc -eq 77 ]; then
        skipped=$((skipped + 1))
        echo "[$label] $name: SKIPPED ($(tail -1 "$log"))"
    else
        failed=$((failed + 1))
        echo "[$label] $name: FAILED"; tail -20 "$log"
    fi
done

echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
