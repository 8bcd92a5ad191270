#!/bin/bash
# Two emulated hosts on one machine: network namespaces joined by a veth pair,
# addressed from 192.0.2.0/24 (a documentation range that exists only inside
# them). One kernel, so one boot id: the library must still see two nodes
# (ucs_sys_get_node_id: boot id and network namespace) and talk tcp between
# them, while two processes inside one namespace keep shared memory.
# ucx_perftest's CSV names the protocol and transport of each row.
# Skipped (77) without root, iproute2 or namespaces. Cleans up on any exit.
set -uo pipefail
build=${BUILD_DIR:?BUILD_DIR not set}
perf="$build/src/tools/perf/ucx_perftest"
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null; then
    echo "SKIPPED: needs root and iproute2 (ip netns)"
    exit 77
fi
tag=ucxn$$
ns1=${tag}a
ns2=${tag}b
ns3=${tag}c
ns4=${tag}d
tmp=$(mktemp -d)
cleanup() {
    for ns in "$ns1" "$ns2" "$ns3" "$ns4"; do
        ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
        ip netns del "$ns" 2>/dev/null
    done
    rm -rf "$tmp"
}
trap cleanup EXIT
trap "exit 1" INT TERM
if ! ip netns add "$ns1" 2>"$tmp/err" || ! ip netns add "$ns2" 2>>"$tmp/err"; then
    echo "SKIPPED: cannot create network namespaces: $(cat "$tmp/err")"
    exit 77
fi
ip link add "${tag}0" netns "$ns1" type veth peer name "${tag}1" netns "$ns2" &&
ip -n "$ns1" addr add 192.0.2.1/24 dev "${tag}0" &&
ip -n "$ns2" addr add 192.0.2.2/24 dev "${tag}1" &&
ip -n "$ns1" link set "${tag}0" up && ip -n "$ns2" link set "${tag}1" up &&
ip -n "$ns1" link set lo up && ip -n "$ns2" link set lo up ||
    { echo "FAIL: could not wire the namespaces"; exit 1; }

# A second pair of hosts that speak only IPv6: a global (documentation range
# 2001:db8::/32) address on one veth pair and only the kernel's link-local
# address on another. No IPv4 address but loopback's, so tcp must use IPv6.
# nodad: the addresses are usable at once rather than after duplicate
# address detection.
ip netns add "$ns3" && ip netns add "$ns4" &&
ip link add "${tag}2" netns "$ns3" type veth peer name "${tag}3" netns "$ns4" &&
ip link add "${tag}4" netns "$ns3" type veth peer name "${tag}5" netns "$ns4" &&
for ns in "$ns3" "$ns4"; do
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 \
        net.ipv6.conf.default.accept_dad=0 || exit 1
done &&
ip -n "$ns3" addr add 2001:db8::1/64 dev "${tag}2" nodad &&
ip -n "$ns4" addr add 2001:db8::2/64 dev "${tag}3" nodad &&
ip -n "$ns3" link set "${tag}2" up && ip -n "$ns4" link set "${tag}3" up &&
ip -n "$ns3" link set "${tag}4" up && ip -n "$ns4" link set "${tag}5" up &&
ip -n "$ns3" link set lo up && ip -n "$ns4" link set lo up ||
    { echo "FAIL: could not wire the IPv6 namespaces"; exit 1; }
# The link-local address of the second pair, once the kernel has made it.
for i in $(seq 50); do
    ll=$(ip -n "$ns3" -6 -o addr show dev "${tag}4" scope link 2>/dev/null |
         awk '{ sub("/.*", "", $4); print $4; exit }')
    [ -n "$ll" ] && break
    sleep 0.1
done

rc=0
port=$((20000 + $$ % 20000))
# run_pair NAME SERVER_NS CLIENT_NS ADDRESS TRANSPORTS (an awk regex) [ENV...]
# ENV (VAR=value) applies to both sides.
run_pair() {
    local name=$1 sns=$2 cns=$3 addr=$4 want=$5 got v6=
    shift 5
    case $addr in *:*) v6=-6 ;; esac
    port=$((port + 1))
    ip netns exec "$sns" env "$@" timeout 60 "$perf" $v6 -p $port -t tag_lat \
        --sizes 8,65536 -n 200 >"$tmp/server" 2>&1 &
    local server=$!
    sleep 0.5
    if ! ip netns exec "$cns" env "$@" timeout 60 "$perf" $v6 "$addr" -p $port \
         -t tag_lat --sizes 8,65536 -n 200 --csv >"$tmp/csv" 2>"$tmp/err"; then
        echo "FAIL $name: the client failed"
        cat "$tmp/err" "$tmp/server"
        rc=1
        wait $server
        return
    fi
    wait $server
    got=$(awk -F, 'NR > 1 { print $15 }' "$tmp/csv" | tr '\n' ' ')
    if awk -F, -v w="$want" 'NR > 1 && $15 !~ ("/(" w ")$") { bad = 1 } END { exit bad }' \
           "$tmp/csv"; then
        echo "PASS $name: $got"
    else
        echo "FAIL $name: expected every row over $want, got: $got"
        rc=1
    fi
}

# One node: posix for messages, cma for the rendezvous read.
run_pair "two processes in one namespace use shared memory" "$ns1" "$ns1" 127.0.0.1 "posix|cma"
run_pair "two emulated hosts use tcp" "$ns1" "$ns2" 192.0.2.1 tcp
run_pair "two IPv6-only hosts use tcp over IPv6" "$ns3" "$ns4" 2001:db8::1 tcp
run_pair "IPv6-only hosts, only the global-address interface" "$ns3" "$ns4" \
    2001:db8::1 tcp UCX_NET_DEVICES="${tag}2,${tag}3"
if [ -n "$ll" ]; then
    run_pair "IPv6 hosts joined only by link-local addresses" "$ns3" "$ns4" \
        "$ll%${tag}5" tcp UCX_NET_DEVICES="${tag}4,${tag}5"
else
    echo "FAIL: no link-local address appeared on ${tag}4"
    rc=1
fi
run_pair "IPv4 hosts, IPv6 preferred but absent: IPv4 is used" "$ns1" "$ns2" \
    192.0.2.1 tcp UCX_TCP_AF_PRIO=inet6,inet
exit $rc
