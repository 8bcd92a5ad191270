#!/bin/bash
# Installs what building and testing need on a fresh Debian 12 / Ubuntu
# machine. Safe to run again: apt-get skips what is already there.
set -euo pipefail

packages=(
    build-essential autoconf automake libtool pkg-config
    libgtest-dev libhwloc-dev libibverbs-dev
    openmpi-bin libopenmpi-dev  # contrib/tests/openmpi.sh (docs/openmpi.md)
    # contrib/hardening: clang's ASan/UBSan/libFuzzer runtimes, llvm-symbolizer
    # for their reports, valgrind
    clang llvm libclang-rt-dev valgrind
    # test_ucp_tcp_path: veth links between network namespaces
    iproute2 util-linux
)

missing=()
for p in "${packages[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO=sudo
    echo "setup: installing ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Upstream UCX's public headers, for the ABI check only (contrib/tests/abi.sh).
# Unpacked into a private directory, never installed into /usr/include, so
# that our build can never pick one of them up by accident.
upstream_inc=/opt/upstream-ucx-1.13-headers
if [ ! -f "$upstream_inc/ucp/api/ucp.h" ]; then
    tmp=$(mktemp -d)
    if (cd "$tmp" && apt-get download libucx-dev >/dev/null 2>&1) &&
       dpkg -x "$tmp"/libucx-dev_*.deb "$tmp/x"; then
        SUDO=""
        [ "$(id -u)" -eq 0 ] || SUDO=sudo
        $SUDO mkdir -p "$upstream_inc"
        $SUDO cp -r "$tmp"/x/usr/include/ucp "$tmp"/x/usr/include/ucs \
            "$tmp"/x/usr/include/uct "$tmp"/x/usr/include/ucm "$upstream_inc"/
        echo "setup: upstream UCX headers (ABI check) in $upstream_inc"
    else
        echo "setup: could not fetch libucx-dev: the ABI comparison will be skipped"
    fi
    rm -rf "$tmp"
fi

if [ -f /usr/local/cuda/include/cuda.h ]; then
    echo "setup: CUDA toolkit found at /usr/local/cuda"
else
    echo "setup: no CUDA toolkit at /usr/local/cuda: the CUDA parts and their tests are skipped"
fi
