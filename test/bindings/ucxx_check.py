#!/usr/bin/env python3
"""UCXX (RAPIDS' UCX binding) as a real client of our libucp.

Every check runs two processes, as users run UCXX, and checks the data:
  - the library UCXX loaded is ours (/proc/self/maps, ucxx.__ucx_version__);
  - asyncio API: listener and endpoint by host:port, tag send/recv and active
    messages, in each progress mode (thread, polling, blocking, the last one
    waking on the worker's event fd);
  - core API: endpoint by worker address, tag and stream send/recv, progressed
    by ucp_worker_progress, and in blocking mode by the event fd;
for each buffer kind present: numpy (host), and with a GPU CuPy arrays of the
default pool (cudaMalloc) and of cupy.cuda.MemoryAsyncPool (cudaMallocAsync).

usage: ucxx_check.py [--expect-lib DIR] [--kinds host,cupy,cupy-async]
Prints one line per check ("PASS name" / "FAIL name: why" / "SKIP name: why")
and a summary; exits 1 if a check failed.
"""
import argparse
import asyncio
import multiprocessing as mp
import os
import sys
import time
import traceback

SIZES_HOST = [8, 65536, 4 << 20]
SIZES_GPU = [8, 65536, 4 << 20, 64 << 20]
TIMEOUT = 120


def _xp(kind):
    if kind == "host":
        import numpy

        return numpy
    import cupy

    if kind == "cupy-async":
        cupy.cuda.set_allocator(cupy.cuda.MemoryAsyncPool().malloc)
    return cupy


def _pattern(xp, size, seed):
    return (xp.arange(size, dtype="u8") * 131 + seed).astype("u1")


def _equal(xp, a, b):
    return bool((xp.asarray(a).view("u1") == xp.asarray(b).view("u1")).all())


def _to_host(a):
    """Bytes of a host buffer, a CuPy array or any CUDA array (an AM receive
    hands back what UCXX allocated) as a numpy uint8 array."""
    import numpy

    if hasattr(a, "__cuda_array_interface__"):
        import cupy

        return cupy.asarray(a).view(cupy.uint8).ravel().get()
    return numpy.frombuffer(memoryview(a).cast("B"), dtype=numpy.uint8)


def _sync(xp):
    if xp.__name__ == "cupy":
        xp.cuda.runtime.deviceSynchronize()


def _init(mode):
    import ucxx

    ucxx.init(progress_mode=mode)
    return ucxx


# ---- asyncio API ------------------------------------------------------------


async def serve_once(ucxx, xp, session, q_port, timeout=TIMEOUT):
    """Serve one client on a new listener, whose port goes to @q_port:
    session(ep) runs, then the server waits for the client's final 1-byte
    message before it closes (a close with error handling is forced and
    resets what is still in flight). Also used by ucxx_bench_am.py."""
    done = asyncio.Event()

    async def handler(ep):
        await session(ep)
        await ep.recv(xp.empty(1, dtype="u1"))
        await ep.close()
        done.set()

    listener = ucxx.create_listener(handler)
    q_port.put(listener.port)
    await asyncio.wait_for(done.wait(), timeout)
    listener.close()


def _async_server(kind, mode, sizes, q_port, q_result):
    try:
        xp = _xp(kind)
        ucxx = _init(mode)

        async def session(ep):
            for size in sizes:
                buf = xp.empty(size, dtype="u1")
                await ep.recv(buf)
                await ep.send(buf)
            for _ in sizes:
                msg = await ep.am_recv()
                await ep.am_send(msg)

        asyncio.run(serve_once(ucxx, xp, session, q_port))
        q_result.put(("server", None))
    except Exception:
        q_result.put(("server", traceback.format_exc()))


