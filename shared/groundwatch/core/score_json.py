"""The scores as JSON: written as the typed families, read typed or flat.

The store's ``scores`` column and the wire carry the families of :mod:`.scores` (the store
without the unset ones). Judgements of schema version 3 and older carried a flat
``{name: float}`` dict instead — ``metric.*`` for every per-answer metric (``metric.k`` marking a
scored answer), ``audit.<tier>``, ``rf.<evaluator>`` and ``ragprobe.<metric>`` for the outcomes
(booleans as 1 / 0 / -1 codes, -2 not sampled), ``token_*`` and ``llm_*`` for the judge's detail;
:func:`scores_from_flat` reads those into the same families, so older messages and stored rows
still read. It is the only place a score's name is taken apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import TypeAdapter

from groundwatch.core.scores import (
    BERTSCORE_F1,
    EVALUATORS,
    LLM_METRICS,
    NO_SCORES,
    RAGAS_FAITHFULNESS,
    SELFCHECK_AGREEMENT,
    SEMANTIC_SIMILARITY,
    AnswerScores,
    AuditScore,
    EvaluatorCall,
    LlmCallScores,
    LlmMetricScores,
    RagProbeMetric,
    RagProbeOutcomes,
    ReferenceFreeScores,
    RetrievalScores,
    RulesScores,
    Scores,
    SemanticScores,
)

_ADAPTER: TypeAdapter[Scores] = TypeAdapter(Scores)


_SERIALIZER = _ADAPTER.serializer


def scores_json(scores: Scores) -> dict[str, Any]:
    """The scores as JSON-ready data: the families that are set, each with its defined values
    (what :func:`scores_json_text` writes)."""
    if scores is NO_SCORES:
        return {}
    out: dict[str, Any] = _SERIALIZER.to_python(scores, mode="json", exclude_none=True)
    return out


def scores_json_bytes(scores: Scores) -> bytes:
    """:func:`scores_json` as JSON, serialized in one call (the store writes it for every
    judgement)."""
    if scores is NO_SCORES:
        return b"{}"
    text: bytes = _SERIALIZER.to_json(scores, exclude_none=True)
    return text


def is_flat(value: object) -> bool:
    """Whether ``value`` is a non-empty flat score dict of schema version 3 and older (name →
    number) rather than the typed families (family → object or null). The first entry decides:
    a dict mixing both shapes is refused by the validation of either."""
    if not isinstance(value, dict) or not value:
        return False
    first = next(iter(value.values()))
    return first is not None and not isinstance(first, dict)


def scores_from_json(value: object) -> Scores:
    """Scores from the store or any JSON: the typed families, a flat dict of an older judge
    (:func:`scores_from_flat`), or nothing (``None``, ``{}``). A malformed value raises
    ``pydantic.ValidationError``."""
    if not value:
        return NO_SCORES
    if is_flat(value):
        assert isinstance(value, dict)
        return scores_from_flat(value)
    return _ADAPTER.validate_python(value)


#: The flat names of schema version 3 and older, by family. Only :func:`scores_from_flat` reads
#: them: nothing else splits a score name.
_FLAT_ANSWER = {
    "metric.exact_match": "exact_match",
    "metric.token_f1": "token_f1",
    "metric.rouge_l": "rouge_l",
    "metric.bleu": "bleu",
}
_FLAT_SEMANTIC = {
    "metric." + SEMANTIC_SIMILARITY: "similarity",
    "metric." + BERTSCORE_F1: "bertscore_f1",
}
_FLAT_LLM = {"metric." + name: name for name in LLM_METRICS}
_FLAT_REFERENCE_FREE = {
    "metric." + RAGAS_FAITHFULNESS: RAGAS_FAITHFULNESS,
    "metric." + SELFCHECK_AGREEMENT: SELFCHECK_AGREEMENT,
}
_FLAT_CALLS = {"rf." + name: name for name in EVALUATORS}
_FLAT_RAGPROBE = {"ragprobe." + m.value: m for m in RagProbeMetric}
_FLAT_RULES = ("token_precision", "token_recall", "token_f1")
#: The flat codes of an evaluator's call.
_CALL_CODES = {
    1.0: EvaluatorCall.RIGHT,
    0.0: EvaluatorCall.WRONG,
    -1.0: EvaluatorCall.ABSTAINED,
    -2.0: EvaluatorCall.NOT_SAMPLED,
}


def _outcome(code: float) -> bool | None:
    """A flat three-way code: 1 → True, 0 → False, any negative (no call) → None."""
    return None if code < 0 else code >= 0.5


def scores_from_flat(flat: Mapping[str, float]) -> Scores:
    """The typed scores of a flat score dict (schema version 3 and older; stored rows of then).

    ``metric.k`` marked a scored answer; ``metric.*`` held the answer, IR, semantic, LLM-derived
    and reference-free metrics; ``audit.<tier>``, ``ragprobe.<metric>`` (1 / 0 / -1) and
    ``rf.<evaluator>`` (1 / 0 / -1, -2 not sampled) the outcomes; ``token_*``,
    ``stale_version_index`` and ``llm_*`` the judge's detail. Names no judge wrote are ignored."""
    get = flat.get
    k = get("metric.k")
    ks = int(k) if k is not None else None
    answer = retrieval = None
    if ks is not None:
        answer = AnswerScores(ks, **{f: get(n) for n, f in _FLAT_ANSWER.items()})
        ir = [get(f"metric.{n}") for n in (f"recall@{ks}", f"precision@{ks}", f"ap@{ks}", "rr")]
        ndcg = get(f"metric.ndcg@{ks}")
        if ndcg is not None and all(v is not None for v in ir):
            recall, precision, ap, rr = (float(v) for v in ir if v is not None)
            retrieval = RetrievalScores(ks, recall, precision, ap, rr, ndcg)
    semantic = _family(SemanticScores, flat, _FLAT_SEMANTIC)
    llm = _family(LlmMetricScores, flat, _FLAT_LLM)
    rf_values: dict[str, Any] = {f: get(n) for n, f in _FLAT_REFERENCE_FREE.items()}
    for name, evaluator in _FLAT_CALLS.items():
        code = get(name)
        if code is not None:
            rf_values[evaluator] = _CALL_CODES.get(float(code), EvaluatorCall.ABSTAINED)
    reference_free = (
        ReferenceFreeScores(**rf_values) if any(v is not None for v in rf_values.values()) else None
    )
    audit = ragprobe = None
    outcomes: dict[RagProbeMetric, bool | None] = {}
    for name, value in flat.items():
        family, _, member = name.partition(".")
        if family == "audit" and member:
            audit = AuditScore(member, _outcome(value))
        elif name in _FLAT_RAGPROBE:
            outcomes[_FLAT_RAGPROBE[name]] = _outcome(value)
    if outcomes:
        ragprobe = RagProbeOutcomes.of(outcomes)
    p, r, f = (get(n) for n in _FLAT_RULES)
    rules = None
    if p is not None and r is not None and f is not None:
        stale = get("stale_version_index")
        rules = RulesScores(p, r, f, None if stale is None else int(stale))
    cached, latency = get("llm_cached"), get("llm_latency_s")
    llm_call = None
    if cached is not None and latency is not None:
        llm_call = LlmCallScores(cached >= 0.5, latency)
    scores = Scores(
        answer, retrieval, semantic, llm, reference_free, audit, ragprobe, rules, llm_call
    )
    return NO_SCORES if scores == NO_SCORES else scores


def _family(cls: Any, flat: Mapping[str, float], names: Mapping[str, str]) -> Any:
    values = {field: flat[name] for name, field in names.items() if name in flat}
    return cls(**values) if values else None
