"""What a judgement says beyond its verdict, and the running aggregates of it.

The judge ships four kinds of numbers with every judgement, in ``Judgement.scores`` under one
prefix each, so the wire contract needs no new field and an older reader simply ignores them:

* ``metric.*`` — Oro et al.'s per-answer metrics (:func:`~.answer_metrics.answer_metrics`): EM,
  token F1, ROUGE-L, BLEU against the SQL gold and, when the target reported its ranking and the
  dataset knows the relevant documents, Recall/Precision@K, AP@K, RR and nDCG@K. ``metric.k``
  marks that they were computed (and at which K), so a metric absent from a scored answer is
  *undefined* for it, not forgotten;
* ``audit.<tier>`` — the self-audit: the rules' tier ``<tier>`` decided, the LLM tier was asked
  too, and agreed (1), disagreed (0) or could not tell (-1);
* ``rf.<evaluator>`` — a reference-free evaluator's call (RAGAS-Fact, SelfCheck): the answer is
  right (1), wrong (0), or it abstained (-1); measured against the grounded verdict it is
  GRAMMAR's Table 1;
* ``ragprobe.<metric>`` — RAGProbe's per-metric outcome of a scenario probe: pass (1), fail (0),
  open (-1: neither the rules nor an LLM could decide).

:class:`JudgeQuality` aggregates them per target × cohort × scenario (metric means), per target ×
tier (audit agreement), per target × evaluator (reliability) and per target × scenario × metric
(RAGProbe failures). It holds counts and running means only, never the judgements; the report
and ``/metrics`` build one over the judgements in the window.
"""

from __future__ import annotations

import hashlib
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from groundwatch.core.answer_metrics import AnswerMetrics, MetricMeans
from groundwatch.core.model import Verdict
from groundwatch.core.tagging import FACTUAL

METRIC = "metric."
AUDIT = "audit."
EVALUATOR = "rf."
RAGPROBE = "ragprobe."
#: Every prefix analytics keeps; other scores (the rules' own token overlap, LLM latency) are the
#: judge's detail and stay in the stored judgement only.
QUALITY_PREFIXES = (METRIC, AUDIT, EVALUATOR, RAGPROBE)
#: ``metric.k``: the answer was scored, at this K.
METRIC_K = METRIC + "k"
#: The text metrics every scored answer with a gold text has.
TEXT_METRICS = ("exact_match", "token_f1", "rouge_l", "bleu")
#: The IR metrics (their K is part of the name, as in :meth:`AnswerMetrics.as_dict`).
IR_METRICS = ("recall@{k}", "precision@{k}", "ap@{k}", "rr", "ndcg@{k}")

#: Reference-free evaluators (GRAMMAR §3).
RAGAS_FACT = "ragas_fact"
SELFCHECK = "selfcheck"
EVALUATORS = (RAGAS_FACT, SELFCHECK)


def in_share(key: str, share: float) -> bool:
    """Whether the item named ``key`` falls in a ``share`` (0–1) of all items: a hash, so the
    same item is always in or out (reproducible, and a repeat costs a cache hit, not a new
    call), and any two stages that draw with the same key and share draw the same items."""
    if share <= 0.0:
        return False
    if share >= 1.0:
        return True
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") < share * 2.0**64


#: ``rf.selfcheck`` of a probe SelfCheck should have scored but got no sample of the target
#: (the target cannot be sampled): counted apart, neither a call nor an abstention.
UNSAMPLED = -2.0


def outcome_code(outcome: bool | None) -> float:
    """A three-way outcome as a score: True → 1, False → 0, None (no call) → -1."""
    if outcome is None:
        return -1.0
    return 1.0 if outcome else 0.0


def outcome_of(code: float) -> bool | None:
    """The inverse of :func:`outcome_code` (any negative code is no call)."""
    if code < 0:
        return None
    return code >= 0.5


def metric_scores(m: AnswerMetrics) -> dict[str, float]:
    """An answer's metrics as ``metric.*`` scores: the defined ones, and ``metric.k``."""
    out = {METRIC_K: float(m.k)}
    for name, value in m.as_dict().items():
        if value is not None:
            out[METRIC + name] = value
    return out


def metric_names(k: int) -> tuple[str, ...]:
    """The metrics of a scored answer at ``k``, as :meth:`AnswerMetrics.as_dict` names them."""
    return TEXT_METRICS + tuple(n.format(k=k) for n in IR_METRICS)


