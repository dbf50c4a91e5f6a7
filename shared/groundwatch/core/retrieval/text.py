"""Tokens and sentences, the units both retrievers and the extractive reader count in.

One tokenizer for the whole reference RAG so that a retriever and the reader never disagree on what
a "word" is. It is deliberately simple (lower-cased alphanumeric runs): the reference RAG is a
test subject, not a search engine, and its weaknesses must be explainable in one sentence.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"[a-z0-9]+(?:['.][a-z0-9]+)*")
# A sentence ends at ., ! or ? followed by whitespace, or at a blank line / markdown heading line.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9*])|\n\s*\n|\n(?=\s*[*#-])")
_MARKUP = re.compile(r"[*#`_]+")

#: Function words and the request verbs of generated queries. The keyword-overlap retriever keeps
#: them on purpose (its weakness on long queries); BM25 and the reader drop them so they score on
#: content words only.
_STOPWORD_TEXT = """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just me more most my myself no nor not now of off on once only or other our ours ourselves out
    over own please same she should so some such than that the their theirs them themselves then
    there these they this those through to too under until up very was we were what when where
    which while who whom why will with would you your yours yourself yourselves get give show tell
    find fetch list let know provide display retrieve return us kindly"""
STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens, keeping in-word dots and apostrophes (``3.5``, ``o'neil``)."""
    return _TOKEN.findall(text.lower())


def content_tokens(text: str) -> list[str]:
    """Tokens with :data:`STOPWORDS` removed."""
    return [t for t in tokenize(text) if t not in STOPWORDS]


def split_sentences(text: str) -> list[str]:
    """Sentences of a document, markdown emphasis stripped, empty pieces dropped."""
    pieces = _SENTENCE_END.split(text)
    out = []
    for piece in pieces:
        cleaned = " ".join(_MARKUP.sub(" ", piece).split())
        if cleaned:
            out.append(cleaned)
    return out
