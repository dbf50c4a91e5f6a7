"""Run every benchmark, each in its own subprocess, and write ``bench/results.json`` and
``bench/RESULTS.md`` (``make bench``).

Each benchmark is a script of this directory that prints its JSON and writes it with ``--out``;
here each one runs with a time limit taken from a total budget (15 minutes on 2 cores by default),
so a hung benchmark costs its own slot, not the whole run. A benchmark whose script is missing or
that fails is reported as a hole — named, with its exit status and the tail of its output — never
silently dropped. Exit status: 0 when every benchmark produced its numbers (met or not; the
report says which targets are not met and why), 1 otherwise; ``--strict`` also fails on an unmet
target.

Usage: ``python bench/run_all.py [--only embedded,judge] [--quick] [--budget 900]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import machine

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


@dataclass(frozen=True)
class Bench:
    name: str
    script: str
    timeout_s: float
    args: tuple[str, ...] = ()
    quick_args: tuple[str, ...] = ()


BENCHES = [
    Bench("serialization", "bench_serialization.py", 120, ("--repeat", "3"), ("--n", "3000")),
    Bench("judge", "bench_judge.py", 150),
    Bench("analytics", "bench_analytics.py", 180, (), ("--groups", "2000")),
    Bench("runner", "bench_runner.py", 120, (), ("--duration", "3")),
    Bench("embedded", "bench_embedded.py", 240, (), ("--cycles", "2", "--baseline-probes", "500")),
    Bench("metrics_endpoint", "bench_metrics_endpoint.py", 240, (), ("--groups", "2000")),
    Bench(
        "pipeline_kafka",
        "bench_pipeline_kafka.py",
        480,
        (),
        ("--judges", "1", "--cycles", "2", "--paced-cycles", "1"),
    ),
    Bench("generation", "bench_generation.py", 360, (), ("--rows", "20000")),
]


@dataclass
class Outcome:
    bench: Bench
    status: str  # ok | target_not_met | failed | timed_out | missing | skipped
    seconds: float = 0.0
    data: dict[str, Any] = field(default_factory=dict)
    detail: str = ""


def run_one(bench: Bench, quick: bool, timeout: float, work: Path) -> Outcome:
    script = HERE / bench.script
    if not script.exists():
        return Outcome(bench, "missing", detail=f"{script.relative_to(ROOT)} does not exist")
    out = work / f"{bench.name}.json"
    cmd = [sys.executable, str(script), *bench.args, *(bench.quick_args if quick else ()), "--out"]
    cmd.append(str(out))
    log = work / f"{bench.name}.log"
    print(f"==> {bench.name}: {' '.join(cmd[1:])}", flush=True)
    started = time.monotonic()
    with log.open("wb") as fh:
        try:
            proc = subprocess.run(
                cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT, timeout=timeout, check=False
            )
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            code = None
    seconds = time.monotonic() - started
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-25:])
    if code is None:
        return Outcome(bench, "timed_out", seconds, detail=f"no result in {timeout:.0f}s\n{tail}")
    if not out.exists():
        return Outcome(bench, "failed", seconds, detail=f"exit status {code}, no output\n{tail}")
    data = json.loads(out.read_text())
    status = "ok" if code == 0 else "target_not_met" if code == 1 else "failed"
    return Outcome(bench, status, seconds, data, detail="" if status != "failed" else tail)


# ---------------------------------------------------------------- summaries (results.json)


def _get(d: dict[str, Any], *path: str) -> Any:
    for p in path:
        if not isinstance(d, dict) or p not in d:
            return None
        d = d[p]
    return d


def summarize(outcomes: dict[str, Outcome]) -> dict[str, dict[str, Any]]:
    """The nested numeric keys of ``results.json``; a hole's keys are ``null``."""
    r = {name: o.data for name, o in outcomes.items()}
    gen = r.get("generation", {})
    kafka = r.get("pipeline_kafka", {})
    emb = r.get("embedded", {})
    run = r.get("runner", {})
    judge = r.get("judge", {})
    ana = r.get("analytics", {})
    met = r.get("metrics_endpoint", {})
    ser = r.get("serialization", {})
    return {
        "generation": {
            "speedup": gen.get("speedup_queries_per_s"),
            "peak_rss_mb": _get(gen, "ours_end_to_end", "peak_rss_mb"),
            "queries_streamed": _get(gen, "ours_end_to_end", "queries"),
            "queries_per_s": _get(gen, "ours_answers", "queries_per_s"),
            "baseline_queries_per_s": _get(gen, "baseline", "queries_per_s"),
            "end_to_end_queries_per_s": _get(gen, "ours_end_to_end", "queries_per_s"),
            "database_rows": _get(gen, "database", "rows"),
        },
        "pipeline_kafka": {
            "probes_per_s": kafka.get("probes_per_s"),
            "p50_latency_s": kafka.get("p50_latency_s"),
            "p99_latency_s": kafka.get("p99_latency_s"),
            "paced_rate_per_s": kafka.get("paced_rate_per_s"),
            "best_judges": kafka.get("best_judges"),
            "by_judges": {
                str(c["judges"]): {
                    "probes_per_s": c["probes_per_s"],
                    "steady_probes_per_s": c["steady_probes_per_s"],
                    "p50_latency_s": c["paced"].get("p50_s"),
                    "p99_latency_s": c["paced"].get("p99_s"),
                }
                for c in kafka.get("configs", [])
            },
            "serialization_bound_probes_per_s": _get(kafka, "baseline", "probes_per_s"),
        },
        "embedded": {
            "probes_per_s": emb.get("probes_per_s"),
            "cpu_us_per_probe": emb.get("cpu_us_per_probe"),
            "baseline_probes_per_s": _get(emb, "baseline", "probes_per_s"),
        },
        "runner": {
            "efficiency": run.get("efficiency"),
            "achieved_rps": run.get("achieved_rps"),
            "limit_rps": run.get("limit_rps"),
            "baseline_rps": run.get("baseline_rps"),
        },
        "judge": {
            "judgements_per_s": judge.get("deterministic_per_s"),
            "llm_calls_per_1000_probes_with_cache": judge.get(
                "llm_calls_per_1000_probes_with_cache"
            ),
            "llm_calls_per_1000_probes_without_cache": judge.get(
                "llm_calls_per_1000_probes_without_cache"
            ),
        },
        "analytics": {
            "ingest_per_s": ana.get("ingest_per_s"),
            "metrics_latency_ms": met.get("metrics_latency_p99_ms"),
            "metrics_latency_p50_ms": met.get("metrics_latency_p50_ms"),
            "metrics_groups": met.get("semantic_groups"),
            "service_ingest_per_s": met.get("service_ingest_per_s"),
            "sql_scrape_baseline_ms": _get(met, "baseline", "ms"),
        },
        "serialization": {
            "probes_per_s_bound": ser.get("probes_per_s_bound"),
            "baseline_probes_per_s_bound": ser.get("baseline_probes_per_s_bound"),
            **{
                f"{name}_roundtrip_per_s": c.get("roundtrip_per_s")
                for name, c in (ser.get("contracts") or {}).items()
            },
        },
    }


