"""Oro et al.'s metric set for one judged answer, and running means of it per group.

The judge's verdict says whether an answer is right; these numbers say how close it came (EM,
token F1, ROUGE-L, BLEU against the gold answer) and how well the retriever served it (Recall@K,
Precision@K, AP@K, RR, nDCG@K), so that a report or a dashboard can show them next to accuracy
for each target × cohort × scenario. :func:`score_answer` scores one answer (with the exact,
fast implementations of :mod:`.metrics_fast`: the judge scores every response);
:class:`MetricMeans` keeps one running mean per group and metric, never the answers themselves,
and merges with another (one per worker or partition) exactly.

Everything here is pure and JSON-ready: a metric that is undefined for an answer is ``None``,
never NaN and never a made-up 0.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from groundwatch.core.judging.normalize import tokens
from groundwatch.core.metrics import Normalization, exact_match, token_prf, token_prf_of
from groundwatch.core.metrics_fast import ir_scores, rouge_l_f1, sentence_bleu
from groundwatch.core.scores import AnswerScores, RetrievalScores

#: The K of the IR metrics unless the caller knows the target's own top-k.
DEFAULT_K = 5


@dataclass(frozen=True, slots=True)
class ScoredAnswer:
    """The scores of one answer; ``None`` where the score is undefined for it.

    Text scores are ``None`` when there is no gold text (an unanswerable probe, RAGProbe S6);
    IR scores when the target reported no retrieved ids or the probe has no relevant document.
    """

    k: int
    exact_match: float | None = None
    token_f1: float | None = None
    rouge_l: float | None = None
    bleu: float | None = None
    recall_at_k: float | None = None
    precision_at_k: float | None = None
    ap_at_k: float | None = None
    reciprocal_rank: float | None = None
    ndcg_at_k: float | None = None

    def as_dict(self) -> dict[str, float | None]:
        """Keyed as dashboards name them (IR keys as in :func:`.metrics.ir_metrics`); every key
        is present, undefined ones as ``None``."""
        k = self.k
        return {
            "exact_match": self.exact_match,
            "token_f1": self.token_f1,
            "rouge_l": self.rouge_l,
            "bleu": self.bleu,
            f"recall@{k}": self.recall_at_k,
            f"precision@{k}": self.precision_at_k,
            f"ap@{k}": self.ap_at_k,
            "rr": self.reciprocal_rank,
            f"ndcg@{k}": self.ndcg_at_k,
        }


def answer_scores(m: ScoredAnswer) -> AnswerScores:
    """An answer's text scores as the judgement carries them (at the judge's K)."""
    return AnswerScores(m.k, m.exact_match, m.token_f1, m.rouge_l, m.bleu)


def retrieval_scores(m: ScoredAnswer) -> RetrievalScores | None:
    """An answer's IR metrics as the judgement carries them; ``None`` when undefined (no
    ranking, or nothing relevant)."""
    if (
        m.recall_at_k is None
        or m.precision_at_k is None
        or m.ap_at_k is None
        or m.reciprocal_rank is None
        or m.ndcg_at_k is None
    ):
        return None
    return RetrievalScores(
        m.k, m.recall_at_k, m.precision_at_k, m.ap_at_k, m.reciprocal_rank, m.ndcg_at_k
    )


def gold_text(gold_values: Sequence[str]) -> str:
    """The reference text of a gold answer: its non-blank parts in order, joined by ", ".

    A multi-column gold answer (``Expected.values``) needs every part, so the parts are one
    reference, not alternatives: answering one part of two must not score as a perfect match.
    """
    return ", ".join(v.strip() for v in gold_values if v.strip())


def score_answer(
    answer: str,
    gold_values: Sequence[str],
    *,
    retrieved_ids: Sequence[str] | None = None,
    relevant_ids: Collection[str] | None = None,
    k: int = DEFAULT_K,
    normalization: Normalization = "groundwatch",
) -> ScoredAnswer:
    """Oro et al.'s syntactic and IR scores of one answer.

    ``gold_values`` are the parts of the gold answer (``Expected.values``), scored as one
    reference (:func:`gold_text`). ``retrieved_ids`` is the target's ranking, ``None`` when the
    target does not report one (an empty list means it retrieved nothing, which scores 0);
    ``relevant_ids`` the group's ``relevant_doc_ids``. IR metrics need both and at least one
    relevant id: with nothing to find, recall is undefined, and trec_eval's 0 would drag every
    mean down with probes that are not about retrieval. ``normalization`` is EM's and token F1's
    (see :data:`~groundwatch.core.metrics.Normalization`).
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    em = f1 = rouge = bleu_score = None
    reference = gold_text(gold_values)
    if reference:
        if normalization == "groundwatch":
            # normalize() is " ".join(tokens()): one tokenization each serves EM and F1
            pred_tokens, ref_tokens = tokens(answer), tokens(reference)
            em = float(pred_tokens == ref_tokens)
            f1 = token_prf_of(pred_tokens, ref_tokens).f1
        else:
            em = exact_match(answer, reference, normalization=normalization)
            f1 = token_prf(answer, reference, normalization=normalization).f1
        rouge = rouge_l_f1(answer, reference)
        bleu_score = sentence_bleu(answer, reference)
    if retrieved_ids is not None and relevant_ids:
        recall, precision, ap, rr, ndcg = ir_scores(retrieved_ids, relevant_ids, k)
        return ScoredAnswer(k, em, f1, rouge, bleu_score, recall, precision, ap, rr, ndcg)
    return ScoredAnswer(k, em, f1, rouge, bleu_score)


