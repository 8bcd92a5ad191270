#!/bin/bash
# Installs what building and testing need on a fresh Debian 12 / Ubuntu
# machine. Safe to run again: apt-get skips what is already there.
set -euo pipefail

packages=(
    build-essential autoconf automake libtool pkg-config
    libgtest-dev libhwloc-dev libibverbs-dev
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

if [ -f /usr/local/cuda/include/cuda.h ]; then
    echo "setup: CUDA toolkit found at /usr/local/cuda"
else
    echo "setup: no CUDA toolkit at /usr/local/cuda: the CUDA parts and their tests are skipped"
fi
