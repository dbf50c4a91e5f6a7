"""The reference RAG endpoint: ``POST /query`` → ``{answer, retrieved_ids, contexts}``.

A small RAG system over a document corpus, built to be evaluated: retriever, reader and fault
switches are settings, so a demo can plant a weakness (keyword matching on long queries, dropped
documents, errors, latency) and watch groundwatch find it. Everything is built in
:func:`create_app`, not in the lifespan, so the app also works in-process behind
``httpx.ASGITransport`` (which does not run lifespans).
"""

from __future__ import annotations

import time

from fastapi import Depends, FastAPI, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from pydantic import BaseModel, ConfigDict, Field

from groundwatch.contracts import MAX_TEXT
from groundwatch.core.llm import ChatModel
from groundwatch.core.model import DONT_KNOW
from groundwatch.core.retrieval import DenseRetriever, Embedder, Retriever, sparse_retriever
from groundwatch.errors import ConfigError
from groundwatch.reference_rag import (
    ExtractiveReader,
    FaultSwitches,
    InjectedFault,
    RagPipeline,
    Reader,
)
from groundwatch.reference_rag.corpus import load_corpus
from groundwatch.reference_rag.llm_reader import LlmReader
from groundwatch.reference_rag.settings import ReferenceRagSettings
from groundwatch.reference_rag.telemetry import RagTelemetry
from groundwatch.runtime.auth import require_token
from groundwatch.runtime.service import add_input_guards


class QueryRequest(BaseModel):
    """A question for the RAG system; unknown fields are ignored so any client template works."""

    model_config = ConfigDict(extra="ignore")

    query: str = Field(
        min_length=1, max_length=MAX_TEXT, examples=["Where is Blue Horizon Hotels?"]
    )


class QueryResponse(BaseModel):
    answer: str = Field(description=f"The answer, or {DONT_KNOW!r} when the context lacks it.")
    retrieved_ids: list[str] = Field(description="Ids of the documents given to the reader.")
    contexts: list[str] = Field(description="Texts of those documents, in rank order.")


def resolve_corpus(settings: ReferenceRagSettings, corpus: dict[str, str] | None) -> dict[str, str]:
    """The corpus argument, else ``GW_RAG_CORPUS``, else the built-in demo corpus."""
    if corpus is not None:
        return dict(corpus)
    if settings.rag_corpus is not None:
        return load_corpus(settings.rag_corpus)
    try:
        from groundwatch.demo import build_demo  # type: ignore[attr-defined,unused-ignore]
    except ImportError:
        raise ConfigError(
            "GW_RAG_CORPUS: not set and the built-in demo corpus is unavailable; "
            "point it at a JSON file {doc_id: text} or a directory of .txt/.md files"
        ) from None
    documents: dict[str, str] = dict(build_demo().documents)
    return documents


def build_pipeline(
    settings: ReferenceRagSettings,
    corpus: dict[str, str],
    *,
    llm: ChatModel | None = None,
    embedder: Embedder | None = None,
) -> RagPipeline:
    """Retriever + reader + fault switches as the settings say; refuses what cannot be built."""
    retriever: Retriever
    if settings.rag_retriever == "dense":
        if embedder is None:
            from groundwatch.reference_rag.dense import load_embedder

            embedder = load_embedder(settings.rag_embedding_model)
        retriever = DenseRetriever(corpus, embedder)
    else:
        retriever = sparse_retriever(settings.rag_retriever, corpus)
    reader: Reader
    if settings.rag_reader == "llm":
        if llm is None:
            raise ConfigError(
                "GW_RAG_READER=llm needs an LLM client; pass one to create_app(llm=...) "
                "or use GW_RAG_READER=extractive"
            )
        reader = LlmReader(llm)
    else:
        reader = ExtractiveReader(corpus)
    return RagPipeline(corpus, retriever, reader, settings.faults())


def create_app(
    settings: ReferenceRagSettings,
    corpus: dict[str, str] | None = None,
    *,
    llm: ChatModel | None = None,
    embedder: Embedder | None = None,
    registry: CollectorRegistry | None = None,
) -> FastAPI:
    """The reference RAG app. Raises :class:`ConfigError` when the configuration cannot work."""
    documents = resolve_corpus(settings, corpus)
    pipeline = build_pipeline(settings, documents, llm=llm, embedder=embedder)
    registry = registry if registry is not None else CollectorRegistry()
    telemetry = RagTelemetry(registry)
    labels = (pipeline.retriever.name, pipeline.reader.name)

    def _document_gauges() -> None:
        telemetry.documents.labels("indexed").set(len(pipeline.corpus))
        telemetry.documents.labels("dropped").set(len(pipeline.dropped & pipeline.corpus.keys()))

    _document_gauges()
    token = settings.rag_admin_token.get_secret_value() if settings.rag_admin_token else None
    admin = [Depends(require_token(token))]

    app = FastAPI(title="groundwatch reference RAG")
    add_input_guards(app)  # 413 for a body over 1 MiB, 422 for a NUL in the path or query
    app.state.pipeline = pipeline
    app.state.telemetry = telemetry

    @app.post("/query", response_model=QueryResponse, tags=["rag"])
    async def query(req: QueryRequest) -> QueryResponse | JSONResponse:
        """Retrieve top-k documents and read an answer from them."""
        started = time.perf_counter()
        try:
            result = await pipeline.answer(req.query)
        except InjectedFault as exc:
            telemetry.queries.labels(*labels, "error").inc()
            return JSONResponse({"detail": str(exc)}, status_code=500)
        finally:
            telemetry.latency.labels(*labels).observe(time.perf_counter() - started)
        outcome = "dont_know" if result.answer == DONT_KNOW else "answered"
        telemetry.queries.labels(*labels, outcome).inc()
        return QueryResponse(
            answer=result.answer, retrieved_ids=result.retrieved_ids, contexts=result.contexts
        )

    @app.get("/faults", response_model=FaultSwitches, tags=["admin"])
    async def get_faults() -> FaultSwitches:
        """The fault switches in force."""
        return pipeline.faults

    @app.put("/faults", response_model=FaultSwitches, tags=["admin"], dependencies=admin)
    async def put_faults(switches: FaultSwitches) -> FaultSwitches:
        """Replace the fault switches (bearer ``GW_RAG_ADMIN_TOKEN``)."""
        pipeline.faults = switches
        _document_gauges()
        return pipeline.faults

    @app.get("/healthz", tags=["ops"])
    async def healthz() -> dict[str, str]:
        """Liveness: the process serves requests."""
        return {"status": "ok", "service": "reference-rag"}

    @app.get("/readyz", tags=["ops"])
    async def readyz() -> JSONResponse:
        """Readiness: a non-empty corpus is indexed."""
        ready = bool(pipeline.corpus)
        body = {"ready": ready, "documents": len(pipeline.corpus), "retriever": labels[0]}
        return JSONResponse(body, status_code=200 if ready else 503)

    @app.get("/metrics", tags=["ops"], response_class=PlainTextResponse)
    async def prometheus() -> Response:
        """Prometheus exposition of this service's registry."""
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    return app