@dataclass(slots=True)
class RunningMean:
    """Count, mean and sum of squared deviations (Welford), plus how many values were undefined.

    O(1) memory, numerically stable, and mergeable exactly (Chan et al.'s parallel update), so a
    mean over many workers is the mean over all their answers.
    """

    count: int = 0
    mean: float = 0.0
    m2: float = 0.0
    undefined: int = 0

    def add(self, value: float | None) -> None:
        if value is None:
            self.undefined += 1
            return
        x = float(value)
        if not math.isfinite(x):
            raise ValueError(f"a metric value must be finite, got {value!r}")
        self.count += 1
        delta = x - self.mean
        self.mean += delta / self.count
        self.m2 += delta * (x - self.mean)

    def merge(self, other: RunningMean) -> None:
        self.undefined += other.undefined
        if other.count == 0:
            return
        if self.count == 0:
            self.count, self.mean, self.m2 = other.count, other.mean, other.m2
            return
        n = self.count + other.count
        delta = other.mean - self.mean
        self.mean += delta * other.count / n
        self.m2 += other.m2 + delta * delta * self.count * other.count / n
        self.count = n

    @property
    def value(self) -> float | None:
        """The mean, or None when no value was defined."""
        return self.mean if self.count else None

    @property
    def variance(self) -> float | None:
        """Sample variance (n - 1), None under two values."""
        return self.m2 / (self.count - 1) if self.count > 1 else None

    @property
    def std_error(self) -> float | None:
        v = self.variance
        return math.sqrt(v / self.count) if v is not None else None


@dataclass(slots=True)
class _Group:
    answers: int = 0
    metrics: dict[str, RunningMean] = field(default_factory=dict)


