#!/bin/bash
# ABI check of the public UCP API (docs/abi.md):
#  1. our public headers, installed from the build tree, compile on their own
#     as C99, C11 and C++11, warning-free under -Wall -Wextra -Wpedantic;
#  2. every enumerator, macro, typedef and function they declare is listed in
#     test/abi/abi_facts.list, so none escapes the comparison;
#  3. the built libraries export every symbol in test/abi/ucp_symbols.txt
#     (functions declared but not implemented yet are listed, not failed);
#  4. the facts of abi_facts.list -- sizes, field offsets and types, enum and
#     macro values, function signatures -- are equal when printed against
#     upstream's headers and against ours.
#  5. a client compiled against each upstream header set (test/abi/
#     abi_client.c: logging through a component, memory types of the newer
#     numbering, a message to itself) runs on our libraries.
# Upstream's headers come from $UCX_ABI_UPSTREAM_INCLUDE (colon-separated),
# else /opt/upstream-ucx-1.13-headers and /opt/upstream-ucx-wheel-headers
# (contrib/setup.sh unpacks Debian's libucx-dev and NVIDIA's libucx-cu13
# wheel there), else /usr/include. Without any (or with
# UCX_ABI_UPSTREAM_INCLUDE=none), steps 1-3 still run and the test ends as
# skipped (77). Only headers are taken from upstream: nothing is linked
# against its libraries.
#
# usage (as contrib/run-tests.sh runs it): SRC_DIR=... BUILD_DIR=... abi.sh
set -uo pipefail
src=${SRC_DIR:?SRC_DIR not set}
build=${BUILD_DIR:?BUILD_DIR not set}
abi="$src/test/abi"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0

fail() {
    echo "FAIL: $*"
    failed=1
}

# The build's compilers, without its flags (a sanitizer build's flags would
# need its runtime; nothing here links UCX code).
cc=$(sed -n 's/^CC = //p' "$build/Makefile")
cxx=$(sed -n 's/^CXX = //p' "$build/Makefile")
cc=${cc:-cc}
cxx=${cxx:-c++}

# ---- our headers, installed ------------------------------------------------
ours="$work/include"
# (src/ucm's install-data would also install its CUDA module: only its
# header list is installed)
for target in src/ucs:install-data src/ucp:install-data \
              src/ucm:install-nobase_ucmincludeHEADERS; do
    make -s -C "$build/${target%%:*}" "${target#*:}" includedir="$ours" >"$work/install.log" 2>&1 ||
        { cat "$work/install.log"; echo "FAIL: installing headers of ${target%%:*}"; exit 1; }
done
# The headers a binding includes: UCP, the logging entry point (UCXX logs
# through it) and the memory events of UCM.
printf '#include <%s>\n' ucp/api/ucp.h ucs/debug/log_def.h ucm/api/ucm.h >"$work/ucp.c"

