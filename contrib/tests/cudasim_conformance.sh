#!/bin/bash
# The CUDA driver model must answer the conformance program exactly as the
# real H200 driver did (test/cudasim/conformance/h200.expected).
set -euo pipefail
if ! grep -q '^#define HAVE_CUDA 1' "$BUILD_DIR/config.h"; then
    echo "no CUDA toolkit at configure time: the model is not built"
    exit 77
fi
make -C "$BUILD_DIR/test/cudasim" -s check
