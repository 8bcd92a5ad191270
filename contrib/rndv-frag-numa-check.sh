#!/bin/bash
# Where the rendezvous pipeline's host staging fragments live, on a GPU
# machine (docs/rendezvous.md, "Host fragments and NUMA"):
#   1. ucx_info -d: each GPU's PCI bus id and NUMA node as hwloc gives it,
#      next to sysfs's numa_node for the same bus id (they must agree);
#   2. ucx_perftest through host fragments (UCX_RNDV_FRAG_MEM_TYPE=host,
#      UCX_RNDV_SCHEME=pipeline, buffers that do not export), both processes
#      pinned to a CPU of another node than the GPU's when there is one, so
#      that first-touch placement would land on the wrong node; while it
#      runs, the fragments' mappings in /proc/PID/numa_maps (the only ones
#      with policy "prefer:N") must have every page on the GPU's node;
#   3. the pools' debug lines (which node each took, whether it was placed).
# Exits non-zero when a check fails; on a machine with one NUMA node the
# checks pass but prove little (it says so).
#
# usage: contrib/rndv-frag-numa-check.sh [GPU]     (default GPU 0)
# environment: BUILD_DIR=build-gpu (relative to the tree, or absolute),
#              SIZE=64M, ITERS=400 (messages of the perftest)
set -uo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-build-gpu}
case $build in /*) ;; *) build=$src/$build ;; esac
gpu=${1:-0}
info=$build/src/tools/info/ucx_info
perf=$build/src/tools/perf/ucx_perftest
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# Numbers of a sysfs list such as "0-3,8".
expand() {
    local part out=""
    for part in ${1//,/ }; do
        if [[ $part == *-* ]]; then
            out+=" $(seq -s ' ' "${part%-*}" "${part#*-}")"
        else
            out+=" $part"
        fi
    done
    echo $out
}

echo "== 1. GPUs: hwloc (ucx_info -d) and sysfs"
gpus=$("$info" -d 2>&1 | grep '^#   GPU[0-9]*:')
if [ -z "$gpus" ]; then
    "$info" -d 2>&1 | sed -n '/^# GPUs/,$p'
    echo "FAIL: ucx_info -d lists no GPU"
    exit 1
fi
while read -r line; do
    bus=$(sed -n 's/.*PCI \([0-9a-fA-F:.]*\),.*/\1/p' <<< "$line")
    hw=$(sed -n 's/.*NUMA node \([-0-9]*\) (hwloc).*/\1/p' <<< "$line")
    sys=$(cat "/sys/bus/pci/devices/${bus,,}/numa_node" 2>/dev/null || echo "?")
    echo "$line  | sysfs numa_node: $sys"
    if [ -z "$hw" ]; then
        fail "hwloc does not know the NUMA node of $bus (built without hwloc?)"
    elif [[ $sys =~ ^[0-9]+$ ]] && [ "$sys" != "$hw" ]; then
        fail "$bus: hwloc says node $hw, sysfs $sys"
    fi
done <<< "$gpus"

line=$(grep "^#   GPU$gpu:" <<< "$gpus")
node=$(sed -n 's/.*NUMA node \([0-9]*\) (hwloc).*/\1/p' <<< "$line")
nodes=$(expand "$(cat /sys/devices/system/node/has_memory 2>/dev/null || echo 0)")
echo "NUMA nodes with memory: $nodes; GPU$gpu is near node ${node:-unknown}"
cpu=""
for n in $nodes; do
    if [ "$n" != "${node:-}" ]; then
        cpu=$(expand "$(cat /sys/devices/system/node/node$n/cpulist)" | cut -d' ' -f1)
        [ -n "$cpu" ] && break
    fi
done
if [ -n "$cpu" ]; then
    echo "perftest runs on CPU $cpu (a node other than the GPU's)"
else
    echo "NOTE: one NUMA node (or the GPU's node unknown): placement cannot be told from first touch here"
fi

echo "== 2. ucx_perftest through host fragments, GPU$gpu -> GPU$gpu"
log=$(mktemp)
maps=$(mktemp)
trap 'rm -f "$log" "$maps"' EXIT
UCX_RNDV_SCHEME=pipeline UCX_RNDV_FRAG_MEM_TYPE=host UCX_LOG_LEVEL=debug \
    timeout 300 "$perf" -L -t tag_bw -m cuda-pool-noipc,cuda-pool-noipc -a "$gpu,$gpu" \
    --sizes "${SIZE:-64M}" -n "${ITERS:-400}" -w 10 ${cpu:+-c "$cpu,$cpu"} > "$log" 2>&1 &
perf_pid=$!
# Sample the fragments' mappings while the test runs (both processes).
while kill -0 "$perf_pid" 2>/dev/null; do
    for p in $(pgrep -f 'ucx_perftest.* -t tag_bw -m cuda-pool-noipc'); do
        grep ' prefer:' "/proc/$p/numa_maps" 2>/dev/null | sed "s/^/pid $p: /" >> "$maps"
    done
    sleep 0.2
done
wait "$perf_pid"
rc=$?
grep -E '^\| +[0-9]+ \|' "$log" | tail -3
grep -qE '^\| +[0-9]+ \|.*rndv_pipe_host' "$log" ||
    fail "ucx_perftest did not report the host-fragment pipeline (rndv_pipe_host)"
[ $rc -eq 0 ] || { tail -20 "$log"; fail "ucx_perftest exit $rc"; }

sort -u "$maps" -o "$maps"
if [ -s "$maps" ]; then
    echo "fragment mappings (policy prefer:N, pages per node):"
    sed 's/ active=[0-9]*//; s/ kernelpagesize_kB=[0-9]*//' "$maps" | sort -u | head -20
    bad=$(grep -v " prefer:${node:-x} " "$maps" | head -3)
    [ -z "$bad" ] || fail "fragments preferring another node than $node: $bad"
    bad=$(grep -oE ' N[0-9]+=' "$maps" | sort -u | grep -v " N${node:-x}=" | head -3)
    [ -z "$bad" ] || fail "fragment pages on other nodes:$(echo $bad)"
else
    echo "no mapping with a NUMA policy seen (not placed: see the pool lines below)"
    [ -n "$node" ] && [ -n "$cpu" ] && fail "GPU$gpu's node $node is known but no fragment was placed"
fi

echo "== 3. the pools' own account"
grep -E 'host fragments for GPU|host fragments of [0-9]+ bytes|topo: PCI' "$log" |
    sed 's/^.*debug //' | sort | uniq -c | head -10
grep -q 'host fragments for GPU' "$log" || fail "no host fragment pool was made (pipeline not taken?)"

if [ $failed -eq 0 ]; then
    echo "result: PASSED"
else
    echo "result: FAILED"
fi
exit $failed
