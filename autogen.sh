#!/bin/sh
# Regenerate the build system (configure, Makefile.in, libtool scripts).
# Run once after cloning, and again after editing configure.ac or a Makefile.am.
set -e
cd "$(dirname "$0")"
mkdir -p config/aux config/m4
autoreconf --install --force -Wno-portability "$@"
