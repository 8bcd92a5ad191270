#!/bin/bash
# ucx_perftest from the build tree: bad command lines fail with a usage
# message; local runs of am_lat and am_bw finish with sane numbers over
# self (one process) and, where this build has them, posix shared memory
# and tcp on the loopback device (two processes); so do the UCP tests
# tag_lat, tag_sync_lat and tag_bw (validated) with UCX_TLS=posix / tcp /
# self; --csv has the right
# number of columns; --json parses; a client/server pair over loopback TCP
# works, and a refused connection, a mismatched test and a missing client
# fail with a message that names the cause.
#
# Run by contrib/run-tests.sh with SRC_DIR and BUILD_DIR set; exit 0 pass,
# 77 skip, anything else fail. Takes a few seconds.
set -uo pipefail

perf="$BUILD_DIR/src/tools/perf/ucx_perftest"
if [ ! -x "$perf" ]; then
    echo "ucx_perftest was not built: $perf"
    exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
skips=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok:   $*"; }
skip() { echo "SKIP: $*"; skips=$((skips + 1)); }

# Small runs: this is a check of the tool, not a measurement.
quick=(-n 1000 -w 100)

# ---------------------------------------------------------------------------
# Command-line errors: non-zero exit and a usage line.
expect_usage_error() {
    local what=$1; shift
    if "$perf" "$@" >"$tmp/out" 2>"$tmp/err"; then
        fail "$what: accepted ($*)"
    elif ! grep -q 'Usage: ucx_perftest' "$tmp/err"; then
        fail "$what: no usage message"; cat "$tmp/err"
    else
        pass "$what: $(head -1 "$tmp/err")"
    fi
}

"$perf" -h >"$tmp/out" 2>&1 && grep -q 'Usage: ucx_perftest' "$tmp/out" &&
    grep -q 'am_lat' "$tmp/out" && grep -q -- '--local' "$tmp/out" &&
    pass "-h prints the usage" || fail "-h"

expect_usage_error "unknown option"        -Z
expect_usage_error "unknown long option"   --no-such-option
expect_usage_error "missing argument"      -L -t
expect_usage_error "missing test"          -L -x self
expect_usage_error "unknown test"          -L -t no_such_test -x self
expect_usage_error "bad size"              -L -t am_lat -x self -s 12q
expect_usage_error "bad iterations"        -L -t am_lat -x self -n -5
expect_usage_error "zero iterations"       -L -t am_lat -x self -n 0
expect_usage_error "bad layout"            -L -t am_lat -x self -D fast
expect_usage_error "unknown memory type"   -L -t am_lat -x self -m floppy
expect_usage_error "host with -l"          localhost -l -t am_lat -x self
expect_usage_error "-l with -L"            -l -L -t am_lat -x self
expect_usage_error "two hosts"             hosta hostb -t am_lat
expect_usage_error "upstream-only option"  -L -t am_lat -x self -T 2

# A run that cannot happen is an error with a reason (not a usage error).
if "$perf" -L -t am_lat -x no_such_tl "${quick[@]}" >"$tmp/out" 2>"$tmp/err"; then
    fail "unknown transport accepted"
elif grep -q 'not found' "$tmp/err"; then
    pass "unknown transport: $(tail -1 "$tmp/err")"
else
    fail "unknown transport: unclear message"; cat "$tmp/err"
fi
if "$perf" -L -t am_lat -x self -m cuda "${quick[@]}" >"$tmp/out" 2>"$tmp/err"; then
    grep -q '^#define HAVE_CUDA 1' "$BUILD_DIR/config.h" 2>/dev/null &&
        pass "cuda memory ran (CUDA build)" || fail "-m cuda accepted without CUDA code"
elif grep -q 'not available' "$tmp/err"; then
    pass "cuda memory: $(tail -1 "$tmp/err")"
else
    fail "cuda memory: unclear message"; cat "$tmp/err"
fi

# ---------------------------------------------------------------------------
# Sane numbers, read from CSV: 14 columns; latency and bandwidth positive,
# latency below one second, typical <= max.
csv_columns=14
check_csv() {
    local what=$1 file=$2 rows=$3
    local lines
    lines=$(wc -l <"$file")
    if [ "$lines" -ne $((rows + 1)) ]; then
        fail "$what: $lines CSV lines, expected header + $rows"; cat "$file"; return 1
    fi
    if ! head -1 "$file" | grep -q '^test,api,transport,'; then
        fail "$what: no CSV header"; cat "$file"; return 1
    fi
    if ! awk -F, -v n=$csv_columns 'NF != n { bad = 1 } END { exit bad }' "$file"; then
        fail "$what: a CSV line does not have $csv_columns columns"; cat "$file"; return 1
    fi
    if ! awk -F, 'NR > 1 && !($9 > 0 && $10 > 0 && $9 < 1e6 && $9 <= $11 + 1e-3 &&
                              $12 > 0 && $14 > 0) { bad = 1 } END { exit bad }' "$file"; then
        fail "$what: numbers out of range"; cat "$file"; return 1
    fi
    pass "$what: $(tail -n +2 "$file" | cut -d, -f1,3,4,7,9,12 | tr '\n' ' ')"
}

