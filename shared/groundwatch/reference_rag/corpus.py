"""The reference RAG's corpus (``GW_RAG_CORPUS``): the shared corpus reader of the adapters."""

from __future__ import annotations

from groundwatch.adapters.corpus_files import load_corpus

__all__ = ["load_corpus"]
