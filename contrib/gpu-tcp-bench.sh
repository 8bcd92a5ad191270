#!/bin/bash
# GPU memory over tcp (issue 20's "GPU memory over tcp" target, what a
# message between two nodes without RDMA takes): ucx_perftest tag_bw of two
# processes (-L) with UCX_TLS=tcp,cuda_copy, for host memory and each
# allocator kind, at 1, 4 and 64 MiB; every setting of SETTINGS is a column,
# the first being the default, and the runs of all columns are interleaved
# REPS times so that they see the same machine noise. Each cell is the median
# in MB/s and, for device kinds, its share of the same column's host row.
# With UPSTREAM (a prefix with bin/ucx_perftest and lib/, such as NVIDIA's
# libucx wheel), ours and upstream also run client/server side by side for
# host and cuda memory (upstream's perftest has no -L and no other kinds).
# TEST and TLS pick another test and transport set with the same table, e.g.
# both directions at once on one GPU (TEST=tag_bibw TLS=).
# Prints a markdown table on stdout (device replies carry stdout best) and
# keeps every log in $OUT/gpu-tcp-bench/.
#
# usage: contrib/gpu-tcp-bench.sh BUILD_DIR
# environment:
#   KINDS      (host cuda cuda-async cuda-pool cuda-vmm; host first: the yardstick)
#   SIZES      (1M,4M,64M)
#   SETTINGS   (";UCX_RNDV_PIPELINE_HOST_GET_RAMP=64K"): ;-separated VAR=value
#              lists, one column each; an empty one is the default
#   REPS       (2)   ITERS (100)   CPUS (2,4: -c of the two processes)
#   UPSTREAM   (unset: no upstream rows)
#   TEST       (tag_bw; tag_bibw: both directions at once, the sum of both)
#   TLS        (tcp,cuda_copy; empty: the default transports, e.g. with
#              TEST=tag_bibw for both directions on one GPU)
#   OUT        (.)
set -uo pipefail
build=$(realpath "${1:?usage: gpu-tcp-bench.sh BUILD_DIR}")
perf=$build/src/tools/perf/ucx_perftest
kinds=${KINDS:-host cuda cuda-async cuda-pool cuda-vmm}
sizes=${SIZES:-1M,4M,64M}
settings=${SETTINGS-";UCX_RNDV_PIPELINE_HOST_GET_RAMP=64K"}
reps=${REPS:-2}
iters=${ITERS:-100}
cpus=${CPUS:-2,4}
test=${TEST:-tag_bw}
tls=${TLS-tcp,cuda_copy}
tls_env=()
[ -n "$tls" ] && tls_env=("UCX_TLS=$tls")
out=${OUT:-.}/gpu-tcp-bench
mkdir -p "$out"
[ -x "$perf" ] || { echo "no $perf: build first"; exit 1; }
IFS=';' read -ra cols <<<"$settings"
[ ${#cols[@]} -eq 0 ] && cols=("")
IFS=',' read -ra size_list <<<"$sizes"
failed=0

median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }

declare -A cell
for ((r = 1; r <= reps; ++r)); do
    for ((c = 0; c < ${#cols[@]}; ++c)); do
        for k in $kinds; do
            log=$out/ours.$k.c$c.r$r.log
            # shellcheck disable=SC2086
            env "${tls_env[@]}" ${cols[$c]} timeout 120 "$perf" -L -c "$cpus" \
                -m "$k,$k" -t "$test" --sizes "$sizes" -n "$iters" -w 10 >"$log" 2>&1
            i=0
            while read -r bw; do
                cell[$k,$c,$i]+="$bw "
                i=$((i + 1))
            done < <(awk '/^Final/ { print int($6) }' "$log")
            [ "$i" -eq "${#size_list[@]}" ] || { failed=1; echo "FAIL: $k, column $c, rep $r ($log)" >&2; }
        done
    done
done

echo "## ucx_perftest -L $test, UCX_TLS=${tls:-(default)}, MB/s (share of the column's host row), median of $reps"
echo
echo "$(hostname), $(nvidia-smi -L 2>/dev/null | head -1 || echo 'no nvidia-smi'), CPUs $cpus, $iters messages per size"
echo
hdr="| kind | size |"; sep="|---|---|"
for ((c = 0; c < ${#cols[@]}; ++c)); do
    hdr+=" ${cols[$c]:-default} |"; sep+="---|"
done
echo "$hdr"; echo "$sep"
for k in $kinds; do
    for ((i = 0; i < ${#size_list[@]}; ++i)); do
        row="| $k | ${size_list[$i]} |"
        for ((c = 0; c < ${#cols[@]}; ++c)); do
            m=$(echo "${cell[$k,$c,$i]:-}" | median)
            h=$(echo "${cell[host,$c,$i]:-}" | median)
            pct=""
            if [ "$k" != host ] && [ -n "$m" ] && [ -n "$h" ] && [ "$h" -gt 0 ]; then
                pct=" ($((100 * m / h)) %)"
            fi
            row+=" ${m:-FAIL}$pct |"
        done
        echo "$row"
    done
done

if [ -n "${UPSTREAM:-}" ]; then
    up=$UPSTREAM/bin/ucx_perftest
    [ -x "$up" ] || { echo "no $up"; exit 1; }
    port=$((21000 + RANDOM % 4000))
    cs() { # LOG KIND SIZE prefix-command...
        local log=$1 k=$2 s=$3 n=$iters
        shift 3
        port=$((port + 1))
        env "${tls_env[@]}" taskset -c "${cpus%,*}" "$@" -p $port >"$log.server" 2>&1 &
        sleep 0.8
        env "${tls_env[@]}" taskset -c "${cpus#*,}" timeout 120 "$@" 127.0.0.1 \
            -p $port -t "$test" -m "$k,$k" -s "$s" -n "$n" -w 10 >"$log" 2>&1
        wait
        awk '/^Final/ { print int($6) }' "$log"
    }
    declare -A ucell
    for ((r = 1; r <= reps; ++r)); do
        for k in host cuda; do
            for s in "${size_list[@]}"; do
                b=$(numfmt --from=iec "$s")
                ucell[o,$k,$s]+="$(cs "$out/cs-ours.$k.$s.r$r.log" $k "$b" "$perf") "
                ucell[u,$k,$s]+="$(cs "$out/cs-up.$k.$s.r$r.log" $k "$b" \
                    env LD_LIBRARY_PATH="$UPSTREAM/lib" "$up") "
            done
        done
    done
    echo
    echo "## Client/server $test, UCX_TLS=${tls:-(default)}, default settings, ours against $UPSTREAM, MB/s, median of $reps"
    echo
    echo "| kind | size | ours | upstream | ratio |"
    echo "|---|---|---|---|---|"
    for k in host cuda; do
        for s in "${size_list[@]}"; do
            o=$(echo "${ucell[o,$k,$s]}" | median)
            u=$(echo "${ucell[u,$k,$s]}" | median)
            ratio=$(awk -v o="${o:-0}" -v u="${u:-0}" 'BEGIN { if (o > 0 && u > 0) printf "%.2f", o / u }')
            echo "| $k | $s | ${o:-FAIL} | ${u:-FAIL} | $ratio |"
            [ -z "$o" ] && failed=1
        done
    done
fi
exit $failed
