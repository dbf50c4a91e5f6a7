"""Retrieval over a corpus: tokens and the sparse/dense retrievers.

Pure: the reference RAG (``groundwatch.reference_rag``), the scenario validity check and the
corpus scenario generator all rank documents with these.
"""

from groundwatch.core.retrieval.retrievers import (
    SPARSE_RETRIEVERS,
    Bm25Retriever,
    DenseRetriever,
    Embedder,
    KeywordOverlapRetriever,
    Retrieved,
    Retriever,
    sparse_retriever,
)
from groundwatch.core.retrieval.text import STOPWORDS, content_tokens, split_sentences, tokenize

__all__ = [
    "SPARSE_RETRIEVERS",
    "STOPWORDS",
    "Bm25Retriever",
    "DenseRetriever",
    "Embedder",
    "KeywordOverlapRetriever",
    "Retrieved",
    "Retriever",
    "content_tokens",
    "sparse_retriever",
    "split_sentences",
    "tokenize",
]
