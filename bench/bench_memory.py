"""Memory benchmark: peak RSS of ``groundwatch run --once`` over one cycle of 50k and of 500k
probes against an in-process (``callable``) target.

A cycle's memory must not grow with its probes: the generator streams them, the in-process bus
drops what every stage has committed, nothing keeps a per-judgement object beyond the window's
state, and that state is bounded per group. Issue 33: ``run.peak_rss_mb_50k`` ≤ 400 MB and the
500k-probe cycle ≤ 1.2 × the 50k one (one 49k-probe cycle held 1,565 MB before).

The dataset is the demo's semantic groups cloned (each clone's questions carry its number, so
every probe is a distinct question) to the probe count; the target answers from the demo's
answer book (a sentence holding the SQL answer, a refusal for about one form in ten: the real
judge tiers run), so it holds 2,352 replies whatever the cycle's size. Each run is its own OS
process; its peak RSS is the kernel's (``wait4``'s ``ru_maxrss``).

Usage: ``python bench/bench_memory.py [--probes 50000,500000] [--out FILE]``; JSON on stdout.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
from _common import emit, figure, machine

HERE = Path(__file__).resolve().parent
CLI = str(Path(sys.executable).with_name("groundwatch"))
TARGET_50K_MB = 400.0
#: the 500k-probe cycle's peak over the 50k one's
TARGET_RATIO = 1.2

_REF = re.compile(r" \(ref (\d+)\)$")
_book: Any = None


def answer(question: str) -> dict[str, Any]:
    """The in-process target: the demo's answer to the question without its clone number.

    The answer book is read from the file the benchmark wrote (``BENCH_MEMORY_ANSWERS``):
    building it here would generate the demo domain inside the measured process, ~65 MB of
    the target's own that are not groundwatch's."""
    global _book
    if _book is None:
        from fast_target import AnswerBook

        book = os.environ.get("BENCH_MEMORY_ANSWERS")
        if book:
            _book = AnswerBook.load(Path(book))
        else:
            from groundwatch.demo import demo_dataset

            _book = AnswerBook.from_groups(demo_dataset()[1])
    return dict(_book(_REF.sub("", question)))


def write_answers(path: Path) -> Path:
    """The target's answer book, for :func:`answer` to read in the measured process."""
    from fast_target import AnswerBook

    from groundwatch.demo import demo_dataset

    AnswerBook.from_groups(demo_dataset()[1]).dump(path)
    return path


def write_dataset(path: Path, probes: int) -> int:
    """The demo's groups cloned until ``probes`` probes (one per form); returns the probes."""
    from groundwatch.demo import demo_dataset

    groups = demo_dataset()[1]
    written = 0
    with path.open("wb") as fh:
        k = 0
        while written < probes:
            for g in groups:
                if written >= probes:
                    break
                data = g.model_dump(mode="json")
                data["group_id"] = f"{g.group_id}-{k}"
                for f in data["forms"]:
                    f["form_id"] = f"{f['form_id']}-{k}"
                    f["text"] = f"{f['text']} (ref {k})"
                fh.write(orjson.dumps(data) + b"\n")
                written += len(g.forms)
            k += 1
    return written


def run_once(dataset: Path, tmp: Path) -> dict[str, Any]:
    """``groundwatch run --once`` in its own process: its peak RSS (MB) and seconds."""
    targets = tmp / "targets.yaml"
    targets.write_text(
        "targets:\n  - {name: bench, type: callable, callable: 'bench_memory:answer'}\n"
    )
    db = tmp / f"run-{time.monotonic_ns()}.db"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        "BENCH_MEMORY_ANSWERS": str(tmp / "answers.json"),
    }
    env.pop("GW_DATABASE_URL", None)
    cmd = [CLI, "run", "--once", "--dataset", str(dataset), "--targets", str(targets)]
    cmd += ["--database-url", f"sqlite:///{db}"]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1, 3):  # 1: a threshold; 3: dead letters — neither is a failure here
        raise RuntimeError(f"run --once exited {code}: {(err or out)[-2000:]}")
    db.unlink(missing_ok=True)
    return {"peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "seconds": round(seconds, 1)}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--probes", default="50000,500000", help="probes per cycle, comma-separated")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    sizes = [int(x) for x in args.probes.split(",")]
    runs: dict[int, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="gw-bench-memory-") as d:
        tmp = Path(d)
        write_answers(tmp / "answers.json")
        for n in sizes:
            dataset = tmp / f"groups-{n}.jsonl"
            probes = write_dataset(dataset, n)
            runs[n] = {"probes": probes, **run_once(dataset, tmp)}
            dataset.unlink()
    figures: dict[str, Any] = {}
    small = runs.get(sizes[0])
    for n, r in runs.items():
        label = f"{n // 1000}k"
        ratio = n != sizes[0] and small is not None
        figures[f"peak_rss_mb_{label}"] = figure(
            f"run --once: peak RSS of one {r['probes']:,}-probe cycle, in-process target",
            r["peak_rss_mb"],
            unit=" MB",
            target=TARGET_RATIO * small["peak_rss_mb"] if ratio and small else TARGET_50K_MB,
            goal="<=",
            measured=r["seconds"],
            absolute_unit="s for the run",
            bound="the process's own footprint (interpreter, libraries) plus what a cycle keeps:"
            " each group's window state; probes, messages and judgements stream",
            digits=1,
        )
    result = {"bench": "run", **machine(), "runs": {str(k): v for k, v in runs.items()}}
    result["figures"] = figures
    emit(result, args.out)
    return result


if __name__ == "__main__":
    main()
    sys.exit(0)
