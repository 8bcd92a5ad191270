#!/bin/bash
# The project's test command (README "run the tests"): installs what is
# missing, builds twice (debug, and ASan+UBSan), runs every suite in both,
# and ends with one line "N passed, M failed, K skipped" over all of them.
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc)

"$src/contrib/setup.sh" || exit 1
(cd "$src" && ./autogen.sh >/dev/null 2>&1) || { echo "autogen.sh failed"; exit 1; }

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

build_and_test debug --enable-debug || total_f=$((total_f + 1))
build_and_test sanitizers --enable-debug --enable-asan --enable-ubsan || total_f=$((total_f + 1))

echo "$total_p passed, $total_f failed, $total_s skipped"
[ $total_f -eq 0 ]
