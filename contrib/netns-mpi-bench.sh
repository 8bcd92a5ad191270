#!/bin/bash
# Open MPI between two emulated hosts (contrib/netns-hosts.sh: h1 and h2 run
# the ranks, h0 runs mpirun), ours against Debian's UCX 1.13 in the same run
# (docs/multi-node.md): test/mpi/mpi_hostbench.c over pml ucx, one rank per
# host (ping-pong latency, bandwidth with 16 in flight, MPI_Sendrecv of both
# ranks at once, Allreduce, Alltoall) and two ranks per host (Allreduce,
# Alltoall: two of the four pairs are inside one host).
#
# Ranks: not bound by Open MPI (each emulated host's daemon would bind its
# first rank to core 0: both ranks on one core); rank N runs on CPU N when
# there are enough CPUs, else unbound.
#
# Ours: its default settings (tcp between the hosts, shared memory inside
# one). Upstream: UCX_TLS=tcp,self by default (UP_TLS), because 1.13
# decides "same node" from the boot id, which the emulated hosts share, and
# would pick shared memory across them, which their private /dev/shm and IPC
# namespaces refuse; set UP_TLS= to try its default.
#
# usage: contrib/netns-mpi-bench.sh [BUILD_DIR]      (default: build-release)
# environment: REPS (3; ours and upstream alternate, median shown),
#   SECS (0.3 s per size and test), SIZES (8,1024,65536,1048576,4194304,
#   16777216,67108864), UP_TLS (tcp,self), TESTS (lat,bw,sendrecv,allreduce,
#   alltoall: the 2-rank jobs; the 4-rank jobs run when allreduce or alltoall
#   is listed), OURS_ENV (VAR=value ... passed to our ranks only, to try a
#   UCX_* setting against the same run's upstream), NETS (1; 2: a second
#   interface per host on its own network)
# Needs root, iproute2, util-linux, Open MPI (mpicc, mpirun) and Debian's
# libucx0 (which Open MPI's pml ucx loads when ours is not first on the path).
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-$src/build-release}")
reps=${REPS:-3}
secs=${SECS:-0.3}
sizes=${SIZES:-8,1024,65536,1048576,4194304,16777216,67108864}
up_tls=${UP_TLS-tcp,self}
tests=${TESTS:-lat,bw,sendrecv,allreduce,alltoall}
read -ra ours_env <<<"${OURS_ENV:-}"
coll=$(echo ",$tests," | grep -oE ',(allreduce|alltoall)' | tr -d '\n' | sed 's/^,//')

. "$src/contrib/tests/lib/ompi.sh"
. "$src/contrib/netns-hosts.sh"
nh_init m$$
work=$nh_dir
nh_mpi_setup || exit 1
# NETS=2: h1 and h2 also on a second network (eth1, 198.51.100.0/24), which
# only the ranks' UCX uses (rails: UCX_MAX_RNDV_RAILS).
if [ "${NETS:-1}" = 2 ]; then
    { nh_net b 198.51.100 - && nh_attach h1 b eth1 2 && nh_attach h2 b eth1 3; } || exit 1
fi
hosts=("${nh_mpi_hosts[@]}")
libs=$(ompi_our_libs "$build")
mpicc -O2 -o "$work/mpi_hostbench" "$src/test/mpi/mpi_hostbench.c" || exit 1

declare -A val
# job WHO SPEC NP TESTS SIZES: one mpirun; records val[WHO.NP.test.bytes].
job() {
    local who=$1 spec=$2 np=$3 tests=$4 sz=$5 envs=() xs=() e t s v out="$work/job.out" pin=
    # Each host's daemon binds its first rank to core 0 as on a real node,
    # but the hosts share this machine's cores: one rank per host gets a
    # core of its own (rank number), more ranks than cores run unbound.
    [ "$np" -le "$(nproc)" ] &&
        pin='taskset -pc $OMPI_COMM_WORLD_RANK $$ >/dev/null;'

    if [ "$who" = ours ]; then
        envs=(LD_LIBRARY_PATH="$libs" "${ours_env[@]}")
    else
        envs=(UCX_TLS="$up_tls")
        [ -z "$up_tls" ] && envs=()
    fi
    for e in "${envs[@]}"; do xs+=(-x "${e%%=*}"); done
    env -u LD_LIBRARY_PATH "${envs[@]}" timeout -k 5 300 $(nh_enter h0) \
        mpirun "${ompi_root_args[@]}" "${nh_mpirun_args[@]}" --host "$spec" -np "$np" \
        --bind-to none "${xs[@]}" -x UCX_LOG_LEVEL=warn \
        /bin/sh -c "$pin exec $work/mpi_hostbench -t $secs -s $sz -T $tests" >"$out" 2>&1 ||
        { echo "FAILED: $who, $np ranks, $tests" >&2; tail -20 "$out" >&2; return 1; }
    while read -r t s v; do
        [[ "$s" =~ ^[0-9]+$ ]] && val[$who.$np.$t.$s]+="$v "
    done <"$out"
}

median() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)] }'; }

failed=0
for ((r = 0; r < reps; ++r)); do
    for who in ours upstream; do
        job $who "${hosts[1]},${hosts[2]}" 2 "$tests" "$sizes" || failed=1
        [ -n "$coll" ] &&
            { job $who "${hosts[1]}:2,${hosts[2]}:2" 4 "$coll" 1048576,4194304 || failed=1; }
    done
done

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, ours $build (git $(git -C "$src" rev-parse --short HEAD 2>/dev/null)), upstream UCX_TLS=${up_tls:-default}, median of $reps${OURS_ENV:+, ours with $OURS_ENV}"
echo
echo "| test | ranks | bytes | ours | upstream | ratio | better |"
echo "|---|---|---|---|---|---|---|"
for key in $(printf '%s\n' "${!val[@]}" | sed -n 's/^ours\.//p' |
             sort -t. -k1,1n -k2,2 -k3,3n); do
    np=${key%%.*} rest=${key#*.}
    t=${rest%%.*} s=${rest#*.}
    o=$(echo "${val[ours.$key]}" | median)
    u=$(echo "${val[upstream.$key]:-}" | median)
    case $t in lat|allreduce|alltoall) better=lower;; *) better=higher;; esac
    ratio=$(awk -v o="$o" -v u="$u" 'BEGIN { if (o > 0 && u > 0) printf "%.2f", o / u }')
    echo "| $t | $np | $s | $o | ${u:--} | ${ratio:--} | $better |"
done
exit $failed
