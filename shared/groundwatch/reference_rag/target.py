"""The reference RAG as an in-process target: :meth:`RagPipeline.answer` without the HTTP stack.

The embedded demo asks the reference RAG in the same process. Through ``httpx.ASGITransport`` and
FastAPI every question paid for a request object, the ASGI middleware, the endpoint's pydantic
models and the JSON both ways — about a third of the demo's CPU, more than groundwatch's own
stages. This target calls the pipeline directly and fails the way the endpoint does (an injected
fault is an HTTP 500, a query the endpoint would refuse an HTTP 422), so the demo sees the same
answers and the same error kinds. The HTTP path (:func:`~groundwatch.reference_rag.app.create_app`
behind :class:`~groundwatch.adapters.targets.HttpJsonTarget`) stays what the services use, and is
tested as such.
"""

from __future__ import annotations

from groundwatch.adapters.targets.base import ErrorKind, TargetError, TargetReply, reply_from
from groundwatch.contracts import MAX_TEXT
from groundwatch.reference_rag.faults import InjectedFault
from groundwatch.reference_rag.pipeline import RagPipeline


class ReferenceTarget:
    """``ask`` = :meth:`RagPipeline.answer`, with the endpoint's refusals and faults."""

    def __init__(self, pipeline: RagPipeline) -> None:
        self.pipeline = pipeline

    def __repr__(self) -> str:
        return f"ReferenceTarget({self.pipeline.retriever.name}, {self.pipeline.reader.name})"

    async def ask(self, query: str) -> TargetReply:
        if not query or len(query) > MAX_TEXT:  # the endpoint's request model refuses these
            raise TargetError(ErrorKind.HTTP_4XX, "HTTP 422", status_code=422)
        try:
            result = await self.pipeline.answer(query)
        except InjectedFault:
            raise TargetError(ErrorKind.HTTP_5XX, "HTTP 500", status_code=500) from None
        return reply_from(result.answer, result.retrieved_ids, result.contexts)
