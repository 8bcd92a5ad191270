"""Issue 19 with a Python client: CuPy arrays sent with mpi4py right after a
blocking fill from pageable host memory (ndarray.set), received and compared.

usage: mpirun -np 2 ... python3 stale_cupy_mpi.py [REPS] [library|context]
  library (default): MPI is initialised (mpi4py's import) before CUDA's
  context exists, as in most Python programs; context: the program touches
  the GPU first.
Prints one row per (pool, size): messages, bad messages; rank 0 exits 1 if
any message was bad. Pools: CuPy's default (cudaMalloc) and MemoryAsyncPool
(cudaMallocAsync, the device's default pool).
"""
import sys

import cupy as cp
import numpy as np

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
order = sys.argv[2] if len(sys.argv) > 2 else "library"
if order == "context":
    cp.zeros(1)  # creates the primary context before MPI_Init
from mpi4py import MPI  # noqa: E402  (the order is the point)

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
if rank == 0:
    with open("/proc/self/maps") as maps:
        libucp = sorted({l.split()[-1] for l in maps if "libucp.so" in l})
    print(f"order {order}, libucp: {' '.join(libucp) or 'none'}", flush=True)
sizes = [8, 1024, 4096, 16384, 65536, 1 << 20, 4 << 20, 64 << 20]
pools = [("default", cp.cuda.MemoryPool()), ("async", cp.cuda.MemoryAsyncPool())]
bad_total = 0

for name, pool in pools:
    cp.cuda.set_allocator(pool.malloc)
    for size in sizes:
        bad = 0
        for r in range(reps):
            pattern = np.full(size, (r * 37 + size) % 251 + 1, dtype=np.uint8)
            if rank == 0:
                a = cp.empty(size, dtype=cp.uint8)  # fresh buffer
                a.set(pattern)                      # blocking, pageable
                comm.Send(a, dest=1, tag=r)
                del a
            else:
                b = cp.zeros(size, dtype=cp.uint8)
                cp.cuda.Device().synchronize()
                comm.Recv(b, source=0, tag=r)
                if not np.array_equal(b.get(), pattern):
                    bad += 1
                del b
        bad = comm.bcast(bad, root=1)
        bad_total += bad
        if rank == 0:
            print(f"{name:8s} {size:>9d} B  {reps} messages  {bad} bad", flush=True)
        pool.free_all_blocks()

if rank == 0:
    print(f"total bad: {bad_total}", flush=True)
sys.exit(1 if (rank == 0 and bad_total) else 0)
