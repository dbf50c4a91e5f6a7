"""Analytics benchmark: judgements/s into the tagger, and the cost of the numbers /metrics reads.

Measures, in-process and single-threaded (one tagger = one partition-owning consumer):
* ``ingest_per_s`` — ``Tagger.apply`` on pre-built observations (target ≥ 100 000/s);
* ``ingest_with_build_per_s`` — the same including building each ``Observation`` (what the
  consumer does per message after parsing);
* ``ingest_windowed_per_s`` — with a ``Window(runs=1)`` so that every run evicts the previous one;
* ``status_counts_ms`` / ``verdict_counts_ms`` / ``cohort_numbers_ms`` / ``cause_counts_*_ms``
  with 10 000 semantic groups (20 000 group × cohort tallies) tracked: cause counts after a
  full run has touched every group (the worst case), with nothing touched, with one group
  touched, and one budgeted
  ``refresh_causes(max_groups=1000)`` (what the consumer loop runs between batches);
* ``report_ms`` — the full JSON report over the same data.

Usage: ``python bench/bench_analytics.py [--groups 10000] [--forms 3] [--out FILE]``; JSON on
stdout (and in ``--out``).
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from groundwatch.core.model import Verdict
from groundwatch.core.tagging import Observation, Tagger, Window
from groundwatch.report.build import report_from_tagger

TARGET_INGEST_PER_S = 100_000


def make_observations(groups: int, forms: int, run: str, seed: int) -> list[Observation]:
    rng = random.Random(seed)
    verdicts = [Verdict.CORRECT] * 6 + [Verdict.INCORRECT] * 3 + [Verdict.ERROR]
    out = []
    for g in range(groups):
        gap = rng.random() < 0.2
        for cohort in ("short", "long"):
            for f in range(forms):
                v = Verdict.INCORRECT if gap else rng.choice(verdicts)
                out.append(
                    Observation(
                        probe_id=f"{run}-{g}-{cohort}-{f}",
                        target="prod",
                        cohort=cohort,
                        group_id=f"g{g:05d}",
                        form_id=f"{cohort}{f}",
                        verdict=v,
                        run_id=run,
                        group_forms=forms,
                        retrieved_ids=(f"d{rng.randrange(50)}",),
                    )
                )
    return out


def best_of(n: int, fn: Callable[[], Any]) -> float:
    best = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=10_000)
    ap.add_argument("--forms", type=int, default=3, help="forms per group per cohort")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)

    obs = make_observations(args.groups, args.forms, "r1", seed=1)
    n = len(obs)

    def ingest() -> Tagger:
        t = Tagger()
        apply = t.apply
        for o in obs:
            apply(o)
        return t

    ingest_s = best_of(args.repeat, ingest)

    fields = [
        (
            o.probe_id,
            o.target,
            o.cohort,
            o.group_id,
            o.form_id,
            o.verdict,
            o.run_id,
            o.group_forms,
            o.retrieved_ids,
        )
        for o in obs
    ]

    def ingest_with_build() -> None:
        t = Tagger()
        for pid, tg, c, g, f, v, r, k, ids in fields:
            t.apply(Observation(pid, tg, c, g, f, v, run_id=r, group_forms=k, retrieved_ids=ids))

    build_s = best_of(args.repeat, ingest_with_build)

    runs = [make_observations(args.groups, args.forms, f"r{i}", seed=i) for i in range(1, 4)]

    def ingest_windowed() -> None:
        t = Tagger(Window(runs=1))
        for batch in runs:
            for o in batch:
                t.apply(o)

    windowed_s = best_of(args.repeat, ingest_windowed)

    tagger = ingest()
    tracked = len(list(tagger.tallies()))
    budget_s = best_of(1, lambda: tagger.refresh_causes(max_groups=1000))
    ingest()  # warm caches equally for the numbers below
    tagger = ingest()
    status_s = best_of(20, tagger.status_counts)
    verdict_s = best_of(20, tagger.verdict_counts)
    numbers_s = best_of(20, tagger.cohort_numbers)
    cause_full_s = best_of(1, tagger.cause_counts)  # every group dirty after the run
    cause_clean_s = best_of(20, tagger.cause_counts)  # nothing touched since
    # one new judgement per group (a scrape every ~10k judgements): dirty set of 1 group each
    extra = Observation(
        "extra",
        "prod",
        "short",
        "g00000",
        "short0",
        Verdict.CORRECT,
        run_id="r1",
        group_forms=args.forms,
    )
    tagger.apply(extra)
    cause_one_s = best_of(1, tagger.cause_counts)
    report_s = best_of(1, lambda: report_from_tagger(tagger))

    result = {
        "bench": "analytics",
        "python": platform.python_version(),
        "machine": platform.machine(),
        "judgements": n,
        "groups_tracked": tracked,
        "semantic_groups": args.groups,
        "ingest_per_s": round(n / ingest_s),
        "ingest_with_build_per_s": round(n / build_s),
        "ingest_windowed_per_s": round(3 * n / windowed_s),
        "ingest_target_per_s": TARGET_INGEST_PER_S,
        "ingest_ok": n / ingest_s >= TARGET_INGEST_PER_S,
        "status_counts_ms": round(status_s * 1e3, 4),
        "verdict_counts_ms": round(verdict_s * 1e3, 4),
        "cohort_numbers_ms": round(numbers_s * 1e3, 4),
        "cause_counts_all_dirty_ms": round(cause_full_s * 1e3, 3),
        "cause_counts_clean_ms": round(cause_clean_s * 1e3, 4),
        "cause_counts_one_dirty_ms": round(cause_one_s * 1e3, 4),
        "refresh_causes_1000_groups_ms": round(budget_s * 1e3, 3),
        "report_ms": round(report_s * 1e3, 1),
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    return result


if __name__ == "__main__":
    ok = main()["ingest_ok"]
    sys.exit(0 if ok else 1)