# Every UCX header a compile used must come from $2: catches a header missing
# from the install list that the compiler then found elsewhere (/usr/include).
check_origin() {
    local what=$1 dir=$2 f
    shift 2
    "$@" -M "$work/ucp.c" >"$work/deps" || { fail "$what: <ucp/api/ucp.h> does not compile"; return 1; }
    for f in $(tr ' \\' '\n\n' <"$work/deps" | grep -E '/(ucp|ucs|uct|ucm)/'); do
        case $(realpath "$f") in
            "$(realpath "$dir")"/*) ;;
            *) fail "$what: $f is not from $dir"; return 1 ;;
        esac
    done
}
check_origin "our headers" "$ours" "$cc" -I"$ours" || exit 1

# ---- 1. each header on its own, as C and C++ --------------------------------
warn="-Wall -Wextra -Wpedantic -Werror"
headers=$(cd "$ours" && find . -name '*.h' | sed 's|^\./||' | sort)
for h in $headers; do
    # (included twice to test its guard; the typedef keeps a header of
    # macros only from making an empty translation unit)
    printf '#include <%s>\n#include <%s>\ntypedef int abi_nonempty;\n' "$h" "$h" >"$work/one.c"
    cp "$work/one.c" "$work/one.cc"
    for std in c99 c11; do
        "$cc" -std=$std $warn -I"$ours" -fsyntax-only "$work/one.c" 2>&1 ||
            fail "$h does not compile cleanly as $std"
    done
    "$cxx" -std=c++11 $warn -I"$ours" -fsyntax-only "$work/one.cc" 2>&1 ||
        fail "$h does not compile cleanly as C++11"
done
echo "headers: $(echo "$headers" | wc -w) compile alone as C99, C11 and C++11"

# ---- 2. everything our headers declare is in the fact list ------------------
mkdir -p "$work/gen"
awk -v out="$work/gen" -f "$abi/gen_facts.awk" "$abi/abi_facts.list" ||
    { echo "FAIL: bad abi_facts.list"; exit 1; }
listed="$work/listed.txt"
awk '$1 == "name" || $1 == "ignore" { print $2 }' "$work/gen/meta.txt" | sort -u >"$listed"

used=$(tr ' \\' '\n\n' <"$work/deps" | grep "^$ours/")
{
    for f in $used; do
        "$cc" -fpreprocessed -dD -E -P -x c "$f" 2>/dev/null | grep -v '^#' |
            awk -f "$abi/decl_names.awk"
    done
    # object-like macros, except include guards and attribute macros
    "$cc" -I"$ours" -E -dD "$work/ucp.c" |
        awk -v dir="$ours/" '
            /^# [0-9]+ "/ { f = $3; gsub(/"/, "", f); next }
            /^#define / && index(f, dir) == 1 && $2 !~ /\(/ { print "macro " $2 }' |
        grep -E ' (UCP|UCS|ucp|ucs)_' | grep -vE '_H_?$| UCS_[FSV]_'
    # function-like macros of the UCP headers and of status/cpu_set
    "$cc" -I"$ours" -E -dD "$work/ucp.c" |
        awk -v dir="$ours/" '
            /^# [0-9]+ "/ { f = $3; gsub(/"/, "", f); next }
            /^#define / && index(f, dir) == 1 && $2 ~ /\(/ &&
            f ~ /(ucp\/api\/|status\.h|cpu_set\.h)/ { sub(/\(.*/, "", $2); print "macro " $2 }'
    # functions, also static inline ones
    "$cc" -I"$ours" -aux-info "$work/aux.txt" -fsyntax-only "$work/ucp.c"
    grep -F "/* $ours/" "$work/aux.txt" |
        sed -E 's/^\/\* [^*]*\*\/ [^(]*[ *]([A-Za-z_][A-Za-z0-9_]*) \(.*$/function \1/'
} | sort -u >"$work/declared.txt"
missing=$(awk 'NR == FNR { ok[$1] = 1; next } !($2 in ok) { print "  " $0 }' \
          "$listed" "$work/declared.txt")
if [ -n "$missing" ]; then
    echo "$missing"
    fail "declared by our headers but not in test/abi/abi_facts.list (add a fact or an ignore line)"
else
    echo "completeness: all $(wc -l <"$work/declared.txt") names our headers declare are listed"
fi

# ---- 3. exported symbols -----------------------------------------------------
exports() {
    nm -D --defined-only "$1" 2>/dev/null | awk '$2 ~ /^[TWi]$/ { print $3 }' | sort -u
}
declare -A lib_path=([libucp]="$build/src/ucp/.libs/libucp.so.0"
                     [libucs]="$build/src/ucs/.libs/libucs.so.0")
for lib in libucp libucs; do
    test -f "${lib_path[$lib]}" || { fail "${lib_path[$lib]} not built"; exit 1; }
    exports "${lib_path[$lib]}" >"$work/$lib.syms"
done
nreq=0
while read -r sym lib _; do
    case $sym in ''|'#'*) continue ;; esac
    lib=${lib:-libucp}
    nreq=$((nreq + 1))
    grep -qx "$sym" "$work/$lib.syms" || fail "$sym is required (ucp_symbols.txt) but $lib.so.0 does not export it"
