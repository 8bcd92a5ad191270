#!/bin/bash
# ucx_perftest between two emulated hosts (network namespaces joined by a
# veth pair, 192.0.2.0/24), ours against Debian's UCX 1.13 in the same run
# (docs/multi-node.md). Root and iproute2 needed.
# usage: OURS=<our install prefix> contrib/netns-bench.sh
#   UP_TLS=tcp  UCX_TLS for upstream (1.13 sees one boot id and would use
#               shared memory across the namespaces; "" for its default)
set -u
ours=${OURS:?OURS: our install prefix (bin/ucx_perftest, lib)}
up_tls=${UP_TLS-tcp}
trap 'ip netns del $ns1 2>/dev/null; ip netns del $ns2 2>/dev/null' EXIT
trap 'exit 1' INT TERM
ns1=ucxb1 ns2=ucxb2
ip netns del $ns1 2>/dev/null; ip netns del $ns2 2>/dev/null
ip netns add $ns1; ip netns add $ns2
ip link add vb0 netns $ns1 type veth peer name vb1 netns $ns2
ip -n $ns1 addr add 192.0.2.1/24 dev vb0; ip -n $ns2 addr add 192.0.2.2/24 dev vb1
for n in $ns1 $ns2; do ip -n $n link set lo up; done; ip -n $ns1 link set vb0 up; ip -n $ns2 link set vb1 up
port=24000
run() { # who test size
  local perf env; port=$((port+1))
  if [ $1 = ours ]; then perf=$ours/bin/ucx_perftest; env="LD_LIBRARY_PATH=$ours/lib"; else perf=/usr/bin/ucx_perftest; env="UCX_TLS=$up_tls"; fi
  ip netns exec $ns1 env $env taskset -c 0 $perf -p $port -t $2 -s $3 -n $4 >/dev/null 2>&1 &
  sleep 0.4
  ip netns exec $ns2 env $env taskset -c 1 $perf 192.0.2.1 -p $port -t $2 -s $3 -n $4 2>&1 | grep Final | awk -v t=$2 '{ if (t ~ /lat/) print $4; else print $7 }'
  wait
}
for spec in "tag_lat 8 20000" "tag_lat 65536 2000" "tag_bw 65536 5000" "tag_bw 1048576 500" "tag_bw 4194304 200" "tag_bw 67108864 20"; do
  set -- $spec
  for r in 1 2; do echo "$1 $2 run$r: ours $(run ours $1 $2 $3) upstream $(run up $1 $2 $3)"; done
done
