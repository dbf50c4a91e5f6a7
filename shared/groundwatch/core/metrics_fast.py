"""The per-answer metrics of :mod:`.metrics`, computed fast enough for the judge's hot path.

The judge scores every response it judges; ``rouge-score``'s LCS table and sacrebleu's per-call
set-up cost 100–400 µs an answer, ten to thirty times what the rules take to judge it. The same
numbers come out of:

* :func:`rouge_l_f1` — the same tokenizer (:class:`.metrics.RougeTokenizer`) and rouge-score's
  precision, recall and F-measure formulas, with the LCS length from a bit-parallel algorithm
  (Allison & Dix 1986; Hyyrö 2004) instead of an O(n·m) table of Python lists;
* :func:`sentence_bleu` — sacrebleu's own 13a tokenizer and its sentence-BLEU arithmetic
  (``exp`` smoothing, effective order, closest reference length) for one reference, without
  building a metric object, a reference cache and n-gram tuples per call;
* :func:`ir_scores` — trec_eval's five IR metrics of :func:`.metrics.ir_metrics` in one pass.

``tests/unit/test_metrics_fast.py`` checks each against its reference implementation, bit for bit,
on real answers and on thousands of random strings and rankings.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Sequence
from functools import lru_cache
from typing import Any

from groundwatch.core.metrics import RougeTokenizer, _unit

_ROUGE = RougeTokenizer(stem=False)


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token lists (bit-parallel, exact)."""
    if len(a) < len(b):
        a, b = b, a  # the bit vector runs over the longer sequence: fewer Python-level steps
    m = len(a)
    if not m or not b:
        return 0
    masks: dict[str, int] = {}
    for i, token in enumerate(a):
        masks[token] = masks.get(token, 0) | (1 << i)
    full = (1 << m) - 1
    s = full
    for token in b:
        u = s & masks.get(token, 0)
        s = ((s + u) | (s - u)) & full
    return m - s.bit_count()


def rouge_l_f1(prediction: str, reference: str) -> float:
    """ROUGE-L F-measure as :func:`.metrics.rouge_l` computes it (``stem=False``)."""
    pred = _ROUGE.tokenize(prediction)
    ref = _ROUGE.tokenize(reference)
    if not pred and not ref:
        return 1.0
    if not pred or not ref:
        return 0.0
    lcs = lcs_length(ref, pred)
    precision = lcs / len(pred)
    recall = lcs / len(ref)
    if precision + recall > 0:
        return float(2 * precision * recall / (precision + recall))
    return 0.0


@lru_cache(maxsize=1)
def _tokenizer_13a() -> Any:
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    return Tokenizer13a()  # type: ignore[no-untyped-call]


def _ngrams(tokens: list[str], max_order: int) -> Counter[tuple[str, ...]]:
    grams: Counter[tuple[str, ...]] = Counter()
    for n in range(1, max_order + 1):
        grams.update(zip(*(tokens[i:] for i in range(n)), strict=False))
    return grams


def sentence_bleu(prediction: str, reference: str) -> float:
    """sacrebleu's ``sentence_bleu(prediction, [reference])`` (13a, exp smoothing, effective
    order) scaled to [0, 1], as :func:`.metrics.bleu` returns it.

    Only n-grams of the prediction that start with a reference token can match, so only those
    are counted (the reference is a short gold answer, the prediction often a sentence); the
    prediction's totals per order are its length minus n plus one, as sacrebleu counts them."""
    tokenize = _tokenizer_13a()
    hyp = tokenize(prediction.rstrip()).split()
    ref = tokenize(reference.rstrip()).split()
    hyp_len, ref_len = len(hyp), len(ref)
    orders = min(4, ref_len, hyp_len)
    ref_grams = _ngrams(ref, orders)
    vocabulary = set(ref)
    matched: Counter[tuple[str, ...]] = Counter()
    for i, token in enumerate(hyp):
        if token in vocabulary:
            for n in range(1, min(orders, hyp_len - i) + 1):
                gram = tuple(hyp[i : i + n])
                if gram not in ref_grams:
                    break  # a longer n-gram from here contains this one: cannot match either
                matched[gram] += 1
    correct = [0, 0, 0, 0]
    total = [max(0, hyp_len - n) for n in range(4)]
    for gram, count in matched.items():
        correct[len(gram) - 1] += min(count, ref_grams[gram])
    bp = 1.0
    if hyp_len < ref_len:
        bp = math.exp(1 - ref_len / hyp_len) if hyp_len > 0 else 0.0
    if not any(correct):
        return 0.0
    precisions = [0.0, 0.0, 0.0, 0.0]
    smooth = 1.0
    order = 4
    for n in range(1, 5):
        if total[n - 1] == 0:
            break
        order = n
        if correct[n - 1] == 0:
            smooth *= 2
            precisions[n - 1] = 100.0 / (smooth * total[n - 1])
        else:
            precisions[n - 1] = 100.0 * correct[n - 1] / total[n - 1]
    logs = [math.log(p) if p != 0.0 else -9999999999 for p in precisions[:order]]
    return _unit(bp * math.exp(sum(logs) / order))


def ir_scores(
    retrieved: Sequence[str], relevant: Collection[str], k: int
) -> tuple[float, float, float, float, float]:
    """(recall@k, precision@k, AP@k, RR, nDCG@k) exactly as :func:`.metrics.ir_metrics`,
    in one pass over the de-duplicated ranking."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    rel = relevant if isinstance(relevant, set | frozenset) else set(relevant)
    if not rel:
        return 0.0, 0.0, 0.0, 0.0, 0.0
    seen: set[str] = set()
    rank = 0
    hits_k = 0
    ap = 0.0
    rr = 0.0
    dcg = 0.0
    for d in retrieved:
        if d in seen:
            continue
        seen.add(d)
        rank += 1
        if d in rel:
            if rr == 0.0:
                rr = 1.0 / rank
            if rank <= k:
                hits_k += 1
                ap += hits_k / rank
                dcg += 1.0 / math.log2(rank + 1)
        if rank >= k and rr:
            break
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(rel), k) + 1))
    return hits_k / len(rel), hits_k / k, ap / len(rel), rr, dcg / ideal
