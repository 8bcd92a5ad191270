#!/bin/bash
# Our ucx_perftest against Debian's upstream ucx_perftest (package
# ucx-utils, UCX 1.13: a separate program on its own libraries, never
# linked with ours), side by side in the same run, over shared memory
# (posix transport, device "memory"):
#   - 8-byte active-message latency (am_lat, -D short);
#   - 64 KiB active-message bandwidth (am_bw, -D bcopy; both tools with
#     UCX_POSIX_SEG_SIZE=65600, since 64 KiB does not fit the default 8 KiB
#     segment of either);
#   - UCP (libucp, issue 7): 8-byte tag latency (tag_lat) and 64 KiB and
#     4 MiB tag bandwidth (tag_bw), both tools with UCX_TLS=posix,self and
#     otherwise default settings, so each library picks its own protocols
#     (ours: eager only; upstream 1.13: eager, then rendezvous).
# Each test runs as two processes, a server (no host name) and a client
# (host name localhost) exchanging over loopback TCP, the same way for both
# tools. Ours and upstream's alternate REPS times, so that both see the
# same machine noise; the table shows the median over the repetitions.
#
# usage: contrib/bench-host.sh [BUILD_DIR]        (default: build-release)
# environment:
#   REPS=5             repetitions of each pair of runs
#   LAT_ITERS=200000   am_lat iterations (warm-up: 10000)
#   BW_ITERS=20000     am_bw and 64 KiB tag_bw iterations (warm-up: 1000)
#   BIG_ITERS=1000     4 MiB tag_bw iterations (warm-up: 50)
#   UCP=1              UCP rows too (UCP=0: only the UCT rows)
#   CPUS="0 1"         CPUs of the server and of the client (taskset);
#                      CPUS= (empty) runs unpinned
#   PORT=13400         first TCP port for the exchange (one per run)
# Builds nothing. Installs ucx-utils with apt-get when it is missing.
set -uo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build-release}
build=$(cd "$build" 2>/dev/null && pwd) || { echo "no build directory: ${1:-build-release}"; exit 1; }
ours="$build/src/tools/perf/ucx_perftest"
upstream=/usr/bin/ucx_perftest
reps=${REPS:-5}
lat_iters=${LAT_ITERS:-200000}
bw_iters=${BW_ITERS:-20000}
big_iters=${BIG_ITERS:-1000}
ucp=${UCP:-1}
cpus=${CPUS-0 1}
port=${PORT:-13400}

if [ ! -x "$ours" ]; then
    echo "$ours is missing: build the tree first (make -C $build)"
    exit 1
fi
if [ ! -x "$upstream" ]; then
    echo "# installing ucx-utils (Debian's upstream UCX tools)"
    sudo=; [ "$(id -u)" -ne 0 ] && sudo=sudo
    $sudo apt-get install -y ucx-utils >/dev/null || { echo "cannot install ucx-utils"; exit 1; }
fi

read -r srv_cpu cli_cpu <<<"$cpus"
if [ -n "${srv_cpu:-}" ] && [ -n "${cli_cpu:-}" ] && command -v taskset >/dev/null; then
    srv_pin=(taskset -c "$srv_cpu"); cli_pin=(taskset -c "$cli_cpu")
    pinning="server on CPU $srv_cpu, client on CPU $cli_cpu (taskset)"
else
    srv_pin=(); cli_pin=()
    pinning="not pinned"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run TOOL NAME ENV... -- ARGS...: one server/client pair; prints the
# client's final CSV line (-f -v: both tools print CSV with these flags).
run_pair() {
    local tool=$1; shift
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    port=$((port + 1))
    # Upstream must not pick up our libraries, nor we upstream's.
    env -u LD_LIBRARY_PATH "${envs[@]}" "${srv_pin[@]}" "$tool" -p $port "$@" \
        >"$tmp/srv.out" 2>"$tmp/srv.err" &
    local srv=$!
    sleep 0.5
    env -u LD_LIBRARY_PATH "${envs[@]}" "${cli_pin[@]}" "$tool" localhost -p $port "$@" \
        -f -v >"$tmp/cli.out" 2>"$tmp/cli.err"
    local rc=$?
    wait $srv
    if [ $rc -ne 0 ]; then
        echo "FAILED: $tool localhost -p $port $*" >&2
        cat "$tmp/cli.err" "$tmp/srv.err" >&2
        return 1
    fi
    tail -1 "$tmp/cli.out"
}