# ------------------------------------------------------------------------ compact storage
class PackedScores(Mapping[str, float]):
    """The quality scores of one observation, packed: an interned tuple of names and an array of
    doubles (~100 bytes for a dozen scores instead of ~1 kB for a dict of floats), because the
    live tagger keeps every judgement of its window in memory."""

    __slots__ = ("_keys", "_values")

    def __init__(self, keys: tuple[str, ...], values: array[float]) -> None:
        self._keys = keys
        self._values = values

    def __getitem__(self, key: str) -> float:
        try:
            return self._values[self._keys.index(key)]
        except ValueError:
            raise KeyError(key) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def items_fast(self) -> Iterator[tuple[str, float]]:
        return zip(self._keys, self._values, strict=True)

    def __repr__(self) -> str:
        return f"PackedScores({dict(self.items_fast())!r})"


NO_SCORES: Mapping[str, float] = PackedScores((), array("d"))
_INTERNED: dict[tuple[str, ...], tuple[str, ...]] = {}
#: Distinct key sets interned; beyond it a key tuple is kept as is (still correct, less shared).
_MAX_INTERNED = 4096


#: A score dict's key order → its quality keys (sorted, interned) and where each sits in that
#: order: judgements of one judge carry the same keys in the same order, so the filter and the
#: sort run once per distinct key order, not per judgement.
_LAYOUTS: dict[tuple[str, ...], tuple[tuple[str, ...], tuple[int, ...]]] = {}


def _layout(keys: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[int, ...]]:
    layout = _LAYOUTS.get(keys)
    if layout is None:
        picked = sorted((k, i) for i, k in enumerate(keys) if k.startswith(QUALITY_PREFIXES))
        names = tuple(k for k, _ in picked)
        shared = _INTERNED.get(names)
        if shared is None:
            if len(_INTERNED) < _MAX_INTERNED:
                _INTERNED[names] = names
            shared = names
        layout = (shared, tuple(i for _, i in picked))
        if len(_LAYOUTS) < _MAX_INTERNED:
            _LAYOUTS[keys] = layout
    return layout


def pack_scores(scores: Mapping[str, float] | None) -> Mapping[str, float]:
    """The quality scores of a judgement (``QUALITY_PREFIXES``), packed; others dropped."""
    if not scores:
        return NO_SCORES
    names, at = _layout(tuple(scores))
    if not names:
        return NO_SCORES
    values = list(scores.values())
    return PackedScores(names, array("d", [float(values[i]) for i in at]))


def _items(scores: Mapping[str, float]) -> Iterable[tuple[str, float]]:
    return scores.items_fast() if isinstance(scores, PackedScores) else scores.items()


# ------------------------------------------------------------------------ aggregates
@dataclass(slots=True)
class AuditCounts:
    """The self-audit of one rules tier: how often the LLM tier agreed with it."""

    agree: int = 0
    disagree: int = 0
    unknown: int = 0  # the LLM could not tell (judge error, unreadable verdict)
    #: disagreements by direction: the rules said correct and the LLM incorrect, and back
    rules_correct_llm_incorrect: int = 0
    rules_incorrect_llm_correct: int = 0

    @property
    def decided(self) -> int:
        return self.agree + self.disagree


@dataclass(slots=True)
class EvaluatorCounts:
    """A reference-free evaluator's calls against the grounded verdicts (positive = right)."""

    true_positive: int = 0
    false_positive: int = 0
    false_negative: int = 0
    true_negative: int = 0
    abstained: int = 0
    #: calls on judgements without a decided grounded verdict (error or undecided): no truth
    unmatched: int = 0
    #: probes the evaluator could not score for want of samples (SelfCheck, unsampleable target)
    unsampled: int = 0


@dataclass(slots=True)
class MetricOutcomes:
    passed: int = 0
    failed: int = 0
    open: int = 0


@dataclass(slots=True)
class RagProbeCounts:
    """A scenario's probes: every probe (errors and undecided included, as RAGProbe divides by
    all questions) and each metric's outcomes."""

    probes: int = 0
    failed: int = 0
    passed: int = 0
    undecided: int = 0
    errors: int = 0
    metrics: dict[str, MetricOutcomes] = field(default_factory=dict)


class ScoredJudgement(Protocol):
    """What the aggregates read of a judgement (a tagger ``Observation`` has it)."""

    @property
    def target(self) -> str: ...
    @property
    def cohort(self) -> str: ...
    @property
    def scenario(self) -> str: ...
    @property
    def verdict(self) -> Verdict: ...
    @property
    def scores(self) -> Mapping[str, float]: ...


#: Upper bounds of the metric histograms (every per-answer metric is in [0, 1]).
BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


