"""Demo benchmark: probes/s of the embedded demo against the bundled reference RAG.

The pipeline of ``groundwatch demo`` (generator → runner → judge → analytics on the in-process
bus, SQLite store, the rules-only tiered judge with its answer metrics) probing the reference RAG
(keyword retriever, extractive reader: the demo's defaults) over the demo dataset's factual
groups (the demo's RAGProbe scenario probes are left out). Two ways to ask it, one right after
the other in each run:

* ``in_process`` — what the demo does: the reference pipeline called directly
  (:class:`~groundwatch.reference_rag.target.ReferenceTarget`);
* ``http_stack`` (the baseline) — the same app through ``httpx.ASGITransport`` and FastAPI, as the
  demo did before (the HTTP path the services use).

Both after one warm-up cycle (imports, caches, the reader's split documents), ``--cycles``
measured cycles of 2 208 probes. The figure is the in-process probes/s (target ≥ 5 000; an
absolute rate, as the issue states it), with CPU µs per probe beside it.

Usage: ``python bench/bench_demo.py [--cycles 3] [--out FILE]``; JSON on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import emit, figure, machine

from groundwatch.app.embedded import EmbeddedPipeline, reference_runner
from groundwatch.core.model import SemanticGroup
from groundwatch.demo import demo_dataset
from groundwatch.reference_rag.app import build_pipeline, create_app
from groundwatch.reference_rag.settings import ReferenceRagSettings
from groundwatch.reference_rag.target import ReferenceTarget
from groundwatch.runtime.consume import tune_gc
from groundwatch.stages.judge.tiered import TieredJudge

TARGET_PROBES_PER_S = 5_000


async def measure(
    groups: list[SemanticGroup], documents: dict[str, str], how: str, cycles: int, db: Path
) -> dict[str, Any]:
    settings = ReferenceRagSettings()
    if how == "in_process":
        runner, close = reference_runner(ReferenceTarget(build_pipeline(settings, documents)))
    else:
        runner, close = reference_runner(create_app(settings, documents))
    pipeline = EmbeddedPipeline(
        groups, runner, judge=TieredJudge(), on_stop=[close], database_url=f"sqlite:///{db}"
    )
    await pipeline.start()
    try:
        await pipeline.run(1)  # warm-up
        cpu0 = time.process_time()
        result = await pipeline.run(cycles)
        cpu = time.process_time() - cpu0
    finally:
        await pipeline.stop()
    return {
        "probes": result.published,
        "seconds": round(result.elapsed_s, 3),
        "probes_per_s": round(result.probes_per_s, 1),
        "cpu_us_per_probe": round(1e6 * cpu / result.published, 1),
        "dead_letters": result.dead_letters,
    }


async def reference_alone_cpu_us(groups: list[SemanticGroup], documents: dict[str, str]) -> float:
    """CPU µs per query of the reference RAG alone (``ReferenceTarget.ask`` in a loop over one
    cycle's questions, after one warm-up pass): its share of the demo's CPU per probe."""
    target = ReferenceTarget(build_pipeline(ReferenceRagSettings(), documents))
    queries = [f.text for g in groups for f in g.forms]
    for q in queries:  # warm-up: the reader's split documents, the IDF weights
        await target.ask(q)
    cpu0 = time.process_time()
    for q in queries:
        await target.ask(q)
    return round(1e6 * (time.process_time() - cpu0) / max(1, len(queries)), 1)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--cycles", type=int, default=3)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    tune_gc()
    domain, groups = demo_dataset()
    documents = dict(domain.documents)
    with tempfile.TemporaryDirectory(prefix="gw-bench-demo-") as tmp:
        ours = asyncio.run(measure(groups, documents, "in_process", args.cycles, Path(tmp) / "a"))
        http = asyncio.run(measure(groups, documents, "http_stack", args.cycles, Path(tmp) / "b"))
    rag_us = asyncio.run(reference_alone_cpu_us(groups, documents))
    result: dict[str, Any] = {
        "bench": "demo",
        **machine(),
        "dataset": {
            "semantic_groups": len(groups),
            "probes_per_cycle": ours["probes"] // args.cycles,
        },
        "in_process": ours,
        "http_stack": http,
        "reference_rag_cpu_us_per_query": rag_us,
        "figures": {
            "probes_per_s": figure(
                "demo: probes/s against the reference RAG, in-process (keyword + extractive)",
                ours["probes_per_s"],
                target=TARGET_PROBES_PER_S,
                measured=ours["cpu_us_per_probe"],
                baseline=http["cpu_us_per_probe"],
                baseline_name="through httpx's ASGI transport + FastAPI",
                absolute_unit="CPU µs per probe",
                bound=f"one core, one event loop: {ours['cpu_us_per_probe']:.0f} CPU µs per"
                f" probe, of which the reference RAG alone takes {rag_us:.0f} µs (keyword"
                " retrieval over a postings index, the extractive reader scoring every sentence"
                " of the top 3 documents) and groundwatch's stages the rest (see the embedded"
                " pipeline's figures)",
                digits=0,
            ),
            "speedup_vs_http_stack": figure(
                "demo: probes/s in-process ÷ through the HTTP stack (ASGI + FastAPI)",
                round(ours["probes_per_s"] / http["probes_per_s"], 3),
                unit="×",
                measured=ours["probes_per_s"],
                baseline=http["probes_per_s"],
                baseline_name="HTTP stack",
                absolute_unit="probes/s",
            ),
        },
    }
    emit(result, args.out)
    return result


if __name__ == "__main__":
    main()
    sys.exit(0)
