#!/bin/bash
# Packs the working tree with a generated build system into
# .dist/ucx-tree.tar.gz, for machines that have autoconf/automake but no
# libtool (the GPU machines): there, `tar xzf ... && cd ucx-tree &&
# ./configure && make` needs nothing else.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

mkdir -p "$stage/ucx-tree" "$src/.dist"
(cd "$src" && git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$stage/ucx-tree")
(cd "$stage/ucx-tree" && ./autogen.sh >/dev/null 2>&1)
tar czf "$src/.dist/ucx-tree.tar.gz" -C "$stage" ucx-tree
ls -l "$src/.dist/ucx-tree.tar.gz"