class MetricMeans:
    """Running means of per-answer metrics, one per group (target × cohort × scenario by default)
    and metric.

    Memory is bounded: at most ``max_groups`` groups, each with one :class:`RunningMean` per
    metric name; answers of a group beyond the cap are counted in ``dropped`` rather than kept.
    Two instances with the same dimensions merge into one (:meth:`merge`), and
    :meth:`to_dict` / :meth:`from_dict` carry one across processes as JSON.
    """

    def __init__(
        self,
        dimensions: Sequence[str] = ("target", "cohort", "scenario"),
        *,
        max_groups: int = 10_000,
    ) -> None:
        if not dimensions or len(set(dimensions)) != len(dimensions):
            raise ValueError("dimensions must be distinct names")
        if max_groups < 1:
            raise ValueError("max_groups must be >= 1")
        self.dimensions: tuple[str, ...] = tuple(dimensions)
        self.max_groups = max_groups
        self.dropped = 0
        self._groups: dict[tuple[str, ...], _Group] = {}

    def __len__(self) -> int:
        return len(self._groups)

    def _group(self, key: Sequence[str], answers: int) -> _Group | None:
        group = tuple(key)
        if len(group) != len(self.dimensions):
            raise ValueError(f"a group key has one label per dimension {self.dimensions}")
        g = self._groups.get(group)
        if g is None:
            if len(self._groups) >= self.max_groups:
                self.dropped += answers
                return None
            g = self._groups[group] = _Group()
        return g

    def add(self, group: Sequence[str], metrics: Mapping[str, float | None] | ScoredAnswer) -> None:
        """Count one answer's metrics (``None`` values count as undefined) in ``group``."""
        values = metrics.as_dict() if isinstance(metrics, ScoredAnswer) else metrics
        g = self._group(group, 1)
        if g is None:
            return
        for name, value in values.items():
            g.metrics.setdefault(name, RunningMean()).add(value)
        g.answers += 1

    def merge(self, other: MetricMeans) -> None:
        """Add everything ``other`` counted (``other`` is left as it was)."""
        if other.dimensions != self.dimensions:
            raise ValueError(f"cannot merge {other.dimensions} into {self.dimensions}")
        self.dropped += other.dropped
        for key, theirs in other._groups.items():
            g = self._group(key, theirs.answers)
            if g is None:
                continue
            g.answers += theirs.answers
            for name, stat in theirs.metrics.items():
                g.metrics.setdefault(name, RunningMean()).merge(stat)

    def get(self, group: Sequence[str], metric: str) -> RunningMean | None:
        g = self._groups.get(tuple(group))
        return None if g is None else g.metrics.get(metric)

    def mean(self, group: Sequence[str], metric: str) -> float | None:
        stat = self.get(group, metric)
        return None if stat is None else stat.value

    def answers(self, group: Sequence[str]) -> int:
        g = self._groups.get(tuple(group))
        return 0 if g is None else g.answers

    def rows(self) -> list[dict[str, Any]]:
        """One JSON-ready row per group and metric, sorted: the dimensions' labels, ``metric``,
        ``answers``, ``count`` (defined values), ``undefined``, ``mean`` and ``std_error``."""
        out: list[dict[str, Any]] = []
        for key in sorted(self._groups):
            g = self._groups[key]
            for name in sorted(g.metrics):
                stat = g.metrics[name]
                out.append(
                    {
                        **dict(zip(self.dimensions, key, strict=True)),
                        "metric": name,
                        "answers": g.answers,
                        "count": stat.count,
                        "undefined": stat.undefined,
                        "mean": stat.value,
                        "std_error": stat.std_error,
                    }
                )
        return out

    def to_dict(self) -> dict[str, Any]:
        """The full state as JSON-ready data (what :meth:`from_dict` reads back)."""
        return {
            "dimensions": list(self.dimensions),
            "max_groups": self.max_groups,
            "dropped": self.dropped,
            "groups": [
                {
                    "group": list(key),
                    "answers": g.answers,
                    "metrics": {
                        name: {
                            "count": s.count,
                            "mean": s.mean,
                            "m2": s.m2,
                            "undefined": s.undefined,
                        }
                        for name, s in sorted(g.metrics.items())
                    },
                }
                for key, g in sorted(self._groups.items())
            ],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MetricMeans:
        means = cls(data["dimensions"], max_groups=int(data["max_groups"]))
        means.dropped = int(data["dropped"])
        for item in data["groups"]:
            g = means._group(item["group"], int(item["answers"]))
            if g is None:
                continue
            g.answers += int(item["answers"])
            for name, s in item["metrics"].items():
                g.metrics[name] = RunningMean(
                    int(s["count"]), float(s["mean"]), float(s["m2"]), int(s["undefined"])
                )
        return means
