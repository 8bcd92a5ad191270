#!/bin/bash
# Faults between two emulated hosts (contrib/netns-hosts.sh) during a tcp
# transfer of 4 MiB messages (ucx_perftest tag_bw, client on host b,
# server on host a, default settings): b's link set down, b cut off from
# the network (its veth deleted), host b removed with its processes. Each
# surviving side must end with an error naming the cause, within the bound
# that UCX_TCP_KEEPIDLE + KEEPINTVL * KEEPCNT (16 s by default) and the
# tool's error wait give, never hang and never report success.
# Skipped (77) without root, iproute2, util-linux or namespaces.
set -uo pipefail
build=${BUILD_DIR:?BUILD_DIR not set}
perf="$build/src/tools/perf/ucx_perftest"
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || ! command -v nsenter >/dev/null; then
    echo "SKIPPED: needs root, iproute2 (ip netns) and util-linux (nsenter)"
    exit 77
fi
. "$(dirname "$0")/../netns-hosts.sh"
nh_init ucxf$$
tmp=$nh_dir
if ! nh_net n 192.0.2 - 2>"$tmp/err" || ! nh_host a 2>>"$tmp/err" ||
   ! nh_attach a n eth0 1 2>>"$tmp/err"; then
    echo "SKIPPED: cannot create emulated hosts: $(cat "$tmp/err")"
    exit 77
fi
rc=0
port=$((30000 + $$ % 20000))
# Bounds in seconds, from the fault: the peer check fails an ep after 16 s
# without acknowledgements (checked once a second), then a side waits 5 s
# for its peer's report, a server 10 s more for the next request.
client_max=35
server_max=45

# fault NAME ACTION WHO: start a transfer, run ACTION a second into it, and
# check the sides named in WHO ("client server", or "server" when ACTION
# kills the client).
fault() {
    local name=$1 action=$2 who=$3 t0 side pid out status elapsed pattern
    local -A pids
    port=$((port + 1))
    if ! nh_host b || ! nh_attach b n eth0 2; then
        echo "FAIL $name: cannot make host b"
        nh_host_del b
        rc=1
        return
    fi
    nh_exec a timeout -k 5 90 "$perf" -p $port -t tag_bw -s 4194304 -n 100000000 \
        >"$tmp/server" 2>&1 &
    pids[server]=$!
    sleep 0.5
    $(nh_enter b) timeout -k 5 90 "$perf" 192.0.2.1 -p $port -t tag_bw -s 4194304 \
        -n 100000000 >"$tmp/client" 2>&1 &
    pids[client]=$!
    sleep 1.5
    t0=$(date +%s)
    eval "$action"
    for side in $who; do
        wait "${pids[$side]}"
        status=$?
        elapsed=$(($(date +%s) - t0))
        out="$tmp/$side"
        [ $side = client ] && max=$client_max || max=$server_max
        pattern="Endpoint timeout|Connection reset|closed the connection|no reply from"
        if [ $status -eq 0 ] || [ $status -ge 124 ] || [ $elapsed -gt $max ] ||
           ! grep -Eq "$pattern" "$out"; then
            echo "FAIL $name: the $side exited $status after $elapsed s (at most $max s," \
                 "with an error matching '$pattern')"
            grep -v '^[|+ ]' "$out" | tail -5
            rc=1
        else
            echo "PASS $name: the $side failed after $elapsed s:" \
                 "$(grep -Eo "($pattern).*" "$out" | head -1 | cut -c1-60)"
        fi
    done
    wait
    nh_host_del b
}

fault "b's link set down mid-transfer" "nh_link b eth0 down" "client server"
fault "b cut off from the network mid-transfer" "ip link del ${nh_tag}n2" "client server"
fault "host b removed with its processes mid-transfer" "nh_host_del b" "server"
exit $rc
