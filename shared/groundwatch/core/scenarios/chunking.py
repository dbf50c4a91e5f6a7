"""Documents → chunks → the chunk sets questions are made from (RAGProbe §3.1 constructs 1–3).

The splitter is the character splitter RAGProbe names ("character text splitting, separator,
chunk size, overlap"), written out here rather than pulled in from LangChain: its semantics fit
in thirty lines, and ``langchain-text-splitters`` would bring ``langchain-core`` and its
dependency tree into a package that only needs this one function.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from groundwatch.core.judging.dates import extract_dates
from groundwatch.core.judging.numbers import extract_numbers
from groundwatch.core.scenarios.spec import Chunking, ChunkSampling, DocumentSampling

#: Clock times: "14:30", "9:05:10", "3 pm", "11 a.m." — what "contains a date/time" adds to dates.
TIME = re.compile(
    r"\b(?:[01]?\d|2[0-3]):[0-5]\d(?::[0-5]\d)?\b|\b1?\d\s?(?:a\.?m\.?|p\.?m\.?)(?!\w)", re.I
)


@dataclass(frozen=True, slots=True)
class Chunk:
    """One chunk of one document; ``chunk_id`` = ``<doc_id>#<index>``, stable for a chunking."""

    doc_id: str
    index: int
    text: str

    @property
    def chunk_id(self) -> str:
        return f"{self.doc_id}#{self.index}"

    def provenance(self) -> dict[str, object]:
        return {"chunk_id": self.chunk_id, "doc_id": self.doc_id, "text": self.text}


def split_text(text: str, chunking: Chunking) -> list[str]:
    """Split on the separator, then merge the pieces into chunks of at most ``chunk_size``
    characters, each starting with up to ``chunk_overlap`` characters of the previous one.

    A single piece longer than ``chunk_size`` becomes a chunk of its own (it is not cut inside
    a sentence), as LangChain's ``CharacterTextSplitter`` does.
    """
    sep = chunking.separator
    pieces = [p.strip() for p in (text.split(sep) if sep else list(text))]
    pieces = [p for p in pieces if p]
    size, overlap, join = chunking.chunk_size, chunking.chunk_overlap, len(sep)
    chunks: list[str] = []
    window: list[str] = []
    total = 0
    for piece in pieces:
        extra = len(piece) + (join if window else 0)
        if window and total + extra > size:
            chunks.append(sep.join(window))
            # keep a tail of the window as overlap, as long as the new piece still fits
            while window and (total > overlap or total + len(piece) + join > size):
                total -= len(window[0]) + (join if len(window) > 1 else 0)
                window.pop(0)
            extra = len(piece) + (join if window else 0)
        window.append(piece)
        total += extra
    if window:
        chunks.append(sep.join(window))
    return chunks


def chunk_corpus(corpus: Mapping[str, str], chunking: Chunking) -> dict[str, list[Chunk]]:
    """Every document's chunks, by document id (documents in sorted id order)."""
    return {
        doc_id: [Chunk(doc_id, i, t) for i, t in enumerate(split_text(corpus[doc_id], chunking))]
        for doc_id in sorted(corpus)
    }


def has_number(text: str) -> bool:
    return bool(extract_numbers(text))


def has_datetime(text: str) -> bool:
    return bool(extract_dates(text)) or TIME.search(text) is not None


def keep_chunk(chunk: Chunk, sampling: ChunkSampling) -> bool:
    if sampling.filter == "number":
        return has_number(chunk.text)
    if sampling.filter == "datetime":
        return has_datetime(chunk.text)
    return True


def sample_documents(
    doc_ids: Iterable[str], sampling: DocumentSampling, rng: random.Random
) -> list[str]:
    """Random N documents, or every document (iterative), in a seeded, reproducible order."""
    ids = sorted(doc_ids)
    if sampling.strategy == "iterative" or sampling.n >= len(ids):
        return ids
    return rng.sample(ids, sampling.n)


def _pick(chunks: Sequence[Chunk], n: int, strategy: str, rng: random.Random) -> list[Chunk]:
    if strategy == "iterative" or n >= len(chunks):
        return list(chunks)
    return sorted(rng.sample(list(chunks), n), key=lambda c: c.index)


def sample_contexts(
    chunks: Mapping[str, Sequence[Chunk]],
    docs: Sequence[str],
    sampling: ChunkSampling,
    rng: random.Random,
) -> list[list[Chunk]]:
    """The chunk sets questions are made from, one list per question.

    ``single``: each sampled chunk alone. ``same_document``: ``count`` chunks of one document
    (fewer when the document has fewer; RAGProbe S4). ``across_documents``: one chunk from each
    of ``count`` different documents, rotating through the sampled documents (S5).
    """
    eligible = {d: [c for c in chunks.get(d, ()) if keep_chunk(c, sampling)] for d in docs}
    eligible = {d: cs for d, cs in eligible.items() if cs}
    out: list[list[Chunk]] = []
    if sampling.combine == "single":
        for d in eligible:
            out.extend(
                [c] for c in _pick(eligible[d], sampling.per_document, sampling.strategy, rng)
            )
    elif sampling.combine == "same_document":
        for d in eligible:
            for _ in range(sampling.per_document):
                out.append(_pick(eligible[d], sampling.count, "random", rng))
    else:
        ids = list(eligible)
        if len(ids) >= 2:
            n = min(sampling.count, len(ids))
            for i in range(len(ids)):
                members = [ids[(i + j) % len(ids)] for j in range(n)]
                out.append([rng.choice(eligible[d]) for d in members])
    return out
