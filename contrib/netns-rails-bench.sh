#!/bin/bash
# Rendezvous over two network interfaces at once (UCX_MAX_RNDV_RAILS):
# two emulated hosts (contrib/netns-hosts.sh), each with eth0 on
# 192.0.2.0/24 and eth1 on 198.51.100.0/24, ucx_perftest client/server
# between them over tcp, host memory. Rows, in one run: ours with both
# interfaces (default settings), ours with one rail (UCX_MAX_RNDV_RAILS=1),
# ours over eth0 only (UCX_NET_DEVICES=eth0), and Debian's UCX 1.13
# (UCX_TLS=tcp: it sees one boot id and would try shared memory).
#
# RATE: each host interface sends at most this (tc tbf on its egress, e.g.
# 2gbit), which makes each interface a link of known speed, as NICs are;
# "" (the default) leaves the veths unshaped, where a 2-core machine's CPU
# is the limit and a second connection adds no bandwidth.
#
# usage: contrib/netns-rails-bench.sh [BUILD_DIR]   (default: build-release)
# environment: RATE (""), SIZES (262144,1048576,4194304), REPS (3, median
#   shown), N (iterations per size: 100), OURS_ENV (VAR=value ... for every
#   row of ours, to try a setting against the same run's upstream)
# Needs root, iproute2 (ip, tc), util-linux, Debian's ucx-utils for the
# upstream row (skipped, and said so, without /usr/bin/ucx_perftest).
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-$src/build-release}")
rate=${RATE:-}
sizes=${SIZES:-262144,1048576,4194304}
reps=${REPS:-3}
iters=${N:-100}
read -ra ours_env <<<"${OURS_ENV:-}"
perf=$build/src/tools/perf/ucx_perftest
[ -x "$perf" ] || { echo "no $perf: build first" >&2; exit 1; }

. "$src/contrib/netns-hosts.sh"
nh_init r$$
nh_net a 192.0.2 - || exit 1
nh_net b 198.51.100 - || exit 1
for h in 1 2; do
    nh_host h$h && nh_attach h$h a eth0 $h && nh_attach h$h b eth1 $h || exit 1
    if [ -n "$rate" ]; then
        for i in eth0 eth1; do
            ip netns exec "$(nh_ns h$h)" tc qdisc add dev $i root tbf rate "$rate" \
                burst 1mb latency 100ms || exit 1
        done
    fi
done

port=25000
# one WHO SIZE -> MB/s of one client/server tag_bw run
one() {
    local who=$1 size=$2 p=$perf env=("${ours_env[@]}")
    port=$((port + 1))
    case $who in
    ours) ;;
    rails1) env+=(UCX_MAX_RNDV_RAILS=1) ;;
    eth0) env+=(UCX_NET_DEVICES=eth0) ;;
    upstream) p=/usr/bin/ucx_perftest env=(UCX_TLS=tcp) ;;
    esac
    nh_exec h1 env "${env[@]}" taskset -c 0 "$p" -p $port -t tag_bw -s "$size" \
        -n "$iters" >/dev/null 2>&1 &
    sleep 0.5
    nh_exec h2 env "${env[@]}" taskset -c 1 timeout 120 "$p" 192.0.2.1 -p $port \
        -t tag_bw -s "$size" -n "$iters" 2>&1 | awk '/Final/ { print $7 }'
    wait
}

median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : "-") }'; }

whos=(ours rails1 eth0)
[ -x /usr/bin/ucx_perftest ] && whos+=(upstream) ||
    echo "(no /usr/bin/ucx_perftest: apt-get install ucx-utils for the upstream row)"
echo "tag_bw MB/s between two emulated hosts, 2 interfaces each, rate per" \
     "interface: ${rate:-unshaped}; median of $reps${OURS_ENV:+; ours with $OURS_ENV}"
printf '| %-9s |' size; for w in "${whos[@]}"; do printf ' %-9s |' "$w"; done
printf ' %-12s |\n' "ours/eth0"
for s in ${sizes//,/ }; do
    declare -A v=()
    for r in $(seq "$reps"); do
        for w in "${whos[@]}"; do v[$w]+=" $(one $w $s)"; done
    done
    printf '| %-9s |' "$s"
    for w in "${whos[@]}"; do v[$w]=$(echo "${v[$w]}" | median); printf ' %-9s |' "${v[$w]}"; done
    awk -v a="${v[ours]}" -v b="${v[eth0]}" \
        'BEGIN { if (b > 0) printf(" %-12.2f |\n", a / b); else print " - |" }'
done