# Column of a CSV line: ours (header test,api,...) or upstream's
# (iterations,50.0_percentile_lat,avg_lat,overall_lat,avg_bw,overall_bw,
# avg_mr,overall_mr). Upstream's "avg" columns cover only its last
# one-second report interval (and read -nan when that interval is empty);
# its "overall" columns cover the whole run, as ours do, so those are used.
ours_col()     { cut -d, -f"$1" <<<"$2"; }
upstream_col() { cut -d, -f"$1" <<<"$2"; }

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan";
                           else if (NR % 2) print v[(NR + 1) / 2];
                           else printf "%.4f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

lat_args=(-t am_lat -x posix -d memory -s 8 -D short -n "$lat_iters" -w 10000)
bw_args=(-t am_bw -x posix -d memory -s 65536 -D bcopy -n "$bw_iters" -w 1000)
bw_env=(UCX_POSIX_SEG_SIZE=65600)
# UCP: the same arguments for both tools (upstream's own UCP test names).
ucp_env=(UCX_TLS=posix,self)
tlat_args=(-t tag_lat -s 8 -n "$lat_iters" -w 10000)
tbw_args=(-t tag_bw -s 65536 -n "$bw_iters" -w 1000)
tbig_args=(-t tag_bw -s 4194304 -n "$big_iters" -w 50)
for f in tlat_o tlat_u tlat_o_avg tlat_u_avg tbw_o tbw_u tbig_o tbig_u; do : >"$tmp/$f"; done

: >"$tmp/lat_ours"; : >"$tmp/lat_ours_avg"; : >"$tmp/lat_up"; : >"$tmp/lat_up_avg"
: >"$tmp/bw_ours"; : >"$tmp/bw_up"

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')), $pinning"
echo "# ours: $ours"
echo "# upstream: $upstream ($(dpkg-query -W -f='ucx-utils ${Version}' ucx-utils 2>/dev/null || echo unknown version))"
for ((r = 1; r <= reps; ++r)); do
    echo "# repetition $r/$reps" >&2
    line=$(run_pair "$ours" -- "${lat_args[@]}") || exit 1
    ours_col 9 "$line" >>"$tmp/lat_ours"; ours_col 10 "$line" >>"$tmp/lat_ours_avg"
    line=$(run_pair "$upstream" -- "${lat_args[@]}") || exit 1
    upstream_col 2 "$line" >>"$tmp/lat_up"; upstream_col 4 "$line" >>"$tmp/lat_up_avg"
    line=$(run_pair "$ours" "${bw_env[@]}" -- "${bw_args[@]}") || exit 1
    ours_col 12 "$line" >>"$tmp/bw_ours"
    line=$(run_pair "$upstream" "${bw_env[@]}" -- "${bw_args[@]}") || exit 1
    upstream_col 6 "$line" >>"$tmp/bw_up"
    [ "$ucp" = 1 ] || continue
    line=$(run_pair "$ours" "${ucp_env[@]}" -- "${tlat_args[@]}") || exit 1
    ours_col 9 "$line" >>"$tmp/tlat_o"; ours_col 10 "$line" >>"$tmp/tlat_o_avg"
    line=$(run_pair "$upstream" "${ucp_env[@]}" -- "${tlat_args[@]}") || exit 1
    upstream_col 2 "$line" >>"$tmp/tlat_u"; upstream_col 4 "$line" >>"$tmp/tlat_u_avg"
    line=$(run_pair "$ours" "${ucp_env[@]}" -- "${tbw_args[@]}") || exit 1
    ours_col 12 "$line" >>"$tmp/tbw_o"
    line=$(run_pair "$upstream" "${ucp_env[@]}" -- "${tbw_args[@]}") || exit 1
    upstream_col 6 "$line" >>"$tmp/tbw_u"
    line=$(run_pair "$ours" "${ucp_env[@]}" -- "${tbig_args[@]}") || exit 1
    ours_col 12 "$line" >>"$tmp/tbig_o"
    line=$(run_pair "$upstream" "${ucp_env[@]}" -- "${tbig_args[@]}") || exit 1
    upstream_col 6 "$line" >>"$tmp/tbig_u"
