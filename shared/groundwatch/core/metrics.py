"""Answer and retrieval metrics (Oro et al.): EM, token P/R/F1, BLEU, ROUGE-L, and IR metrics.

Syntactic answer metrics compare a prediction with a reference answer; BLEU and ROUGE-L come from
their reference implementations (``sacrebleu``, Google's ``rouge-score``) rather than being
re-derived here. IR metrics take the ranked ids a retriever returned and the set of relevant ids
(the semantic group's ``relevant_doc_ids``), cut at K where the metric has a K.

The IR metrics are trec_eval's (``P_k``, ``recall_k``, ``map_cut_k``, ``recip_rank``,
``ndcg_cut_k``), so numbers quoted from here compare with any paper that used trec_eval,
``pytrec_eval``, ``ir-measures`` or ``ranx``; ``tests/unit/test_metrics_oracles.py`` checks them
against ``pytrec_eval`` on thousands of random rankings. Two conventions come on top, because a
ranked *list* of ids is not a trec_eval run: a repeated id counts at its first rank only (chunks
of one document are one document), and an empty relevant set scores 0 (trec_eval's answer too).

Every score is in [0, 1]; ``k`` must be ≥ 1.
"""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, cast

import regex

from groundwatch.core.judging.normalize import fold, normalize, tokens


@dataclass(frozen=True, slots=True)
class PRF:
    precision: float
    recall: float
    f1: float


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


# -- answer metrics -------------------------------------------------------------------------------
#: How EM and token F1 normalise text before comparing.
#:
#: * ``"groundwatch"`` (default) — the judge's normalisation
#:   (:func:`groundwatch.core.judging.normalize.tokens`): Unicode-folded (NFKD, accents dropped,
#:   case-folded, typographic quotes made ASCII), *every* punctuation character a token separator,
#:   articles a/an/the dropped. So ``"U.S."`` becomes the two tokens ``u s`` and does not match
#:   ``"US"``; ``"Élysée"`` matches ``"elysee"``. Kept as the default so that these metrics agree
#:   with the verdicts of the deterministic judge tiers.
#: * ``"squad"`` — the official SQuAD v2.0 evaluation script: lower-cased, ASCII punctuation
#:   *deleted* (``"U.S."`` → ``us``), articles dropped, split on whitespace; accents and non-ASCII
#:   punctuation are kept. EM/F1 in this mode are the numbers SQuAD-style papers report.
Normalization = Literal["groundwatch", "squad"]

_SQUAD_PUNCT = str.maketrans("", "", string.punctuation)
_SQUAD_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def squad_normalize(text: str) -> str:
    """The SQuAD v2.0 script's ``normalize_answer``: lower, drop punctuation, articles, spaces."""
    text = text.lower().translate(_SQUAD_PUNCT)
    return " ".join(_SQUAD_ARTICLES.sub(" ", text).split())


def _tokens(text: str, normalization: Normalization) -> list[str]:
    if normalization == "squad":
        return squad_normalize(text).split()
    if normalization == "groundwatch":
        return tokens(text)
    raise ValueError(f"unknown normalization {normalization!r}")


def exact_match(
    prediction: str, reference: str, *, normalization: Normalization = "groundwatch"
) -> float:
    """1.0 when both are equal after normalisation (see :data:`Normalization`), else 0.0."""
    if normalization == "squad":
        return float(squad_normalize(prediction) == squad_normalize(reference))
    if normalization == "groundwatch":
        return float(normalize(prediction) == normalize(reference))
    raise ValueError(f"unknown normalization {normalization!r}")


def token_prf(
    prediction: str, reference: str, *, normalization: Normalization = "groundwatch"
) -> PRF:
    """Token precision/recall/F1 over normalised tokens, counted as a multiset (SQuAD's F1).

    As in the SQuAD v2.0 script, two empty answers agree (1.0) and one empty answer shares
    nothing (0.0).
    """
    return token_prf_of(_tokens(prediction, normalization), _tokens(reference, normalization))


def token_prf_of(pred: Sequence[str], ref: Sequence[str]) -> PRF:
    """:func:`token_prf` of two already normalised token lists."""
    if not pred or not ref:
        same = float(list(pred) == list(ref))
        return PRF(same, same, same)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return PRF(0.0, 0.0, 0.0)
    p, r = common / len(pred), common / len(ref)
    return PRF(p, r, _f1(p, r))