done <"$abi/ucp_symbols.txt"
echo "symbols: $nreq required symbols checked"
# The API functions of the fact list that the libraries do not export yet.
pending=$(awk '$1 == "func" { for (i = 2; i <= NF; i++) print $i }' "$abi/abi_facts.list" |
          grep -E '^(ucp|ucs)_' | grep -vxF -e ucp_init -e ucs_cpu_is_set -e ucs_cpu_set_find_lcs |
          sort -u | grep -vxF -f "$work/libucp.syms" | grep -vxF -f "$work/libucs.syms")
if [ -n "$pending" ]; then
    echo "symbols: declared, not exported yet ($(echo "$pending" | wc -l)): $(echo $pending)"
fi

# ---- 4. facts against upstream and against ours -------------------------------
# Every upstream header set found is compared: 1.13 (Debian's libucx-dev, the
# oldest ABI we promise) and the newest release (the headers of NVIDIA's
# libucx-cu13 wheel), both unpacked by contrib/setup.sh. A colon-separated
# UCX_ABI_UPSTREAM_INCLUDE replaces the list; "none" skips the comparison.
upstreams=()
if [ "${UCX_ABI_UPSTREAM_INCLUDE:-}" = none ]; then
    :
elif [ -n "${UCX_ABI_UPSTREAM_INCLUDE:-}" ]; then
    IFS=: read -r -a upstreams <<<"$UCX_ABI_UPSTREAM_INCLUDE"
    for upstream in "${upstreams[@]}"; do
        test -f "$upstream/ucp/api/ucp.h" || { echo "FAIL: no ucp/api/ucp.h under $upstream"; exit 1; }
    done
