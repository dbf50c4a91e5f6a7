"""The traffic stage: users' questions in, responses of the ``traffic`` cohort out.

A record the matcher grounds becomes a :class:`RagResponse` of its group, as if a probe had
asked the user's question: the judge then judges it against the group's SQL truth and the
analytics tally it as the group's ``traffic`` cohort, beside the probe cohorts, with nothing
downstream knowing it came from a user. What the matcher does not ground is counted (the match
rate) and its question shape kept, most frequent first, as a candidate for new templates.

Traffic has no cycles of its own, so it is cut into windows of ``window_s`` of its asking time:
window ``n`` is cycle ``n`` of the series ``<dataset>:traffic``. A group's traffic cycle closes
at its first verdict (``group_forms`` 1: nobody knows how many users will ask), later questions
of the window join it, and each distinct question is a form that counts once per window.
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from groundwatch.contracts import (
    MAX_CONTEXTS,
    TRAFFIC_COHORT,
    Probe,
    RagResponse,
    TargetStatus,
    Topic,
    Topics,
    TrafficRecord,
    _Contract,
)
from groundwatch.core.model import SemanticGroup, form_id_for
from groundwatch.core.sampling import in_share
from groundwatch.core.traffic import Grounding, GroundingIndex
from groundwatch.core.traffic.normalize import tokens
from groundwatch.core.traffic.pii import redact
from groundwatch.errors import Reject

__all__ = ["TRAFFIC_COHORT", "TrafficCounts", "TrafficStage"]

#: Default width of a traffic cycle.
WINDOW_S = 3600.0
#: Distinct unmatched question shapes kept (the most frequent survive a trim).
MAX_SHAPES = 10_000
#: Probe ids of traced records are derived from the trace and span, so a span sent twice is the
#: same judgement, not a second user.
_TRACE_NS = uuid.UUID("6f1d2c3e-7a4b-4c5d-9e8f-0a1b2c3d4e5f")


@dataclass(slots=True)
class TrafficCounts:
    """What the stage saw: records, matched, abstentions by reason, unmatched shapes."""

    records: int = 0
    matched: int = 0
    #: records left out of the sampled share (never grounded, never in ``records``)
    sampled_out: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    shapes: Counter[str] = field(default_factory=Counter)

    @property
    def match_rate(self) -> float:
        return self.matched / self.records if self.records else 0.0

    def unmatched(self, n: int = 20) -> list[tuple[str, int]]:
        """The ``n`` most frequent shapes of unmatched questions."""
        return self.shapes.most_common(n)

    def count(self, grounding: Grounding) -> None:
        self.records += 1
        if grounding.matched:
            self.matched += 1
            return
        self.reasons[grounding.reason] += 1
        self.shapes[grounding.shape] += 1
        if len(self.shapes) > MAX_SHAPES:  # keep the frequent half, forget the one-offs
            self.shapes = Counter(dict(self.shapes.most_common(MAX_SHAPES // 2)))


class TrafficStage:
    """Consume ``traffic`` → ground → produce ``responses`` of the ``traffic`` cohort."""

    service = "traffic"
    group = "traffic"
    max_records = 500

    def __init__(
        self,
        groups: Sequence[SemanticGroup],
        *,
        dataset_id: str,
        index: GroundingIndex | None = None,
        window_s: float = WINDOW_S,
        min_confidence: float | None = None,
        sample: float = 1.0,
        pii: bool = False,
    ) -> None:
        if not 0.0 <= sample <= 1.0:
            raise ValueError(f"traffic sample {sample} is not a share between 0 and 1")
        self.dataset_id = dataset_id
        self.sample = sample
        self.pii = pii
        self.window_s = window_s
        # the groups are read again by position when one is matched, never held: a dataset
        # file streams from disk (its answer domains would be most of the memory)
        self._groups = groups
        self._where: dict[str, int] = {}

        def walk() -> Iterator[SemanticGroup]:
            for i, g in enumerate(groups):
                self._where.setdefault(g.group_id, i)
                yield g

        if index is None:
            index = (
                GroundingIndex(walk())
                if min_confidence is None
                else GroundingIndex(walk(), min_confidence=min_confidence)
            )
        else:
            for _ in walk():
                pass
        self.index = index
        self.counts = TrafficCounts()

    def source(self, topics: Topics) -> Topic[TrafficRecord]:
        return topics.traffic

    async def handle(self, records: list[TrafficRecord]) -> Sequence[_Contract | Reject]:
        out: list[_Contract | Reject] = []
        for record in records:
            if record.dataset_id is not None and record.dataset_id != self.dataset_id:
                out.append(
                    Reject(record, f"dataset {record.dataset_id!r} is not {self.dataset_id!r}")
                )
                continue
            if not in_share(_sample_key(record), self.sample):
                self.counts.sampled_out += 1
                continue
            if self.pii:  # before the question is matched, kept as a shape, judged or stored
                record = _redacted(record)
            response = self.ground(record)
            if response is not None:
                out.append(response)
        return out

    def ground(self, record: TrafficRecord) -> RagResponse | None:
        """The response of ``record``'s group, or None (counted) when the matcher abstains."""
        grounding = self.index.match(record.question)
        self.counts.count(grounding)
        if grounding.group_id is None:
            return None
        return self.response(record, self._groups[self._where[grounding.group_id]])

    def response(self, record: TrafficRecord, group: SemanticGroup) -> RagResponse:
        cycle = max(1, int(record.asked_at.timestamp() // self.window_s))
        started = datetime.fromtimestamp(cycle * self.window_s, UTC)
        form = " ".join(tokens(record.question))
        probe = Probe(
            probe_id=self._probe_id(record),
            run_id=f"traffic-{cycle}",
            series=f"{self.dataset_id}:{TRAFFIC_COHORT}",
            cycle=cycle,
            cycle_started_at=started,
            dataset_id=self.dataset_id,
            group_id=group.group_id,
            form_id=form_id_for(group.group_id, TRAFFIC_COHORT, form),
            cohort=TRAFFIC_COHORT,
            scenario=group.scenario,
            target=record.target,
            query=record.question,
            expected=group.answer,
            group_forms=1,
            relevant_doc_ids=group.relevant_doc_ids,
            probe_created_at=record.asked_at,
            trace_context=_trace_context(record),
        )
        if record.answer is None:
            return RagResponse.for_probe(
                probe,
                status=TargetStatus.ERROR,
                error_kind="no_answer",
                error_detail="the traffic record carries no answer",
            )
        return RagResponse.for_probe(
            probe,
            status=TargetStatus.OK,
            answer=record.answer,
            retrieved_ids=record.retrieved_ids,
            contexts=record.contexts[:MAX_CONTEXTS],
            responded_at=record.asked_at,
        )

    @staticmethod
    def _probe_id(record: TrafficRecord) -> uuid.UUID:
        if record.trace_id is not None:
            return uuid.uuid5(_TRACE_NS, f"{record.trace_id}/{record.span_id or ''}")
        return uuid.uuid4()


_HEX = re.compile(r"[0-9a-f]+")


def _redacted(record: TrafficRecord) -> TrafficRecord:
    return record.model_copy(
        update={
            "question": redact(record.question),
            "answer": None if record.answer is None else redact(record.answer),
            "contexts": [redact(c) for c in record.contexts],
        }
    )


def _sample_key(record: TrafficRecord) -> str:
    """What the sampled share is drawn by: the trace, as tracing backends sample, so every
    evaluator (and every span of one request) keeps the same traces; an untraced record by its
    target, asking time and question, the same on every evaluator that receives it."""
    if record.trace_id is not None:
        return f"trace/{record.trace_id.lower()}"
    return f"record/{record.target}/{record.asked_at.isoformat()}/{record.question}"


def _trace_context(record: TrafficRecord) -> str | None:
    """The user's span the verdict is written back onto ('TRACEID-SPANID'), when the record
    names one as OpenTelemetry does (32 and 16 hex digits); None otherwise."""
    trace, span = (record.trace_id or "").lower(), (record.span_id or "").lower()
    if len(trace) == 32 and len(span) == 16 and _HEX.fullmatch(trace) and _HEX.fullmatch(span):
        return f"{trace}-{span}"
    return None
