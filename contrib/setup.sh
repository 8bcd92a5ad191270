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
    # contrib/tests/install.sh: a CMake project finds us by find_package(ucx);
    # pip fetches the newest upstream headers for contrib/tests/abi.sh
    cmake python3-pip python3-venv
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

# The headers of the newest upstream release, for the same check: NVIDIA's
# libucx-cu13 wheel from PyPI carries them (a wheel is a zip; nothing of it
# is installed, its libraries are never used).
wheel_inc=/opt/upstream-ucx-wheel-headers
wheel_version=${UCX_ABI_WHEEL_VERSION:-1.22.0}
if [ ! -f "$wheel_inc/ucp/api/ucp.h" ]; then
    tmp=$(mktemp -d)
    if command -v pip3 >/dev/null &&
       pip3 download -q --no-deps --only-binary=:all: --platform manylinux_2_28_x86_64 \
           --python-version 3.12 -d "$tmp" "libucx-cu13==$wheel_version" >/dev/null 2>&1 &&
       (cd "$tmp" && python3 -m zipfile -e libucx_cu13-*.whl x) 2>/dev/null; then
        SUDO=""
        [ "$(id -u)" -eq 0 ] || SUDO=sudo
        $SUDO mkdir -p "$wheel_inc"
        $SUDO cp -r "$tmp"/x/libucx/include/ucp "$tmp"/x/libucx/include/ucs \
            "$tmp"/x/libucx/include/uct "$tmp"/x/libucx/include/ucm "$wheel_inc"/
        echo "setup: upstream UCX $wheel_version headers (ABI check) in $wheel_inc"
    else
        echo "setup: could not fetch libucx-cu13 $wheel_version: the ABI check against it is skipped"
    fi
    rm -rf "$tmp"
fi

# UCXX from PyPI as a client of our libraries (contrib/tests/ucxx.sh): the
# versions of docs/bindings.md; its libucx wheel's libraries are never loaded
# in the test (LD_LIBRARY_PATH and RAPIDS_LIBUCX_PREFER_SYSTEM_LIBRARY).
ucxx_venv=/opt/ucxx-venv
if [ ! -x "$ucxx_venv/bin/python" ] || ! "$ucxx_venv/bin/python" -c 'import ucxx' 2>/dev/null; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO=sudo
    if $SUDO python3 -m venv "$ucxx_venv" >/dev/null 2>&1 &&
       $SUDO "$ucxx_venv/bin/pip" install -q ucxx-cu13==0.52.0 libucxx-cu13==0.52.0 \
           libucx-cu13==1.21.0 >/dev/null 2>&1; then
        echo "setup: UCXX 0.52 in $ucxx_venv"
    else
        echo "setup: could not install UCXX from PyPI: contrib/tests/ucxx.sh will be skipped"
    fi
fi

if [ -f /usr/local/cuda/include/cuda.h ]; then
    echo "setup: CUDA toolkit found at /usr/local/cuda"
else
    echo "setup: no CUDA toolkit at /usr/local/cuda: the CUDA parts and their tests are skipped"
fi