else
    for upstream in /opt/upstream-ucx-1.13-headers /opt/upstream-ucx-wheel-headers; do
        test -f "$upstream/ucp/api/ucp.h" && upstreams+=("$upstream")
    done
    if [ ${#upstreams[@]} -eq 0 ] && [ -f /usr/include/ucp/api/ucp.h ]; then
        upstreams=(/usr/include)
    fi
fi

# Builds and runs the fact program against include dir $2, writing KEY<TAB>VALUE
# lines to $3. A fact that does not compile there is recorded as <absent>:
# each round disables the lines the compiler rejected and tries again.
facts() {
    local what=$1 inc=$2 out=$3 dir="$work/$1" round lines
    mkdir -p "$dir"
    : >"$dir/disabled"
    # clang stops at 20 errors a run: enough rounds for every absent fact
    for round in $(seq 1 40); do
        awk -v out="$dir" -v disabled="$dir/disabled" -f "$abi/gen_facts.awk" \
            "$abi/abi_facts.list"
        if "$cxx" -std=gnu++11 -w -I"$inc" "$dir/facts.cc" -o "$dir/facts" 2>"$dir/err"; then
            break
        fi
        lines=$(grep -oE '^[^:]*facts\.cc:[0-9]+:[0-9]+: (error|note)' "$dir/err" |
                cut -d: -f2 | sort -un |
                awk 'NR == FNR { fact[$1] = 1; next } ($1 in fact)' FS='\t' "$dir/keys.txt" FS=' ' -)
        if [ -z "$lines" ]; then
            head -30 "$dir/err"
            fail "the fact program does not build against $what's headers ($inc)"
            return 1
        fi
        echo "$lines" >>"$dir/disabled"
        rm -f "$dir/facts"
    done
    test -x "$dir/facts" || { head -30 "$dir/err"; fail "no fact program for $what"; return 1; }
    "$dir/facts" >"$dir/present" || { fail "fact program for $what crashed"; return 1; }
    awk -F'\t' 'NR == FNR { have[$1] = 1; next }
                !($2 in have) { print $2 "\t<absent>" }' "$dir/present" "$dir/keys.txt" |
        cat "$dir/present" - >"$dir/raw"
    # Demangle C++ type names so that a mismatch is readable.
    if command -v c++filt >/dev/null; then
        awk -F'\t' '$1 ~ /^(type|func) / && $2 != "<absent>"' "$dir/raw" >"$dir/types"
        awk -F'\t' '!($1 ~ /^(type|func) / && $2 != "<absent>")' "$dir/raw" >"$out"
        cut -f2 "$dir/types" | c++filt -t | paste <(cut -f1 "$dir/types") - >>"$out"
    else
        cp "$dir/raw" "$out"
    fi
}

if [ ${#upstreams[@]} -eq 0 ]; then
    echo "ABI comparison skipped: no upstream UCX headers (contrib/setup.sh, or set UCX_ABI_UPSTREAM_INCLUDE)"
    [ $failed -eq 0 ] || exit 1
    echo "SKIPPED: no upstream UCX headers to compare with (run contrib/setup.sh)"
    exit 77
fi

facts ours "$ours" "$work/ours.txt" || exit 1
mkdir -p "$build/test-logs"
cp "$work/ours.txt" "$build/test-logs/abi-facts-ours.txt"
passed=()
for upstream in "${upstreams[@]}"; do
    up_version=$(awk '$2 == "UCP_API_MAJOR" { ma = $3 } $2 == "UCP_API_MINOR" { mi = $3 }
                      END { print ma "." mi }' "$upstream/ucp/api/ucp_version.h")
    echo "upstream: UCP API $up_version headers from $upstream"
    check_origin "upstream's headers" "$upstream" "$cc" -I"$upstream" || continue
    facts "upstream-$up_version" "$upstream" "$work/upstream-$up_version.txt" || continue
    # Keep a copy for a later look (run-tests.sh keeps test-logs/).
    cp "$work/upstream-$up_version.txt" "$build/test-logs/abi-facts-upstream-$up_version.txt"
    if awk -f "$abi/compare.awk" "$work/gen/meta.txt" "$work/upstream-$up_version.txt" \
           "$work/ours.txt"; then
        passed+=("$up_version")
    else
        fail "facts differ from upstream UCX $up_version"
    fi
done

# ---- 5. a client built with each upstream header set runs on ours -----------
# (built with the build's flags: a sanitizer build's libraries need the
# client to carry the same runtime)
build_cflags=$(sed -n 's/^CFLAGS = //p' "$build/Makefile")
libdirs="$build/src/ucp/.libs:$build/src/uct/.libs:$build/src/ucs/.libs:$build/src/ucm/.libs"
for upstream in "${upstreams[@]}"; do
    up_version=$(awk '$2 == "UCP_API_MAJOR" { ma = $3 } $2 == "UCP_API_MINOR" { mi = $3 }
                      END { print ma "." mi }' "$upstream/ucp/api/ucp_version.h")
    client="$work/abi_client-$up_version"
    # shellcheck disable=SC2086
    if ! "$cc" -std=gnu11 -Wall -Werror $build_cflags -I"$upstream" "$abi/abi_client.c" \
            -o "$client" -L"$build/src/ucp/.libs" -L"$build/src/ucs/.libs" -lucp -lucs \
            2>"$work/client.err"; then
        cat "$work/client.err"
        fail "abi_client does not build against upstream $up_version's headers"
        continue
    fi
    env -u UCX_ABI_UPSTREAM_INCLUDE LD_LIBRARY_PATH="$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" UCX_LOG_LEVEL=warn \
        timeout 60 "$client" >"$work/client.out" 2>"$work/client.log"
    rc=$?
    cat "$work/client.out"
    [ $rc -eq 0 ] || { cat "$work/client.log"; fail "abi_client built with $up_version headers exited $rc"; }
    # the component's line, formatted, with its name (before the dispatcher
    # took upstream's signature it printed an empty message)
    grep -q 'abi_client.c:[0-9]* *ABICLIENT info  value 42 text abc$' "$work/client.log" ||
        { cat "$work/client.log"; fail "$up_version client: the component's log line is missing or garbled"; }
    # nothing else: no warning about the API version or anything
    if grep -v ABICLIENT "$work/client.log" | grep -q .; then
        cat "$work/client.log"
        fail "$up_version client: the library printed warnings"
    fi
done

[ $failed -eq 0 ] && echo "abi: PASS against upstream ${passed[*]}"
exit $failed