# ---------------------------------------------------------------- the table (RESULTS.md)


@dataclass
class Row:
    figure: str
    value: str
    reference: str
    ratio: str
    target: str
    met: bool | None
    bound: str


def _n(x: Any, digits: int = 0) -> str:
    if x is None:
        return "—"
    if isinstance(x, int | float):
        return f"{x:,.{digits}f}"
    return str(x)


def _ratio(a: Any, b: Any, digits: int = 2) -> str:
    if not isinstance(a, int | float) or not isinstance(b, int | float) or not b:
        return "—"
    return f"{a / b:.{digits}f}×"


def _fewer(ours: Any, baseline: float) -> str:
    if not isinstance(ours, int | float):
        return "—"
    return f"{baseline / ours:,.0f}× fewer" if ours else "none needed"


def rows(s: dict[str, dict[str, Any]], raw: dict[str, dict[str, Any]], cpus: int) -> list[Row]:
    g, k, e, ru, j, a, se = (
        s["generation"],
        s["pipeline_kafka"],
        s["embedded"],
        s["runner"],
        s["judge"],
        s["analytics"],
        s["serialization"],
    )
    out: list[Row] = []

    def ok(value: Any, test: Callable[[Any], bool]) -> bool | None:
        return None if value is None else bool(test(value))

    out.append(
        Row(
            "generation: queries/s (answers, grouped query per template)",
            _n(g["queries_per_s"]),
            f"{_n(g['baseline_queries_per_s'])} (GRAMMAR Alg. 1: one SELECT per combination)",
            _ratio(g["queries_per_s"], g["baseline_queries_per_s"], 1),
            "≥ 20×",
            ok(g["speedup"], lambda v: v >= 20),
            "SQLite scan + Python grouping; the baseline pays one statement round trip per query",
        )
    )
    out.append(
        Row(
            f"generation: peak RSS, {_n(g['queries_streamed'])} queries streamed to JSONL",
            f"{_n(g['peak_rss_mb'], 1)} MB",
            f"{_n(_get(raw, 'generation', 'baseline', 'peak_rss_mb'), 1)} MB (baseline process)",
            _ratio(g["peak_rss_mb"], _get(raw, "generation", "baseline", "peak_rss_mb")),
            "< 300 MB at ≥ 1M",
            ok(
                g["peak_rss_mb"],
                lambda v: v < 300 and (g["queries_streamed"] or 0) >= 1_000_000,
            ),
            "streaming: one template's rows at a time, groups written as they are made",
        )
    )
    best = next(
        (
            c
            for c in _get(raw, "pipeline_kafka", "configs") or []
            if c["judges"] == k["best_judges"]
        ),
        None,
    )
    kafka_bound = f"CPU: {cpus} cores shared by the service processes and the broker"
    if best is not None:
        services = {n: v for n, v in best["cpu_us_per_probe"].items() if n != "kafka-broker"}
        total = sum(services.values())
        top = max(services, key=lambda n: services[n])
        kafka_bound += (
            f"; {total:.0f} µs of service CPU per probe (most: {top}, {services[top]:.0f} µs) "
            f"+ {best['cpu_us_per_probe'].get('kafka-broker', 0):.0f} µs in the broker"
        )
    by = k["by_judges"]
    per_j = ", ".join(
        f"{n} judge{'s' if n != '1' else ''}: {_n(c['probes_per_s'])}" for n, c in by.items()
    )
    out.append(
        Row(
            f"pipeline over Kafka: probes/s end to end ({per_j})",
            _n(k["probes_per_s"]),
            f"{_n(k['serialization_bound_probes_per_s'])} (serialization bound, one core)",
            _ratio(k["probes_per_s"], k["serialization_bound_probes_per_s"], 3),
            "≥ 1,000",
            ok(k["probes_per_s"], lambda v: v >= 1000),
            kafka_bound,
        )
    )
    out.append(
        Row(
            f"pipeline over Kafka: probe → tally latency p50 / p99 at "
            f"{_n(k['paced_rate_per_s'])} probes/s",
            f"{_n(k['p50_latency_s'], 3)} s / {_n(k['p99_latency_s'], 3)} s",
            "—",
            "—",
            "p99 ≤ 2 s",
            ok(k["p99_latency_s"], lambda v: v <= 2.0),
            "batching: generator batches of 500, consumer polls, analytics' store transaction",
        )
    )
    cpu_us = e["cpu_us_per_probe"]
    out.append(
        Row(
            "embedded pipeline: probes/s (in-process bus, one event loop)",
            _n(e["probes_per_s"]),
            f"{_n(e['baseline_probes_per_s'])} (sequential loop, one commit per probe)",
            _ratio(e["probes_per_s"], e["baseline_probes_per_s"]),
            "≥ 5,000",
            ok(e["probes_per_s"], lambda v: v >= 5000),
            f"one core: {_n(cpu_us, 0)} µs CPU per probe "
            f"(≈ {_n(1e6 / cpu_us if cpu_us else None)} probes/s on an idle core)",
        )
    )
    out.append(
        Row(
            "runner: efficiency at 100 ms target latency, concurrency 64",
            _n(ru["efficiency"], 3),
            f"{_n(ru['achieved_rps'], 1)} of {_n(ru['limit_rps'])} req/s "
            f"(bare asyncio client: {_n(ru['baseline_rps'], 1)})",
            _ratio(ru["achieved_rps"], ru["baseline_rps"], 3),
            "≥ 0.90",
            ok(ru["efficiency"], lambda v: v >= 0.9),
            "the target's latency (64 / 0.1 s); the rest is event-loop scheduling",
        )
    )
    out.append(
        Row(
            "judge: deterministic tiers, judgements/s",
            _n(j["judgements_per_s"]),
            "—",
            "—",
            "≥ 50,000",
            ok(j["judgements_per_s"], lambda v: v >= 50_000),
            "CPU (pure Python rules, one core)",
        )
    )
    out.append(
        Row(
            "judge: LLM calls per 1,000 demo probes (3 cycles, with cache)",
            _n(j["llm_calls_per_1000_probes_with_cache"], 2),
            f"1,000 (GRAMMAR: every response to the LLM); "
            f"{_n(j['llm_calls_per_1000_probes_without_cache'], 2)} without cache",
            _fewer(j["llm_calls_per_1000_probes_with_cache"], 1000),
            "—",
            None,
            "share of responses the rules leave undecided",
        )
    )
    out.append(
        Row(
            "analytics: judgements/s into the tagger",
            _n(a["ingest_per_s"]),
            f"{_n(a['service_ingest_per_s'])} (the service over Kafka, SQLite store included)",
            _ratio(a["ingest_per_s"], a["service_ingest_per_s"], 1),
            "≥ 100,000",
            ok(a["ingest_per_s"], lambda v: v >= 100_000),
            "CPU (dict updates per judgement); the service is bound by parsing and the store",
        )
    )
    out.append(
        Row(
            f"analytics: /metrics latency p99 over HTTP, {_n(a['metrics_groups'])} groups tracked",
            f"{_n(a['metrics_latency_ms'], 1)} ms (p50 {_n(a['metrics_latency_p50_ms'], 1)})",
            f"{_n(a['sql_scrape_baseline_ms'], 1)} ms (same counts by SQL at scrape time)",
            _ratio(a["metrics_latency_ms"], a["sql_scrape_baseline_ms"], 2),
            "≤ 50 ms",
            ok(a["metrics_latency_ms"], lambda v: v <= 50),
            "HTTP + exposition; the numbers are kept incrementally, O(targets × cohorts)",
        )
    )
    out.append(
        Row(
            "serialization: probes/s bound (probe + response + judgement, encode + validate)",
            _n(se["probes_per_s_bound"]),
            f"{_n(se['baseline_probes_per_s_bound'])} (model_dump + orjson encoding)",
            _ratio(se["probes_per_s_bound"], se["baseline_probes_per_s_bound"]),
            "—",
            None,
            "pydantic-core validation in Rust, one core",
        )
    )
    return out


