#!/bin/bash
# Issue 19 on a GPU machine, in one go: builds the packed trees DIR/before
# and DIR/after (contrib/pack-for-gpu.sh output, ucx-tree.tar.gz in each;
# "before" may be absent), runs test/apps/stale_cupy_mpi.py (CuPy arrays
# over mpi4py and the machine's Open MPI, pml ucx, library-first and
# context-first) over each, and the stale-data matrix
# (contrib/stale-data-gpu.sh, fills htod and cudart) over "after".
# Logs in $OUT (cupy-*.log, matrix-after.log).
#
# usage: contrib/gpu-stale-check.sh DIR   (DIR also holds stale_cupy_mpi.py)
cd "${1:?usage: gpu-stale-check.sh DIR}" || exit 2
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
d=$PWD
for v in before after; do [ -f $v/ucx-tree.tar.gz ] || continue
  ( mkdir -p $v/x && tar xzf $v/ucx-tree.tar.gz -C $v/x && cd $v/x/ucx-tree &&
    ./configure --with-cuda --prefix=$d/$v/inst >cfg.log 2>&1 && make -j8 >make.log 2>&1 &&
    make install >inst.log 2>&1 && echo "$v built" || { echo "$v build FAILED"; tail -20 make.log cfg.log; } ) &
done
wait
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mpi() { local v=$1; shift; timeout 150 mpirun --allow-run-as-root -np 2 --mca pml ucx --mca pml_ucx_tls any \
  --mca pml_ucx_devices any --mca btl self -x LD_LIBRARY_PATH=$d/$v/inst/lib -x PYTHONUNBUFFERED=1 "$@"; }
for v in before after; do [ -d $d/$v/inst ] || continue; for o in library context; do
  echo "== cupy $v $o"; mpi $v python3 $d/stale_cupy_mpi.py 20 $o 2>&1 |
    grep -E 'B .*messages|total|order|rror' | tee -a $OUT/cupy-$v.log
done; done
cd $d/after/x/ucx-tree
echo "== matrix after"
BUDGET=${BUDGET:-150} FILLS="htod cudart" timeout 200 contrib/stale-data-gpu.sh . >$OUT/matrix-after.log 2>&1
echo "matrix rc=$?"; grep -cE " [1-9][0-9]* (rndv|eager)" $OUT/matrix-after.log
awk '$9 != "bad" && $9+0 > 0' $OUT/matrix-after.log | head -20
