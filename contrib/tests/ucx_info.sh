#!/bin/bash
# ucx_info from the build tree: every report works, bad usage and bad
# configuration values fail with a message that names the cause.
set -euo pipefail
info="$BUILD_DIR/src/tools/info/ucx_info"

out=$("$info" -v)
echo "$out"
grep -q "^# Library version: [0-9]*\.[0-9]*\.[0-9]*" <<<"$out"

"$info" -b | grep -q '^#define UCX_VERSION'
dev=$("$info" -d)
grep -q '^# Memory domain: self' <<<"$dev"
grep -q 'Transport: posix' <<<"$dev"
grep -q 'Transport: tcp' <<<"$dev"
"$info" -h | grep -q 'Usage: ucx_info'

cfg=$("$info" -c)
echo "$cfg"
grep -q '^UCX_LOG_LEVEL=' <<<"$cfg"
grep -q '^UCX_TLS=' <<<"$cfg"

# The environment is reflected in the printed value.
UCX_LOG_LEVEL=info "$info" -c | grep -q '^UCX_LOG_LEVEL=info$'

# Bad usage: usage text and non-zero exit.
if "$info" -Z 2>err.txt; then echo "unknown option accepted"; exit 1; fi
grep -q Usage err.txt
if "$info" 2>err.txt; then echo "no option accepted"; exit 1; fi

# Bad value: non-zero exit and an error that names variable and value.
if UCX_LOG_LEVEL=verbose "$info" -c >out.txt 2>err.txt; then
    echo "bad UCX_LOG_LEVEL accepted"; exit 1
fi
cat err.txt
grep -q 'UCX_LOG_LEVEL' err.txt
grep -q 'verbose' err.txt
rm -f err.txt out.txt
