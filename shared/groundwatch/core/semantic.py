"""Oro et al.'s semantic answer metrics over embeddings, and the LLM-derived ones' arithmetic.

EM, F1, ROUGE and BLEU count shared tokens: "the 3rd of March" and "March 3" share one. The
semantic metrics compare meaning through a sentence encoder's vectors:

* **semantic similarity** — cosine of the answer's and the gold answer's sentence embeddings
  (SAS-style; the encoder's vectors are normalised, so it is their dot product);
* **BERTScore** (Zhang et al., 2020) — each token of one text matched greedily to its most
  similar token of the other by contextual embeddings; precision over the answer's tokens,
  recall over the gold's, F1. Computed with the packaged encoder's last layer, without IDF
  weights or baseline rescaling (BERTScore's options), so its values sit high: compare them
  with each other, not with published BERTScore numbers;
* **answer correctness** (RAGAS, as Oro et al. use it) — an LLM sorts the statements of the
  answer and of the gold into true positives, false positives and false negatives; the score is
  their F1, TP / (TP + ½ (FP + FN));
* **answer relevance** (RAGAS) — an LLM writes questions the answer would answer; the score is
  the mean cosine of their embeddings with the question asked;
* **context relevance** (the RAG triad) — an LLM copies the sentences of the retrieved context
  needed to answer; the score is their share of the context's sentences.

Pure functions over numbers and vectors; the encoder and the LLM live in the adapters.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float32]


def cosine(a: Vector, b: Vector) -> float:
    """Cosine similarity of two vectors (0 when either is all zeros)."""
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(np.clip(np.dot(a, b) / (na * nb), -1.0, 1.0))


def bertscore(candidate: Vector, reference: Vector) -> tuple[float, float, float]:
    """(precision, recall, F1) of greedy token matching between two texts' contextual token
    embeddings (tokens × dimensions). An empty side scores 0."""
    if candidate.size == 0 or reference.size == 0:
        return 0.0, 0.0, 0.0
    c = candidate / np.maximum(np.linalg.norm(candidate, axis=1, keepdims=True), 1e-12)
    r = reference / np.maximum(np.linalg.norm(reference, axis=1, keepdims=True), 1e-12)
    sim = c @ r.T
    precision = float(sim.max(axis=1).mean())
    recall = float(sim.max(axis=0).mean())
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return precision, recall, f1


def statement_f1(tp: int, fp: int, fn: int) -> float | None:
    """RAGAS answer correctness from statement counts: TP / (TP + ½(FP + FN)); None when the
    LLM found no statement at all (nothing to score)."""
    total = tp + 0.5 * (fp + fn)
    return tp / total if total > 0 else None


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])|\n+")


def sentences(text: str) -> list[str]:
    """The sentences of a context, split at end punctuation before a capital or a digit and at
    line breaks; blank pieces dropped."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def share_of_sentences(extracted: Sequence[str], context: str) -> float | None:
    """Context relevance: the share of the context's sentences the LLM copied as needed (a copied
    sentence counts when it is, normalised, one of the context's; at most every sentence)."""
    all_sentences = sentences(context)
    if not all_sentences:
        return None
    known = {_norm(s) for s in all_sentences}
    found = {_norm(s) for s in extracted} & known
    return min(1.0, len(found) / len(all_sentences))


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())