done

lat_o=$(median <"$tmp/lat_ours"); lat_u=$(median <"$tmp/lat_up")
avg_o=$(median <"$tmp/lat_ours_avg"); avg_u=$(median <"$tmp/lat_up_avg")
bw_o=$(median <"$tmp/bw_ours"); bw_u=$(median <"$tmp/bw_up")

printf '\n%-40s %12s %12s %8s  %s\n' "test (median of $reps runs)" ours upstream ratio target
printf '%-40s %12s %12s %8s  %s\n' "----" "----" "--------" "-----" "------"
verdict() { awk -v r="$1" -v op="$2" -v t="$3" 'BEGIN {
    if (r !~ /^[0-9.]+$/) { printf "%s %s n/a", op, t; exit }
    ok = (op == "<=") ? (r + 0 <= t + 0) : (r + 0 >= t + 0)
    printf "%s %s %s", op, t, ok ? "ok" : "MISSED" }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {
    if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf "%.2f", a / b; else print "n/a" }'; }
r=$(ratio "$lat_o" "$lat_u")
printf '%-40s %12s %12s %8s  %s\n' "am_lat 8 B short, median latency (us)" "$lat_o" "$lat_u" "$r" "$(verdict "$r" "<=" 1.3)"
r=$(ratio "$avg_o" "$avg_u")
printf '%-40s %12s %12s %8s  %s\n' "am_lat 8 B short, average latency (us)" "$avg_o" "$avg_u" "$r" "(information)"
r=$(ratio "$bw_o" "$bw_u")
printf '%-40s %12s %12s %8s  %s\n' "am_bw 64 KiB bcopy, bandwidth (MB/s)" "$bw_o" "$bw_u" "$r" "$(verdict "$r" ">=" 0.8)"
if [ "$ucp" = 1 ]; then
    row() { # LABEL FILE_OURS FILE_UPSTREAM OP TARGET
        local o u r
        o=$(median <"$tmp/$2"); u=$(median <"$tmp/$3"); r=$(ratio "$o" "$u")
        printf '%-40s %12s %12s %8s  %s\n' "$1" "$o" "$u" "$r" \
            "$( [ -n "$4" ] && verdict "$r" "$4" "$5" || echo "(information)")"
    }
    row "tag_lat 8 B, median latency (us)" tlat_o tlat_u "<=" 1.3
    row "tag_lat 8 B, average latency (us)" tlat_o_avg tlat_u_avg "" ""
    row "tag_bw 64 KiB, bandwidth (MB/s)" tbw_o tbw_u ">=" 0.8
    row "tag_bw 4 MiB, bandwidth (MB/s)" tbig_o tbig_u ">=" 0.8
fi
echo
echo "# every run (ours / upstream):"
echo "#   median latency us: $(tr '\n' ' ' <"$tmp/lat_ours")/ $(tr '\n' ' ' <"$tmp/lat_up")"
echo "#   average latency us: $(tr '\n' ' ' <"$tmp/lat_ours_avg")/ $(tr '\n' ' ' <"$tmp/lat_up_avg")"
echo "#   bandwidth MB/s: $(tr '\n' ' ' <"$tmp/bw_ours")/ $(tr '\n' ' ' <"$tmp/bw_up")"
if [ "$ucp" = 1 ]; then
    echo "#   tag_lat median us: $(tr '\n' ' ' <"$tmp/tlat_o")/ $(tr '\n' ' ' <"$tmp/tlat_u")"
    echo "#   tag_lat average us: $(tr '\n' ' ' <"$tmp/tlat_o_avg")/ $(tr '\n' ' ' <"$tmp/tlat_u_avg")"
    echo "#   tag_bw 64 KiB MB/s: $(tr '\n' ' ' <"$tmp/tbw_o")/ $(tr '\n' ' ' <"$tmp/tbw_u")"
    echo "#   tag_bw 4 MiB MB/s: $(tr '\n' ' ' <"$tmp/tbig_o")/ $(tr '\n' ' ' <"$tmp/tbig_u")"
fi
