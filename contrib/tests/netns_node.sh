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
tmp=$(mktemp -d)
cleanup() {
    ip netns pids "$ns1" 2>/dev/null | xargs -r kill -9 2>/dev/null
    ip netns pids "$ns2" 2>/dev/null | xargs -r kill -9 2>/dev/null
    ip netns del "$ns1" 2>/dev/null
    ip netns del "$ns2" 2>/dev/null
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

rc=0
port=$((20000 + $$ % 20000))
# run_pair NAME SERVER_NS CLIENT_NS ADDRESS TRANSPORTS (an awk regex)
run_pair() {
    local name=$1 sns=$2 cns=$3 addr=$4 want=$5 got
    port=$((port + 1))
    ip netns exec "$sns" timeout 60 "$perf" -p $port -t tag_lat --sizes 8,65536 -n 200 \
        >"$tmp/server" 2>&1 &
    local server=$!
    sleep 0.5
    if ! ip netns exec "$cns" timeout 60 "$perf" "$addr" -p $port -t tag_lat \
         --sizes 8,65536 -n 200 --csv >"$tmp/csv" 2>"$tmp/err"; then
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
exit $rc
