# Emulated hosts on one Linux machine, for tests and benchmarks that need
# more than one node. Source this file (bash), then:
#
#   nh_init TAG             names everything TAG... and removes it all at exit
#   nh_net NET V4 V6        a network (a bridge): V4 is a /24 prefix such as
#                           192.0.2, V6 a /64 prefix such as 2001:db8:1 ("-"
#                           for none; with both "-" only link-local IPv6)
#   nh_host HOST            a host: its own network, UTS (hostname TAGHOST), IPC
#                           and mount namespaces, with a private /dev/shm
#   nh_attach HOST NET IF N an interface IF of HOST on NET, address V4.N/24
#                           and V6::N/64
#   nh_exec HOST CMD...     run CMD inside HOST (all its namespaces)
#   nh_enter HOST           the command words that enter HOST, for programs
#                           that take a command (timeout, env): $(nh_enter H)
#   nh_ns HOST              the network namespace's name (for ip -n)
#   nh_agent                path of a launch agent, "agent [opts] HOST CMD"
#                           (HOST or TAGHOST), for Open MPI's plm_rsh_agent
#   nh_link HOST IF up|down set a host's interface up or down
#   nh_host_del HOST        kill everything in HOST and remove it
#   nh_tx_bytes HOST IF     bytes sent so far by a host's interface
#   nh_mpi_setup            Open MPI's layout: hosts h0, h1, h2 on one network
#                           192.0.2.0/24 (h0 runs mpirun, h1 and h2 the ranks);
#                           sets nh_mpi_hosts (their namespace names, for
#                           --host) and nh_mpirun_args (launcher over nh_agent,
#                           out-of-band traffic on that network, pml ucx)
#
# Addresses come from documentation ranges (RFC 5737, RFC 3849), which exist
# only inside the namespaces, so nothing leaves the machine. The namespaces
# of a host are held by one "sleep" process; nh_exec enters them with
# nsenter. /tmp stays shared so that programs built outside are visible.
# Needs root, iproute2 and util-linux (unshare, nsenter). Functions return
# non-zero with a message on stderr when the kernel refuses.

nh_tag=
nh_dir=
declare -A nh_v4 nh_v6 nh_pid nh_peers
nh_nets=()
nh_hosts=()

nh_init() {
    nh_tag=${1:?nh_init TAG}
    nh_dir=$(mktemp -d "/tmp/${nh_tag}.XXXXXX") || return 1
    trap nh_cleanup EXIT
    trap 'exit 1' INT TERM
}

nh_cleanup() {
    local h n
    for h in "${nh_hosts[@]}"; do
        nh_host_del "$h"
    done
    for n in "${nh_nets[@]}"; do
        ip link del "${nh_tag}$n" 2>/dev/null
    done
    [ -n "$nh_dir" ] && rm -rf "$nh_dir"
    nh_hosts=() nh_nets=() nh_dir=
}

nh_ns() { echo "${nh_tag}$1"; }

nh_net() {
    local net=$1
    nh_v4[$net]=$2 nh_v6[$net]=$3
    ip link add "${nh_tag}$net" type bridge || return 1
    nh_nets+=("$net")
    # A bridge without IPv6 on the root side: it only forwards. Nor may the
    # root namespace answer ARP on it: by default Linux answers for any of
    # its addresses on any interface, and a machine whose own network uses
    # the same range (seen: eth0 192.0.2.2/24) would take the emulated host
    # .2's traffic.
    sysctl -qw "net.ipv6.conf.${nh_tag}$net.disable_ipv6=1" 2>/dev/null
    sysctl -qw "net.ipv4.conf.${nh_tag}$net.arp_ignore=8" || return 1
    ip link set "${nh_tag}$net" up
}

