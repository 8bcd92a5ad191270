#!/bin/bash
# An unmap reported from inside free() (as Open MPI's sbrk hook does, with
# glibc's arena lock held) must not allocate or wait on a lock in our
# libraries: test/apps/ucm_event_in_free checks it in a fresh thread of a
# process that dlopen()ed libucp, without and (where the tree has the CUDA
# driver model) with the CUDA module and the memory-type cache subscribed,
# then with 8 threads churning the allocator, the cache and the events.
set -uo pipefail
build=${BUILD_DIR:?}
prog=$build/test/apps/ucm_event_in_free
lib="$build/src/ucp/.libs/libucp.so.0 $build/src/ucm/.libs/libucm.so.0"
[ -x "$prog" ] || { echo "ucm_event_in_free not built"; exit 1; }

run() {
    echo "== $*"
    timeout -k 5 60 "$@"
    local rc=$?
    [ $rc -eq 77 ] && exit 77
    [ $rc -eq 0 ] || { echo "FAILED (exit $rc)"; exit 1; }
}

run "$prog" $lib
run "$prog" $lib 8
sim=$build/test/cudasim/.libs
if [ -e "$sim/libcuda.so.1" ]; then
    LD_LIBRARY_PATH=$sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} run "$prog" $lib
    LD_LIBRARY_PATH=$sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} run "$prog" $lib 8
else
    echo "no CUDA driver model in this tree: the CUDA-module rows are not run"
fi
echo "all runs clean"
