#!/bin/bash
# UCXX, RAPIDS' binding, on our libraries: its Python package from PyPI
# (installed by contrib/setup.sh into /opt/ucxx-venv) loads our libucp
# instead of the one in its libucx wheel, and test/bindings/ucxx_check.py
# runs its asyncio and core APIs between two processes with host buffers
# (the GPU kinds run on the GPU machine, contrib/gpu-bindings.sh).
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
