#!/usr/bin/env python3
"""Ping-pong bandwidth through UCXX's asyncio API: tag and active messages.

UCXX's own benchmark (ucxx.benchmarks.send_recv) has no active-message mode,
so this one measures both in one harness, two processes, as an application
that uses UCXX would: a listener echoes every message; the client sends a
buffer, waits for the echo, and reports the median round trip per size.
  tag: ep.send/ep.recv into a buffer allocated once (the benchmark's
       --reuse-alloc);
  am:  ep.am_send/ep.am_recv: the receiver gets a buffer UCXX allocates for
       each message (device memory for a CuPy array), as AM users do.
Bandwidth is 2 * size / round trip (ucx_perftest tag_lat's definition).

usage: ucxx_bench_am.py [--object cupy|numpy] [--sizes 8,65536,...]
                        [--iters N] [--mode thread|polling|blocking]
Prints "size kind bandwidth_GBps median_rtt_ns" lines; exits 1 on an error
or when an echo differs from what was sent.
"""
import argparse
import asyncio
import multiprocessing as mp
import statistics
import sys
import time
import traceback

import ucxx_check  # the echo server and array modules (same directory)

TIMEOUT = 600


def _xp(name):
    return ucxx_check._xp("host" if name == "numpy" else name)


def _iters_for(size, iters):
    return max(20, min(iters, (4 << 30) // max(size, 1)))


def _server(args, q_port, q_result):
    try:
        xp = _xp(args.object)
        import ucxx

        ucxx.init(progress_mode=args.mode)

        async def session(ep):
            for size in args.sizes:
                n = _iters_for(size, args.iters) + args.warmup
                buf = xp.empty(size, dtype="u1")
                for _ in range(n):
                    await ep.recv(buf)
                    await ep.send(buf)
                for _ in range(n):
                    await ep.am_send(await ep.am_recv())

        asyncio.run(ucxx_check.serve_once(ucxx, xp, session, q_port, TIMEOUT))
        q_result.put(None)
    except Exception:
        q_result.put(traceback.format_exc())


async def _measure(ep, xp, size, n, warmup, kind):
    src = (xp.arange(size, dtype="u8") * 7 + 3).astype("u1")
    out = xp.zeros(size, dtype="u1")
    if xp.__name__ == "cupy":
        xp.cuda.runtime.deviceSynchronize()
    rtts = []
    back = None
    for i in range(n + warmup):
        t0 = time.perf_counter_ns()
        if kind == "tag":
            await ep.send(src)
            await ep.recv(out)
        else:
            await ep.am_send(src)
            back = await ep.am_recv()
        if i >= warmup:
            rtts.append(time.perf_counter_ns() - t0)
    got = out if kind == "tag" else xp.asarray(back).view("u1").ravel()
    if got.nbytes != size or not bool((got == src).all()):
        raise AssertionError("%s echo of %d bytes differs" % (kind, size))
    return statistics.median(rtts)


def _client(args, port, q_result):
    try:
        xp = _xp(args.object)
        import ucxx

        ucxx.init(progress_mode=args.mode)

        async def main():
            ep = await ucxx.create_endpoint(ucxx.get_address(), port)
            for size in args.sizes:
                n = _iters_for(size, args.iters)
                for kind in ("tag", "am"):
                    rtt = await _measure(ep, xp, size, n, args.warmup, kind)
                    print("%d %s %.3f %d" % (size, kind, 2 * size / rtt, rtt),
                          flush=True)
            await ep.send(xp.zeros(1, dtype="u1"))
            await ep.close()

        asyncio.run(main())
        q_result.put(None)
    except Exception:
        q_result.put(traceback.format_exc())


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--object", default="cupy", choices=["cupy", "numpy"])
    p.add_argument("--sizes", default="8,65536,1048576,4194304,16777216,"
                   "67108864,268435456")
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--mode", default="thread")
    args = p.parse_args()
    args.sizes = [int(s) for s in args.sizes.split(",")]
    ctx = mp.get_context("spawn")
    q_port, q_result = ctx.Queue(), ctx.Queue()
    server = ctx.Process(target=_server, args=(args, q_port, q_result))
    server.start()
    port = q_port.get(timeout=60)
    client = ctx.Process(target=_client, args=(args, port, q_result))
    client.start()
    errors = [q_result.get(timeout=TIMEOUT) for _ in range(2)]
    for proc in (client, server):
        proc.join(30)
    errors = [e for e in errors if e is not None]
    for e in errors:
        print(e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
