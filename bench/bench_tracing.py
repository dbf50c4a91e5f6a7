"""Tracing's cost: embedded probes/s with every probe and verdict traced (exported over OTLP/HTTP
to a local collector in another process) against the same pipeline with tracing off.

The pipeline is ``bench_embedded``'s (the demo dataset, the in-process bus, SQLite), asking a
target in-process, twice over:
- **a free target** (a dictionary lookup): the worst case, tracing against groundwatch's own
  cost alone (about 100 µs a probe) — the judged figure;
- **an endpoint with latency** (``--latency-ms``, 200 by default, ``--concurrency`` 64 in
  flight; real RAG endpoints answer in 0.3–10 s), where people run it.
Tracing is as a user turns it on (``OTEL_EXPORTER_OTLP_ENDPOINT``): the probe path queues a
record per probe and per verdict, and the exporter process makes the spans (one a probe, its
verdict the ``gen_ai.evaluation.result`` event on it) and posts them. The collector is a small
HTTP server in a process of its own that reads each export and answers 200 (what Phoenix or an
OpenTelemetry Collector does, without their storage). Runs alternate off / on (the order
flipped every repeat, so a slow minute hits both sides), ``--repeats`` pairs of each target; a
figure is the median of on ÷ off over its pairs, with its spread. Reported beside: the probing
process's CPU µs per probe that tracing adds, the exporter process's CPU µs per probe (it runs
on another core: it keeps up while it is below the probing process's own), the span-cost budget
(tracing's CPU per probe in the probing process measured alone, as a share of groundwatch's own
per probe: ≤ 10 % is ≥ 0.9× probes/s wherever the exporter process has a core to run on), the
spans lost and the 1-minute load average at the start and the end. The exporter process is
started before a traced run's clock starts (a service starts it once).

Usage: ``python bench/bench_tracing.py [--cycles 2] [--repeats 3] [--latency-ms 200] [--out F]``
(``--latency-ms 0``: the free target alone).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import emit, figure, machine, spread
from fast_target import AnswerBook

from groundwatch.adapters.targets import CallableTarget, TargetLimits
from groundwatch.adapters.tracing import Tracing, install, start_tracing
from groundwatch.app.embedded import EmbeddedPipeline
from groundwatch.contracts import Judgement, RagResponse, Verdict
from groundwatch.core.model import SemanticGroup
from groundwatch.runtime.consume import tune_gc
from groundwatch.stages.generator.planner import probes_for
from groundwatch.stages.runner.lanes import Runner

TARGET_RATIO = 0.9
#: Tracing's CPU on the probing process, % of the untraced pipeline's per probe.
BUDGET_PCT = 10.0

COLLECTOR = r"""
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class H(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass

server = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


class Endpoint:
    """The answer book behind a fixed latency: an endpoint that takes its time to answer."""

    def __init__(self, book: AnswerBook, latency_s: float) -> None:
        self.book = book
        self.latency_s = latency_s

    async def __call__(self, query: str) -> dict[str, Any]:
        await asyncio.sleep(self.latency_s)
        return self.book(query)


async def measure(
    groups: list[SemanticGroup],
    book: AnswerBook,
    cycles: int,
    db: Path,
    traced: bool,
    latency_s: float,
    concurrency: int,
) -> dict[str, Any]:
    target = (
        CallableTarget(Endpoint(book, latency_s))
        if latency_s
        else CallableTarget(book, in_thread=False)
    )
    runner = Runner({"fast": target}, {"fast": TargetLimits(concurrency=concurrency)})
    pipeline = EmbeddedPipeline(groups, runner, database_url=f"sqlite:///{db}")
    await pipeline.start()
    try:
        await pipeline.run(1)  # warm-up: imports, caches, SQLite pages
        before = pipeline.generator.state.published
        cpu0, wall0 = time.process_time(), time.perf_counter()
        await pipeline.run(cycles)
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        probes = pipeline.generator.state.published - before
    finally:
        await pipeline.stop()
    return {
        "probes": probes,
        "probes_per_s": round(probes / wall, 1),
        "cpu_us_per_probe": round(1e6 * cpu / probes, 1),
        "traced": traced,
    }


def run_pair(
    groups: list[SemanticGroup],
    book: AnswerBook,
    cycles: int,
    tmp: Path,
    env: dict[str, str],
    latency_s: float,
    concurrency: int,
    flip: bool,
) -> tuple[dict[str, Any], dict[str, Any]]:
    def untraced() -> dict[str, Any]:
        gc.collect()
        return asyncio.run(
            measure(groups, book, cycles, tmp / "off.db", False, latency_s, concurrency)
        )

    def traced() -> dict[str, Any]:
        tracing: Tracing | None = start_tracing("bench", environ=env)
        assert tracing is not None and tracing.spans is not None
        # the exporter process up before the clock starts: its start-up is a service's once
        assert tracing.flush(60)
        install(tracing)
        try:
            gc.collect()
            on = asyncio.run(
                measure(groups, book, cycles, tmp / "on.db", True, latency_s, concurrency)
            )
        finally:
            install(None)
            tracing.flush(60)
            tracing.shutdown(30)
        counts = vars(tracing.counts)
        on["spans"] = dict(counts)
        # the warm-up cycle is traced too: the exporter's CPU is over every span it made
        on["exporter_cpu_us_per_span"] = round(
            1e6 * counts["exporter_cpu_s"] / max(1, counts["ended"]), 1
        )
        return on

    if flip:
        on = traced()
        off = untraced()
    else:
        off = untraced()
        on = traced()
    return off, on


def probe_path_cpu(
    groups: list[SemanticGroup], book: AnswerBook, env: dict[str, str], repeats: int
) -> list[float]:
    """CPU µs per probe of what tracing does on the probing process alone, with nothing else
    running in it: the lane's enter/leave around the call, the verdict's record, and the
    shipping thread's encoding and writes to the exporter process (which exports for real) —
    the span-cost budget, measured apart from the pipeline's noise."""
    probes = list(probes_for(groups, ["fast"], "bench-tracing"))
    responses = []
    for probe in probes:
        reply = book(probe.query)
        responses.append(
            RagResponse.answered(
                probe, reply["answer"], reply["retrieved_ids"], reply["contexts"], [], 0.001
            )
        )
    judgements = [
        Judgement.for_response(r, verdict=Verdict.CORRECT, tier="exact", reason="matched")
        for r in responses
    ]
    out = []
    for _ in range(repeats):
        tracing = start_tracing("bench", environ=env)
        assert tracing is not None and tracing.spans is not None
        assert tracing.flush(60)
        spans = tracing.spans
        gc.collect()
        cpu0 = time.process_time()
        for probe, response, judgement in zip(probes, responses, judgements, strict=True):
            start = time.time_ns()
            entered = spans.enter(probe)
            assert entered is not None
            spans.leave(entered, probe, response, start)
            spans.evaluation(judgement, "robust")
        tracing.flush(60)  # the shipping thread's share is in this process's CPU too
        out.append(1e6 * (time.process_time() - cpu0) / len(probes))
        tracing.shutdown(30)
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--cycles", type=int, default=2, help="measured cycles per run (2 226 each)")
    ap.add_argument("--repeats", type=int, default=3, help="off/on pairs of each target")
    ap.add_argument("--latency-ms", type=float, default=200.0, help="the endpoint's latency")
    ap.add_argument("--concurrency", type=int, default=64, help="requests in flight to it")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)

    from groundwatch.demo import demo_dataset

    tune_gc()
    _, groups = demo_dataset()
    book = AnswerBook.from_groups(groups)
    collector = subprocess.Popen(
        [sys.executable, "-c", COLLECTOR], stdout=subprocess.PIPE, text=True
    )
    try:
        assert collector.stdout is not None
        port = int(collector.stdout.readline())
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}"}
        latency_s = args.latency_ms / 1000
        real: list[tuple[dict[str, Any], dict[str, Any]]] = []
        free: list[tuple[dict[str, Any], dict[str, Any]]] = []
        load_before = round(os.getloadavg()[0], 2)
        with tempfile.TemporaryDirectory(prefix="gw-bench-tracing-") as tmp:
            for i in range(args.repeats):  # interleaved: a slow minute hits both kinds
                where = Path(tmp) / f"r{i}"
                (where / "real").mkdir(parents=True)
                (where / "free").mkdir()
                flip = i % 2 == 1
                free.append(
                    run_pair(groups, book, args.cycles, where / "free", env, 0.0, 256, flip)
                )
                if latency_s:  # 0: the free target alone
                    real.append(
                        run_pair(
                            groups,
                            book,
                            args.cycles,
                            where / "real",
                            env,
                            latency_s,
                            args.concurrency,
                            flip,
                        )
                    )
        path = spread([round(v, 1) for v in probe_path_cpu(groups, book, env, args.repeats)])
    finally:
        collector.terminate()
        collector.wait(10)

    load_after = round(os.getloadavg()[0], 2)

    def ratios(pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, Any]:
        return spread([round(on["probes_per_s"] / off["probes_per_s"], 3) for off, on in pairs])

    def rate(pairs: list[tuple[dict[str, Any], dict[str, Any]]], side: int) -> float | None:
        return statistics.median(p[side]["probes_per_s"] for p in pairs) if pairs else None

    per_cpu = spread(
        [round(off["cpu_us_per_probe"] / on["cpu_us_per_probe"], 3) for off, on in free]
    )

    free_ratio, real_ratio = ratios(free), ratios(real)
    added = statistics.median(on["cpu_us_per_probe"] - off["cpu_us_per_probe"] for off, on in free)
    exporter = statistics.median(on["exporter_cpu_us_per_span"] for _, on in free)
    own = statistics.median(off["cpu_us_per_probe"] for off, _ in free)
    lost = sum(on["spans"]["dropped"] + on["spans"]["failed"] for _, on in real + free)
    load = f"load average {load_before}–{load_after} on {os.cpu_count()} cores"
    result: dict[str, Any] = {
        "bench": "tracing",
        **machine(),
        "load_average_1m_before_after": [load_before, load_after],
        "endpoint": {"latency_ms": args.latency_ms, "concurrency": args.concurrency},
        "pairs_free_target": [{"off": off, "on": on} for off, on in free],
        "pairs_endpoint": [{"off": off, "on": on} for off, on in real],
        "ratio_free_target": free_ratio,
        "ratio_endpoint": real_ratio,
        "ratio_per_cpu_free_target": per_cpu,
        "probe_path_cpu_us": path,
        "figures": {
            "probes_per_s_ratio_free_target": figure(
                "embedded probes/s traced (OTLP/HTTP to a local collector) ÷ untraced, a free"
                f" in-process target (the worst case: tracing against groundwatch's own cost"
                f" alone), median of {len(free)} interleaved pairs (spread"
                f" {free_ratio['min']}–{free_ratio['max']}; {load})",
                free_ratio["median"],
                unit="×",
                target=TARGET_RATIO,
                measured=rate(free, 1),
                baseline=rate(free, 0),
                baseline_name="tracing off, same run",
                absolute_unit="probes/s",
                bound="the probing process's share of the 2 cores: the exporter process runs"
                " beside it",
                digits=3,
            ),
            "probes_per_s_ratio": figure(
                f"the same at an endpoint answering in {args.latency_ms:g} ms,"
                f" {args.concurrency} in flight (spread {real_ratio['min']}–{real_ratio['max']})",
                real_ratio["median"],
                unit="×",
                target=TARGET_RATIO,
                measured=rate(real, 1),
                baseline=rate(real, 0),
                baseline_name="tracing off, same run",
                absolute_unit="probes/s",
                bound="the endpoint's latency",
                digits=3,
            ),
            "probes_per_cpu_s_ratio_free_target": figure(
                "probes per CPU-second of the probing process, traced ÷ untraced, free target"
                f" (what the wall-clock ratio is where the exporter process has a core of its"
                f" own; spread {per_cpu['min']}–{per_cpu['max']})",
                per_cpu["median"],
                unit="×",
                digits=3,
            ),
            "added_cpu_us_per_probe": figure(
                "CPU µs per probe tracing adds to the probing process (a record per probe and"
                f" per verdict, queued and shipped; free target; its own: {own:g} µs)",
                round(added, 1),
                unit=" µs",
            ),
            "exporter_cpu_us_per_span": figure(
                "CPU µs per span of the exporter process (spans made, encoded and posted, its start-up aside; one"
                " span a probe, its verdict on it)",
                round(exporter, 1),
                unit=" µs",
            ),
            "probe_path_budget": figure(
                "the span-cost budget: CPU µs per probe tracing spends in the probing process,"
                f" measured alone (median {path['median']:g} µs over {path['repeats']} repeats,"
                f" {path['min']:g}–{path['max']:g}), as a share of groundwatch's own"
                f" {own:g} µs a probe (target ≤ 10 %: ≥ 0.9× probes/s when the exporter process"
                " has a core)",
                round(100 * path["median"] / own, 1),
                unit=" %",
                target=BUDGET_PCT,
                goal="<=",
                digits=1,
            ),
            "spans_lost": figure("spans lost (dropped or failed) over every traced run", lost),
        },
    }
    emit(result, args.out)
    return result


if __name__ == "__main__":
    main()
