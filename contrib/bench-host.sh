#!/bin/bash
# Host-memory yardstick: ours against Debian's upstream UCX 1.13 (packages
# ucx-utils and libucx0: separate programs and libraries, never linked with
# ours), side by side in the same run, in the order a user meets them:
#
#  1. Default settings (no UCX_TLS or any other UCX_* variable), ucx_perftest
#     client/server (server without host name, client "localhost", both
#     tools the same way): tag_lat 8 B and 1 KiB, tag_bw message rate at
#     8 B, tag_bw bandwidth at 1 KiB, 64 KiB, 1 MiB and 4 MiB.
#  2. Default settings, our ucx_perftest -L (server child and client in one
#     command) next to upstream's client/server figures of section 1, which
#     has no -L: tag_lat 8 B, tag_bw 64 KiB and 4 MiB.
#  3. Default settings, Open MPI (pml ucx, 2 ranks bound to cores) running
#     test/mpi/mpi_hostbench.c once over our libraries (LD_LIBRARY_PATH) and
#     once over Debian's: ping-pong latency 8 B and 1 KiB, message rate with
#     64 in flight at 8 B, bandwidth 1 KiB..4 MiB with 16 in flight,
#     MPI_Sendrecv (both directions at once) 64 KiB..4 MiB; then
#     MPI_Allreduce and MPI_Alltoall of 1 and 4 MiB over 2 ranks (bound)
#     and 4 (unbound), time per call.
#  4. Default settings, ucx_perftest client/server, the other UCP APIs:
#     ucp_am_lat and stream_lat 8 B, ucp_am_bw and stream_bw 64 KiB and
#     1 MiB (upstream's AM data is not copied out of its receive handler,
#     nor ours: same work on both sides).
#  5. Tuned, labelled: UCX_TLS=posix,self for both tools (UCT am_lat 8 B
#     short and am_bw 64 KiB bcopy over posix; UCP tag_lat 8 B, tag_bw
#     64 KiB and 4 MiB).
#
# Ours and upstream's alternate REPS times so that both see the same machine
# noise; each row shows the median over the repetitions, the ratio ours /
# upstream and the target (docs/performance.md, issue 20).
#
# usage: contrib/bench-host.sh [BUILD_DIR]        (default: build-release)
# environment:
#   REPS=3             repetitions of each pair of runs
#   LAT_ITERS=200000   latency iterations (warm-up: 10000)
#   BW_ITERS=20000     bandwidth iterations up to 64 KiB (1 MiB: /10, 4 MiB: /40)
#   MPI=1              section 3 (needs mpicc and mpirun: Debian's openmpi-bin)
#   APIS=1             section 4
#   TUNED=1            section 5
#   CPUS="0 1"         CPUs of the server and of the client (taskset), also
#                      the MPI ranks' binding; CPUS= (empty) runs unpinned
#   PORT=13400         first TCP port for the exchange (one per run)
# Builds nothing but the MPI program (mpicc, into a temporary directory).
# Installs ucx-utils with apt-get when it is missing.
set -uo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build-release}
build=$(cd "$build" 2>/dev/null && pwd) || { echo "no build directory: ${1:-build-release}"; exit 1; }
ours="$build/src/tools/perf/ucx_perftest"
upstream=/usr/bin/ucx_perftest
reps=${REPS:-3}
lat_iters=${LAT_ITERS:-200000}
bw_iters=${BW_ITERS:-20000}
do_mpi=${MPI:-1}
do_tuned=${TUNED:-1}
do_apis=${APIS:-1}
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
    mpi_bind=(--bind-to core)
else
    srv_pin=(); cli_pin=(); mpi_bind=(--bind-to none)
    pinning="not pinned"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run_pair TOOL ENV... -- ARGS...: one server/client pair; prints the
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

