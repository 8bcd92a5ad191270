#!/bin/bash
# Prints the variable reference of docs/configuration.md from ucx_info, so
# the documentation is generated from the tables the code registers.
# usage: contrib/gen-config-doc.sh BUILD_DIR
set -euo pipefail
"$1/src/tools/info/ucx_info" -c -f | awk '
    BEGIN { state = 0 }                      # 0: a table starts, 1: its title comes next
    /^$/ { state = 0; next }
    state == 0 && /^#$/ { state = 1; next }
    state == 1 && /^# / { printf "\n### %s\n\n| variable | default | accepted values | meaning |\n|---|---|---|---|\n", substr($0, 3); state = 2; doc = ""; next }
    /^# syntax:  / { syntax = substr($0, 12); next }
    /^# default: / { next }
    /^# / { doc = (doc == "") ? substr($0, 3) : doc " " substr($0, 3); next }
    /^UCX_/ { name = $0; sub(/=.*/, "", name); value = substr($0, length(name) + 2);
              gsub(/\|/, "\\|", doc); gsub(/\|/, "\\|", syntax);
              printf "| `%s` | `%s` | %s | %s |\n", name, value, syntax, doc; doc = ""; syntax = ""; next }
'
