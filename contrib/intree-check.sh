#!/bin/bash
# The newcomer's build, kept passing (README "Building by hand", without a
# build directory): in a copy of the tree, ./autogen.sh, ./configure with
# no options (an optimised build, CUDA when the toolkit is there), make,
# make install (to a private prefix), make check, then the shell tests of
# contrib/tests in that tree (contrib/run-tests.sh with RUN_GTEST=no: make
# check has run the googletest binaries). This is CI's only gcc tree: the
# sanitizer tree (clang, --enable-debug) covers the out-of-tree build and
# the debug-only checks, valgrind.sh runs on this one. Counts googletest's
# closing lines of every suite make check ran and the shell tests.
#
# usage: contrib/intree-check.sh DIR     (DIR is created anew)
# Last line: N passed, M failed, K skipped
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:?usage: intree-check.sh DIR}
jobs=$(nproc)

fail() {
    echo "intree: $1"; [ -f "$2" ] && tail -30 "$2"
    echo "0 passed, 1 failed, 0 skipped"; exit 1
}

rm -rf "$dir" && mkdir -p "$dir" || fail "cannot create $dir" /dev/null
dir=$(cd "$dir" && pwd)
# The tracked and new files, as a fresh clone with the work in it would hold.
(cd "$src" && git ls-files -co --exclude-standard -z |
     xargs -0 cp --parents -t "$dir") || fail "cannot copy the tree" /dev/null
# Not "build-*" trees or generated files of the source directory.
rm -rf "$dir"/build-*

cd "$dir"
./autogen.sh >autogen.out 2>&1 || fail "autogen.sh failed" autogen.out
./configure --enable-werror --prefix="$dir/prefix" >configure.out 2>&1 ||
    fail "configure failed" configure.out
make -j"$jobs" >make.out 2>&1 || fail "make failed" make.out
make install >install.out 2>&1 || fail "make install failed" install.out
timeout -k 10 1500 make check >check.out 2>&1
rc=$?

p=0 f=0 s=0
while read -r n; do p=$((p + n)); done < <(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' check.out)
while read -r n; do f=$((f + n)); done < <(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' check.out)
while read -r n; do s=$((s + n)); done < <(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' check.out)
grep -E '^\[  FAILED  \] [a-z]' check.out | sort -u | head -20
[ $rc -ne 0 ] && [ $f -eq 0 ] && { echo "intree: make check exited $rc"; tail -20 check.out; f=1; }
echo "[intree] make check: $p passed, $f failed, $s skipped"

RUN_GTEST=no "$dir/contrib/run-tests.sh" "$dir" intree >shell-tests.out 2>&1
cat shell-tests.out
last=$(tail -1 shell-tests.out)
if [[ $last =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped$ ]]; then
    p=$((p + BASH_REMATCH[1])); f=$((f + BASH_REMATCH[2])); s=$((s + BASH_REMATCH[3]))
else
    echo "intree: the shell tests ended without a summary"; f=$((f + 1))
fi
echo "$p passed, $f failed, $s skipped"
[ $f -eq 0 ]