# run_local ENV... -- ARGS...: our ucx_perftest -L; prints its CSV line.
run_local() {
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    local c=()
    [ -n "${srv_cpu:-}" ] && [ -n "${cli_cpu:-}" ] && c=(-c "$cli_cpu,$srv_cpu")
    env -u LD_LIBRARY_PATH "${envs[@]}" "$ours" -L "$@" "${c[@]}" -f -v \
        >"$tmp/loc.out" 2>"$tmp/loc.err" || { echo "FAILED: $ours -L $*" >&2;
                                             cat "$tmp/loc.err" >&2; return 1; }
    tail -1 "$tmp/loc.out"
}

# CSV columns. Ours: test,api,transport,layout,send_mem,recv_mem,size,
# iterations,lat_typical_us,lat_avg_us,lat_max_us,bw_mbs,bw_gbs,msg_rate,...
# Upstream's: iterations,50.0_percentile_lat,avg_lat,overall_lat,avg_bw,
# overall_bw,avg_mr,overall_mr; its "avg" columns cover only the last
# one-second report interval, the "overall" ones the whole run, as ours do.
col() { cut -d, -f"$1" <<<"$2"; }
O_LAT=9; O_AVG=10; O_BW=12; O_MR=14
U_LAT=2; U_AVG=4; U_BW=6; U_MR=8

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan";
                           else if (NR % 2) print v[(NR + 1) / 2];
                           else printf "%.4f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {
    if (a ~ /^[0-9.e+-]+$/ && b ~ /^[0-9.e+-]+$/ && b > 0) printf "%.2f", a / b; else print "n/a" }'; }
verdict() { awk -v r="$1" -v op="$2" -v t="$3" 'BEGIN {
    if (r !~ /^[0-9.]+$/) { printf "%s %s n/a", op, t; exit }
    ok = (op == "<=") ? (r + 0 <= t + 0) : (r + 0 >= t + 0)
    printf "%s %s %s", op, t, ok ? "ok" : "MISSED" }'; }
# record KEY VALUE: one repetition's value of a row.
record() { echo "$2" >>"$tmp/v.$1"; }
# row LABEL KEY_OURS KEY_UPSTREAM OP TARGET: one line of the table.
row() {
    local o u r
    o=$(median <"$tmp/v.$2" 2>/dev/null || echo nan)
    u=$(median <"$tmp/v.$3" 2>/dev/null || echo nan)
    r=$(ratio "$o" "$u")
    printf '%-48s %12s %12s %6s  %s\n' "$1" "$o" "$u" "$r" \
        "$( [ -n "$4" ] && verdict "$r" "$4" "$5" || echo "(information)")"
    echo "$1|$(tr '\n' ' ' <"$tmp/v.$2" 2>/dev/null)|$(tr '\n' ' ' <"$tmp/v.$3" 2>/dev/null)" \
        >>"$tmp/runs"
}
header() {
    printf '\n## %s\n' "$1"
    printf '%-48s %12s %12s %6s  %s\n' "test (median of $reps runs)" ours upstream ratio target
    printf '%-48s %12s %12s %6s  %s\n' "----" "----" "--------" "-----" "------"
}

# ucp_both KEY ENV... -- ARGS...: ours then upstream, client/server; records
# latency (KEY.lat), bandwidth (KEY.bw) and message rate (KEY.mr).
ucp_both() {
    local key=$1; shift
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    local line
    line=$(run_pair "$ours" "${envs[@]}" -- "$@") || return 1
    record "$key.o.lat" "$(col $O_LAT "$line")"; record "$key.o.bw" "$(col $O_BW "$line")"
    record "$key.o.mr" "$(awk -v m="$(col $O_MR "$line")" 'BEGIN { printf "%.4f", m / 1e6 }')"
    line=$(run_pair "$upstream" "${envs[@]}" -- "$@") || return 1
    record "$key.u.lat" "$(col $U_LAT "$line")"; record "$key.u.bw" "$(col $U_BW "$line")"
    record "$key.u.mr" "$(awk -v m="$(col $U_MR "$line")" 'BEGIN { printf "%.4f", m / 1e6 }')"
}

