"""What groundwatch puts on a trace, as plain records and the attributes built from them.

The probe path only copies a probe's and its response's fields into a record (a list of JSON
values, a few µs); turning records into OpenTelemetry spans — attributes, protobuf, HTTP — is
done by the :class:`~groundwatch.adapters.tracing.assemble.SpanAssembler`, in a process of its
own by default (:mod:`.shipping`), so tracing costs probing almost nothing of its own core.

Attributes follow both conventions people's tools read: OpenInference (Phoenix, Arize) and the
OpenTelemetry GenAI conventions (development status).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the exporter process builds spans from records without the contracts
    from groundwatch.contracts import Judgement, Probe, RagResponse

#: Characters of a question, answer or document kept on a span (collectors cap attributes too).
MAX_ATTRIBUTE_CHARS = 4096
#: Retrieved documents listed on a probe span, and characters of each one's text kept.
MAX_DOCUMENTS = 20
MAX_DOCUMENT_CHARS = 1000
#: Name of the verdict as an evaluation (GenAI ``gen_ai.evaluation.name``, Phoenix annotation).
EVALUATION_NAME = "groundwatch.verdict"
#: The GenAI event a verdict is.
EVALUATION_EVENT = "gen_ai.evaluation.result"

#: Record kinds: a probe's target call, a verdict.
PROBE, VERDICT = "p", "v"


@dataclass
class SpanCounts:
    """Spans by fate since start: what /metrics shows as ``groundwatch_trace_spans_total``."""

    #: spans made (a probe span carrying its verdict is one span)
    ended: int = 0
    exported: int = 0
    #: the collector refused them or could not be reached (after the exporter's own retries)
    failed: int = 0
    #: records of a span or a verdict dropped because the export queue was full (a collector
    #: slower than probing)
    dropped: int = 0
    #: CPU seconds the exporter process spent making and sending spans (its start-up aside)
    exporter_cpu_s: float = 0.0


def _cut(text: str | None) -> str:
    return (text or "")[:MAX_ATTRIBUTE_CHARS]


def probe_record(
    probe: Probe, response: RagResponse, start_ns: int, end_ns: int, operation: str
) -> list[Any]:
    """One probe's call as a record: references to the contracts' own (validated) values (the
    probe id a UUID: ``orjson`` writes it as text, in C, off the probe path)."""
    error = response.error_kind
    return [
        PROBE,
        probe.probe_id,
        start_ns,
        end_ns,
        operation,
        probe.target,
        probe.query,
        probe.group_id,
        probe.form_id,
        probe.cohort,
        probe.scenario,
        probe.run_id,
        probe.cycle,
        response.latency_s,
        None if error is None else str(error),
        response.error_detail,
        response.answer,
        response.retrieved_ids,
        response.contexts,
    ]


def verdict_record(judgement: Judgement, group_status: str | None) -> list[Any]:
    return [
        VERDICT,
        judgement.probe_id,
        judgement.trace_context,
        judgement.group_id,
        judgement.verdict.value,
        str(judgement.tier),
        judgement.reason,
        group_status,
        time.time_ns(),
    ]


def probe_attributes(record: list[Any]) -> dict[str, Any]:
    """A probe's question and keys, the target's answer and documents (OpenInference flattened
    and the GenAI JSON list), the latency; a target error's kind."""
    (_, probe_id, _, _, operation, target, query, group_id, form_id, cohort, scenario, run_id,
     cycle, latency_s, error_kind, _, answer, ids, contexts) = record  # fmt: skip
    question = _cut(query)
    attrs: dict[str, Any] = {
        "openinference.span.kind": "CHAIN",
        "input.value": question,
        "gen_ai.operation.name": operation,
        "gen_ai.agent.name": target,
        "gen_ai.retrieval.query.text": question,
        "groundwatch.probe_id": str(probe_id),
        "groundwatch.group_id": group_id,
        "groundwatch.form_id": form_id,
        "groundwatch.cohort": cohort,
        "groundwatch.scenario": scenario,
        "groundwatch.run_id": run_id,
        "groundwatch.cycle": cycle,
        "groundwatch.latency_s": latency_s,
    }
    if error_kind is not None:
        attrs["error.type"] = error_kind
        return attrs
    attrs["output.value"] = _cut(answer)
    ids = ids[:MAX_DOCUMENTS]
    for i, doc_id in enumerate(ids):
        attrs[f"retrieval.documents.{i}.document.id"] = doc_id
    for i, text in enumerate(contexts[:MAX_DOCUMENTS]):
        attrs[f"retrieval.documents.{i}.document.content"] = text[:MAX_DOCUMENT_CHARS]
    if ids:  # the GenAI form: the documents by id (their texts are on the OpenInference keys)
        attrs["gen_ai.retrieval.documents"] = json.dumps([{"id": i} for i in ids])
    return attrs


def evaluation_attributes(record: list[Any]) -> dict[str, Any]:
    """The verdict as the GenAI ``gen_ai.evaluation.result`` event carries it, plus what
    groundwatch knows beside it (tier, reason, the group's status after this judgement)."""
    _, _, _, _, verdict, tier, reason, group_status, _ = record
    attrs: dict[str, Any] = {
        "gen_ai.evaluation.name": EVALUATION_NAME,
        "gen_ai.evaluation.score.label": verdict,
        "gen_ai.evaluation.explanation": _cut(reason),
        "groundwatch.tier": tier,
        "groundwatch.verdict": verdict,
    }
    score = {"correct": 1.0, "incorrect": 0.0}.get(verdict)
    if score is not None:
        attrs["gen_ai.evaluation.score.value"] = score
    if group_status is not None:
        attrs["groundwatch.group_status"] = group_status
    return attrs
