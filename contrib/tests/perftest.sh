#!/bin/bash
# ucx_perftest from the build tree: bad command lines fail with a usage
# message; local runs of am_lat and am_bw finish with sane numbers over
# self (one process) and, where this build has them, posix shared memory
# and tcp on the loopback device (two processes); so do the UCP tests
# tag_lat, tag_sync_lat and tag_bw (validated) with UCX_TLS=posix / tcp /
# self, and ucp_am_lat/_bw, stream_lat/_bw (validated, default transports
# too, host and modelled GPU memory); --csv has the right
# number of columns; --json parses; a client/server pair over loopback TCP
# works, and a refused connection, a mismatched test and a missing client
# fail with a message that names the cause; after the table come upstream
# ucx_perftest's rows ("[thread 0]" per second, "Final:"; -f: one
# unlabelled row) whose numbers are the table's.
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
expect_usage_error "bad GPU index"         -L -t tag_lat -a x
expect_usage_error "bad GPU pair"          -L -t tag_lat -a 0,y
expect_usage_error "bad CUDA API"          -L -t tag_lat --cuda-api fortran

# A run that cannot happen is an error with a reason (not a usage error):
# the command (from $3 on) must fail, with $2 (a grep pattern) on stderr.
expect_refusal() {
    local what=$1 reason=$2; shift 2
    if "$@" >"$tmp/out" 2>"$tmp/err"; then
        fail "$what: accepted"
    elif grep -q "$reason" "$tmp/err"; then
        pass "$what: $(tail -1 "$tmp/err")"
    else
        fail "$what: unclear message"; cat "$tmp/err"
    fi
}

expect_refusal "unknown transport" 'not found' \
    "$perf" -L -t am_lat -x no_such_tl "${quick[@]}"
if "$perf" -L -t am_lat -x self -m cuda "${quick[@]}" >"$tmp/out" 2>"$tmp/err"; then
    grep -q '^#define HAVE_CUDA 1' "$BUILD_DIR/config.h" 2>/dev/null &&
        pass "cuda memory ran (CUDA build)" || fail "-m cuda accepted without CUDA code"
elif grep -q 'not available' "$tmp/err"; then
    pass "cuda memory: $(tail -1 "$tmp/err")"
else
    fail "cuda memory: unclear message"; cat "$tmp/err"
fi

# ---------------------------------------------------------------------------
# Sane numbers, read from CSV: 19 columns; latency and bandwidth positive,
# latency below one second, typical <= max.
csv_columns=19
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
# UCP active messages and stream, two processes, validated, with the
# default transports and per transport: eager, fragmented and (AM)
# rendezvous sizes; AM with a user header.
saved_tls=${UCX_TLS-unset}
for tls in default posix tcp; do
    if [ $tls = default ]; then unset UCX_TLS; else export UCX_TLS=$tls; fi
    for t in ucp_am_lat ucp_am_bw stream_lat stream_bw; do
        ROWS=3 run_local "ucp $tls $t sweep validated" -L -t $t --sizes 8,100K,1M -V \
            -n 50 -w 5
    done
    run_local "ucp $tls ucp_am_bw -H 100 validated" -L -t ucp_am_bw -s 64K -H 100 -V \
        "${quick[@]}"
    # Both directions at once: each side checks what the other sent.
    for t in tag_bibw ucp_am_bibw stream_bibw; do
        ROWS=3 run_local "ucp $tls $t sweep validated" -L -t $t --sizes 8,100K,1M -V \
            -n 50 -w 5
    done
done
ROWS=2 run_local "ucp tag_bibw one process validated" -l -t tag_bibw --sizes 8,1M -V \
    -n 50 -w 5
ROWS=2 run_local "ucp tag_bibw no warm-up validated" -L -t tag_bibw --sizes 8,1M -V \
    -n 50 -w 0
if [ "$saved_tls" = unset ]; then unset UCX_TLS; else export UCX_TLS=$saved_tls; fi
UCX_TLS=posix run_local "ucp posix tag_sync_bw validated" -L -t tag_sync_bw -s 1K -V \
    "${quick[@]}"