# The MPI program and the two library sets.
mpi_ok=0
if [ "$do_mpi" = 1 ]; then
    if command -v mpicc >/dev/null && command -v mpirun >/dev/null &&
       mpicc -O2 -o "$tmp/mpi_hostbench" "$src/test/mpi/mpi_hostbench.c" 2>"$tmp/mpicc.err"; then
        mpi_ok=1
    else
        echo "# MPI rows skipped: no working mpicc/mpirun (apt-get install openmpi-bin libopenmpi-dev)"
        cat "$tmp/mpicc.err" 2>/dev/null
    fi
fi
our_libs="$build/src/ucp/.libs:$build/src/uct/.libs:$build/src/ucs/.libs:$build/src/ucm/.libs"
mpi_root=(); [ "$(id -u)" -eq 0 ] && mpi_root=(--allow-run-as-root)
# run_mpi WHO: one mpirun of every MPI test; records mpi.WHO.<test>.<bytes>.
run_mpi() {
    local who=$1 lp=() t s v
    [ "$who" = o ] && lp=(-x LD_LIBRARY_PATH="$our_libs")
    # pml_ucx_tls/devices any: Open MPI 4.1 enables pml ucx only on the
    # InfiniBand transports it lists unless told otherwise.
    env -u LD_LIBRARY_PATH ${lp:+LD_LIBRARY_PATH="$our_libs"} \
        mpirun "${mpi_root[@]}" -np 2 "${mpi_bind[@]}" --mca pml ucx --mca btl self \
        --mca pml_ucx_tls any --mca pml_ucx_devices any "${lp[@]}" \
        "$tmp/mpi_hostbench" -t 0.3 -s 8,1024,65536,1048576,4194304 \
        >"$tmp/mpi.out" 2>"$tmp/mpi.err" || { echo "FAILED: mpirun ($who)" >&2;
                                               tail -20 "$tmp/mpi.err" >&2; return 1; }
    while read -r t s v; do
        record "mpi.$who.$t.$s" "$v"
    done <"$tmp/mpi.out"
    # Collectives over 2 ranks (bound as above) and 4 (unbound: more ranks
    # than this machine may have cores), 1 and 4 MiB.
    local np bind
    for np in 2 4; do
        bind=("${mpi_bind[@]}")
        [ $np = 4 ] && bind=(--oversubscribe --bind-to none)
        env -u LD_LIBRARY_PATH ${lp:+LD_LIBRARY_PATH="$our_libs"} \
            mpirun "${mpi_root[@]}" -np $np "${bind[@]}" --mca pml ucx --mca btl self \
            --mca pml_ucx_tls any --mca pml_ucx_devices any "${lp[@]}" \
            "$tmp/mpi_hostbench" -t 0.3 -s 1048576,4194304 -T allreduce,alltoall \
            >"$tmp/mpi.out" 2>"$tmp/mpi.err" ||
            { echo "FAILED: mpirun -np $np collectives ($who)" >&2;
              tail -20 "$tmp/mpi.err" >&2; return 1; }
        while read -r t s v; do
            record "mpi.$who.np$np.$t.$s" "$v"
        done <"$tmp/mpi.out"
    done
}

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')), $pinning"
echo "# ours: $ours (git $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo '?'))"
echo "# upstream: $upstream ($(dpkg-query -W -f='ucx-utils ${Version}' ucx-utils 2>/dev/null || echo unknown version))"