# Run one local test; a transport missing from this build is a visible skip.
run_local() {
    local what=$1; shift
    if "$perf" "$@" --csv >"$tmp/csv" 2>"$tmp/err"; then
        check_csv "$what" "$tmp/csv" "${ROWS:-1}"
    elif grep -q 'not found; this build offers' "$tmp/err"; then
        skip "$what: transport not in this build ($(tail -1 "$tmp/err"))"
    else
        fail "$what: exit status $?"; cat "$tmp/err" "$tmp/csv"
    fi
}

for tl in self posix tcp; do
    case $tl in
        self)  dev=();;
        posix) dev=(-d memory);;
        tcp)   dev=(-d lo);;
    esac
    run_local "$tl am_lat 8"         -L -t am_lat -x $tl "${dev[@]}" -s 8 "${quick[@]}"
    run_local "$tl am_bw 4K"         -L -t am_bw  -x $tl "${dev[@]}" -s 4K "${quick[@]}"
    run_local "$tl am_lat validated" -L -t am_lat -x $tl "${dev[@]}" -s 100 -V "${quick[@]}"
    ROWS=3 run_local "$tl am_bw sweep validated" -L -t am_bw -x $tl "${dev[@]}" \
        --sizes 8,256,2K -V "${quick[@]}"
done

# UCP tag tests (libucp picks the transport from UCX_TLS), two processes,
# validated: latency (plain and sync) and bandwidth, one eager size and one
# that takes several fragments.
for tls in posix tcp; do
    for t in tag_lat tag_sync_lat; do
        UCX_TLS=$tls run_local "ucp $tls $t validated" -L -t $t -s 8 -V "${quick[@]}"
    done
    UCX_TLS=$tls ROWS=3 run_local "ucp $tls tag_bw sweep validated" -L -t tag_bw \
        --sizes 8,4K,100K -V "${quick[@]}"
    UCX_TLS=$tls run_local "ucp $tls tag_lat 64K validated" -L -t tag_lat -s 64K -V \
        -n 200 -w 10
done
# UCX_TLS=self reaches only its own process: -L runs both sides here.
UCX_TLS=self run_local "ucp self tag_bw (one process)" -L -t tag_bw -s 1K -V "${quick[@]}"
if "$perf" -L -t tag_lat -m cuda "${quick[@]}" >"$tmp/out" 2>"$tmp/err"; then
    grep -q '^#define HAVE_CUDA 1' "$BUILD_DIR/config.h" 2>/dev/null &&
        pass "ucp cuda memory ran (CUDA build)" || fail "ucp -m cuda accepted without CUDA code"
elif grep -q 'not available' "$tmp/err"; then
    pass "ucp cuda memory: $(tail -1 "$tmp/err")"
else
    fail "ucp cuda memory: unclear message"; cat "$tmp/err"
fi

# One-sided tests, where the transport supports them.
for t in put_bw get_bw; do
    if "$perf" -L -t $t -x self -s 1K -V --csv "${quick[@]}" >"$tmp/csv" 2>"$tmp/err"; then
        check_csv "self $t validated" "$tmp/csv" 1
    elif grep -q 'does not support\|no .* layout' "$tmp/err"; then
        skip "self $t: $(tail -1 "$tmp/err")"
    else
        fail "self $t"; cat "$tmp/err"
    fi
done

# The table: a header and a row.
if "$perf" -L -t am_lat -x self "${quick[@]}" >"$tmp/out" 2>"$tmp/err" &&
   grep -q 'Transport:' "$tmp/out" && grep -Eq '^\| +8 \| +short' "$tmp/out"; then
    pass "table output"
else
    fail "table output"; cat "$tmp/out" "$tmp/err"
fi