def _async_client(kind, mode, sizes, port, q_result):
    try:
        xp = _xp(kind)
        ucxx = _init(mode)

        async def main():
            ep = await ucxx.create_endpoint(ucxx.get_address(), port)
            for i, size in enumerate(sizes):
                src = _pattern(xp, size, i)
                out = xp.zeros(size, dtype="u1")
                _sync(xp)
                await ep.send(src)
                await ep.recv(out)
                _sync(xp)
                if not _equal(xp, src, out):
                    raise AssertionError("tag echo of %d bytes differs" % size)
            for i, size in enumerate(sizes):
                src = _pattern(xp, size, 100 + i)
                _sync(xp)
                await ep.am_send(src)
                back = await ep.am_recv()
                if _to_host(back).nbytes != size or \
                        not (_to_host(back) == _to_host(src)).all():
                    raise AssertionError("am echo of %d bytes differs" % size)
            await ep.send(xp.zeros(1, dtype="u1"))  # the server may close now
            await ep.close()

        asyncio.run(main())
        q_result.put(("client", None))
    except Exception:
        q_result.put(("client", traceback.format_exc()))


# ---- core API -----------------------------------------------------------------


def _core_peer(role, kind, blocking, sizes, q_in, q_out, q_result):
    try:
        xp = _xp(kind)
        import ucxx._lib.libucxx as ucx_api
        from ucxx._lib.arr import Array

        ctx = ucx_api.UCXContext({})
        worker = ucx_api.UCXWorker(ctx)
        if blocking:
            worker.init_blocking_progress_mode()
        q_out.put(bytes(worker.address.tobytes()))
        peer = ucx_api.UCXAddress.create_from_buffer(q_in.get(timeout=TIMEOUT))
        ep = ucx_api.UCXEndpoint.create_from_worker_address(worker, peer, True)

        def wait(reqs):
            deadline = time.monotonic() + TIMEOUT
            while not all(r.completed for r in reqs):
                if time.monotonic() > deadline:
                    raise TimeoutError("requests did not complete")
                if blocking:
                    worker.progress_worker_event(1000)
                else:
                    worker.progress()
            for r in reqs:
                r.check_error()

        for i, size in enumerate(sizes):
            tag = ucx_api.UCXXTag(i)
            if role == "a":
                src = _pattern(xp, size, i)
                _sync(xp)
                wait([ep.tag_send(Array(src), tag)])
                out = xp.zeros(size, dtype="u1")
                _sync(xp)  # the fill is stream-ordered (MemoryAsyncPool)
                wait([ep.stream_recv(Array(out))])
                _sync(xp)
                if not _equal(xp, src, out):
                    raise AssertionError("tag + stream echo of %d bytes differs" % size)
            else:
                buf = xp.zeros(size, dtype="u1")
                _sync(xp)
                wait([worker.tag_recv(Array(buf), tag)])
                _sync(xp)
                wait([ep.stream_send(Array(buf))])
        # a last message both ways, so that neither side leaves while the
        # other still needs it; its buffer is kept alive until it completes
        # (a stream-ordered pool may reuse freed memory at once)
        last = xp.zeros(1, dtype="u1")
        _sync(xp)
        if role == "a":
            wait([ep.tag_send(Array(last), ucx_api.UCXXTag(999))])
        else:
            wait([worker.tag_recv(Array(last), ucx_api.UCXXTag(999))])
        del last
        q_result.put((role, None))
    except Exception:
        q_result.put((role, traceback.format_exc()))


def _run_pair(targets):
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=t, args=a) for t, a in targets]
    for p in procs:
        p.start()
    return procs


def _collect(procs, q_result, n):
    errors = []
    deadline = time.monotonic() + TIMEOUT + 30
    got = 0
    while got < n and time.monotonic() < deadline:
        try:
            who, err = q_result.get(timeout=1)
        except Exception:
            if not any(p.is_alive() for p in procs):
                break
            continue
        got += 1
        if err:
            errors.append("%s: %s" % (who, err.strip().splitlines()[-1]))
            sys.stderr.write(err)
    for p in procs:
        p.join(10)
        if p.is_alive():
            p.kill()
            errors.append("a process hung and was killed")
        elif p.exitcode not in (0, None):
            errors.append("a process exited with %s" % p.exitcode)
    if got < n and not errors:
        errors.append("no result from %d of %d processes" % (n - got, n))
    return errors