class JudgeQuality:
    """Metric means (and histograms over :data:`BUCKETS`), audit agreement, evaluator
    reliability and RAGProbe metric failures over a stream of judgements. Bounded: the means
    keep at most ``max_groups`` target × cohort × scenario groups; the other maps are keyed by
    bounded names (tiers, evaluators, metrics)."""

    def __init__(self, *, max_groups: int = 10_000) -> None:
        self.means = MetricMeans(("target", "cohort", "scenario"), max_groups=max_groups)
        #: (target, cohort, scenario, metric) → answers per bucket (not cumulative)
        self.histograms: dict[tuple[str, str, str, str], list[int]] = {}
        self.audit: dict[tuple[str, str], AuditCounts] = {}
        self.evaluators: dict[tuple[str, str], EvaluatorCounts] = {}
        self.ragprobe: dict[tuple[str, str], RagProbeCounts] = {}
        self.judgements = 0

    @classmethod
    def of(cls, judgements: Iterable[ScoredJudgement], **kwargs: int) -> JudgeQuality:
        q = cls(**kwargs)
        for j in judgements:
            q.add(j)
        return q

    def add(self, j: ScoredJudgement) -> None:
        self.judgements += 1
        scores = j.scores
        verdict = j.verdict
        if j.scenario != FACTUAL:
            self._ragprobe(j.target, j.scenario, verdict, scores)
        if not scores:
            return
        k = scores.get(METRIC_K)
        metrics: dict[str, float | None] | None = None
        if k is not None:
            metrics = dict.fromkeys(metric_names(int(k)))
        for name, value in _items(scores):
            if name.startswith(METRIC):
                if metrics is not None and name != METRIC_K:
                    metrics[name[len(METRIC) :]] = value
            elif name.startswith(AUDIT):
                self._audit(j.target, name[len(AUDIT) :], verdict, value)
            elif name.startswith(EVALUATOR):
                self._evaluator(j.target, name[len(EVALUATOR) :], verdict, value)
        if metrics is not None:
            group = (j.target, j.cohort, j.scenario)
            before = len(self.means)
            self.means.add(group, metrics)
            if len(self.means) > before or self.means.answers(group):
                self._histogram(group, metrics)

    def _histogram(self, group: tuple[str, str, str], metrics: dict[str, float | None]) -> None:
        for name, value in metrics.items():
            if value is None:
                continue
            key = (*group, name)
            counts = self.histograms.get(key)
            if counts is None:
                counts = self.histograms[key] = [0] * len(BUCKETS)
            counts[bisect_left(BUCKETS, value) if value <= 1.0 else len(BUCKETS) - 1] += 1

    def _audit(self, target: str, tier: str, verdict: Verdict, code: float) -> None:
        c = self.audit.get((target, tier))
        if c is None:
            c = self.audit[(target, tier)] = AuditCounts()
        agreed = outcome_of(code)
        if agreed is None:
            c.unknown += 1
        elif agreed:
            c.agree += 1
        else:
            c.disagree += 1
            if verdict is Verdict.CORRECT:
                c.rules_correct_llm_incorrect += 1
            elif verdict is Verdict.INCORRECT:
                c.rules_incorrect_llm_correct += 1

    def _evaluator(self, target: str, name: str, verdict: Verdict, code: float) -> None:
        c = self.evaluators.get((target, name))
        if c is None:
            c = self.evaluators[(target, name)] = EvaluatorCounts()
        if code == UNSAMPLED:
            c.unsampled += 1
            return
        says = outcome_of(code)
        if verdict is not Verdict.CORRECT and verdict is not Verdict.INCORRECT:
            c.unmatched += 1
        elif says is None:
            c.abstained += 1
        else:
            right = verdict is Verdict.CORRECT
            if says and right:
                c.true_positive += 1
            elif says:
                c.false_positive += 1
            elif right:
                c.false_negative += 1
            else:
                c.true_negative += 1

    def _ragprobe(
        self, target: str, scenario: str, verdict: Verdict, scores: Mapping[str, float]
    ) -> None:
        c = self.ragprobe.get((target, scenario))
        if c is None:
            c = self.ragprobe[(target, scenario)] = RagProbeCounts()
        c.probes += 1
        if verdict is Verdict.ERROR:
            c.errors += 1
        elif verdict is Verdict.INCORRECT:
            c.failed += 1
        elif verdict is Verdict.CORRECT:
            c.passed += 1
        else:
            c.undecided += 1
        for name, value in _items(scores):
            if not name.startswith(RAGPROBE):
                continue
            m = c.metrics.get(name[len(RAGPROBE) :])
            if m is None:
                m = c.metrics[name[len(RAGPROBE) :]] = MetricOutcomes()
            passed = outcome_of(value)
            if passed is None:
                m.open += 1
            elif passed:
                m.passed += 1
            else:
                m.failed += 1
