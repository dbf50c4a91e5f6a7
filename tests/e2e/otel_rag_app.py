"""A small RAG app about ports, instrumented with the OpenTelemetry SDK as an app traced for
Phoenix or Langfuse is: OpenInference attributes on its spans, exported over OTLP/HTTP.

Its knowledge is one sentence per fact of a source database (``facts_of``); a question retrieves
the sentences sharing the most words with it, and the answer is the best one. ``forget`` drops
a fact from the index, as a re-index that lost a document does: the app then answers from the
next best sentence, as such an app would. The clock is the app's own (``asked_at``): each span
carries the time its question was asked.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import SpanKind

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "is",
        "in",
        "at",
        "to",
        "for",
        "what",
        "which",
        "who",
        "how",
        "does",
        "do",
        "has",
        "have",
        "was",
        "are",
    ]
)


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower())) - _STOP


def _wants_number(question: str) -> bool:
    return bool(re.search(r"\bhow (many|much)\b|\bnumber\b", question.lower()))


def facts_of(db: Path) -> dict[str, str]:
    """doc id → one sentence, for every port and vessel fact of the fleet database."""
    docs: dict[str, str] = {}
    with sqlite3.connect(db) as conn:
        for pid, name, country, berths in conn.execute(
            "SELECT port_id, name, country, berths FROM ports"
        ):
            docs[f"port-{pid}-country"] = f"{name} is a port in the country {country}."
            docs[f"port-{pid}-berths"] = f"{name} is a port with {berths} berths."
        for vid, name, captain, built in conn.execute(
            "SELECT vessel_id, name, captain, built FROM vessels"
        ):
            docs[f"vessel-{vid}-captain"] = f"The captain of the {name} is {captain}."
            docs[f"vessel-{vid}-built"] = f"The {name} was built in {built}."
    return docs


class PortsApp:
    def __init__(self, docs: dict[str, str], endpoint: str, token: str) -> None:
        self.docs = dict(docs)
        self.provider = TracerProvider(resource=Resource.create({"service.name": "shipbot"}))
        exporter = OTLPSpanExporter(endpoint=endpoint, headers={"Authorization": f"Bearer {token}"})
        # one export per span: what the test sends is on the wire when `ask` returns
        self.provider.add_span_processor(SimpleSpanProcessor(exporter))
        self.tracer = self.provider.get_tracer("ports-app")

    def forget(self, doc_id: str) -> None:
        del self.docs[doc_id]

    def _retrieve(self, question: str, k: int = 2) -> list[tuple[str, str]]:
        """The ``k`` sentences sharing most words with ``question`` (none that share none); of
        those sharing as many, one with a figure first when a figure is asked for (a reader's
        answer type)."""
        asked, number = _words(question), _wants_number(question)

        def rank(doc: tuple[str, str]) -> tuple[int, bool, str]:
            figure = any(c.isdigit() for c in doc[1])
            return (-len(asked & _words(doc[1])), not (number and figure), doc[0])

        ranked = sorted(self.docs.items(), key=rank)[:k]
        return [d for d in ranked if asked & _words(d[1])]

    def ask(self, question: str, asked_at: datetime) -> str:
        """Answer ``question`` under a CHAIN span with a RETRIEVER child, stamped ``asked_at``."""
        start = int(asked_at.timestamp() * 1e9)
        with self.tracer.start_as_current_span(
            "query", kind=SpanKind.SERVER, start_time=start, end_on_exit=False
        ) as chain:
            chain.set_attribute("openinference.span.kind", "CHAIN")
            chain.set_attribute("input.value", question)
            with self.tracer.start_as_current_span(
                "retrieve", start_time=start + 1000, end_on_exit=False
            ) as retriever:
                retriever.set_attribute("openinference.span.kind", "RETRIEVER")
                retriever.set_attribute("input.value", question)
                found = self._retrieve(question)
                for i, (doc_id, text) in enumerate(found):
                    retriever.set_attribute(f"retrieval.documents.{i}.document.id", doc_id)
                    retriever.set_attribute(f"retrieval.documents.{i}.document.content", text)
                retriever.end(end_time=start + 2000)
            answer = found[0][1] if found else "I don't know."
            chain.set_attribute("output.value", answer)
            chain.end(end_time=start + 3000)
        return answer

    def close(self) -> None:
        self.provider.shutdown()


def questions() -> Iterator[str]:
    """What the app's users type (none of it written by the generator)."""
    yield from (
        "how many berths does Rotterdam have",
        "berths in busan?",
        "Tromso country",
        "who is the captain of the Pacific Heron",
        "good morning",
    )
