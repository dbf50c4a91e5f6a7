"""CLI cold start: wall time of ``groundwatch --help``, ``gen --help`` and ``report`` on a small
file, each a fresh process, beside the interpreter's own start (``python -c pass``).

One run times each command ``--n`` times (3), interleaved with the interpreter's start, and takes
the median of each; ``cold_start_s`` is the slowest of the three commands (target ≤ 1 s).
``report`` reads the GRAMMAR authors' short-cohort result file (157 groups) from ``../shared``
when present, else a small store made by the demo would be needed: then it is left out and the
output says so.

Usage: ``python bench/bench_cli.py [--n 3] [--out FILE]``; JSON on stdout (and in ``--out``).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import emit, figure, machine

TARGET_S = 1.0
ROOT = Path(__file__).resolve().parents[1]
AURP_SHORT = ROOT.parent / "shared/data/grammar-aurp/eval_results_results_short_balanced.json"


def timed(cmd: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, capture_output=True, check=True, timeout=60)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--n", type=int, default=3)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    cli = str(Path(sys.executable).with_name("groundwatch"))
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "groundwatch --help": [cli, "--help"],
        "groundwatch gen --help": [cli, "gen", "--help"],
    }
    if AURP_SHORT.exists():
        commands["groundwatch report (157 groups)"] = [
            cli, "report", "-q", "-g", f"short={AURP_SHORT}"
        ]  # fmt: skip
    for cmd in commands.values():  # page cache and .pyc files: what a second call finds
        timed(cmd)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(args.n):
        for name, cmd in commands.items():
            times[name].append(timed(cmd))
    median = {name: round(statistics.median(t), 3) for name, t in times.items()}
    ours = {k: v for k, v in median.items() if k.startswith("groundwatch")}
    worst = max(ours, key=lambda k: ours[k])
    result: dict[str, Any] = {
        "bench": "cli",
        **machine(),
        "seconds": median,
        "runs": times,
        "report_measured": AURP_SHORT.exists(),
        "figures": {
            "cold_start_s": figure(
                "CLI cold start, slowest of `--help`, `gen --help`, `report` on a small file"
                f" (this run: {worst})",
                ours[worst],
                unit=" s",
                target=TARGET_S,
                goal="<=",
                measured=ours[worst],
                baseline=median["python -c pass"],
                baseline_name="the interpreter alone, `python -c pass`",
                absolute_unit="s",
                bound="imports: typer, rich and pydantic's models of the commands; heavy"
                " libraries (scipy, SQLAlchemy, the LLM client, FastAPI) only where a command"
                " uses them",
                digits=3,
            ),
        },
    }
    for name, value in ours.items():
        result["figures"][f"cold_start_{name.split()[1].strip('-') or 'help'}_s"] = figure(
            f"CLI cold start: {name}", value, unit=" s", digits=3
        )
    emit(result, args.out)
    return result


if __name__ == "__main__":
    main()
    sys.exit(0)