nh_host() {
    local h=$1 ns="${nh_tag}$1" i
    ip netns add "$ns" || return 1
    nh_hosts+=("$h")
    rm -f "$nh_dir/$h.pid"
    ip -n "$ns" link set lo up
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 \
        net.ipv6.conf.default.accept_dad=0 2>/dev/null
    # The holder: its own hostname, System V IPC and /dev/shm, as a separate
    # machine would have (Open MPI's session directory is named by the host).
    ip netns exec "$ns" unshare --uts --ipc --mount --propagation private sh -c \
        "hostname '$ns' && mount -t tmpfs -o mode=1777 tmpfs /dev/shm && \
         echo \$\$ >'$nh_dir/$h.pid' && exec sleep infinity" </dev/null >/dev/null 2>&1 &
    disown
    for i in $(seq 100); do
        [ -s "$nh_dir/$h.pid" ] && break
        sleep 0.05
    done
    if [ ! -s "$nh_dir/$h.pid" ]; then
        echo "nh_host $h: the holder of its namespaces did not start" >&2
        return 1
    fi
    nh_pid[$h]=$(cat "$nh_dir/$h.pid")
}

nh_attach() {
    local h=$1 net=$2 ifc=$3 n=$4 ns="${nh_tag}$1" peer
    peer="${nh_tag}${net}$n"
    ip link add "$peer" type veth peer name "$ifc" netns "$ns" || return 1
    nh_peers[$h]+=" $peer"
    ip link set "$peer" master "${nh_tag}$net" up || return 1
    if [ "${nh_v4[$net]}" != - ]; then
        ip -n "$ns" addr add "${nh_v4[$net]}.$n/24" dev "$ifc" || return 1
    fi
    if [ "${nh_v6[$net]}" != - ]; then
        ip -n "$ns" addr add "${nh_v6[$net]}::$n/64" dev "$ifc" nodad || return 1
    fi
    ip -n "$ns" link set "$ifc" up
}

nh_enter() { echo "nsenter -t ${nh_pid[$1]:?no host $1} -u -i -m -n --"; }

nh_exec() {
    local h=$1
    shift
    $(nh_enter "$h") "$@"
}

nh_agent() {
    local a="$nh_dir/agent"
    if [ ! -x "$a" ]; then
        cat >"$a" <<EOF
#!/bin/bash
# Open MPI launch agent: "agent [options] HOST COMMAND..." runs COMMAND
# inside the emulated host HOST.
while [[ "\$1" == -* ]]; do shift; done
host=\${1#$nh_tag}
shift
pid=\$(cat "$nh_dir/\$host.pid" 2>/dev/null) ||
    { echo "agent: no emulated host \$host" >&2; exit 1; }
exec nsenter -t "\$pid" -u -i -m -n -- /bin/sh -c "\$*"
EOF
        chmod +x "$a"
    fi
    echo "$a"
}

nh_link() { ip -n "${nh_tag}$1" link set "$2" "$3"; }

# Waits until the host's processes and interfaces are gone, so that a host
# of the same name can be made again at once.
nh_host_del() {
    local h=$1 ns="${nh_tag}$1" i p
    for i in $(seq 50); do
        [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && break
        ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
        sleep 0.1
    done
    # The kernel frees a namespace (and the veths in it) later, in the
    # background: remove the veths now, so that their names are free.
    for p in ${nh_peers[$h]:-}; do
        ip link del "$p" 2>/dev/null
    done
    ip netns del "$ns" 2>/dev/null
    unset "nh_pid[$h]" "nh_peers[$h]"
    rm -f "$nh_dir/$h.pid"
    return 0
}

nh_tx_bytes() { ip netns exec "${nh_tag}$1" cat "/sys/class/net/$2/statistics/tx_bytes"; }

nh_mpi_hosts=()
nh_mpirun_args=()
nh_mpi_setup() {
    local i
    nh_net n 192.0.2 - || return 1
    for i in 0 1 2; do
        nh_host h$i && nh_attach h$i n eth0 $((i + 1)) || return 1
    done
    nh_mpi_hosts=($(nh_ns h0) $(nh_ns h1) $(nh_ns h2))
    # plm rsh: an environment may choose another launcher (OMPI_MCA_plm=isolated
    # refuses a second host). routed direct: each daemon talks to mpirun itself.
    nh_mpirun_args=(--mca plm rsh --mca plm_rsh_agent "$(nh_agent)"
                    --mca oob_tcp_if_include 192.0.2.0/24 --mca routed direct
                    --mca pml ucx --mca osc ucx --mca btl self
                    --mca pml_ucx_tls any --mca pml_ucx_devices any)
}
