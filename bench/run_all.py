"""Run every benchmark several times in turn and write ``bench/results.json`` and
``bench/RESULTS.md`` (``make bench``).

Each benchmark is a script of this directory that measures what it is about *and* its baseline
once, one right after the other, and prints its JSON (``--out`` writes it) with a ``figures``
map: each figure one measurement, a ratio to the baseline of that run or, where the target is
absolute, the measurement itself. Here every script runs ``--repeats`` times (5 by default),
round-robin over the benchmarks (A/B of every benchmark, then again…), each run in its own
subprocess with a time limit taken from a total budget. A figure is reported as the median over
the repeats with its min-max spread and the load average around its runs; a figure whose
repeats stray more than ±20 % from the median is *unstable* — no verdict — instead of met or not
met. Absolute rates are shown beside, never judged. A benchmark whose script is missing or fails
is a hole, named with its exit status and the tail of its output, never silently dropped. The
first run of each script also gets its ``first_args`` (sweeps, scaling series, the 1M-query
memory run): those come from one run and are reported as such.

Exit status: 0 when every benchmark produced its numbers, 1 otherwise; ``--strict`` also fails
on a figure not met.

Usage: ``python bench/run_all.py [--only embedded,judge] [--repeats 5] [--quick] [--budget S]``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import machine, spread, verdict

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


@dataclass(frozen=True)
class Bench:
    name: str
    script: str
    timeout_s: float
    args: tuple[str, ...] = ()
    quick_args: tuple[str, ...] = ()
    first_args: tuple[str, ...] = ()  # only in the first repeat (sweeps, series, big runs)


BENCHES = [
    Bench("serialization", "bench_serialization.py", 60, ("--repeat", "2"), ("--n", "3000")),
    Bench("judge", "bench_judge.py", 90, ("--repeat", "3"), ()),
    # its first run adds the scaling series: past 300 s on a slow hour of a 2-core machine
    Bench(
        "analytics",
        "bench_analytics.py",
        900,
        (),
        ("--groups", "2000", "--rebuild-groups", "5000"),
        ("--scaling",),
    ),
    Bench("cli", "bench_cli.py", 60, (), ("--n", "1")),
    # 1 s target, 256 in flight, plain then streamed: run_all's repeats interleave them
    Bench("runner", "bench_runner.py", 180, ("--repeats", "1"), ("--duration", "3")),
    Bench("embedded", "bench_embedded.py", 180, (), ("--cycles", "2", "--baseline-probes", "500")),
    Bench("tracing", "bench_tracing.py", 300, ("--repeats", "1"), ("--cycles", "1")),
    Bench("demo", "bench_demo.py", 180, (), ("--cycles", "1")),
    Bench("metrics_endpoint", "bench_metrics_endpoint.py", 120, (), ("--groups", "2000")),
    Bench(
        "pipeline_kafka", "bench_pipeline_kafka.py", 300, (), ("--quick",), ("--judges", "1,2,3")
    ),
    Bench("sql_gate", "bench_sql_gate.py", 60, (), ("--repeat", "2")),
    Bench("semantic", "bench_semantic.py", 120, (), ("--n", "30")),
    # peak RSS of run --once: the 50k-probe cycle every repeat, the 500k one (minutes) in the
    # first only
    Bench(
        "run",
        "bench_memory.py",
        1800,
        ("--probes", "50000"),
        ("--probes", "5000"),
        ("--probes", "50000,500000"),
    ),
    Bench("generation", "bench_generation.py", 300, (), ("--rows", "5000"), ("--big",)),
    # its store (1.2M judgements) is built once per repeat, about a minute of the limit
    Bench("diff", "bench_diff.py", 600, ("--repeat", "1"), ("--groups", "5000", "--changed", "50")),
    # a 100k-group, 20-cycle store built and replayed once per repeat (a few minutes of it)
    Bench("view", "bench_view.py", 900, (), ("--groups", "5000", "--requests", "60")),
    Bench("traffic", "bench_traffic.py", 180, ("--repeat", "3"), ("--n", "2000", "--repeat", "2")),
    # a minute monitor in compressed time, every cycle through the real store code, full size
    # at both ends of the month and 100 probes a cycle between: each repeat half a day at 2k
    # probes, the first 30 days at the target's 10k on SQLite (about 20 min on an idle 2-core
    # machine) and 3 on PostgreSQL, carried on to 30
    Bench(
        "retention",
        "bench_retention.py",
        5400,
        ("--probes", "2000", "--days", "0.5", "--pairs", "4"),
        (
            "--dialects",
            "sqlite",
            "--days",
            "0.1",
            "--full-cycles",
            "8",
            "--beyond",
            "2",
            "--pairs",
            "2",
        ),
        ("--probes", "10000", "--days", "30", "--pg-days", "3", "--pairs", "6"),
    ),
]


@dataclass
class Outcome:
    bench: Bench
    status: str  # ok | target_not_met | failed | timed_out | missing | skipped
    seconds: float = 0.0
    data: dict[str, Any] = field(default_factory=dict)
    detail: str = ""
    runs: list[dict[str, Any]] = field(default_factory=list)
    loads: list[float] = field(default_factory=list)


def run_one(bench: Bench, quick: bool, timeout: float, work: Path, repeat: int = 0) -> Outcome:
    script = HERE / bench.script
    if not script.exists():
        return Outcome(bench, "missing", detail=f"{script.relative_to(ROOT)} does not exist")
    out = work / f"{bench.name}-{repeat}.json"
    extra = bench.first_args if repeat == 0 and not quick else ()
    cmd = [sys.executable, str(script), *bench.args, *(bench.quick_args if quick else ())]
    cmd += [*extra, "--out", str(out)]
    log = work / f"{bench.name}-{repeat}.log"
    print(f"==> {bench.name} [{repeat + 1}]: {' '.join(cmd[1:])}", flush=True)
    load = round(os.getloadavg()[0], 2)
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
    status = "ok" if code in (0, 1) else "failed"
    return Outcome(bench, status, seconds, data, "" if status == "ok" else tail, [data], [load])


def merge(into: Outcome | None, new: Outcome) -> Outcome:
    """Repeats of one benchmark as one outcome: the first run's data, every run's figures."""
    if into is None or into.status != "ok":
        return new if into is None or new.status == "ok" else into
    if new.status != "ok":
        into.detail = f"a repeat {new.status}: {new.detail.splitlines()[0] if new.detail else ''}"
        return into
    into.seconds += new.seconds
    into.runs += new.runs
    into.loads += new.loads
    return into


# ---------------------------------------------------------------- summaries (results.json)


@dataclass
class Figure:
    """One figure over its repeats."""

    section: str
    key: str
    label: str
    median: float | None
    low: float | None
    high: float | None
    spread_pct: float | None
    repeats: int
    unit: str
    target: float | None
    goal: str
    verdict: str
    measured: float | None
    baseline: float | None
    baseline_name: str
    absolute_unit: str
    bound: str
    digits: int
    loads: list[float]


def figures(outcomes: dict[str, Outcome]) -> list[Figure]:
    """Every figure of every benchmark that ran, over its repeats, in benchmark order."""
    out: list[Figure] = []
    for name, o in outcomes.items():
        if o.status != "ok" or not o.runs:
            continue
        keys: list[str] = []
        for run in o.runs:
            keys += [k for k in run.get("figures", {}) if k not in keys]
        for key in keys:
            per_run = [r["figures"][key] for r in o.runs if key in r.get("figures", {})]
            first = per_run[0]
            values = [f["value"] for f in per_run if f.get("value") is not None]
            s = spread(values)
            med_of = [f.get("measured") for f in per_run if f.get("measured") is not None]
            base_of = [f.get("baseline") for f in per_run if f.get("baseline") is not None]
            out.append(
                Figure(
                    section=first.get("section", name),
                    key=key,
                    label=first["label"],
                    median=s["median"],
                    low=s["min"],
                    high=s["max"],
                    spread_pct=s["spread_pct"],
                    repeats=s["repeats"],
                    unit=first.get("unit", ""),
                    target=first.get("target"),
                    goal=first.get("goal", ">="),
                    verdict=verdict(
                        s["median"], s["spread_pct"], first.get("target"), first.get("goal", ">=")
                    ),
                    measured=spread(med_of)["median"] if med_of else None,
                    baseline=spread(base_of)["median"] if base_of else None,
                    baseline_name=first.get("baseline_name", ""),
                    absolute_unit=first.get("absolute_unit", ""),
                    bound=first.get("bound", ""),
                    digits=int(first.get("digits", 2)),
                    loads=o.loads,
                )
            )
    return out


def _r(x: float | None, digits: int) -> float | None:
    return None if x is None else round(x, max(digits, 2) + 2)


def summarize(figs: list[Figure]) -> dict[str, dict[str, Any]]:
    """The nested keys of ``results.json``: ``section.key`` is the median over the repeats, with
    ``key_spread`` [min, max], ``key_spread_pct``, ``key_verdict`` and the absolute numbers."""
    out: dict[str, dict[str, Any]] = {}
    for f in figs:
        sec = out.setdefault(f.section, {})
        sec[f.key] = _r(f.median, f.digits)
        sec[f"{f.key}_spread"] = [_r(f.low, f.digits), _r(f.high, f.digits)]
        sec[f"{f.key}_spread_pct"] = f.spread_pct
        sec[f"{f.key}_repeats"] = f.repeats
        sec[f"{f.key}_verdict"] = f.verdict
        if f.measured is not None:
            sec[f"{f.key}_measured"] = _r(f.measured, 1)
        if f.baseline is not None:
            sec[f"{f.key}_baseline"] = _r(f.baseline, 1)
    return out


def by_name(figs: list[Figure]) -> dict[str, dict[str, Any]]:
    """The same figures keyed ``section.key``, each one object with its ``spread``: for readers
    that want a figure and its spread together rather than as sibling keys."""
    return {
        f"{f.section}.{f.key}": {
            "median": _r(f.median, f.digits),
            "spread": [_r(f.low, f.digits), _r(f.high, f.digits)],
            "spread_pct": f.spread_pct,
            "repeats": f.repeats,
            "unit": f.unit.strip(),
            "target": f.target,
            "goal": f.goal,
            "verdict": f.verdict,
            "label": f.label,
        }
        for f in figs
    }


# ---------------------------------------------------------------- the table (RESULTS.md)


def _n(x: Any, digits: int = 0) -> str:
    if x is None:
        return "—"
    if isinstance(x, int | float):
        if abs(x) >= 1000:
            return f"{x:,.0f}"
        return f"{x:,.{digits}f}"
    return str(x)


def _digits(x: float | None) -> int:
    return 3 if x is not None and abs(x) < 10 else 1


def _load(loads: list[float]) -> str:
    if not loads:
        return "—"
    lo, hi = min(loads), max(loads)
    return f"{lo:.2f}" if lo == hi else f"{lo:.2f}–{hi:.2f}"


def table(figs: list[Figure]) -> list[str]:
    mark = {"met": "met", "not met": "**NOT MET**", "unstable": "*unstable*", "—": "—"}
    lines = [
        "| figure | median (min–max) over repeats | absolute: measured / baseline | target |"
        " verdict | load (1 min) |",
        "|---|---|---|---|---|---|",
    ]
    for f in figs:
        d = f.digits
        value = f"{_n(f.median, d)}{f.unit} ({_n(f.low, d)}–{_n(f.high, d)}, ±{f.spread_pct}%, "
        value += f"n={f.repeats})"
        absolute = "—"
        if f.measured is not None or f.baseline is not None:
            absolute = f"{_n(f.measured, _digits(f.measured))}"
            if f.baseline is not None:
                absolute += f" / {_n(f.baseline, _digits(f.baseline))} ({f.baseline_name})"
            if f.absolute_unit:
                absolute += f" {f.absolute_unit}"
        target = (
            "—"
            if f.target is None
            else f"{'≥' if f.goal == '>=' else '≤'} {_n(f.target, d)}{f.unit}"
        )
        lines.append(
            f"| {f.label} | {value} | {absolute} | {target} | {mark.get(f.verdict, f.verdict)} |"
            f" {_load(f.loads)} |"
        )
    return lines


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


def _repeats_line(asked: int, outcomes: dict[str, Outcome]) -> str:
    """How many runs each benchmark got: the time budget may stop the round-robin early."""
    runs = [len(o.runs) for o in outcomes.values() if o.runs]
    if not runs or min(runs) >= asked:
        return f"{asked} runs of every benchmark"
    got = f"{min(runs)}" if min(runs) == max(runs) else f"{min(runs)}–{max(runs)}"
    return f"{asked} runs asked of every benchmark, {got} in the time budget (`--budget`; n per figure)"


def markdown(
    meta: dict[str, Any],
    figs: list[Figure],
    outcomes: dict[str, Outcome],
    quick: bool,
    notes: str = "",
) -> str:
    lines = [
        "# Benchmark results",
        "",
        f"- date: {meta['date']}",
        f"- commit: `{meta['commit']}`",
        f"- machine: {meta['machine']['cpu']}, {meta['machine']['cpus']} cores, "
        f"{meta['memory_gb']} GB RAM, {meta['platform']}, Python {meta['machine']['python']}",
        f"- load average (1 min) at start / end: {meta['load_start']} / {meta['load_end']}"
        " (per figure: the load at the start of each of its runs, in the table)",
        f"- repeats: {_repeats_line(meta.get('repeats', 1), outcomes)}, round-robin; a figure"
        " is the median with its min–max spread; spread beyond ±20 % = *unstable*, no verdict",
        f"- total time: {meta['seconds']:.0f} s"
        + (" (quick mode: reduced sizes)" if quick else ""),
        "- reproduce: `make bench` (or `python bench/<name>.py --out FILE` for one run of one)",
        "",
        *table(figs),
        "",
        "## What bounds each figure",
        "",
    ]
    lines += [f"- {f.label}: {f.bound}" for f in figs if f.bound]
    missed = [f for f in figs if f.verdict == "not met"]
    shaky = [f for f in figs if f.verdict == "unstable"]
    holes = [o for o in outcomes.values() if o.status in ("missing", "failed", "timed_out")]
    lines += ["", "## Not met, unstable, and holes", ""]
    if not missed and not shaky and not holes:
        lines.append("Every target is met, every figure is stable and every benchmark ran.")
    for f in missed:
        lines.append(
            f"- **{f.label}**: not met — median {_n(f.median, f.digits)}{f.unit}, target "
            f"{'≥' if f.goal == '>=' else '≤'} {_n(f.target, f.digits)}{f.unit}. Bounded by "
            f"{f.bound or 'see the notes'}."
        )
    for f in shaky:
        lines.append(
            f"- **{f.label}**: unstable — {_n(f.low, f.digits)}–{_n(f.high, f.digits)}{f.unit} "
            f"(±{f.spread_pct}% around {_n(f.median, f.digits)}) at load {_load(f.loads)}."
        )
    for o in holes:
        first = o.detail.splitlines()[0] if o.detail else ""
        lines.append(f"- **{o.bench.name}** did not produce numbers ({o.status}): {first}")
    if notes:
        lines += ["", notes.rstrip()]
    lines += ["", "## Runs", "", "| benchmark | status | runs | seconds |", "|---|---|---|---|"]
    lines += [
        f"| {o.bench.name} | {o.status} | {len(o.runs)} | {o.seconds:.1f} |"
        for o in outcomes.values()
    ]
    return "\n".join(lines) + "\n"


#: How far apart two single-sample figures (no spread) may be and still agree.
SINGLE_SAMPLE_TOLERANCE = 0.05


def agreement(
    previous: dict[str, Any], current: dict[str, dict[str, Any]], figs: list[Figure]
) -> str:
    """Whether this run and the previous one (the results.json it replaces) agree: each figure's
    median inside the other run's min–max spread, both ways."""
    prev_meta = previous.get("meta", {})
    if not prev_meta or prev_meta.get("quick"):
        return ""
    lines = [
        f"## Agreement with the previous run ({prev_meta.get('date')}, commit"
        f" `{prev_meta.get('commit')}`)",
        "",
        "| figure | previous median (spread) | this run's median (spread) | agree |",
        "|---|---|---|---|",
    ]
    agree_all = True
    for f in figs:
        old = previous.get(f.section, {})
        if f.key not in old or old.get(f.key) is None or f.median is None:
            continue
        lo, hi = old.get(f"{f.key}_spread", [None, None])
        if lo is None or hi is None or f.low is None or f.high is None:
            continue
        ok = lo <= f.median <= hi or f.low <= old[f.key] <= f.high
        if not ok and (lo == hi or f.low == f.high):
            # one sample or no spread (peak RSS of the first run): no range to fall in, so
            # the two values agree when they are within SINGLE_SAMPLE_TOLERANCE of each other
            ok = abs(f.median - old[f.key]) <= SINGLE_SAMPLE_TOLERANCE * abs(old[f.key])
        agree_all &= ok
        d = f.digits
        lines.append(
            f"| {f.label} | {_n(old[f.key], d)} ({_n(lo, d)}–{_n(hi, d)}) |"
            f" {_n(f.median, d)} ({_n(f.low, d)}–{_n(f.high, d)}) | {'yes' if ok else '**no**'} |"
        )
    lines += [
        "",
        "Agree = this run's median lies in the previous run's min–max, or the previous median in"
        " this run's; a figure with no spread (one sample) agrees within"
        f" ±{SINGLE_SAMPLE_TOLERANCE:.0%}. "
        + ("Every figure agrees." if agree_all else "Figures marked **no** moved between runs."),
    ]
    return "\n".join(lines)


