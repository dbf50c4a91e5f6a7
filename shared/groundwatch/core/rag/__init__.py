"""The reference RAG system's pure parts: tokens, retrievers, readers, fault switches.

It exists to be evaluated: a small, explainable RAG whose weaknesses (GRAMMAR §5's keyword
matching suffers on long queries) and planted faults the rest of groundwatch must detect.
"""

from groundwatch.core.rag.faults import FaultSwitches, InjectedFault
from groundwatch.core.rag.pipeline import RagAnswer, RagPipeline
from groundwatch.core.rag.readers import DONT_KNOW, ExtractiveReader, Reader
from groundwatch.core.rag.retrievers import (
    SPARSE_RETRIEVERS,
    Bm25Retriever,
    DenseRetriever,
    Embedder,
    KeywordOverlapRetriever,
    Retrieved,
    Retriever,
    sparse_retriever,
)
from groundwatch.core.rag.text import STOPWORDS, content_tokens, split_sentences, tokenize

__all__ = [
    "DONT_KNOW",
    "SPARSE_RETRIEVERS",
    "STOPWORDS",
    "Bm25Retriever",
    "DenseRetriever",
    "Embedder",
    "ExtractiveReader",
    "FaultSwitches",
    "InjectedFault",
    "KeywordOverlapRetriever",
    "RagAnswer",
    "RagPipeline",
    "Reader",
    "Retrieved",
    "Retriever",
    "content_tokens",
    "sparse_retriever",
    "split_sentences",
    "tokenize",
]
