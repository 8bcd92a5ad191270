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
. "$(dirname "$0")/../netns-hosts.sh"
nh_init ucxn$$
tmp=$nh_dir
# Hosts a and b: two IPv4 networks, eth0 on 192.0.2.0/24 and eth1 on
# 198.51.100.0/24. Hosts c and d speak only IPv6: a global address
# (documentation range 2001:db8::/32) on eth0 and only the kernel's
# link-local address on eth1, no IPv4 address but loopback's, so tcp must
# use IPv6.
if ! nh_net a 192.0.2 - 2>"$tmp/err"; then
    echo "SKIPPED: cannot create a bridge: $(cat "$tmp/err")"
    exit 77
fi
if ! nh_host a 2>"$tmp/err"; then
    echo "SKIPPED: cannot create emulated hosts: $(cat "$tmp/err")"
    exit 77
fi
nh_net b 198.51.100 - && nh_net c6 - 2001:db8 && nh_net l6 - - &&
nh_host b && nh_host c && nh_host d &&
nh_attach a a eth0 1 && nh_attach b a eth0 2 &&
nh_attach a b eth1 1 && nh_attach b b eth1 2 &&
nh_attach c c6 eth0 1 && nh_attach d c6 eth0 2 &&
nh_attach c l6 eth1 1 && nh_attach d l6 eth1 2 ||
    { echo "FAIL: could not wire the emulated hosts"; exit 1; }
# The link-local address of c's eth1, once the kernel has made it.
for i in $(seq 50); do
    ll=$(ip -n "$(nh_ns c)" -6 -o addr show dev eth1 scope link 2>/dev/null |
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
    nh_exec "$sns" env "$@" timeout 60 "$perf" $v6 -p $port -t tag_lat \
        --sizes 8,65536 -n 200 >"$tmp/server" 2>&1 &
    local server=$!
    sleep 0.5
    if ! $(nh_enter "$cns") env "$@" timeout 60 "$perf" $v6 "$addr" -p $port \
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
run_pair "two processes in one host use shared memory" a a 127.0.0.1 "posix|cma"
run_pair "two emulated hosts use tcp" a b 192.0.2.1 tcp
run_pair "two IPv6-only hosts use tcp over IPv6" c d 2001:db8::1 tcp
run_pair "IPv6-only hosts, only the global-address interface" c d \
    2001:db8::1 tcp UCX_NET_DEVICES=eth0
if [ -n "$ll" ]; then
    run_pair "IPv6 hosts joined only by link-local addresses" c d \
        "$ll%eth1" tcp UCX_NET_DEVICES=eth1
else
    echo "FAIL: no link-local address appeared on c's eth1"
    rc=1
fi
run_pair "IPv4 hosts, IPv6 preferred but absent: IPv4 is used" a b \
    192.0.2.1 tcp UCX_TCP_AF_PRIO=inet6,inet

# run_devs NAME SERVER_DEVS CLIENT_DEVS DEV: UCX_NET_DEVICES on each side,
# 100 + 10 (the warm-up, a tenth) 1 MiB messages from b to a, connected
# through a's eth0 address: the payload must leave b by DEV and not by the
# other interface.
run_devs() {
    local name=$1 sdevs=$2 cdevs=$3 dev=$4 other tx0 tx1 sent stray
    [ "$dev" = eth0 ] && other=eth1 || other=eth0
    port=$((port + 1))
    tx0=$(nh_tx_bytes b "$dev") tx1=$(nh_tx_bytes b "$other")
    nh_exec a env UCX_NET_DEVICES="$sdevs" timeout 60 "$perf" -p $port -t tag_bw \
        -s 1048576 -n 100 >"$tmp/server" 2>&1 &
    local server=$!
    sleep 0.5
    if ! $(nh_enter b) env UCX_NET_DEVICES="$cdevs" timeout 60 "$perf" 192.0.2.1 \
         -p $port -t tag_bw -s 1048576 -n 100 >"$tmp/client" 2>&1; then
        echo "FAIL $name: the client failed"
        cat "$tmp/client" "$tmp/server"
        rc=1
        wait $server
        return
    fi
    wait $server
    sent=$(($(nh_tx_bytes b "$dev") - tx0))
    stray=$(($(nh_tx_bytes b "$other") - tx1))
    # 110 MiB of payload; 10000 warm-up messages would be 10 GiB.
    if [ $sent -lt $((110 << 20)) ] || [ $sent -gt $((300 << 20)) ] ||
       [ $stray -gt $((1 << 20)) ]; then
        echo "FAIL $name: b sent $sent bytes by $dev and $stray by $other"
        rc=1
    else
        echo "PASS $name: b sent $((sent >> 20)) MiB by $dev, $stray bytes by $other"
    fi
}
run_devs "UCX_NET_DEVICES=eth1: the traffic leaves by eth1" eth1 eth1 eth1
run_devs "UCX_NET_DEVICES=eth0: the traffic leaves by eth0" eth0 eth0 eth0

# expect_error NAME SERVER_DEVS CLIENT_DEVS PATTERN: the client (and the
# server, when it got as far as an endpoint) fail at once with a message
# matching PATTERN; a hang is a failure (timeout).
expect_error() {
    local name=$1 sdevs=$2 cdevs=$3 pattern=$4 crc srv
    port=$((port + 1))
    nh_exec a env UCX_NET_DEVICES="$sdevs" timeout 30 "$perf" -p $port -t tag_lat \
        -s 8 -n 10 >"$tmp/server" 2>&1 &
    srv=$!
    sleep 0.5
    $(nh_enter b) env UCX_NET_DEVICES="$cdevs" timeout 30 "$perf" 192.0.2.1 -p $port \
        -t tag_lat -s 8 -n 10 >"$tmp/client" 2>&1
    crc=$?
    wait $srv
    if [ $crc -eq 0 ] || [ $crc -ge 124 ] || ! grep -q "$pattern" "$tmp/client"; then
        echo "FAIL $name: client exit $crc, expected an error matching '$pattern'"
        cat "$tmp/client"
        rc=1
    else
        echo "PASS $name: $(grep -o "$pattern.*" "$tmp/client" | head -1 | cut -c1-110)"
    fi
}
# a's eth0 and b's eth1 are on different networks: the kernel would carry
# the traffic by b's eth0, which UCX_NET_DEVICES excluded.
expect_error "hosts whose chosen interfaces share no network fail clearly" eth0 eth1 \
    "no transport of worker .* reaches the peer"
expect_error "an unknown device in UCX_NET_DEVICES is named" all nosuch0 \
    "device 'nosuch0' is not offered"
exit $rc
