"""Oro et al.'s LLM-derived answer metrics through the judge's client: RAGAS answer correctness,
RAGAS answer relevance and the RAG triad's context relevance (the arithmetic is in
:mod:`groundwatch.core.semantic`). Project-written prompts in RAGAS's manner; a failed call or an
unreadable reply gives no score (``None``), never a made-up one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import orjson

from groundwatch.core.llm import ChatModel, fill, listed_lines
from groundwatch.core.semantic import Vector, cosine, share_of_sentences, statement_f1
from groundwatch.errors import GroundwatchError

PROMPT_VERSION = "answer-metrics-v1"

ANSWER_CORRECTNESS_PROMPT = (
    "Compare an answer with the ground truth answer to a question. Split both into short"
    " factual statements. Sort them into: TP, statements of the answer that the ground truth"
    " supports; FP, statements of the answer that the ground truth does not support; FN,"
    " statements of the ground truth missing from the answer. Reply with one JSON object and"
    ' nothing else: {"TP": [...], "FP": [...], "FN": [...]}.\n'
    "question: {question}\n"
    "answer: {answer}\n"
    "ground truth: {gold}\n"
)

ANSWER_RELEVANCE_PROMPT = (
    "Write {n} different questions that the answer below answers, one per line and nothing"
    " else. If the answer is evasive or noncommittal (for example 'I don't know'), write only"
    " NONCOMMITTAL.\n"
    "answer: {answer}\n"
)

CONTEXT_RELEVANCE_PROMPT = (
    "Copy, word for word, the sentences of the context that are needed to answer the question,"
    " one per line and nothing else. If no sentence is needed, write only"
    " INSUFFICIENT_INFORMATION.\n"
    "question: {question}\n"
    "context: {context}\n"
)


_OBJECT = re.compile(r"\{.*\}", re.S)


def parse_statements(text: str) -> tuple[int, int, int] | None:
    """(TP, FP, FN) counts from the correctness reply; None when it is not the JSON asked for."""
    m = _OBJECT.search(text)
    if not m:
        return None
    try:
        doc = orjson.loads(m.group(0))
    except orjson.JSONDecodeError:
        return None
    if not isinstance(doc, dict):
        return None
    counts = []
    for key in ("TP", "FP", "FN"):
        value = doc.get(key, doc.get(key.lower(), []))
        if not isinstance(value, list):
            return None
        counts.append(len(value))
    return counts[0], counts[1], counts[2]


async def answer_correctness(
    client: ChatModel, question: str, answer: str, gold: str
) -> float | None:
    """RAGAS answer correctness: the F1 of the answer's statements against the gold's."""
    prompt = fill(ANSWER_CORRECTNESS_PROMPT, question=question, answer=answer, gold=gold)
    try:
        (reply,) = await client.complete("", prompt, temperature=0.0, max_tokens=400)
    except GroundwatchError:
        return None
    counts = parse_statements(reply)
    return statement_f1(*counts) if counts is not None else None


#: Normalised sentence vectors of some texts (the packaged encoder's).
Embed = Callable[[Sequence[str]], Sequence[Vector]]


async def answer_relevance(
    client: ChatModel, embed: Embed, question: str, answer: str, *, n: int = 3
) -> float | None:
    """RAGAS answer relevance: the mean cosine between the question and ``n`` questions an LLM
    writes for the answer; 0 for a noncommittal answer."""
    prompt = fill(ANSWER_RELEVANCE_PROMPT, answer=answer, n=str(n))
    try:
        (reply,) = await client.complete("", prompt, temperature=0.0, max_tokens=200)
    except GroundwatchError:
        return None
    if "NONCOMMITTAL" in reply.upper():
        return 0.0
    generated = listed_lines(reply)[:n]
    if not generated:
        return None
    asked, *written = embed([question, *generated])
    return sum(cosine(asked, w) for w in written) / len(written)


async def context_relevance(
    client: ChatModel, question: str, contexts: Sequence[str], *, max_chars: int = 12_000
) -> float | None:
    """The RAG triad's context relevance: the share of the context's sentences an LLM copies as
    needed to answer the question; None without contexts."""
    context = "\n".join(contexts)[:max_chars]
    if not context.strip():
        return None
    prompt = fill(CONTEXT_RELEVANCE_PROMPT, question=question, context=context)
    try:
        (reply,) = await client.complete("", prompt, temperature=0.0, max_tokens=800)
    except GroundwatchError:
        return None
    if "INSUFFICIENT_INFORMATION" in reply.upper():
        return 0.0
    return share_of_sentences(listed_lines(reply), context)
