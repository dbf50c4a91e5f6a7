"""What a judgement measured beside its verdict, typed: one model per family of scores.

The judge ships these with every judgement (``Judgement.scores``), the store keeps them with it,
and analytics aggregates them (:mod:`.score_tallies`) for the report and ``/metrics``:

* :class:`AnswerScores` — Oro et al.'s scores of one answer against the SQL gold: EM, token F1,
  ROUGE-L, BLEU (``None``: undefined, no gold text), scored at the judge's K so that the IR
  metrics an answer lacks are named (and counted undefined), not forgotten;
* :class:`RetrievalScores` — the IR metrics at K: Recall, Precision, AP, RR, nDCG (present when
  the target reported its ranking and the probe has relevant documents);
* :class:`SemanticScores` — semantic similarity and BERTScore F1 against the gold (the packaged
  encoder, on a share of the probes);
* :class:`LlmMetricScores` — the LLM-derived answer metrics: answer correctness, answer
  relevance, context relevance (each ``None`` when not asked or not read);
* :class:`ReferenceFreeScores` — the reference-free evaluators' calls (RAGAS-Fact, SelfCheck:
  right, wrong, abstained, or not sampled) and their scores (faithfulness, agreement rate);
* :class:`AuditScore` — the self-audit: the rules' tier decided, the LLM tier was asked too, and
  agreed, disagreed or could not tell;
* :class:`RagProbeOutcomes` — RAGProbe's per-metric outcome of a scenario probe: passed, failed,
  or open (neither the rules nor an LLM could decide);
* :class:`RulesScores` and :class:`LlmCallScores` — the judge's own detail (the rules' token
  overlap, the LLM tier's cache hit and latency), kept in the store, not tallied.

Every family is a frozen, slotted dataclass: hashable (a repeated answer's scores are shared,
not copied, in analytics' window), small, and validated by the wire contract as it is. Their
JSON, and the flat dicts of schema versions 1-3 read into them: :mod:`.score_json`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import MISSING, dataclass, fields
from enum import StrEnum
from typing import Annotated, Any, ClassVar, Final, TypeVar

from pydantic import AllowInfNan, ConfigDict, Field, StringConstraints

from groundwatch.core.model import ID_PATTERN

#: A finite float (NaN and infinities are refused where a score is validated).
Finite = Annotated[float, AllowInfNan(False)]
#: A rules tier's name, as the contracts' ``Tier`` (``judgements.tier``).
TierName = Annotated[str, StringConstraints(min_length=1, max_length=32, pattern=ID_PATTERN)]
#: The IR metrics' K: the judge's ``GW_JUDGE_METRICS_K`` bounds.
MetricsK = Annotated[int, Field(ge=1, le=1000)]

_FORBID: Final = ConfigDict(extra="forbid", revalidate_instances="always")


_T = TypeVar("_T")


def _fast(cls: type[_T]) -> type[_T]:
    """``cls`` (a frozen, slotted dataclass) with an ``__init__`` that sets each slot through
    its descriptor, not ``object.__setattr__``: a third of the cost (the judge makes scores for
    every judgement, and the frozen ``__init__`` was a tenth of its budget). It refuses a NaN or
    infinite score as the wire contract does (``Finite`` fields): the judge builds its families
    without the contract's validation, so the invariant is the families' own."""
    params, body = [], []
    namespace: dict[str, Any] = {"_isfinite": math.isfinite}
    for f in fields(cls):  # type: ignore[arg-type]
        name = f.name
        namespace[f"_set_{name}"] = cls.__dict__[name].__set__
        if f.default is MISSING:
            params.append(name)
        else:
            namespace[f"_default_{name}"] = f.default
            params.append(f"{name}=_default_{name}")
        annotation = str(f.type)
        if annotation == "Finite":
            body.append(f"    if not _isfinite({name}): _refuse({name!r}, {name})")
        elif annotation == "Finite | None":
            body.append(
                f"    if {name} is not None and not _isfinite({name}): _refuse({name!r}, {name})"
            )
        body.append(f"    _set_{name}(self, {name})")
    namespace["_refuse"] = _refuse
    source = f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body or ["    pass"])
    exec(source, namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init  # type: ignore[method-assign]
    return cls


def _refuse(name: str, value: object) -> None:
    raise ValueError(f"score {name} must be finite, got {value!r}")


class EvaluatorCall(StrEnum):
    """What a reference-free evaluator said of an answer."""

    RIGHT = "right"
    WRONG = "wrong"
    #: it was asked and could not tell (no contexts, no readable verdict)
    ABSTAINED = "abstained"
    #: SelfCheck picked the probe but the runner shipped no sample of the target: not a call
    NOT_SAMPLED = "not_sampled"


class MetricOutcome(StrEnum):
    """One RAGProbe metric's outcome on one probe."""

    PASSED = "passed"
    FAILED = "failed"
    #: neither the rules nor an LLM decided it
    OPEN = "open"

    @classmethod
    def of(cls, passed: bool | None) -> MetricOutcome:
        return cls.OPEN if passed is None else cls.PASSED if passed else cls.FAILED


