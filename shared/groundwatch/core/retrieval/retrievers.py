"""Retrievers of the reference RAG: keyword overlap (GRAMMAR §5's weak one), BM25 and dense.

Each retriever indexes a fixed corpus once and ranks documents for a query. ``exclude`` lets the
"drop documents" fault switch hide documents at query time without re-indexing, which is what a
knowledge gap in the retrieval database looks like from the outside: the document never comes back.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt
from rank_bm25 import BM25Okapi

from groundwatch.core.retrieval.text import content_tokens, tokenize


@dataclass(frozen=True, slots=True)
class Retrieved:
    """One retrieved document with its retriever score (higher is better)."""

    doc_id: str
    text: str
    score: float


@runtime_checkable
class Retriever(Protocol):
    """Ranks the documents of the corpus it was built on."""

    name: str

    def retrieve(
        self, query: str, k: int, exclude: Collection[str] = frozenset()
    ) -> list[Retrieved]: ...


def _top_k(
    corpus_ids: Sequence[str],
    corpus: Mapping[str, str],
    scores: Sequence[float] | npt.NDArray[np.float64],
    k: int,
    exclude: Collection[str],
    min_score: float,
) -> list[Retrieved]:
    """Best ``k`` by score; ties keep corpus order, so results are deterministic."""
    # only the first k + |exclude| can be returned: a partial selection, not a full sort
    order = heapq.nsmallest(
        k + len(exclude), range(len(corpus_ids)), key=lambda i: (-float(scores[i]), i)
    )
    out: list[Retrieved] = []
    for i in order:
        if len(out) >= k:
            break
        score = float(scores[i])
        if score <= min_score:
            break
        doc_id = corpus_ids[i]
        if doc_id in exclude:
            continue
        out.append(Retrieved(doc_id, corpus[doc_id], score))
    return out


class KeywordOverlapRetriever:
    """Scores a document by how many distinct query words it contains (GRAMMAR §5).

    This is the "basic keyword-matching retrieval" the GRAMMAR authors plant as a known defect: no
    stop-word removal, no term weighting, no length normalisation. A short query is mostly the
    entity it asks about, so the right document wins; a long, polite query is mostly filler words
    ("please", "the", "corresponding", "in our system"), which every document shares, so the
    entity's few words are outvoted and a wrong document often ranks first. That asymmetry between
    cohorts is exactly what the robustness analysis is meant to detect.
    """

    name = "keyword"

    def __init__(self, corpus: Mapping[str, str]) -> None:
        self._corpus = dict(corpus)
        self._ids = list(self._corpus)
        self._vocab = [frozenset(tokenize(self._corpus[d])) for d in self._ids]
        #: word → the documents holding it (corpus order): a query's scores are counted over the
        #: postings of its words (C-level ``Counter`` over the chained lists) instead of
        #: intersecting the query with every document's vocabulary
        postings: dict[str, list[int]] = {}
        for i, vocab in enumerate(self._vocab):
            for word in vocab:
                postings.setdefault(word, []).append(i)
        self._postings = {w: tuple(ids) for w, ids in postings.items()}

    def retrieve(
        self, query: str, k: int, exclude: Collection[str] = frozenset()
    ) -> list[Retrieved]:
        postings = self._postings
        # a document's count = how many distinct query words it holds = len(words & vocab)
        counts = Counter(
            itertools.chain.from_iterable(
                postings[w] for w in set(tokenize(query)) if w in postings
            )
        )
        # the same order as _top_k: score descending, ties in corpus order; documents holding
        # no query word (score 0) are never returned, so only the counted ones are ranked
        # (two C-level sorts: corpus order, then by count keeping it for ties — a stable sort
        # stays stable with reverse=True)
        ranked = sorted(sorted(counts), key=counts.__getitem__, reverse=True)
        out: list[Retrieved] = []
        for i in ranked:
            if len(out) >= k:
                break
            doc_id = self._ids[i]
            if doc_id in exclude:
                continue
            out.append(Retrieved(doc_id, self._corpus[doc_id], float(counts[i])))
        return out


class Bm25Retriever:
    """Okapi BM25 over content words (rank-bm25): the reasonable sparse baseline."""

    name = "bm25"

    def __init__(self, corpus: Mapping[str, str], k1: float = 1.5, b: float = 0.75) -> None:
        self._corpus = dict(corpus)
        self._ids = list(self._corpus)
        # rank-bm25 divides by the corpus size; an empty corpus gets no index at all.
        docs = [content_tokens(self._corpus[d]) or [""] for d in self._ids]
        self._bm25 = BM25Okapi(docs, k1=k1, b=b) if docs else None

    def retrieve(
        self, query: str, k: int, exclude: Collection[str] = frozenset()
    ) -> list[Retrieved]:
        terms = content_tokens(query)
        if self._bm25 is None or not terms:
            return []
        scores = np.asarray(self._bm25.get_scores(terms), dtype=np.float64)
        return _top_k(self._ids, self._corpus, scores, k, exclude, min_score=0.0)


class Embedder(Protocol):
    """Turns texts into vectors; the real one wraps a sentence-transformers model."""

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]: ...


def passages(text: str, words: int = 120, overlap: int = 30) -> list[str]:
    """Overlapping word windows: embedding models read ~256 word pieces, documents are longer."""
    tokens = text.split()
    if len(tokens) <= words:
        return [" ".join(tokens)] if tokens else [""]
    step = max(1, words - overlap)
    return [" ".join(tokens[i : i + words]) for i in range(0, len(tokens) - overlap, step)]


class DenseRetriever:
    """Cosine similarity of embeddings; a document scores as its best-matching passage."""

    name = "dense"

    def __init__(self, corpus: Mapping[str, str], embedder: Embedder) -> None:
        self._corpus = dict(corpus)
        self._ids = list(self._corpus)
        self._embedder = embedder
        owners: list[int] = []
        texts: list[str] = []
        for i, doc_id in enumerate(self._ids):
            for passage in passages(self._corpus[doc_id]):
                owners.append(i)
                texts.append(passage)
        self._owners = np.asarray(owners, dtype=np.int64)
        self._matrix = _normalise(embedder.embed(texts)) if texts else np.zeros((0, 1), np.float32)

    def retrieve(
        self, query: str, k: int, exclude: Collection[str] = frozenset()
    ) -> list[Retrieved]:
        if not self._ids:
            return []
        q = _normalise(self._embedder.embed([query]))[0]
        sims = self._matrix @ q
        best = np.full(len(self._ids), -math.inf, dtype=np.float64)
        np.maximum.at(best, self._owners, sims.astype(np.float64))
        return _top_k(self._ids, self._corpus, best, k, exclude, min_score=-math.inf)


def _normalise(m: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    m = np.asarray(m, dtype=np.float32)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: npt.NDArray[np.float32] = m / norms
    return out


#: Names accepted by :func:`sparse_retriever` (dense needs an embedder, see ``DenseRetriever``).
SPARSE_RETRIEVERS = ("keyword", "bm25")


def sparse_retriever(name: str, corpus: Mapping[str, str]) -> Retriever:
    """Build a retriever that needs no model; ``name`` is ``keyword`` or ``bm25``."""
    if name == "keyword":
        return KeywordOverlapRetriever(corpus)
    if name == "bm25":
        return Bm25Retriever(corpus)
    raise ValueError(f"unknown sparse retriever {name!r}; expected one of {SPARSE_RETRIEVERS}")
