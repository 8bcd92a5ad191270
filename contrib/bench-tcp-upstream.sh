#!/bin/bash
# tcp alone, ours against an upstream UCX in the same run: ucx_perftest
# client/server over loopback (UCX_TLS=tcp for both, default interfaces),
# tag_bw at 64 KiB, 1 MiB, 4 MiB and 64 MiB, the stacks interleaved REPS
# times so that both see the same machine noise; prints the median of each
# cell in MB/s. Upstream is NVIDIA's libucx wheel (pip libucx-cu13; setup.sh
# puts one in /opt/ucxx-venv) or any prefix with bin/ucx_perftest and lib/.
# Extra rows of ours with tuned settings come from TUNED, labelled.
#
# usage: contrib/bench-tcp-upstream.sh [BUILD_DIR]    (default: build-release)
# environment:
#   UPSTREAM=/opt/ucxx-venv/lib/python3.11/site-packages/libucx
#   REPS=3
#   CPUS="0 1"      server and client CPUs (taskset)
#   TUNED="UCX_TCP_SEG_SIZE=1M;UCX_TCP_SNDBUF=4M UCX_TCP_RCVBUF=4M"
#                   ;-separated settings, each one more row of ours
#   UCX_PROTO_INFO_FILE=  where to save upstream's protocol table for 1 MiB
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build-release}
ours=$build/src/tools/perf/ucx_perftest
up=${UPSTREAM:-/opt/ucxx-venv/lib/python3.11/site-packages/libucx}
reps=${REPS:-3}
read -r cpu_s cpu_c <<<"${CPUS:-0 1}"
sizes=(65536 1048576 4194304 67108864)
port=13500

[ -x "$ours" ] || { echo "no $ours: build first"; exit 1; }
[ -x "$up/bin/ucx_perftest" ] || { echo "no upstream ucx_perftest in $up"; exit 1; }

# One server/client pair; prints MB/s (empty if the run failed).
one() { # size env-settings prefix-command...
    local s=$1 settings=$2 n=400; shift 2
    [ "$s" -ge 67108864 ] && n=40
    port=$((port + 1))
    env UCX_TLS=tcp $settings taskset -c "$cpu_s" "$@" -p $port >/dev/null 2>&1 &
    local srv=$!
    sleep 0.8
    env UCX_TLS=tcp $settings taskset -c "$cpu_c" "$@" -p $port 127.0.0.1 -t tag_bw \
        -s "$s" -n $n 2>&1 | awk '/^Final/ {print $(NF-2)}'
    wait $srv 2>/dev/null
}

IFS=';' read -r -a tuned <<<"${TUNED-UCX_TCP_SEG_SIZE=1M;UCX_TCP_SNDBUF=4M UCX_TCP_RCVBUF=4M}"
labels=("ours, default" "upstream ($(basename "$(dirname "$up")")/$(basename "$up"))")
for t in "${tuned[@]}"; do labels+=("ours, $t"); done
declare -A cell
for ((r = 0; r < reps; r++)); do
    for s in "${sizes[@]}"; do
        cell[0,$s]+="$(one "$s" "" "$ours") "
        cell[1,$s]+="$(one "$s" "" env LD_LIBRARY_PATH="$up/lib" "$up/bin/ucx_perftest") "
        for i in "${!tuned[@]}"; do
            cell[$((i + 2)),$s]+="$(one "$s" "${tuned[$i]}" "$ours") "
        done
    done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "-"}'; }
echo "| stack | 64 KiB | 1 MiB | 4 MiB | 64 MiB |"
echo "|---|---|---|---|---|"
for i in "${!labels[@]}"; do
    row="| ${labels[$i]} |"
    for s in "${sizes[@]}"; do row+=" $(echo "${cell[$i,$s]}" | median) |"; done
    echo "$row"
done

if [ -n "${UCX_PROTO_INFO_FILE:-}" ]; then
    port=$((port + 1))
    env UCX_TLS=tcp LD_LIBRARY_PATH="$up/lib" "$up/bin/ucx_perftest" -p $port >/dev/null 2>&1 &
    sleep 0.8
    env UCX_TLS=tcp UCX_PROTO_INFO=y LD_LIBRARY_PATH="$up/lib" "$up/bin/ucx_perftest" \
        -p $port 127.0.0.1 -t tag_bw -s 1048576 -n 100 >"$UCX_PROTO_INFO_FILE" 2>&1
    wait
fi
