"""Every decision of the deterministic judge on its development data, and one sha256 over them.

A change meant to make the judge faster must leave each of its decisions as it was; this dump
is how that is checked: run it on the baseline checkout and on the change, and compare the
digests (or ``diff`` the ``--out`` files to see which judgements moved).

Judged, in this order: the items ``bench_judge.py`` times (the demo's forms answered by the
reference RAG, and the GRAMMAR authors' Aurp result files, the balanced ones among them), then
EVOUNA TriviaQA (``../shared/data/evouna-tq/TQ.json``, both halves, read as ``groundwatch
judge-agreement`` reads it). Each is judged twice, cold and then with the gold caches warm, so a
cache that changed an answer shows too. One line per judgement:
``pass\\tverdict\\ttier\\treason\\trepr(scores)``.

Usage: ``python bench/judge_decisions.py [--out FILE]``; prints the count and the sha256.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

from bench_judge import SHARED, Item, aurp_items, demo_items

from groundwatch.core.judging import judge_deterministic


def evouna_items() -> list[Item]:
    """EVOUNA TriviaQA's answered items, as ``judge-agreement`` builds them."""
    from groundwatch.cli.judge_agreement import load_results

    path = SHARED / "data" / "evouna-tq" / "TQ.json"
    return [(r.query, r.expected, r.response) for r in load_results(path) if r.response is not None]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--out", type=Path, help="also write the lines to this file")
    args = ap.parse_args(argv)
    items = demo_items() + [i for i, _ in aurp_items()] + evouna_items()
    lines = []
    for label in ("cold", "warm"):
        for q, e, r in items:
            d = judge_deterministic(q, e, r)
            lines.append(f"{label}\t{d.verdict.value}\t{d.tier}\t{d.reason}\t{d.scores!r}")
    text = "\n".join(lines) + "\n"
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    print(f"{len(items)} items x 2 passes, sha256 {hashlib.sha256(text.encode()).hexdigest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
