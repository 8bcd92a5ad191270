#!/bin/bash
# The project's test command (README "run the tests"): installs what is
# missing, then, each step adding to one count:
# - the newcomer's build (contrib/intree-check.sh): in-tree, optimised, gcc,
#   make install, make check, and the shell tests of contrib/tests;
# - the sanitizer tree: out-of-tree, --enable-debug, ASan+UBSan, built by
#   clang, which also builds the libFuzzer targets; every suite;
# - the hardening steps of contrib/hardening: each fuzz target for a bounded
#   time, valgrind memcheck of a subset on the in-tree build, a
#   ThreadSanitizer tree for the multi-threaded tests;
# and ends with one line "N passed, M failed, K skipped" over all of them.
# A separate gcc debug tree ran every suite a third time; it went (CI has 45
# minutes on 2 cores): gcc's warnings are checked at -O2 in-tree, the debug
# build and its assertions in the sanitizer tree.
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)

# Kernels that randomise mmap with more than 28 bits (6.6+ defaults on some
# distributions) break the shadow layouts of Debian 12's ASan and TSan;
# without address randomisation every tree runs as it does here.
if [ -z "${UCX_TEST_NO_ASLR:-}" ] &&
   [ "$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo 0)" -gt 28 ] &&
   command -v setarch >/dev/null; then
    echo "setup: vm.mmap_rnd_bits > 28: running without address randomisation"
    UCX_TEST_NO_ASLR=1 exec setarch "$(uname -m)" -R bash "$0" "$@"
fi
jobs=$(nproc)

"$src/contrib/setup.sh" || exit 1
(cd "$src" && ./autogen.sh >/dev/null 2>&1) || { echo "autogen.sh failed"; exit 1; }

# As contrib/run-tests.sh, for the hardening steps too: no core files from
# the children tests kill on purpose, no test reading a terminal.
ulimit -c 0
exec </dev/null

total_p=0; total_f=0; total_s=0

build_and_test() {
    local name=$1; shift
    local dir="$src/build-$name"
    mkdir -p "$dir"
    echo "== $name: configure $*"
    (cd "$dir" && "$src/configure" --enable-werror "$@" >configure.out 2>&1) ||
        { tail -30 "$dir/configure.out"; return 1; }
    echo "== $name: build"
    make -C "$dir" -j"$jobs" >"$dir/build.out" 2>&1 ||
        { grep -E 'error|Error' "$dir/build.out" | head -30; return 1; }
    echo "== $name: test"
    "$src/contrib/run-tests.sh" "$dir" "$name" | tee "$dir/tests.out"
    local rc=${PIPESTATUS[0]} last p f s
    last=$(tail -1 "$dir/tests.out")
    # A run that stopped before its summary line counts as one failure.
    if [[ ! $last =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped$ ]]; then
        echo "== $name: test run ended without a summary (exit $rc)"
        return 1
    fi
    p=${BASH_REMATCH[1]}; f=${BASH_REMATCH[2]}; s=${BASH_REMATCH[3]}
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        f=1
    fi
    total_p=$((total_p + p)); total_f=$((total_f + f)); total_s=$((total_s + s))
}

# A step of contrib/hardening: its last line is a summary to add up.
hardening_step() {
    local name=$1 log="$src/build-$1.log" last rc start=$SECONDS; shift
    echo "== $name"
    "$@" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    last=$(tail -1 "$log")
    if [[ ! $last =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped$ ]]; then
        echo "== $name: ended without a summary (exit $rc)"
        total_f=$((total_f + 1))
        return
    fi
    total_p=$((total_p + BASH_REMATCH[1])); total_s=$((total_s + BASH_REMATCH[3]))
    local f=${BASH_REMATCH[2]}
    [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
    total_f=$((total_f + f))
    echo "== $name: $((SECONDS - start)) s"
}

# The newcomer's way first: in-tree, optimised, make install, make check.
hardening_step intree "$src/contrib/intree-check.sh" "$src/build-intree"
# The sanitizer tree is built by clang (ASan+UBSan over the whole suite) and
# also holds the fuzz targets; gcc without fuzzing where clang is missing.
if command -v clang >/dev/null && command -v clang++ >/dev/null; then
    build_and_test sanitizers --enable-debug --enable-asan --enable-ubsan \
        --enable-fuzz CC=clang CXX=clang++ || total_f=$((total_f + 1))
else
    echo "== sanitizers: clang not found, gcc without the fuzz targets"
    build_and_test sanitizers --enable-debug --enable-asan --enable-ubsan ||
        total_f=$((total_f + 1))
fi
# Fuzzing: ${FUZZ_SECONDS:-20} s per target (five targets: under 2 minutes).
hardening_step fuzz "$src/contrib/hardening/fuzz.sh" "$src/build-sanitizers" \
    "${FUZZ_SECONDS:-20}"
hardening_step valgrind "$src/contrib/hardening/valgrind.sh" "$src/build-intree"
hardening_step tsan "$src/contrib/hardening/tsan.sh" "$src/build-tsan"

echo "$total_p passed, $total_f failed, $total_s skipped"
[ $total_f -eq 0 ]