def git(*args: str) -> str:
    try:
        return subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def memory_gb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024**2, 1)
    except OSError:
        pass
    return None


def markdown(
    meta: dict[str, Any], table: list[Row], outcomes: dict[str, Outcome], quick: bool
) -> str:
    mark = {True: "met", False: "**NOT MET**", None: "—"}
    lines = [
        "# Benchmark results",
        "",
        f"- date: {meta['date']}",
        f"- commit: `{meta['commit']}`",
        f"- machine: {meta['machine']['cpu']}, {meta['machine']['cpus']} cores, "
        f"{meta['memory_gb']} GB RAM, {meta['platform']}, Python {meta['machine']['python']}",
        f"- load average (1 min) at start / end: {meta['load_start']} / {meta['load_end']}",
        f"- total time: {meta['seconds']:.0f} s"
        + (" (quick mode: reduced sizes)" if quick else ""),
        "- reproduce: `make bench` (or `python bench/<name>.py --out FILE` for one benchmark)",
        "",
        "| figure | measured | baseline / reference | ratio | target | |",
        "|---|---|---|---|---|---|",
    ]
    for r in table:
        lines.append(
            f"| {r.figure} | {r.value} | {r.reference} | {r.ratio} | {r.target} | {mark[r.met]} |"
        )
    lines += ["", "## What bounds each number", ""]
    lines += [f"- {r.figure}: {r.bound}" for r in table]
    missed = [r for r in table if r.met is False]
    holes = [o for o in outcomes.values() if o.status in ("missing", "failed", "timed_out")]
    lines += ["", "## Not met, and holes", ""]
    if not missed and not holes:
        lines.append("Every target is met and every benchmark ran.")
    for r in missed:
        lines.append(
            f"- **{r.figure}**: measured {r.value} (ratio {r.ratio}), target {r.target}. "
            f"Bounded by {r.bound}."
        )
    for o in holes:
        first = o.detail.splitlines()[0] if o.detail else ""
        lines.append(f"- **{o.bench.name}** did not produce numbers ({o.status}): {first}")
    lines += ["", "## Runs", "", "| benchmark | status | seconds |", "|---|---|---|"]
    lines += [f"| {o.bench.name} | {o.status} | {o.seconds:.1f} |" for o in outcomes.values()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated benchmark names")
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke test, not numbers)")
    ap.add_argument("--budget", type=float, default=900.0, help="seconds for all benchmarks")
    ap.add_argument("--results", type=Path, default=HERE / "results.json")
    ap.add_argument("--markdown", type=Path, default=HERE / "RESULTS.md")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a target is not met")
    args = ap.parse_args(argv)
    only = {n for n in args.only.split(",") if n}
    unknown = only - {b.name for b in BENCHES}
    if unknown:
        ap.error(f"unknown benchmarks: {sorted(unknown)}")

    started = time.monotonic()
    load_start = round(os.getloadavg()[0], 2)
    outcomes: dict[str, Outcome] = {}
    with tempfile.TemporaryDirectory(prefix="gw-bench-") as tmp:
        for bench in BENCHES:
            if only and bench.name not in only:
                outcomes[bench.name] = Outcome(bench, "skipped")
                continue
            left = args.budget - (time.monotonic() - started) - 15  # keep time to write results
            if left < 30:
                outcomes[bench.name] = Outcome(bench, "timed_out", detail="no budget left")
                continue
            o = run_one(bench, args.quick, min(bench.timeout_s, left), Path(tmp))
            outcomes[bench.name] = o
            print(f"    {bench.name}: {o.status} in {o.seconds:.1f}s", flush=True)
            if o.status in ("failed", "timed_out", "missing"):
                print("    " + o.detail.replace("\n", "\n    "), file=sys.stderr, flush=True)

    info = machine()
    meta = {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": (git("rev-parse", "--short", "HEAD") or "unknown")
        + (" (with uncommitted changes)" if git("status", "--porcelain") else ""),
        "machine": info,
        "memory_gb": memory_gb(),
        "platform": platform.platform(terse=True),
        "load_start": load_start,
        "load_end": info["load_average_1m"],
        "seconds": round(time.monotonic() - started, 1),
        "quick": args.quick,
    }
    summary = summarize(outcomes)
    raw = {name: o.data for name, o in outcomes.items() if o.data}
    table = rows(summary, raw, info["cpus"] or 0)
    results = {
        "meta": meta,
        **summary,
        "status": {
            name: {"status": o.status, "seconds": round(o.seconds, 1), "detail": o.detail}
            for name, o in outcomes.items()
        },
        "raw": raw,
    }
    if not only:  # a partial run must not overwrite the full results
        args.results.write_text(json.dumps(results, indent=2) + "\n")
        args.markdown.write_text(markdown(meta, table, outcomes, args.quick))
        print(f"wrote {args.results.relative_to(ROOT)} and {args.markdown.relative_to(ROOT)}")
    else:
        partial = Path(tempfile.gettempdir()) / "gw-bench-partial.json"
        partial.write_text(json.dumps(results, indent=2) + "\n")
        print(f"partial run: results in {partial}")
    print(markdown(meta, table, outcomes, args.quick))
    ran = [o for o in outcomes.values() if o.status != "skipped"]
    holes = any(o.status in ("missing", "failed", "timed_out") for o in ran)
    missed = any(r.met is False for r in table)
    return 1 if holes or (args.strict and missed) else 0


if __name__ == "__main__":
    sys.exit(main())