def plot_scaling(outcomes: dict[str, Outcome], path: Path) -> str:
    """``bench/scaling.png``: analytics' costs by groups tracked, the Kafka pipeline by judges
    (both from the first run of their benchmark); the markdown line that shows it, or ''."""
    ana = outcomes.get("analytics")
    kafka = outcomes.get("pipeline_kafka")
    rows = (ana.data.get("scaling") if ana else None) or []
    configs = (kafka.data.get("configs") if kafka else None) or []
    if not rows and len(configs) < 2:
        return ""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "(no plot: matplotlib is not installed; `pip install matplotlib`)"
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    if rows:
        ax = axes[0]
        g = [r["groups"] for r in rows]
        ax.plot(g, [r["us_per_judgement"] for r in rows], "o-", label="tagger µs / judgement")
        ax.set_xscale("log")
        ax.set_ylim(bottom=0)
        ax.set_xlabel("groups tracked")
        ax.set_ylabel("µs per judgement")
        ax2 = ax.twinx()
        ax2.plot(g, [r["bytes_per_group"] / 1024 for r in rows], "s--", color="tab:red")
        ax2.set_ylabel("KiB per group (RSS)", color="tab:red")
        ax2.set_ylim(bottom=0)
        ax.set_title("analytics: cost by groups")
    if len(configs) >= 2:
        ax = axes[1]
        j = [c["judges"] for c in configs]
        ax.bar([x - 0.2 for x in j], [c["probes_per_s"] for c in configs], 0.4, label="probes/s")
        ax.set_xlabel("judge processes (2 cores)")
        ax.set_ylabel("probes/s end to end")
        ax.set_xticks(j)
        ax2 = axes[1].twinx()
        ax2.plot(j, [c["paced"].get("p99_s", 0) for c in configs], "o-", color="tab:red")
        ax2.set_ylabel("p99 probe→tally at 80 % (s)", color="tab:red")
        ax2.set_ylim(bottom=0)
        ax.set_title("pipeline over Kafka: by judges")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return f"![scaling]({path.name})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated benchmark names")
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke test, not numbers)")
    ap.add_argument("--repeats", type=int, default=5, help="runs of every benchmark")
    # ~35 min on 2 cores: the memory benchmark's 500k-probe cycle alone takes ~10 (was 1,700 s,
    # set before it: the last benchmarks ran out of budget and were reported as holes)
    ap.add_argument("--budget", type=float, default=3600.0, help="seconds for all benchmarks")
    ap.add_argument("--results", type=Path, default=HERE / "results.json")
    ap.add_argument("--markdown", type=Path, default=HERE / "RESULTS.md")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a target is not met")
    args = ap.parse_args(argv)
    only = {n for n in args.only.split(",") if n}
    unknown = only - {b.name for b in BENCHES}
    if unknown:
        ap.error(f"unknown benchmarks: {sorted(unknown)}")
    repeats = 1 if args.quick else max(1, args.repeats)

    started = time.monotonic()
    load_start = round(os.getloadavg()[0], 2)
    outcomes: dict[str, Outcome] = {}
    for bench in BENCHES:
        if only and bench.name not in only:
            outcomes[bench.name] = Outcome(bench, "skipped")
    with tempfile.TemporaryDirectory(prefix="gw-bench-") as tmp:
        for repeat in range(repeats):
            for bench in BENCHES:
                if only and bench.name not in only:
                    continue
                if repeat and outcomes.get(bench.name, Outcome(bench, "x")).status != "ok":
                    continue  # a hole stays a hole: no point in repeating it
                left = args.budget - (time.monotonic() - started) - 15
                if left < 30:
                    if bench.name not in outcomes:
                        outcomes[bench.name] = Outcome(bench, "timed_out", detail="no budget left")
                    continue
                o = run_one(bench, args.quick, min(bench.timeout_s, left), Path(tmp), repeat)
                outcomes[bench.name] = merge(outcomes.get(bench.name), o)
                print(
                    f"    {bench.name} [{repeat + 1}]: {o.status} in {o.seconds:.1f}s", flush=True
                )
                if o.status in ("failed", "timed_out", "missing"):
                    print("    " + o.detail.replace("\n", "\n    "), file=sys.stderr, flush=True)
    outcomes = {b.name: outcomes[b.name] for b in BENCHES if b.name in outcomes}

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
        "repeats": repeats,
    }
    figs = figures(outcomes)
    notes = "\n\n".join(
        o.data.get("markdown", "") for o in outcomes.values() if o.data.get("markdown")
    )
    results = {
        "meta": meta,
        **summarize(figs),
        "figures": by_name(figs),
        "status": {
            name: {
                "status": o.status,
                "runs": len(o.runs),
                "seconds": round(o.seconds, 1),
                "loads": o.loads,
                "detail": o.detail,
            }
            for name, o in outcomes.items()
        },
        "raw": {name: o.data for name, o in outcomes.items() if o.data},
        "repeats": {
            name: [r.get("figures", {}) for r in o.runs] for name, o in outcomes.items() if o.runs
        },
    }
    if not only and args.results.exists():
        with contextlib.suppress(ValueError, OSError):
            compared = agreement(json.loads(args.results.read_text()), summarize(figs), figs)
            if compared:
                notes += "\n\n" + compared
    if not only:
        picture = plot_scaling(outcomes, HERE / "scaling.png")
        if picture:
            notes += "\n\n## Scaling (plot)\n\n" + picture
    text = markdown(meta, figs, outcomes, args.quick, notes)
    if not only:  # a partial run must not overwrite the full results
        args.results.write_text(json.dumps(results, indent=2) + "\n")
        args.markdown.write_text(text)
        print(f"wrote {args.results.relative_to(ROOT)} and {args.markdown.relative_to(ROOT)}")
    else:
        partial = Path(tempfile.gettempdir()) / "gw-bench-partial.json"
        partial.write_text(json.dumps(results, indent=2) + "\n")
        (Path(tempfile.gettempdir()) / "gw-bench-partial.md").write_text(text)
        print(f"partial run: results in {partial}")
    print(text)
    ran = [o for o in outcomes.values() if o.status != "skipped"]
    holes = any(o.status in ("missing", "failed", "timed_out") for o in ran)
    missed = any(f.verdict == "not met" for f in figs)
    return 1 if holes or (args.strict and missed) else 0


if __name__ == "__main__":
    sys.exit(main())
