"""Answer and retrieval metrics (Oro et al.): EM, token P/R/F1, BLEU, ROUGE-L, and IR metrics.

Syntactic answer metrics compare a prediction with a reference answer; BLEU and ROUGE-L come from
their reference implementations (``sacrebleu``, Google's ``rouge-score``) rather than being
re-derived here. IR metrics take the ranked ids a retriever returned and the set of relevant ids
(the semantic group's ``relevant_doc_ids``), cut at K where the metric has a K.

Conventions: every score is in [0, 1]; an empty relevant set makes recall-type metrics 0 (there
is nothing to find, and averaging a 1 in would flatter a retriever); ``k`` must be ≥ 1.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from groundwatch.core.judging.normalize import normalize, tokens


@dataclass(frozen=True, slots=True)
class PRF:
    precision: float
    recall: float
    f1: float


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


# -- answer metrics -------------------------------------------------------------------------------
def exact_match(prediction: str, reference: str) -> float:
    """1.0 when both are equal after normalization (case, punctuation, articles, accents)."""
    return 1.0 if normalize(prediction) == normalize(reference) else 0.0


def token_prf(prediction: str, reference: str) -> PRF:
    """SQuAD-style token precision/recall/F1 over normalized tokens, counted as a multiset."""
    pred, ref = tokens(prediction), tokens(reference)
    if not pred or not ref:
        same = float(pred == ref)  # both empty: a perfect match; one empty: nothing shared
        return PRF(same, same, same)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return PRF(0.0, 0.0, 0.0)
    p, r = common / len(pred), common / len(ref)
    return PRF(p, r, _f1(p, r))


def bleu(prediction: str, references: Sequence[str]) -> float:
    """Sentence BLEU (sacrebleu defaults: 13a tokenizer, exp smoothing), scaled to [0, 1]."""
    import sacrebleu

    return float(sacrebleu.sentence_bleu(prediction, list(references)).score) / 100.0


def corpus_bleu(predictions: Sequence[str], references: Sequence[Sequence[str]]) -> float:
    """Corpus BLEU in [0, 1]; ``references[i]`` are the references of ``predictions[i]``."""
    import sacrebleu

    if len(predictions) != len(references):
        raise ValueError("one reference list per prediction")
    width = max((len(r) for r in references), default=0)
    # sacrebleu wants reference *streams*: stream j holds the j-th reference of every prediction
    streams = [[refs[j] if j < len(refs) else "" for refs in references] for j in range(width)]
    return float(sacrebleu.corpus_bleu(list(predictions), streams).score) / 100.0


@lru_cache(maxsize=4)
def _rouge_scorer(stem: bool) -> Any:
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=stem)


def rouge_l(prediction: str, reference: str, *, stem: bool = False) -> PRF:
    """ROUGE-L (longest common subsequence) precision/recall/F1 from ``rouge-score``."""
    s = _rouge_scorer(stem).score(reference, prediction)["rougeL"]
    return PRF(float(s.precision), float(s.recall), float(s.fmeasure))


# -- IR metrics -----------------------------------------------------------------------------------
def _check_k(k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")


def _dedup(retrieved: Sequence[str]) -> list[str]:
    """Ranked ids with repeats removed (a repeated hit must not count twice)."""
    return list(dict.fromkeys(retrieved))


def recall_at_k(retrieved: Sequence[str], relevant: Sequence[str] | set[str], k: int) -> float:
    """Share of the relevant ids found in the top ``k``."""
    _check_k(k)
    rel = set(relevant)
    if not rel:
        return 0.0
    return len(rel.intersection(_dedup(retrieved)[:k])) / len(rel)


def precision_at_k(retrieved: Sequence[str], relevant: Sequence[str] | set[str], k: int) -> float:
    """Share of the top ``k`` positions holding a relevant id (empty positions are misses)."""
    _check_k(k)
    rel = set(relevant)
    return sum(1 for d in _dedup(retrieved)[:k] if d in rel) / k


def average_precision(
    retrieved: Sequence[str], relevant: Sequence[str] | set[str], k: int | None = None
) -> float:
    """AP: mean of precision@i over the ranks i of relevant hits, divided by all relevant ids."""
    rel = set(relevant)
    if not rel:
        return 0.0
    ranked = _dedup(retrieved)
    if k is not None:
        _check_k(k)
        ranked = ranked[:k]
    hits = 0
    total = 0.0
    for i, d in enumerate(ranked, start=1):
        if d in rel:
            hits += 1
            total += hits / i
    return total / (min(len(rel), k) if k is not None else len(rel))


def reciprocal_rank(retrieved: Sequence[str], relevant: Sequence[str] | set[str]) -> float:
    """1 / rank of the first relevant id; 0 when none is retrieved."""
    rel = set(relevant)
    for i, d in enumerate(_dedup(retrieved), start=1):
        if d in rel:
            return 1.0 / i
    return 0.0


def ndcg_at_k(
    retrieved: Sequence[str],
    relevant: Sequence[str] | set[str] | Mapping[str, float],
    k: int,
) -> float:
    """nDCG@k with gain ``rel`` and discount ``log2(rank + 1)``; binary unless grades are given."""
    _check_k(k)
    grades: Mapping[str, float] = (
        relevant if isinstance(relevant, Mapping) else dict.fromkeys(relevant, 1.0)
    )
    dcg = sum(
        grades.get(d, 0.0) / math.log2(i + 1) for i, d in enumerate(_dedup(retrieved)[:k], start=1)
    )
    ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 1) for i, g in enumerate(ideal, start=1))
    return dcg / idcg if idcg else 0.0


Run = Sequence[tuple[Sequence[str], Sequence[str] | set[str]]]


def mean_average_precision(runs: Run, k: int | None = None) -> float:
    """MAP over (retrieved, relevant) pairs, one per query."""
    return sum(average_precision(r, rel, k) for r, rel in runs) / len(runs) if runs else 0.0


def mean_reciprocal_rank(runs: Run) -> float:
    """MRR over (retrieved, relevant) pairs, one per query."""
    return sum(reciprocal_rank(r, rel) for r, rel in runs) / len(runs) if runs else 0.0


def ir_metrics(
    retrieved: Sequence[str], relevant: Sequence[str] | set[str], k: int
) -> dict[str, float]:
    """Every IR metric of one query at one K, keyed the way dashboards name them."""
    return {
        f"recall@{k}": recall_at_k(retrieved, relevant, k),
        f"precision@{k}": precision_at_k(retrieved, relevant, k),
        f"ap@{k}": average_precision(retrieved, relevant, k),
        "rr": reciprocal_rank(retrieved, relevant),
        f"ndcg@{k}": ndcg_at_k(retrieved, relevant, k),
    }


# -- reliability of an evaluator (GRAMMAR §3) -----------------------------------------------------
@dataclass(frozen=True, slots=True)
class Reliability:
    """An evaluator's verdicts against the truth, "correct" as the positive class.

    Low precision = optimistic (wrong answers judged correct); low recall = cynical (right
    answers judged wrong). ``abstained`` counts items the evaluator could not decide.
    """

    precision: float
    recall: float
    n: int
    abstained: int


def reliability(truth: Sequence[bool], predicted: Sequence[bool | None]) -> Reliability:
    """Precision and recall of ``predicted`` (True = judged correct) against ``truth``."""
    if len(truth) != len(predicted):
        raise ValueError("truth and predicted must have the same length")
    tp = fp = fn = abstained = 0
    for t, p in zip(truth, predicted, strict=True):
        if p is None:
            abstained += 1
        elif p and t:
            tp += 1
        elif p and not t:
            fp += 1
        elif t:
            fn += 1
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    return Reliability(precision, recall, len(truth) - abstained, abstained)
