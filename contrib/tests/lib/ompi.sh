# Sourced by the Open MPI and OpenSHMEM tests (contrib/tests/openmpi.sh,
# openshmem.sh): what both need before they run anything.

# Exit 77 (skip, visibly) for a tree Open MPI's plugins cannot load. They are
# not instrumented: libraries built with the sanitizers or fuzzing coverage
# leave runtime symbols unresolved (__sancov_lowest_stack), so MPI_Init fails
# before our code runs. The in-tree build (contrib/intree-check.sh) runs these tests in full.
ompi_skip_instrumented() { # BUILD_DIR
    if grep -qE -- '-fsanitize=(address|fuzzer)' "$1/Makefile" 2>/dev/null; then
        echo "SKIP: instrumented tree (sanitizers/fuzzing): Debian's Open MPI plugins cannot load it; the in-tree build (contrib/intree-check.sh) runs this test"
        exit 77
    fi
}

# mpirun/oshrun options for root (CI runs as root).
ompi_root_args=()
[ "$(id -u)" -eq 0 ] && ompi_root_args=(--allow-run-as-root)

# Our build's libraries, first on LD_LIBRARY_PATH of every rank.
ompi_our_libs() { # BUILD_DIR
    echo "$1/src/ucp/.libs:$1/src/uct/.libs:$1/src/ucs/.libs:$1/src/ucm/.libs"
}

# Exit 77 (skip, visibly) unless this machine can make emulated hosts (root,
# iproute2) and build and launch Open MPI jobs.
ompi_require_netns() {
    if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null; then
        echo "SKIPPED: needs root and iproute2 (ip netns)"
        exit 77
    fi
    if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
        echo "SKIPPED: Open MPI (openmpi-bin, libopenmpi-dev) is not installed"
        exit 77
    fi
}