# --json parses, and has one result per size.
if "$perf" -L -t am_bw -x self --sizes 8,64 --json "${quick[@]}" >"$tmp/json" 2>"$tmp/err"; then
    if command -v python3 >/dev/null 2>&1; then
        if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); \
                       assert len(d["results"]) == 2 and d["results"][1]["size"] == 64 and \
                       d["results"][0]["bw_mbs"] > 0' "$tmp/json"; then
            pass "--json parses (python3)"
        else
            fail "--json does not parse"; cat "$tmp/json"
        fi
    elif grep -q '"results": \[' "$tmp/json" && [ "$(grep -c '"test":' "$tmp/json")" -eq 2 ]; then
        pass "--json looks right (no python3 to parse it)"
    else
        fail "--json"; cat "$tmp/json"
    fi
else
    fail "--json run"; cat "$tmp/err"
fi

# A failing run still gives valid JSON, with the error in it.
if "$perf" -L -t am_lat -x no_such_tl --json "${quick[@]}" >"$tmp/json" 2>/dev/null; then
    fail "--json with a bad transport succeeded"
elif command -v python3 >/dev/null 2>&1 &&
     ! python3 -c 'import json,sys; assert "not found" in json.load(open(sys.argv[1]))["error"]' \
         "$tmp/json"; then
    fail "--json error document"; cat "$tmp/json"
else
    pass "--json error document"
fi

# ---------------------------------------------------------------------------
# Client and server as two commands over loopback TCP. The transport for
# these is the first of posix/tcp this build has.
pick_port() { echo $((20000 + (RANDOM % 20000))); }
two_tl=
for tl in posix tcp; do
    if "$perf" -L -t am_lat -x $tl -n 10 -w 0 >/dev/null 2>&1; then two_tl=$tl; break; fi
done

if [ -z "$two_tl" ]; then
    skip "client/server: neither posix nor tcp in this build"
else
    port=$(pick_port)
    "$perf" -p $port -x $two_tl --accept-timeout 10 >"$tmp/srv.out" 2>"$tmp/srv.err" &
    srv=$!
    if "$perf" localhost -p $port --connect-retry 5 -t am_lat -x $two_tl --csv "${quick[@]}" \
           >"$tmp/csv" 2>"$tmp/err"; then
        check_csv "client/server $two_tl am_lat" "$tmp/csv" 1
    else
        fail "client/server run"; cat "$tmp/err" "$tmp/srv.err"
    fi
    wait $srv || fail "server exit status $?"

    # The same over UCP: worker addresses cross the out-of-band connection.
    port=$(pick_port)
    UCX_TLS=tcp "$perf" -p $port --accept-timeout 10 >"$tmp/srv.out" 2>"$tmp/srv.err" &
    srv=$!
    if UCX_TLS=tcp "$perf" localhost -p $port --connect-retry 5 -t tag_lat -s 100 -V \
           --csv "${quick[@]}" >"$tmp/csv" 2>"$tmp/err"; then
        check_csv "client/server ucp tcp tag_lat validated" "$tmp/csv" 1
    else
        fail "client/server ucp run"; cat "$tmp/err" "$tmp/srv.err"
    fi
    wait $srv || fail "ucp server exit status $?"

    # Mismatch: the server fixes -t am_bw; the client asks for am_lat.
    port=$(pick_port)
    "$perf" -p $port -t am_bw -x $two_tl --accept-timeout 10 >"$tmp/srv.out" 2>"$tmp/srv.err" &
    srv=$!
    if "$perf" localhost -p $port --connect-retry 5 -t am_lat -x $two_tl "${quick[@]}" \
           >"$tmp/out" 2>"$tmp/err"; then
        fail "mismatched test accepted"
    elif grep -q 'test mismatch' "$tmp/err"; then
        pass "mismatch: $(tail -1 "$tmp/err")"
    else
        fail "mismatch: unclear message"; cat "$tmp/err"
    fi
    wait $srv && fail "server succeeded after refusing the test"
fi

# Refused connection: nobody listens on this port.
port=$(pick_port)
if "$perf" localhost -p $port -t am_lat -x self "${quick[@]}" >"$tmp/out" 2>"$tmp/err"; then
    fail "connection to a closed port succeeded"
elif grep -q 'cannot connect to localhost' "$tmp/err" && grep -q 'refused' "$tmp/err"; then
    pass "refused: $(tail -1 "$tmp/err")"
else
    fail "refused: unclear message"; cat "$tmp/err"
fi

# A server that no client reaches gives up with a message.
port=$(pick_port)
if "$perf" -p $port --accept-timeout 0.5 >"$tmp/out" 2>"$tmp/err"; then
    fail "server without client succeeded"
elif grep -q 'no client connected' "$tmp/err"; then
    pass "accept timeout: $(tail -1 "$tmp/err")"
else
    fail "accept timeout: unclear message"; cat "$tmp/err"
fi

echo "$failures failure(s), $skips skip(s)"
[ $failures -eq 0 ]