def _unit(score: float) -> float:
    """sacrebleu's 0–100 score in [0, 1]: a perfect match comes back as exp(log(...)) ≈
    100.00000000000004, which must not read as more than perfect."""
    return min(float(score) / 100.0, 1.0)


def bleu(prediction: str, references: Sequence[str]) -> float:
    """Sentence BLEU (sacrebleu defaults: 13a tokenizer, exp smoothing), scaled to [0, 1].

    BLEU with no reference is undefined, so an empty ``references`` is a caller error.
    """
    import sacrebleu

    if not references:
        raise ValueError("BLEU needs at least one reference")
    return _unit(sacrebleu.sentence_bleu(prediction, list(references)).score)


def corpus_bleu(predictions: Sequence[str], references: Sequence[Sequence[str]]) -> float:
    """Corpus BLEU in [0, 1]; ``references[i]`` are the references of ``predictions[i]``.

    Predictions may have different numbers of references. sacrebleu wants reference *streams*
    (stream j holds the j-th reference of every prediction); a prediction with fewer references
    gets ``None`` in the streams it lacks, which sacrebleu skips. Padding with ``""`` instead
    would add an empty reference, whose length 0 is always "closest" and so switches the brevity
    penalty off.
    """
    import sacrebleu

    if len(predictions) != len(references):
        raise ValueError("one reference list per prediction")
    if not predictions:
        raise ValueError("corpus BLEU needs at least one prediction")
    if any(not refs for refs in references):
        raise ValueError("BLEU needs at least one reference per prediction")
    width = max(len(r) for r in references)
    streams = [[refs[j] if j < len(refs) else None for refs in references] for j in range(width)]
    # sacrebleu's hints say str, but its reference cache drops None by design ("variable number
    # of references per segment"); it keeps "" as a real, empty reference
    typed = cast(list[list[str]], streams)
    return _unit(sacrebleu.corpus_bleu(list(predictions), typed).score)


#: Scripts written without spaces between words: each character (with its combining marks) is a
#: token, as word segmentation would need a dictionary per language.
_SPACELESS = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}"
_ROUGE_TOKEN = regex.compile(
    rf"[{_SPACELESS}]\p{{M}}*|(?:(?![{_SPACELESS}])[\p{{L}}\p{{N}}]\p{{M}}*)+"
)
_ASCII_WORD = re.compile(r"[a-z0-9]+")


class RougeTokenizer:
    """rouge-score's tokenizer made Unicode-aware, for ``RougeScorer(tokenizer=...)``.

    rouge-score's default keeps only ``[a-z0-9]`` runs, so any non-Latin answer scores 0 and an
    accented word is cut in two. Here text is folded like the judge's (NFKD, Latin accents
    dropped, case-folded) and recomposed (NFC), a token is a run of letters, digits and their
    combining marks, and CJK, Thai, Lao, Khmer and Myanmar characters are one token each. On
    ASCII text this is exactly rouge-score's default tokenizer, stemming included (Porter, words
    longer than 3 characters), which the oracle tests check.
    """

    def __init__(self, stem: bool = False) -> None:
        self._stemmer: Any = None
        if stem:
            from nltk.stem import porter

            self._stemmer = porter.PorterStemmer()

    def tokenize(self, text: str) -> list[str]:
        folded = fold(text)
        if folded.isascii():
            toks = _ASCII_WORD.findall(folded)
        else:
            toks = _ROUGE_TOKEN.findall(unicodedata.normalize("NFC", folded))
        if self._stemmer is not None:
            toks = [
                self._stemmer.stem(t) if len(t) > 3 and _ASCII_WORD.fullmatch(t) else t
                for t in toks
            ]
        return toks


@lru_cache(maxsize=4)
def _rouge(stem: bool) -> tuple[RougeTokenizer, Any]:
    from rouge_score import rouge_scorer

    tokenizer = RougeTokenizer(stem)
    return tokenizer, rouge_scorer.RougeScorer(["rougeL"], tokenizer=tokenizer)


def rouge_l(prediction: str, reference: str, *, stem: bool = False) -> PRF:
    """ROUGE-L (longest common subsequence) precision/recall/F1 from ``rouge-score``.

    Tokens come from :class:`RougeTokenizer` (Unicode-aware). Two answers without any token agree
    (1.0), like EM and token F1; rouge-score itself would return 0 there.
    """
    tokenizer, scorer = _rouge(stem)
    if not tokenizer.tokenize(prediction) and not tokenizer.tokenize(reference):
        return PRF(1.0, 1.0, 1.0)
    s = scorer.score(reference, prediction)["rougeL"]
    return PRF(float(s.precision), float(s.recall), float(s.fmeasure))


