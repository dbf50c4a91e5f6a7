"""Runner benchmark: requests/s against a local HTTP target with a fixed latency.

A real HTTP server (uvicorn, one worker, in a subprocess on 127.0.0.1) answers every
``POST /query`` after ``--latency`` seconds (100 ms by default). The runner asks it through the
production path — :class:`~groundwatch.adapters.targets.HttpJsonTarget` over the shared httpx client of
:func:`groundwatch.adapters.targets.make_http_client`, inside a :class:`~groundwatch.stages.runner.lanes.Runner` lane
with ``--concurrency`` workers (64) — for ``--duration`` seconds after a short warm-up. With 64
requests in flight and 100 ms each, the ceiling is 64 / 0.1 = 640 requests/s; ``efficiency`` =
achieved / ceiling (target ≥ 0.90).

Usage: ``python bench/bench_runner.py [--duration 8] [--concurrency 64] [--latency 0.1]
[--rate R] [--out FILE]``; JSON on stdout (and in ``--out``). Exit status 1 below target.
``baseline_rps`` is what a bare asyncio client gets from the same server on the same machine
right after, so a busy machine can be told apart from runner overhead.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from pathlib import Path
from typing import Any

import httpx

from groundwatch.adapters.targets import HttpJsonTarget, TargetLimits
from groundwatch.adapters.targets.transport import make_http_client
from groundwatch.contracts import Probe, TargetStatus
from groundwatch.core.model import AnswerType, Expected
from groundwatch.stages.runner.lanes import Runner

TARGET_EFFICIENCY = 0.90
_REPLY = json.dumps(
    {"answer": "Oslo", "retrieved_ids": ["client-acme"], "contexts": ["Acme is in Oslo."]}
).encode()

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def make_app(latency: float) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """A bare ASGI app: the server's own overhead must not be what is measured."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        more = True
        while more:  # drain the request body
            message = await receive()
            more = message.get("more_body", False)
        if scope["path"] != "/healthz":
            await asyncio.sleep(latency)
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(_REPLY)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": _REPLY})

    return app


def serve(port: int, latency: float) -> None:
    import uvicorn

    uvicorn.run(
        make_app(latency),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
        backlog=2048,
        timeout_keep_alive=60,
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextlib.contextmanager
def server_process(latency: float) -> Iterator[str]:
    port = free_port()
    cmd = [sys.executable, __file__, "--serve", str(port), "--latency", str(latency)]
    proc = subprocess.Popen(cmd)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("benchmark server did not start")
            time.sleep(0.05)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


async def baseline(base: str, concurrency: int, duration: float) -> float:
    """Requests/s of a bare asyncio HTTP/1.1 client (no pool, no parsing, no runner).

    On a shared or small machine the server's 100 ms sleep plus scheduling delays already cost
    a few per cent; this is the ceiling the machine allows, to read ``efficiency`` against.
    """
    host, port = base.removeprefix("http://").split(":")
    body = b'{"query": "q"}'
    request = (
        b"POST /query HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (host.encode(), len(body), body)
    )
    conns = [await asyncio.open_connection(host, int(port)) for _ in range(concurrency)]
    done = 0
    stop_at = time.monotonic() + duration

    async def loop(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal done
        while time.monotonic() < stop_at:
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            )
            await reader.readexactly(length)
            done += 1
        writer.close()

    started = time.monotonic()
    await asyncio.gather(*(loop(r, w) for r, w in conns))
    return done / (time.monotonic() - started)


def make_probe(i: int) -> Probe:
    return Probe(
        probe_id=uuid.uuid4(),
        run_id="bench",
        dataset_id="bench",
        group_id=f"g{i % 1000}",
        form_id=f"f{i}",
        cohort="short",
        target="local",
        query=f"Where is client number {i} headquartered?",
        expected=Expected(values=["Oslo"], types=[AnswerType.TEXT]),
    )


async def drive(base: str, args: argparse.Namespace) -> dict[str, Any]:
    limits = TargetLimits(
        concurrency=args.concurrency,
        rate_per_s=args.rate,
        timeout_s=10,
        retries=0,
        queue_size=4 * args.concurrency,
        breaker_failures=1000,
    )
    async with make_http_client(args.concurrency, timeout=10) as client:
        target = HttpJsonTarget(client, f"{base}/query")
        async with Runner({"local": target}, {"local": limits}) as runner:
            warm = [make_probe(i) for i in range(args.concurrency * 2)]
            await runner.run_many(warm)  # open the connections before the clock starts

            stop_at = time.monotonic() + args.duration
            counter = iter(range(10**9))
            responses = []

            async def feeder() -> None:
                # Each feeder keeps one probe queued at a time; 2x concurrency feeders keep the
                # lane's queue non-empty, so the workers (not the feeders) set the pace.
                while time.monotonic() < stop_at:
                    responses.append(await runner.run(make_probe(next(counter))))

            cpu_before = time.process_time()
            started = time.monotonic()
            await asyncio.gather(*(feeder() for _ in range(args.concurrency * 2)))
            elapsed = time.monotonic() - started
            cpu = time.process_time() - cpu_before
    ok = [r for r in responses if r.status is TargetStatus.OK]
    latencies = sorted(r.latency_s for r in ok)
    ceiling = args.concurrency / args.latency
    if args.rate is not None:
        ceiling = min(ceiling, args.rate)
    achieved = len(ok) / elapsed
    q = statistics.quantiles(latencies, n=100) if len(latencies) >= 2 else [0.0] * 99
    return {
        "bench": "runner",
        "python": platform.python_version(),
        "machine": platform.machine(),
        "concurrency": args.concurrency,
        "target_latency_s": args.latency,
        "rate_limit_per_s": args.rate,
        "limit_rps": round(ceiling, 1),
        "duration_s": round(elapsed, 2),
        "requests": len(responses),
        "ok": len(ok),
        "errors": dict(Counter(r.error_kind for r in responses if r.error_kind)),
        "achieved_rps": round(achieved, 1),
        "efficiency": round(achieved / ceiling, 4),
        "efficiency_target": TARGET_EFFICIENCY,
        "efficiency_ok": achieved / ceiling >= TARGET_EFFICIENCY,
        "client_cpu_ms_per_request": round(1000 * cpu / max(len(responses), 1), 3),
        "client_cpu_share": round(cpu / elapsed, 3),
        "latency_p50_s": round(q[49], 4),
        "latency_p95_s": round(q[94], 4),
        "latency_p99_s": round(q[98], 4),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--duration", type=float, default=8.0, help="measured seconds")
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--latency", type=float, default=0.1, help="server latency, seconds")
    ap.add_argument("--rate", type=float, default=None, help="token-bucket rate, requests/s")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--serve", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.serve:
        serve(args.serve, args.latency)
        return {}
    load = os.getloadavg()[0]
    with server_process(args.latency) as base:
        result = asyncio.run(drive(base, args))
        ceiling = asyncio.run(baseline(base, args.concurrency, min(3.0, args.duration)))
    result["baseline_rps"] = round(ceiling, 1)
    result["efficiency_vs_baseline"] = round(result["achieved_rps"] / ceiling, 4)
    result["load_average_1m"] = round(load, 2)
    result["cpus"] = os.cpu_count()
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    return result


if __name__ == "__main__":
    outcome = main()
    sys.exit(0 if not outcome or outcome["efficiency_ok"] else 1)