# A header over the worker's limit is refused by name.
if "$perf" -L -t ucp_am_lat -H 65536 -n 5 >"$tmp/out" 2>"$tmp/err"; then
    fail "ucp_am_lat -H 65536 ran"
elif grep -q 'headers of at most' "$tmp/err" "$tmp/out"; then
    pass "ucp_am_lat -H 65536 refused: $(grep -h 'headers of at most' "$tmp/err" "$tmp/out" | head -1)"
else
    fail "ucp_am_lat -H 65536: unclear message"; cat "$tmp/err" "$tmp/out"
fi
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

# Upstream's rows after the table, for scripts written for upstream's tool.
# check_upstream WHAT FILE ROWS [-f]: FILE has ROWS table rows and then, after
# the table, as many final rows with upstream's 8 numeric columns ("Final:"
# first; with -f no label and no "[thread 0]" rows). Each final row's
# whole-run columns are its table row's numbers: iterations, typical,
# overall latency = average, overall MB/s, overall msg/s. A final row with
# no interval row before it has average = overall; after interval rows its
# average is that of the time since the last one, so that
#     overall * iters = last interval's overall * its iters + average * rest;
# the same holds for each interval row and the one before it.
check_upstream() {
    local what=$1 file=$2 rows=$3 final_only=${4:-}
    local msg
    msg=$(awk -v rows="$rows" -v f="$final_only" '
        function num(x) { return x ~ /^[0-9]+(\.[0-9]+)?$/ }
        function bad(m) { print m; failed = 1; exit 1 }
        # The average that the whole run and the last interval imply, against
        # the row'"'"'s: within what rounding to 0.001 us can make of it.
        function last_avg_ok(a, n, o, pn, po,  r, want, tol) {
            r = n - pn; want = (o * n - po * pn) / r; tol = 0.0006 * (n + pn) / r + 0.001
            return (a - want <= tol) && (want - a <= tol)
        }
        /^\| +[0-9]+ \|/ {
            split($0, c, "|"); split(c[5], l, " "); split(c[6], b, " ")
            ++t; it[t] = c[4] + 0; typ[t] = l[1] + 0; avg[t] = l[2] + 0
            mbs[t] = b[1] + 0; rate[t] = c[7] + 0; table_end = NR; next
        }
        index($0, "+------------+--------+") == 1 { table_end = NR }
        /^\[thread 0\]/ {
            if (f != "") bad("an interval row with -f: " $0)
            if (NF != 10) bad("interval row without 8 numbers: " $0)
            for (i = 3; i <= 10; ++i) if (!num($i)) bad("not a number in: " $0)
            if ($3 + 0 <= prev_it) bad("interval iterations do not grow: " $0)
            if (!last_avg_ok($5, $3, $6, prev_it, prev_overall))
                bad("interval average is not that of its second: " $0)
            prev_it = $3 + 0; prev_overall = $6 + 0; ++intervals; next
        }
        (f == "" && /^Final:/) || (f != "" && NF == 8 && $1 ~ /^[0-9]+$/) {
            if (f == "" && NF != 9) bad("Final row without 8 numbers: " $0)
            if (f != "") $0 = "Final: " $0
            for (i = 2; i <= 9; ++i) if (!num($i)) bad("not a number in: " $0)
            if (NR < table_end) bad("final row before the end of the table")
            ++final; k = final
            if (k > t) bad("more final rows than table rows")
            if ($2 != it[k] || $3 != typ[k] || $5 != avg[k] || $7 != mbs[k] ||
                $9 != rate[k])
                bad(sprintf("row %d: Final [%s] differs from the table " \
                            "(%d %.3f %.3f %.2f %.0f)", k, $0, it[k], typ[k], avg[k],
                            mbs[k], rate[k]))
            if (intervals == 0 && ($4 != $5 || $6 != $7 || $8 != $9))
                bad("no interval, yet average != overall: " $0)
            if (intervals > 0 && $2 + 0 <= prev_it) bad("Final iterations <= an interval row")
            if (intervals > 0 && !last_avg_ok($4, $2, $5, prev_it, prev_overall))
                bad("Final average is not the last interval: " $0)
            summary = summary sprintf(" %d:%d", k, intervals)
            intervals = 0; prev_it = 0; next
        }
        END {
            if (failed) exit 1
            if (t != rows || final != rows) {
                printf "%d table rows, %d final rows, expected %d\n", t, final, rows
                exit 1
            }
            print "final rows match the table (row:intervals" summary ")"
        }' "$file")
    if [ $? -eq 0 ]; then
        pass "$what: $msg"
    else
        fail "$what: $msg"; cat "$file"
    fi
}

if "$perf" -L -t am_lat -x self "${quick[@]}" >"$tmp/out" 2>"$tmp/err" &&
   grep -q '^| *Stage *| # iterations | 50.0%ile | average | overall |' "$tmp/out" &&
   grep -q '|        latency (usec)        |' "$tmp/out"; then
    check_upstream "upstream's Final row, am_lat" "$tmp/out" 1
else
    fail "upstream's box of titles (latency)"; cat "$tmp/out" "$tmp/err"
fi
if "$perf" -L -t am_bw -x self --sizes 8,1K,64 -R 90 "${quick[@]}" >"$tmp/out" 2>"$tmp/err" &&
   grep -q '^| *Stage *| # iterations | 90.0%ile |' "$tmp/out" &&
   grep -q '|       overhead (usec)        |' "$tmp/out"; then
    check_upstream "upstream's Final rows, am_bw sweep, -R 90" "$tmp/out" 3
else
    fail "upstream's box of titles (overhead, -R 90)"; cat "$tmp/out" "$tmp/err"
fi
if "$perf" -L -t am_lat -x self -f "${quick[@]}" >"$tmp/out" 2>"$tmp/err" &&
   grep -q '^| *Test *| # iterations |' "$tmp/out" && ! grep -q 'Final:' "$tmp/out"; then
    check_upstream "upstream's -f row (no label), am_lat" "$tmp/out" 1 -f
else
    fail "upstream's -f output"; cat "$tmp/out" "$tmp/err"
fi
# A run of about three seconds has a "[thread 0]" row per second (the
# iterations for it come from a short run's latency).
lat=$("$perf" -L -t am_lat -x self "${quick[@]}" 2>/dev/null | awk '/^Final:/ { print $5 }')
iters=$(awk -v l="${lat:-0}" 'BEGIN { n = (l > 0) ? int(3e6 / (2 * l)) : 0
    print (n < 100000) ? 100000 : (n > 100000000) ? 100000000 : n }')
if "$perf" -L -t am_lat -x self -n "$iters" -w 100 >"$tmp/out" 2>"$tmp/err"; then
    # At most one report per whole second of the run (the run's length
    # from the rounded latency: 2% of slack); none only for a short run.
    n=$(grep -c '^\[thread 0\]' "$tmp/out")
    secs=$(awk '/^Final:/ { printf "%.2f", $2 * 2 * $5 / 1e6 }' "$tmp/out")
    verdict=$(awk -v n="$n" -v s="${secs:-0}" 'BEGIN { v = "bad"
        if (n >= 1 && n <= s * 1.02 + 0.05) v = "ok"; else if (n == 0 && s < 1.5) v = "short"
        print v }')
    if [ -z "$secs" ]; then
        fail "upstream's interval rows: no Final row"; cat "$tmp/out"
    elif [ "$verdict" = ok ]; then
        check_upstream "upstream's interval rows ($n in ${secs}s)" "$tmp/out" 1
    elif [ "$verdict" = short ]; then
        skip "upstream's interval rows: $iters iterations took only ${secs}s"
    else
        fail "upstream's interval rows: $n rows in a run of ${secs}s"; cat "$tmp/out"
    fi
else
    fail "upstream's interval rows: run of $iters iterations"; cat "$tmp/err"
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
# Every CUDA memory kind on the driver model (cudasim), two processes, with
# validation: tag_bw at three sizes (eager and large), tag_lat across the
# model's two GPUs, and UCT put/get over cuda_ipc. cudart does not run on the
# model (docs/cudasim.md), so the kinds allocate through the driver API; the
# row still checks what the receiver got.
cudasim="$BUILD_DIR/test/cudasim/.libs"
kinds="cuda cuda-managed cuda-async cuda-pool cuda-pool-noipc cuda-vmm cuda-vmm-noipc cuda-vmm-chunked"
if ! grep -q 'PERF_HAVE_CUDA' "$BUILD_DIR/src/tools/perf/Makefile" 2>/dev/null; then
    skip "CUDA kinds: this ucx_perftest was built without the CUDA headers"
elif [ ! -e "$cudasim/libcuda.so.1" ]; then
    skip "CUDA kinds: the driver model was not built ($cudasim/libcuda.so.1)"
else
    for k in $kinds; do
        # Both processes share one modelled GPU: with the one-copier rule a
        # random half of the runs would put, whose extra hop per message
        # costs a scheduler slice on this 2-core machine (ms per message at
        # 8 B), so the rows would read 0.000 MB/s. Gets, as before; the rule
        # has its own tests (gtest_cuda, test_ucp_cuda_rndv).
        UCX_RNDV_SAME_GPU_ONE_COPIER=n \
        LD_LIBRARY_PATH=$cudasim ROWS=3 run_local "cudasim $k tag_bw validated" -L \
            -t tag_bw -m $k --sizes 8,64K,1M -V -n 20 -w 2
        # A GPU row has the raw-copy reference and its percentage.
        if ! awk -F, 'NR > 1 && !($16 > 0 && $17 > 0) { bad = 1 } END { exit bad }' \
                "$tmp/csv"; then
            fail "cudasim $k: no raw-copy reference in the CSV"; cat "$tmp/csv"
        fi
    done
    # Active messages and stream of GPU memory: eager into the handler,
    # rendezvous AM fetched into GPU memory by ucp_am_recv_data_nbx.
    for k in cuda cuda-async cuda-vmm-noipc; do
        for t in ucp_am_bw stream_bw; do
            UCX_RNDV_SAME_GPU_ONE_COPIER=n \
            LD_LIBRARY_PATH=$cudasim ROWS=2 run_local "cudasim $k $t validated" -L \
                -t $t -m $k --sizes 8,1M -V -n 10 -w 1
        done
    done
    # Both directions at once between two kinds, each side checking.
    for pair in cuda,cuda-async cuda-vmm-noipc,cuda-pool; do
        LD_LIBRARY_PATH=$cudasim ROWS=2 run_local "cudasim $pair tag_bibw validated" -L \
            -t tag_bibw -m $pair --sizes 64K,1M -V -n 10 -w 1
    done
    for pair in cuda,cuda-async cuda-async,cuda-vmm cuda-pool,cuda-pool-noipc \
                cuda-vmm-chunked,cuda; do
        LD_LIBRARY_PATH=$cudasim run_local "cudasim $pair tag_lat validated" -L \
            -t tag_lat -m $pair -s 64K -V -n 20 -w 2
    done
    # One modelled GPU, neither buffer exportable: 64 KiB goes through host
    # fragments (UCX_RNDV_SAME_GPU_HOST_MAX), and UCX_PROTO_INFO says so.
    out=$(UCX_PROTO_INFO=y LD_LIBRARY_PATH=$cudasim "$perf" -L -t tag_lat \
              -m cuda-async,cuda-vmm-noipc -s 64K -V -n 10 -w 1 --csv 2>"$tmp/err")
    if grep -q 'neither buffer exportable, 32768\.\.524288 B: pipeline through host' <<<"$out" &&
       grep '^tag_lat,' <<<"$out" | awk -F, '$15 ~ /^rndv_pipe_host/ { ok = 1 } END { exit !ok }'; then
        pass "cudasim same-GPU non-exportable 64K: host staging, shown by UCX_PROTO_INFO"
    else
        fail "cudasim same-GPU non-exportable 64K: no host staging"; echo "$out"; cat "$tmp/err"
    fi
    LD_LIBRARY_PATH=$cudasim run_local "cudasim cuda GPU0 -> GPU1 tag_bw validated" -L \
        -t tag_bw -m cuda -a 0,1 -s 1M -V -n 10 -w 1
    # UCT alone has no cuda_copy iface to set CU_CTX_SYNC_MEMOPS, and
    # ucx_perftest synchronises its pageable fills (perf_cuda_copy_to_device):
    # these rows run with the model's late landing (docs/cudasim.md) on.
    for t in put_bw get_bw; do
        for k in cuda cuda-vmm cuda-pool; do
            LD_LIBRARY_PATH=$cudasim run_local "cudasim uct $t cuda_ipc $k validated" -L \
                -t $t -x cuda_ipc -m $k -s 1M -V -n 20 -w 2
        done
    done
    # UCP RMA: runs where libucp has it, else says so.
    if LD_LIBRARY_PATH=$cudasim "$perf" -L -t ucp_put_bw -m cuda -s 64K -V --csv \
            -n 20 -w 2 >"$tmp/csv" 2>"$tmp/err"; then
        check_csv "cudasim ucp_put_bw validated" "$tmp/csv" 1
    elif grep -q 'not available' "$tmp/err"; then
        skip "cudasim ucp_put_bw: $(tail -1 "$tmp/err")"
    else
        fail "cudasim ucp_put_bw: unclear message"; cat "$tmp/err"
    fi
    # A GPU that does not exist is refused with the reason.
    expect_refusal "missing GPU 9" 'GPU 9 does not exist' \
        env LD_LIBRARY_PATH="$cudasim" "$perf" -L -t tag_lat -m cuda -a 0,9 -n 5
    # --json of a GPU row carries the protocol and the raw-copy reference.
    if LD_LIBRARY_PATH=$cudasim "$perf" -L -t tag_bw -m cuda-async,cuda --sizes 8,1M --json \
            -n 10 -w 1 >"$tmp/json" 2>"$tmp/err" &&
       python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"]; \
                   assert len(r) == 2 and all(x["pct_raw"] > 0 and "protocol" in x for x in r)' \
            "$tmp/json"; then
        pass "cudasim --json GPU rows parse, with pct_raw"
    else
        fail "cudasim --json GPU rows"; cat "$tmp/json" "$tmp/err"
    fi
fi

# ---------------------------------------------------------------------------
# Client and server as two commands over loopback TCP. The transport for
# these is the first of posix/tcp this build has.
# Below Linux's ephemeral range (32768-60999), where a connected socket of
# any program could hold the port.
pick_port() { echo $((20000 + (RANDOM % 12000))); }
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
    port=$(pick_port)
    UCX_TLS=tcp "$perf" -p $port --accept-timeout 10 >"$tmp/srv.out" 2>"$tmp/srv.err" &
    srv=$!
    if UCX_TLS=tcp "$perf" localhost -p $port --connect-retry 5 -t tag_bibw \
           --sizes 100,1M -V --csv -n 50 -w 5 >"$tmp/csv" 2>"$tmp/err"; then
        check_csv "client/server ucp tcp tag_bibw validated" "$tmp/csv" 2
    else
        fail "client/server ucp tag_bibw run"; cat "$tmp/err" "$tmp/srv.err"
    fi
    wait $srv || fail "ucp tag_bibw server exit status $?"

    # Mismatch: the server fixes -t am_bw; the client asks for am_lat.
    port=$(pick_port)
    "$perf" -p $port -t am_bw -x $two_tl --accept-timeout 10 >"$tmp/srv.out" 2>"$tmp/srv.err" &
    srv=$!
    expect_refusal "mismatched test" 'test mismatch' \
        "$perf" localhost -p $port --connect-retry 5 -t am_lat -x $two_tl "${quick[@]}"
    wait $srv && fail "server succeeded after refusing the test"
fi

# Refused connection: nobody listens on this port.
port=$(pick_port)
expect_refusal "connection to a closed port" 'cannot connect to localhost:.*refused' \
    "$perf" localhost -p $port -t am_lat -x self "${quick[@]}"

# A server that no client reaches gives up with a message.
port=$(pick_port)
expect_refusal "server without client" 'no client connected' \
    "$perf" -p $port --accept-timeout 0.5

echo "$failures failure(s), $skips skip(s)"
[ $failures -eq 0 ]