lat_args=(-n "$lat_iters" -w 10000)
bw_args=(-n "$bw_iters" -w 1000)
mid_args=(-n $((bw_iters / 10 + 10)) -w 100)
big_args=(-n $((bw_iters / 40 + 10)) -w 20)
for ((r = 1; r <= reps; ++r)); do
    echo "# repetition $r/$reps" >&2
    # 1. default settings, client/server
    ucp_both lat8 -- -t tag_lat -s 8 "${lat_args[@]}" || exit 1
    ucp_both lat1k -- -t tag_lat -s 1024 "${lat_args[@]}" || exit 1
    ucp_both bw8 -- -t tag_bw -s 8 -n 1000000 -w 10000 || exit 1
    ucp_both bw1k -- -t tag_bw -s 1024 "${bw_args[@]}" || exit 1
    ucp_both bw64k -- -t tag_bw -s 65536 "${bw_args[@]}" || exit 1
    ucp_both bw1m -- -t tag_bw -s 1048576 "${mid_args[@]}" || exit 1
    ucp_both bw4m -- -t tag_bw -s 4194304 "${big_args[@]}" || exit 1
    # 2. default settings, ours -L
    line=$(run_local -- -t tag_lat -s 8 "${lat_args[@]}") || exit 1
    record L.lat8 "$(col $O_LAT "$line")"
    line=$(run_local -- -t tag_bw -s 65536 "${bw_args[@]}") || exit 1
    record L.bw64k "$(col $O_BW "$line")"
    line=$(run_local -- -t tag_bw -s 4194304 "${big_args[@]}") || exit 1
    record L.bw4m "$(col $O_BW "$line")"
    # 3. Open MPI
    if [ "$mpi_ok" = 1 ]; then
        run_mpi o || exit 1
        run_mpi u || exit 1
    fi
    # 4. AM and stream
    if [ "$do_apis" = 1 ]; then
        ucp_both amlat8 -- -t ucp_am_lat -s 8 "${lat_args[@]}" || exit 1
        ucp_both stlat8 -- -t stream_lat -s 8 "${lat_args[@]}" || exit 1
        ucp_both ambw64k -- -t ucp_am_bw -s 65536 "${bw_args[@]}" || exit 1
        ucp_both ambw1m -- -t ucp_am_bw -s 1048576 "${mid_args[@]}" || exit 1
        ucp_both stbw64k -- -t stream_bw -s 65536 "${bw_args[@]}" || exit 1
        ucp_both stbw1m -- -t stream_bw -s 1048576 "${mid_args[@]}" || exit 1
    fi
    # 5. tuned
    if [ "$do_tuned" = 1 ]; then
        line=$(run_pair "$ours" -- -t am_lat -x posix -d memory -s 8 -D short "${lat_args[@]}") || exit 1
        record T.amlat.o "$(col $O_LAT "$line")"
        line=$(run_pair "$upstream" -- -t am_lat -x posix -d memory -s 8 -D short "${lat_args[@]}") || exit 1
        record T.amlat.u "$(col $U_LAT "$line")"
        # 64 KiB does not fit the default 8 KiB segment of either tool.
        line=$(run_pair "$ours" UCX_POSIX_SEG_SIZE=65600 -- -t am_bw -x posix -d memory \
               -s 65536 -D bcopy "${bw_args[@]}") || exit 1
        record T.ambw.o "$(col $O_BW "$line")"
        line=$(run_pair "$upstream" UCX_POSIX_SEG_SIZE=65600 -- -t am_bw -x posix -d memory \
               -s 65536 -D bcopy "${bw_args[@]}") || exit 1
        record T.ambw.u "$(col $U_BW "$line")"
        ucp_both Tlat8 UCX_TLS=posix,self -- -t tag_lat -s 8 "${lat_args[@]}" || exit 1
        ucp_both Tbw64k UCX_TLS=posix,self -- -t tag_bw -s 65536 "${bw_args[@]}" || exit 1
        ucp_both Tbw4m UCX_TLS=posix,self -- -t tag_bw -s 4194304 "${big_args[@]}" || exit 1
    fi
done

header "1. default settings, ucx_perftest client/server"
row "tag_lat 8 B, median latency (us)" lat8.o.lat lat8.u.lat "<=" 0.8
row "tag_lat 1 KiB, median latency (us)" lat1k.o.lat lat1k.u.lat "<=" 0.8
row "tag_bw 8 B, message rate (M/s)" bw8.o.mr bw8.u.mr ">=" 1.2
row "tag_bw 1 KiB, bandwidth (MB/s)" bw1k.o.bw bw1k.u.bw ">=" 1.0
row "tag_bw 64 KiB, bandwidth (MB/s)" bw64k.o.bw bw64k.u.bw ">=" 1.0
row "tag_bw 1 MiB, bandwidth (MB/s)" bw1m.o.bw bw1m.u.bw ">=" 1.0
row "tag_bw 4 MiB, bandwidth (MB/s)" bw4m.o.bw bw4m.u.bw ">=" 1.0

