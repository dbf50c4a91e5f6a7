"""Readers turn retrieved documents into an answer.

The extractive reader needs no model: it returns the retrieved sentence that best matches the
query. For the short factual questions GRAMMAR generates ("Which city is client X in?") the
sentence that names the entity and the asked attribute usually contains the answer value, and the
judge checks for the value inside the answer. When nothing in the context matches — or the best
sentence is only about the entity, not about what is asked — it says it does not know instead of
guessing, like the LLM reader is told to.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Protocol

from groundwatch.core.model import DONT_KNOW
from groundwatch.core.retrieval.retrievers import Retrieved
from groundwatch.core.retrieval.text import content_tokens, split_sentences

#: Texts outside the corpus whose split is kept (a reader given arbitrary documents).
_MAX_SPLIT_CACHE = 10_000
_QUOTED = re.compile(r"(?<![A-Za-z0-9])'([^']+)'(?![A-Za-z0-9])|\"([^\"]+)\"")


#: A parsed query: its content words, each quoted phrase's words, its specific words (``None``
#: when the corpus is not known, so there are none to require).
_Parsed = tuple[frozenset[str], tuple[frozenset[str], ...], frozenset[str] | None]


class Reader(Protocol):
    """Answers a query from retrieved documents (async: the LLM reader awaits a network call)."""

    name: str

    async def read(self, query: str, docs: Sequence[Retrieved]) -> str: ...


class ExtractiveReader:
    """Picks the retrieved sentence sharing the most IDF-weighted content words with the query.

    Weights come from sentence frequencies over the whole corpus when it is given (else over the
    retrieved sentences): boilerplate that every document repeats ("reported to the management
    team at each review meeting") then weighs little, and the entity's name a lot, so a long,
    wordy question still lands on the sentence about its entity. A sentence holding every phrase
    the query puts in quotes ranks first, the way a search engine treats quotes as "exactly this";
    a query that quotes names is never answered by a sentence holding none of them (it abstains):
    such a sentence is about another entity ("The status of the project Marble Masterplan is
    active." for a question on 'Juniper Masterplan'), and its value, when it happens to equal the
    asked one, would pass for an answer. Ties go to the higher-ranked document, then to the
    earlier sentence: the same context always yields the same answer.

    With the corpus known, the reader abstains (``I don't know.``) when the best sentence shares
    none of the question's *specific* words outside its quoted names — words in fewer than
    ``specific_fraction`` of the corpus sentences, such as the asked attribute ("industry") —
    when the question has such words: a sentence that only names the entity ("The client of
    project P is X.") does not answer "Which industry is X in?". Without this, the reader would
    return an unrelated sentence, which no judge can call wrong with certainty.
    """

    name = "extractive"

    def __init__(
        self,
        corpus: Mapping[str, str] | None = None,
        min_overlap: int = 1,
        specific_fraction: float | None = 0.1,
    ) -> None:
        self.min_overlap = min_overlap
        self.specific_fraction = specific_fraction
        self._sf: Counter[str] | None = None
        self._n = 0
        #: each document's sentences with their content tokens, split once per text (the corpus
        #: up front, other texts as they come, bounded): re-splitting and re-tokenizing the same
        #: retrieved documents for every query was most of the reader's time
        self._split: dict[str, tuple[tuple[str, frozenset[str]], ...]] = {}
        self._fixed = len(corpus) if corpus is not None else 0
        if corpus is not None:
            for text in corpus.values():
                self._sentences(text)
            sentence_sets = [ts for text in corpus.values() for _, ts in self._split[text]]
            self._sf = Counter(t for ts in sentence_sets for t in ts)
            self._n = len(sentence_sets)
        #: a token's IDF weight over the corpus sentences, computed on first use (the corpus is
        #: fixed, so the weight is too): the same float the scoring loop computed per sentence
        self._idf: dict[str, float] = {}
        self._fixed = len(self._split)  # distinct texts: two documents may share one
        self._parsed: dict[str, _Parsed] = {}

    def _sentences(self, text: str) -> tuple[tuple[str, frozenset[str]], ...]:
        split = self._split.get(text)
        if split is None:
            split = tuple((s, frozenset(content_tokens(s))) for s in split_sentences(text))
            if len(self._split) >= self._fixed + _MAX_SPLIT_CACHE:
                # the oldest text from outside the corpus (the corpus' own come first)
                self._split.pop(next(itertools.islice(self._split, self._fixed, None)))
            self._split[text] = split
        return split

    def _parse(self, query: str) -> _Parsed:
        """The query's content words, its quoted phrases' words and (corpus known) its specific
        words: four regex passes per query, so kept per query text (monitoring asks the same
        questions every cycle), bounded like the split cache."""
        parsed = self._parsed.get(query)
        if parsed is None:
            terms = frozenset(content_tokens(query))
            quoted = [frozenset(content_tokens(a or b)) for a, b in _QUOTED.findall(query)]
            specific: frozenset[str] | None = None
            if self._sf is not None and self.specific_fraction is not None and self._n:
                limit = self.specific_fraction * self._n
                unquoted = _QUOTED.sub(" ", query)
                specific = frozenset(t for t in content_tokens(unquoted) if 0 < self._sf[t] < limit)
            parsed = (terms, tuple(q for q in quoted if q), specific)
            if len(self._parsed) >= _MAX_SPLIT_CACHE:
                self._parsed.pop(next(iter(self._parsed)))  # the oldest query
            self._parsed[query] = parsed
        return parsed

    def best_sentence(self, query: str, docs: Sequence[Retrieved]) -> str | None:
        terms, quoted, specific = self._parse(query)
        if not terms:
            return None
        split = [(rank, s, ts) for rank, d in enumerate(docs) for s, ts in self._sentences(d.text)]
        if not split:
            return None
        sentences = [(rank, s) for rank, s, _ in split]
        token_sets = [ts for _, _, ts in split]
        if self._sf is not None:
            sf, n = self._sf, self._n
        else:
            sf, n = Counter(t for ts in token_sets for t in ts & terms), len(sentences)
        best: tuple[bool, float, int, int] | None = None
        best_i = -1
        weights: dict[str, float] = {}
        idf = self._idf if self._sf is not None else {}
        for t in terms:
            w = idf.get(t)
            if w is None:
                w = math.log(1.0 + n / max(sf[t], 1))
                if self._sf is not None and t in sf:  # the corpus' words only: bounded
                    idf[t] = w
            weights[t] = w
        weight = weights.__getitem__
        for i, ((rank, _), ts) in enumerate(zip(sentences, token_sets, strict=True)):
            shared = ts & terms
            if len(shared) < self.min_overlap:
                continue
            # fsum: exactly rounded whatever the set's order, which follows the per-process
            # string hash seed; a plain sum let equal sentences tie-break differently per process
            score = math.fsum(map(weight, shared))
            exact = bool(quoted) and all(q <= ts for q in quoted)
            key = (exact, score, -rank, -i)
            if best is None or key > best:
                best, best_i = key, i
        if best is None:
            return None
        sentence = sentences[best_i][1]
        # a quoted name pins the entity: a sentence naming none of them is about another one
        if quoted and not best[0] and not any(q <= token_sets[best_i] for q in quoted):
            return None
        # the sentence must mention one of the question's specific words (see the class)
        if specific and not specific & token_sets[best_i]:
            return None
        return sentence

    async def read(self, query: str, docs: Sequence[Retrieved]) -> str:
        return self.best_sentence(query, docs) or DONT_KNOW
