"""Runner benchmark: the runner against a bare asyncio client on the same local HTTP server.

A real HTTP server (uvicorn, one worker, a bare ASGI app, in a subprocess on 127.0.0.1) answers
every ``POST /query`` after a fixed latency. The runner asks it through the production path —
:class:`~groundwatch.adapters.targets.HttpJsonTarget` over the shared client of
:func:`groundwatch.adapters.targets.make_http_client` (H1Client: asyncio + httptools), inside a
:class:`~groundwatch.stages.runner.lanes.Runner` lane with ``concurrency`` workers, probes built
beforehand (a probe arrives decoded) — and the *bare client* (raw asyncio streams, one keep-alive
connection per worker, no parsing beyond Content-Length, no runner) asks the same server right
after, for as long, on the same event loop (``--loop``, default ``GW_EVENT_LOOP`` or ``auto``:
uvloop when installed, as the services and ``groundwatch run`` use). ``efficiency`` = runner
requests/s ÷ bare client requests/s: what the runner costs, whatever the server, the loop and
the machine allow.

Every run measures the headline cell (5 ms, 64 in flight; ``efficiency_5ms``, target ≥ 0.9) and
the runner's own CPU per request (process CPU time ÷ requests, target ≤ 0.1 ms). ``--sweep`` adds
the grid: target latency 1, 5, 20, 100 ms × concurrency 16, 64, 256, and the runner stage as the
service drives it (batches of 500 through ``run_many``, one batch at a time).

Usage: ``python bench/bench_runner.py [--duration 3] [--sweep] [--loop auto|asyncio|uvloop]
[--out FILE]``; JSON on stdout
(and in ``--out``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
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
from _common import emit, figure

from groundwatch.adapters.targets import HttpJsonTarget, TargetLimits
from groundwatch.adapters.targets.transport import make_http_client
from groundwatch.contracts import Probe, RagResponse, TargetStatus
from groundwatch.core.model import AnswerType, Expected
from groundwatch.runtime.loop import EventLoopChoice, loop_name
from groundwatch.runtime.loop import run as run_on_loop
from groundwatch.stages.runner.lanes import Runner

TARGET_EFFICIENCY = 0.90
TARGET_CPU_MS = 0.1
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


async def bare_client(base: str, concurrency: int, duration: float) -> dict[str, float]:
    """Requests/s (and CPU µs per request) of a bare asyncio HTTP/1.1 client: one keep-alive
    connection per worker, the request bytes built once, only Content-Length parsed."""
    host, port = base.removeprefix("http://").split(":")
    body = b'{"query": "q"}'
    request = (
        b"POST /query HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (host.encode(), len(body), body)
    )
    conns = [await asyncio.open_connection(host, int(port)) for _ in range(concurrency)]
    done = 0
    stop_at = 0.0

    async def one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(request)
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length")
        )
        await reader.readexactly(length)

    async def loop(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal done
        while time.monotonic() < stop_at:
            await one(reader, writer)
            done += 1

    await asyncio.gather(*(one(r, w) for r, w in conns))  # warm: every connection used once
    stop_at = time.monotonic() + duration
    cpu0 = time.process_time()
    started = time.monotonic()
    await asyncio.gather(*(loop(r, w) for r, w in conns))
    elapsed = time.monotonic() - started
    cpu = time.process_time() - cpu0
    for _, w in conns:
        w.close()
    return {"rps": done / elapsed, "cpu_us_per_request": 1e6 * cpu / max(done, 1)}


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


PROBES = [make_probe(i) for i in range(4096)]


async def runner_client(
    base: str, concurrency: int, duration: float, *, batches: bool = False
) -> dict[str, Any]:
    """Requests/s, CPU µs per request and latencies of the runner on the same server.

    Fed continuously (2 × concurrency callers of ``Runner.run``, so the lane's queue never runs
    dry) or, with ``batches``, as the runner service feeds it: ``run_many`` over batches of 500,
    one batch at a time (the lane drains at every batch's end)."""
    limits = TargetLimits(
        concurrency=concurrency,
        timeout_s=10,
        retries=0,
        queue_size=4 * concurrency,
        breaker_failures=1000,
    )
    async with make_http_client(concurrency, timeout=10) as client:
        target = HttpJsonTarget(client, f"{base}/query")
        async with Runner({"local": target}, {"local": limits}) as runner:
            await runner.run_many(PROBES[: concurrency * 2])  # open the connections first
            stop_at = time.monotonic() + duration
            responses: list[RagResponse] = []
            counter = itertools.count()

            async def feeder() -> None:
                while time.monotonic() < stop_at:
                    responses.append(await runner.run(PROBES[next(counter) % len(PROBES)]))

            async def batched() -> None:
                while time.monotonic() < stop_at:
                    start = next(counter) * 500 % len(PROBES)
                    responses.extend(await runner.run_many(PROBES[start : start + 500]))

            cpu0 = time.process_time()
            started = time.monotonic()
            if batches:
                await batched()
            else:
                await asyncio.gather(*(feeder() for _ in range(concurrency * 2)))
            elapsed = time.monotonic() - started
            cpu = time.process_time() - cpu0
    ok = [r for r in responses if r.status is TargetStatus.OK]
    latencies = sorted(r.latency_s for r in ok)
    q = statistics.quantiles(latencies, n=100) if len(latencies) >= 2 else [0.0] * 99
    return {
        "rps": len(ok) / elapsed,
        "requests": len(responses),
        "errors": dict(Counter(r.error_kind for r in responses if r.error_kind)),
        "cpu_us_per_request": 1e6 * cpu / max(len(responses), 1),
        "latency_p50_s": round(q[49], 4),
        "latency_p99_s": round(q[98], 4),
    }


def cell(
    base: str, latency: float, concurrency: int, duration: float, loop: EventLoopChoice
) -> dict[str, Any]:
    """Runner, then the bare client, on the same server and the same event loop: one A/B pair."""
    ours = run_on_loop(runner_client(base, concurrency, duration), loop)
    bare = run_on_loop(bare_client(base, concurrency, duration), loop)
    return {
        "latency_s": latency,
        "concurrency": concurrency,
        "ceiling_rps": round(concurrency / latency, 1),
        "runner_rps": round(ours["rps"], 1),
        "bare_rps": round(bare["rps"], 1),
        "efficiency": round(ours["rps"] / bare["rps"], 4),
        "runner_cpu_us_per_request": round(ours["cpu_us_per_request"], 1),
        "bare_cpu_us_per_request": round(bare["cpu_us_per_request"], 1),
        "runner_errors": ours["errors"],
        "runner_latency_p50_s": ours["latency_p50_s"],
        "runner_latency_p99_s": ours["latency_p99_s"],
    }


def sweep_markdown(grid: list[dict[str, Any]], stage: dict[str, Any] | None) -> str:
    lines = [
        "## Runner sweep (one run): runner ÷ bare client on the same server",
        "",
        "| target latency | concurrency | ceiling req/s | runner req/s | bare client req/s |"
        " efficiency | runner CPU µs/req | bare CPU µs/req |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in grid:
        lines.append(
            f"| {c['latency_s'] * 1000:g} ms | {c['concurrency']} | {c['ceiling_rps']:,.0f} |"
            f" {c['runner_rps']:,.0f} | {c['bare_rps']:,.0f} | {c['efficiency']:.2f} |"
            f" {c['runner_cpu_us_per_request']:.0f} | {c['bare_cpu_us_per_request']:.0f} |"
        )
    if stage is not None:
        lines += [
            "",
            f"The runner *stage* as the service drives it (batches of 500, one at a time) at 5 ms"
            f" and 64 in flight: {stage['rps']:,.0f} req/s = {stage['efficiency']:.2f} of the"
            " bare client: each batch's last requests finish while no new one may start.",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--duration", type=float, default=3.0, help="measured seconds per client")
    ap.add_argument("--sweep", action="store_true", help="the latency x concurrency grid")
    ap.add_argument("--out", type=Path)
    ap.add_argument(
        "--loop",
        choices=["auto", "asyncio", "uvloop"],
        default=os.environ.get("GW_EVENT_LOOP", "auto"),
        help="event loop of the runner and of the bare client (default: GW_EVENT_LOOP or auto,"
        " as the services and `groundwatch run`)",
    )
    ap.add_argument("--latency", type=float, default=0.005, help=argparse.SUPPRESS)
    ap.add_argument("--serve", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.serve:
        serve(args.serve, args.latency)
        return {}
    load = os.getloadavg()[0]
    loop = loop_name(args.loop)
    with server_process(0.005) as base:
        head = cell(base, 0.005, 64, args.duration, loop)
    grid: list[dict[str, Any]] = []
    stage: dict[str, Any] | None = None
    if args.sweep:
        for latency in (0.001, 0.005, 0.02, 0.1):
            with server_process(latency) as base:
                for concurrency in (16, 64, 256):
                    grid.append(cell(base, latency, concurrency, min(args.duration, 2.0), loop))
                if latency == 0.005:
                    ours = run_on_loop(runner_client(base, 64, args.duration, batches=True), loop)
                    bare = run_on_loop(bare_client(base, 64, args.duration), loop)
                    stage = {"rps": ours["rps"], "efficiency": ours["rps"] / bare["rps"]}
    result: dict[str, Any] = {
        "bench": "runner",
        "python": platform.python_version(),
        "machine": platform.machine(),
        "load_average_1m": round(load, 2),
        "cpus": os.cpu_count(),
        "client": "H1Client, asyncio + httptools (make_http_client)",
        "event_loop": loop,
        "headline": head,
        "sweep": grid,
        "stage_batches_5ms_64": stage,
        "figures": {
            "efficiency_5ms": figure(
                "runner: requests/s ÷ bare asyncio client, 5 ms target, 64 in flight",
                head["efficiency"],
                unit="×",
                target=TARGET_EFFICIENCY,
                measured=head["runner_rps"],
                baseline=head["bare_rps"],
                baseline_name=f"bare asyncio client on {loop}, same server, same run",
                absolute_unit="req/s",
                bound="CPU: client and server share 2 cores; the server (uvicorn on uvloop +"
                " httptools when installed) sets the"
                " bare client's rate, the runner's CPU per request (HTTP client + lane + response"
                " contract) what is left of it",
                digits=3,
            ),
            "cpu_ms_per_request": figure(
                "runner: own CPU per request (process CPU ÷ requests, 5 ms, 64 in flight)",
                round(head["runner_cpu_us_per_request"] / 1000, 4),
                unit=" ms",
                target=TARGET_CPU_MS,
                goal="<=",
                measured=head["runner_cpu_us_per_request"],
                baseline=head["bare_cpu_us_per_request"],
                baseline_name="bare client's",
                absolute_unit="µs",
                bound="the HTTP client (request bytes, llhttp parsing, the future), the lane, the"
                " timeout and the RagResponse contract (pydantic validation)",
                digits=3,
            ),
        },
    }
    if grid:
        result["markdown"] = sweep_markdown(grid, stage)
    emit(result, args.out)
    return result


if __name__ == "__main__":
    main()
    sys.exit(0)