def check_async(kind, mode, sizes):
    ctx = mp.get_context("spawn")
    q_port, q_result = ctx.Queue(), ctx.Queue()
    server = _run_pair([(_async_server, (kind, mode, sizes, q_port, q_result))])
    try:
        port = q_port.get(timeout=60)
    except Exception:
        return _collect(server, q_result, 1) or ["the server gave no port"]
    client = _run_pair([(_async_client, (kind, mode, sizes, port, q_result))])
    return _collect(server + client, q_result, 2)


def check_core(kind, blocking, sizes):
    ctx = mp.get_context("spawn")
    qa, qb, q_result = ctx.Queue(), ctx.Queue(), ctx.Queue()
    procs = _run_pair([(_core_peer, ("a", kind, blocking, sizes, qa, qb, q_result)),
                       (_core_peer, ("b", kind, blocking, sizes, qb, qa, q_result))])
    return _collect(procs, q_result, 2)


def check_library(expect_lib):
    import ucxx

    maps = open("/proc/self/maps").read().split("\n")
    libs = sorted({line.split()[-1] for line in maps if "libucp.so" in line})
    info = "ucxx %s, UCX %s, libucp %s" % (ucxx.__version__, ucxx.__ucx_version__, libs)
    if expect_lib and not all(os.path.realpath(l).startswith(os.path.realpath(expect_lib))
                              for l in libs):
        return ["libucp is not ours: " + info], info
    return ([] if libs else ["no libucp mapped"]), info


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--expect-lib", default=None,
                    help="directory our libucp.so.0 must be loaded from")
    ap.add_argument("--kinds", default=None,
                    help="comma-separated: host,cupy,cupy-async (default: all present)")
    ap.add_argument("--modes", default="thread,polling,blocking")
    args = ap.parse_args()

    kinds = args.kinds.split(",") if args.kinds else ["host", "cupy", "cupy-async"]
    results = {"PASS": 0, "FAIL": 0, "SKIP": 0}

    def report(name, errors, skip=None):
        if skip:
            results["SKIP"] += 1
            print("SKIP %s: %s" % (name, skip), flush=True)
        elif errors:
            results["FAIL"] += 1
            print("FAIL %s: %s" % (name, "; ".join(errors)), flush=True)
        else:
            results["PASS"] += 1
            print("PASS %s" % name, flush=True)

    errors, info = check_library(args.expect_lib)
    print("# " + info, flush=True)
    report("library", errors)

    gpu = None
    try:
        import cupy

        gpu = cupy.cuda.runtime.getDeviceCount() > 0
    except Exception as e:  # no CuPy, no driver, or no device
        gpu = False
        gpu_why = "no GPU here (%s)" % type(e).__name__
    for kind in kinds:
        if kind != "host" and not gpu:
            for mode in args.modes.split(","):
                report("async/%s/%s" % (kind, mode), None, skip="no GPU here")
            report("core/%s/polling" % kind, None, skip="no GPU here")
            report("core/%s/blocking" % kind, None, skip="no GPU here")
            continue
        sizes = SIZES_HOST if kind == "host" else SIZES_GPU
        for mode in args.modes.split(","):
            t = time.monotonic()
            errs = check_async(kind, mode, sizes)
            report("async/%s/%s (%.1f s)" % (kind, mode, time.monotonic() - t), errs)
        for blocking in (False, True):
            t = time.monotonic()
            errs = check_core(kind, blocking, sizes)
            report("core/%s/%s (%.1f s)" % (kind, "blocking" if blocking else "polling",
                                            time.monotonic() - t), errs)
    print("ucxx_check: %(PASS)d passed, %(FAIL)d failed, %(SKIP)d skipped" % results,
          flush=True)
    return 1 if results["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