class RagProbeMetric(StrEnum):
    """RAGProbe's evaluation metrics (§3.1): four for answerable scenarios, three for S6."""

    CORRECTNESS = "correctness"
    RELEVANCE = "relevance"
    COMPLETENESS = "completeness"
    CONSISTENCY = "consistency"
    EXPLICITNESS = "explicitness"
    CONTRADICTION = "contradiction"
    NO_QUESTION_RELATED_INFORMATION = "no_question_related_information"


#: Reference-free evaluators (GRAMMAR §3).
RAGAS_FACT: Final = "ragas_fact"
SELFCHECK: Final = "selfcheck"
EVALUATORS: Final = (RAGAS_FACT, SELFCHECK)

#: The offline semantic metrics' names (as the means and ``/metrics`` label them).
SEMANTIC_SIMILARITY: Final = "semantic_similarity"
BERTSCORE_F1: Final = "bertscore_f1"
#: The LLM-derived metrics' names (``GW_LLM_METRICS``).
ANSWER_CORRECTNESS: Final = "answer_correctness"
ANSWER_RELEVANCE: Final = "answer_relevance"
CONTEXT_RELEVANCE: Final = "context_relevance"
LLM_METRICS: Final = (ANSWER_CORRECTNESS, ANSWER_RELEVANCE, CONTEXT_RELEVANCE)
#: The reference-free evaluators' scores, averaged with the answer metrics.
RAGAS_FAITHFULNESS: Final = "ragas_faithfulness"
SELFCHECK_AGREEMENT: Final = "selfcheck_agreement"


# ------------------------------------------------------------------------------------ families
@_fast
@dataclass(frozen=True, slots=True)
class AnswerScores:
    """Oro et al.'s syntactic scores of one answer against its SQL gold, scored at ``k``.

    A text score is ``None`` when it is undefined for the answer (no gold text: an
    unanswerable probe). ``k`` is the K the judge scores IR metrics at, so an answer scored
    without a ranking counts its IR metrics as undefined under their names (``recall@5``)."""

    __pydantic_config__: ClassVar[ConfigDict] = _FORBID

    k: MetricsK
    exact_match: Finite | None = None
    token_f1: Finite | None = None
    rouge_l: Finite | None = None
    bleu: Finite | None = None

    def means(self) -> dict[str, float | None]:
        """Every metric of a scored answer, as the means name them (``None``: undefined): the
        text scores, and the IR scores at K undefined until :class:`RetrievalScores` sets
        them."""
        k = self.k
        return {
            "exact_match": self.exact_match,
            "token_f1": self.token_f1,
            "rouge_l": self.rouge_l,
            "bleu": self.bleu,
            f"recall@{k}": None,
            f"precision@{k}": None,
            f"ap@{k}": None,
            "rr": None,
            f"ndcg@{k}": None,
        }


@_fast
@dataclass(frozen=True, slots=True)
class RetrievalScores:
    """trec_eval's IR metrics of the target's ranking against the probe's relevant documents."""

    __pydantic_config__: ClassVar[ConfigDict] = _FORBID

    k: MetricsK
    recall: Finite
    precision: Finite
    ap: Finite
    rr: Finite
    ndcg: Finite

    def means(self) -> dict[str, float | None]:
        k = self.k
        return {
            f"recall@{k}": self.recall,
            f"precision@{k}": self.precision,
            f"ap@{k}": self.ap,
            "rr": self.rr,
            f"ndcg@{k}": self.ndcg,
        }