header "2. default settings, ours -L against upstream client/server (section 1)"
row "tag_lat 8 B, median latency (us)" L.lat8 lat8.u.lat "<=" 0.8
row "tag_bw 64 KiB, bandwidth (MB/s)" L.bw64k bw64k.u.bw ">=" 1.0
row "tag_bw 4 MiB, bandwidth (MB/s)" L.bw4m bw4m.u.bw ">=" 1.0

if [ "$mpi_ok" = 1 ]; then
    header "3. default settings, Open MPI pml ucx, test/mpi/mpi_hostbench.c"
    row "ping-pong 8 B, half round trip (us)" mpi.o.lat.8 mpi.u.lat.8 "<=" 0.8
    row "ping-pong 1 KiB, half round trip (us)" mpi.o.lat.1024 mpi.u.lat.1024 "<=" 0.8
    row "message rate 8 B, 64 in flight (M/s)" mpi.o.rate.8 mpi.u.rate.8 ">=" 1.2
    for s in 8 1024 65536 1048576 4194304; do
        row "bandwidth $s B, 16 in flight (MB/s)" "mpi.o.bw.$s" "mpi.u.bw.$s" ">=" 1.0
    done
    for s in 65536 1048576 4194304; do
        row "MPI_Sendrecv $s B, 2 x bytes / time (MB/s)" "mpi.o.sendrecv.$s" \
            "mpi.u.sendrecv.$s" ">=" 1.0
    done
    for np in 2 4; do
        for t in allreduce alltoall; do
            for s in 1048576 4194304; do
                row "MPI_${t^} $s B, $np ranks, time per call (us)" \
                    "mpi.o.np$np.$t.$s" "mpi.u.np$np.$t.$s" "<=" 1.0
            done
        done
    done
fi

if [ "$do_apis" = 1 ]; then
    header "4. default settings, ucx_perftest client/server, AM and stream"
    row "ucp_am_lat 8 B, median latency (us)" amlat8.o.lat amlat8.u.lat "<=" 1.0
    row "stream_lat 8 B, median latency (us)" stlat8.o.lat stlat8.u.lat "<=" 1.0
    row "ucp_am_bw 64 KiB, bandwidth (MB/s)" ambw64k.o.bw ambw64k.u.bw ">=" 1.0
    row "ucp_am_bw 1 MiB, bandwidth (MB/s)" ambw1m.o.bw ambw1m.u.bw ">=" 1.0
    row "stream_bw 64 KiB, bandwidth (MB/s)" stbw64k.o.bw stbw64k.u.bw ">=" 1.0
    row "stream_bw 1 MiB, bandwidth (MB/s)" stbw1m.o.bw stbw1m.u.bw ">=" 1.0
fi

if [ "$do_tuned" = 1 ]; then
    header "5. tuned: UCX_TLS=posix,self (UCT rows: -x posix -d memory)"
    row "am_lat 8 B short, median latency (us)" T.amlat.o T.amlat.u "<=" 1.0
    row "am_bw 64 KiB bcopy, bandwidth (MB/s)" T.ambw.o T.ambw.u ">=" 1.0
    row "tag_lat 8 B, median latency (us)" Tlat8.o.lat Tlat8.u.lat "<=" 0.8
    row "tag_bw 64 KiB, bandwidth (MB/s)" Tbw64k.o.bw Tbw64k.u.bw ">=" 1.0
    row "tag_bw 4 MiB, bandwidth (MB/s)" Tbw4m.o.bw Tbw4m.u.bw ">=" 1.0
fi

echo
echo "# every run (row | ours | upstream):"
sed 's/^/#   /' "$tmp/runs"