# -- IR metrics -----------------------------------------------------------------------------------
def _check_k(k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")


def _dedup(retrieved: Sequence[str]) -> list[str]:
    """Ranked ids with repeats removed (a repeated hit must not count twice)."""
    return list(dict.fromkeys(retrieved))


def recall_at_k(retrieved: Sequence[str], relevant: Collection[str], k: int) -> float:
    """Share of the relevant ids found in the top ``k`` (trec_eval ``recall_k``)."""
    _check_k(k)
    rel = set(relevant)
    if not rel:
        return 0.0
    return len(rel.intersection(_dedup(retrieved)[:k])) / len(rel)


def precision_at_k(retrieved: Sequence[str], relevant: Collection[str], k: int) -> float:
    """Share of the top ``k`` positions holding a relevant id (trec_eval ``P_k``: a list shorter
    than ``k`` is not excused, its empty positions are misses)."""
    _check_k(k)
    rel = set(relevant)
    return sum(1 for d in _dedup(retrieved)[:k] if d in rel) / k


def average_precision(
    retrieved: Sequence[str], relevant: Collection[str], k: int | None = None
) -> float:
    """AP (trec_eval ``map``), or AP@K (trec_eval ``map_cut_k``) when ``k`` is given.

    The sum of precision@i over the ranks i ≤ k of relevant hits, divided by the number of
    relevant ids — all of them, not ``min(|rel|, k)``: a relevant id that did not make the top k
    counts as missed, as in trec_eval, ``ranx`` and ``ir-measures``. So a perfect ranking of 2
    relevant ids scores 0.5 at k = 1.
    """
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
    return total / len(rel)


def reciprocal_rank(retrieved: Sequence[str], relevant: Collection[str]) -> float:
    """1 / rank of the first relevant id; 0 when none is retrieved (trec_eval ``recip_rank``)."""
    rel = set(relevant)
    for i, d in enumerate(_dedup(retrieved), start=1):
        if d in rel:
            return 1.0 / i
    return 0.0


def ndcg_at_k(
    retrieved: Sequence[str],
    relevant: Collection[str] | Mapping[str, float],
    k: int,
) -> float:
    """nDCG@k as trec_eval's ``ndcg_cut_k``: gain = grade, discount ``log2(rank + 1)``.

    Binary unless grades are given. A grade ≤ 0 (judged non-relevant, or a negative "harmful"
    grade) gains nothing: a negative gain would let the score leave [0, 1].
    """
    _check_k(k)
    grades: Mapping[str, float] = (
        relevant if isinstance(relevant, Mapping) else dict.fromkeys(relevant, 1.0)
    )
    dcg = sum(
        max(grades.get(d, 0.0), 0.0) / math.log2(i + 1)
        for i, d in enumerate(_dedup(retrieved)[:k], start=1)
    )
    ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 1) for i, g in enumerate(ideal, start=1))
    return dcg / idcg if idcg else 0.0


Run = Sequence[tuple[Sequence[str], Collection[str]]]


def mean_average_precision(runs: Run, k: int | None = None) -> float:
    """MAP over (retrieved, relevant) pairs, one per query."""
    return sum(average_precision(r, rel, k) for r, rel in runs) / len(runs) if runs else 0.0


def mean_reciprocal_rank(runs: Run) -> float:
    """MRR over (retrieved, relevant) pairs, one per query."""
    return sum(reciprocal_rank(r, rel) for r, rel in runs) / len(runs) if runs else 0.0


def ir_metrics(retrieved: Sequence[str], relevant: Collection[str], k: int) -> dict[str, float]:
    """Every IR metric of one query at one K, keyed the way dashboards name them."""
    return {
        f"recall@{k}": recall_at_k(retrieved, relevant, k),
        f"precision@{k}": precision_at_k(retrieved, relevant, k),
        f"ap@{k}": average_precision(retrieved, relevant, k),
        "rr": reciprocal_rank(retrieved, relevant),
        f"ndcg@{k}": ndcg_at_k(retrieved, relevant, k),
    }