@_fast
@dataclass(frozen=True, slots=True)
class SemanticScores:
    """Semantic similarity (sentence cosine, clipped to [0, 1]) and BERTScore F1 of the answer
    against its gold, from the packaged encoder."""

    __pydantic_config__: ClassVar[ConfigDict] = _FORBID

    similarity: Finite | None = None
    bertscore_f1: Finite | None = None

    def means(self) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        if self.similarity is not None:
            out[SEMANTIC_SIMILARITY] = self.similarity
        if self.bertscore_f1 is not None:
            out[BERTSCORE_F1] = self.bertscore_f1
        return out


@_fast
@dataclass(frozen=True, slots=True)
class LlmMetricScores:
    """The LLM-derived answer metrics (``None``: not asked for this answer, or no readable
    reply)."""

    __pydantic_config__: ClassVar[ConfigDict] = _FORBID

    answer_correctness: Finite | None = None
    answer_relevance: Finite | None = None
    context_relevance: Finite | None = None

    def means(self) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        if self.answer_correctness is not None:
            out[ANSWER_CORRECTNESS] = self.answer_correctness
        if self.answer_relevance is not None:
            out[ANSWER_RELEVANCE] = self.answer_relevance
        if self.context_relevance is not None:
            out[CONTEXT_RELEVANCE] = self.context_relevance
        return out


@_fast
@dataclass(frozen=True, slots=True)
class ReferenceFreeScores:
    """The reference-free evaluators on one answer: each one's call (``None``: not run on it)
    and the score it came from (RAGAS faithfulness, SelfCheck's agreement rate)."""

    __pydantic_config__: ClassVar[ConfigDict] = _FORBID

    ragas_fact: EvaluatorCall | None = None
    ragas_faithfulness: Finite | None = None
    selfcheck: EvaluatorCall | None = None
    selfcheck_agreement: Finite | None = None

    def calls(self) -> Iterator[tuple[str, EvaluatorCall]]:
        """(evaluator, call) of each evaluator that ran."""
        if self.ragas_fact is not None:
            yield RAGAS_FACT, self.ragas_fact
        if self.selfcheck is not None:
            yield SELFCHECK, self.selfcheck

    def means(self) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        if self.ragas_faithfulness is not None:
            out[RAGAS_FAITHFULNESS] = self.ragas_faithfulness
        if self.selfcheck_agreement is not None:
            out[SELFCHECK_AGREEMENT] = self.selfcheck_agreement
        return out


@_fast
@dataclass(frozen=True, slots=True)
class AuditScore:
    """The self-audit of one rule-decided answer: the LLM tier agreed with the rules' ``tier``
    (True), disagreed (False) or could not tell (None)."""

    __pydantic_config__: ClassVar[ConfigDict] = _FORBID

    tier: TierName
    agreed: bool | None = None


@_fast
@dataclass(frozen=True, slots=True)
class RagProbeOutcomes:
    """RAGProbe's metrics of one scenario probe (``None``: not a metric of its scenario)."""

    __pydantic_config__: ClassVar[ConfigDict] = _FORBID

    correctness: MetricOutcome | None = None
    relevance: MetricOutcome | None = None
    completeness: MetricOutcome | None = None
    consistency: MetricOutcome | None = None
    explicitness: MetricOutcome | None = None
    contradiction: MetricOutcome | None = None
    no_question_related_information: MetricOutcome | None = None

    @classmethod
    def of(cls, outcomes: Mapping[RagProbeMetric, bool | None]) -> RagProbeOutcomes:
        """From each metric's pass (True), fail (False) or open (None)."""
        return cls(**{m.value: MetricOutcome.of(passed) for m, passed in outcomes.items()})

    def items(self) -> Iterator[tuple[RagProbeMetric, MetricOutcome]]:
        """(metric, outcome) of each metric the probe was judged on, in RAGProbe's order."""
        for metric in RagProbeMetric:
            outcome: MetricOutcome | None = getattr(self, metric.value)
            if outcome is not None:
                yield metric, outcome


@_fast
@dataclass(frozen=True, slots=True)
class RulesScores:
    """The rules' token precision, recall and F1 of the whole gold against the response, and
    which older version of the answer a stale one matched: the judge's detail for a person
    reading one judgement (the tallies read :class:`AnswerScores`)."""

    __pydantic_config__: ClassVar[ConfigDict] = _FORBID

    token_precision: Finite
    token_recall: Finite
    token_f1: Finite
    #: the stale tier: the index of the earlier answer version the response states
    stale_version: Annotated[int, Field(ge=0)] | None = None


@_fast
@dataclass(frozen=True, slots=True)
class LlmCallScores:
    """The LLM tier's verdict came from the cache (no call paid) or a call of ``latency_s``."""

    __pydantic_config__: ClassVar[ConfigDict] = _FORBID

    cached: bool
    latency_s: Finite


# ------------------------------------------------------------------------------------ the whole
@_fast
@dataclass(frozen=True, slots=True)
class Scores:
    """Every family a judgement carries (``None``: the judge did not measure it)."""

    __pydantic_config__: ClassVar[ConfigDict] = _FORBID

    answer: AnswerScores | None = None
    retrieval: RetrievalScores | None = None
    semantic: SemanticScores | None = None
    llm_metrics: LlmMetricScores | None = None
    reference_free: ReferenceFreeScores | None = None
    audit: AuditScore | None = None
    ragprobe: RagProbeOutcomes | None = None
    rules: RulesScores | None = None
    llm_call: LlmCallScores | None = None

    def __bool__(self) -> bool:
        """Whether any family is set."""
        return self != NO_SCORES

    def merged(self, other: Scores) -> Scores:
        """These scores with every family ``other`` sets in place of this one's."""
        if other is NO_SCORES:
            return self
        if self is NO_SCORES:
            return other
        return Scores(
            self.answer if other.answer is None else other.answer,
            self.retrieval if other.retrieval is None else other.retrieval,
            self.semantic if other.semantic is None else other.semantic,
            self.llm_metrics if other.llm_metrics is None else other.llm_metrics,
            self.reference_free if other.reference_free is None else other.reference_free,
            self.audit if other.audit is None else other.audit,
            self.ragprobe if other.ragprobe is None else other.ragprobe,
            self.rules if other.rules is None else other.rules,
            self.llm_call if other.llm_call is None else other.llm_call,
        )

    def tallied(self) -> Scores:
        """The families analytics tallies (without the judge's own detail), shared with every
        other judgement that has the same ones: a repeated answer's scores are one object in the
        window, not a copy per cycle."""
        key = (
            self.answer,
            self.retrieval,
            self.semantic,
            self.llm_metrics,
            self.reference_free,
            self.audit,
            self.ragprobe,
        )
        shared = _TALLIED.get(key)
        if shared is not None:
            return shared
        shared = self if self.rules is None and self.llm_call is None else Scores(*key)
        if len(_TALLIED) >= MAX_SHARED:
            # bounded: start over (the window's observations keep the objects they hold), so
            # the sharing follows the answers a target gives now, not those of long ago
            _TALLIED.clear()
            _TALLIED[_EMPTY_KEY] = NO_SCORES
        _TALLIED[key] = shared
        return shared

    def answer_means(self) -> dict[str, float | None] | None:
        """Every per-answer metric of these scores by name (``None`` values: undefined), for
        the means: the answer metrics with the IR metrics at K (undefined without a ranking),
        the semantic and LLM-derived metrics, RAGAS faithfulness and SelfCheck agreement where
        measured; ``None`` when the answer was not scored at all."""
        out: dict[str, float | None] | None = None
        if self.answer is not None:
            out = self.answer.means()
        for family in (self.retrieval, self.semantic, self.llm_metrics, self.reference_free):
            if family is not None:
                values = family.means()
                if values:
                    if out is None:
                        out = values
                    else:
                        out.update(values)
        return out


#: No scores: the judgement of a target error, an imported result.
NO_SCORES: Final = Scores()
#: Distinct tallied score sets shared at most (:meth:`Scores.tallied`; about 30 MB at the cap).
MAX_SHARED = 1 << 16
_EMPTY_KEY: Final = (None,) * 7
_TALLIED: dict[tuple[object, ...], Scores] = {_EMPTY_KEY: NO_SCORES}
