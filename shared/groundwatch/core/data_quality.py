"""The data-quality check of gap groups (GRAMMAR 002, Appendix I): is a claimed knowledge gap
really absent from the corpus?

GRAMMAR calls a semantic group a *gap* when every text form is answered wrongly and reads it as a
knowledge gap of the retrieval database (eq. 1). The authors check their own data the other way
round: a reading-comprehension (MRC) model given the documents must answer the questions, or the
documents lack the fact. A gap group the corpus *can* answer is no knowledge gap: the system under
test had the fact and failed to retrieve or read it. So each gap group is labelled

* ``knowledge_gap`` — the corpus does not state the answer (the database has a fact the
  documents lack: add the document);
* ``retrieval_or_reader`` — the corpus states it (the system under test failed to use it: fix the
  retriever or the reader, not the corpus);
* ``unchecked`` — no corpus, no gold answer to look for, or an answer no text states verbatim (a
  count or a sum) without an LLM to read for it.

The check, in order:

1. **BM25** (rank-bm25) over the corpus's sentences, queried with the group's text forms, its
   entities and its gold answer; among the best-ranked sentences, the corpus states the answer
   when for each entity of the question (the SQL's bound values, else the questions' quoted names)
   a sentence holds that entity and every part of the gold answer — the judge's own matching, so
   dates and numbers are recognised however they are written
   (:mod:`groundwatch.core.judging.context`; a document's title counts as named in its sentences);
2. otherwise, when an LLM is configured, the paper's **MRC** check: the question and the
   best-ranked documents go to the reader prompt, and a correct answer (by the rules judge) means
   the corpus has it after all, in words the sentence test did not match. This part needs I/O and
   lives in :mod:`groundwatch.stages.analytics.data_quality`; this module gives it the documents.

A fact stated only across sentences ("Blue Lagoon Resort … It opened in 2023") is found by the MRC
step, not by the sentence test; without an LLM such a group is labelled ``knowledge_gap`` with
method ``bm25`` — the label says which evidence it stands on.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np
from rank_bm25 import BM25Okapi

from groundwatch.core.judging.context import Stated, quoted_entities, states_in, title_of
from groundwatch.core.judging.gold import Gold, prepare_gold
from groundwatch.core.model import Expected, SemanticGroup
from groundwatch.core.retrieval.text import content_tokens, split_sentences

#: Sentences the BM25 step reads per group (the entity–answer sentences rank near the top).
TOP_SENTENCES = 50
#: Documents the MRC step reads (the reader prompt bounds each document's length).
TOP_DOCUMENTS = 3
#: Characters of the stating sentence kept as evidence.
MAX_EXCERPT = 300
#: SQL whose answer is computed, not stated: no text holds a count or a sum verbatim.
_COMPUTED = re.compile(r"\b(count|sum|avg|total|group_concat|string_agg)\s*\(", re.IGNORECASE)


class QualityLabel(StrEnum):
    KNOWLEDGE_GAP = "knowledge_gap"
    RETRIEVAL_OR_READER = "retrieval_or_reader"
    UNCHECKED = "unchecked"


@dataclass(frozen=True, slots=True)
class GroupSpec:
    """What the check needs of a semantic group: its text forms, its gold answer, the values that
    single out the answer's row (``entities``; empty: the questions' quoted names) and its SQL
    (to tell a computed answer), and the dataset's relevant documents when it has them."""

    group_id: str
    questions: tuple[str, ...]
    expected: Expected
    entities: tuple[str, ...] = ()
    sql: str | None = None
    relevant_doc_ids: tuple[str, ...] = ()

    def question_entities(self) -> tuple[str, ...]:
        if self.entities:
            return self.entities
        found: dict[str, None] = {}
        for q in self.questions:
            found.update(dict.fromkeys(quoted_entities(q)))
        return tuple(found)

    @property
    def computed(self) -> bool:
        """The answer is an aggregate: no document states it word for word."""
        return bool(self.sql and _COMPUTED.search(self.sql))


@dataclass(frozen=True, slots=True)
class QualityCheck:
    """One gap group's label and the evidence it stands on."""

    group_id: str
    label: QualityLabel
    method: str  # bm25 | bm25+mrc | none
    reason: str
    doc_id: str | None = None
    excerpt: str | None = None


@dataclass(frozen=True, slots=True)
class QualityResults:
    """The labels known so far and how they were obtained (what the report shows)."""

    checks: Mapping[str, QualityCheck]
    corpus_documents: int
    mrc: bool


@dataclass(slots=True)
class CorpusIndex:
    """BM25 over the corpus's sentences and over its documents, built once per corpus."""

    documents: dict[str, str]
    #: (doc id, the document's subject — id and title —, sentence)
    _sentences: list[tuple[str, str, str]] = field(default_factory=list)
    _bm25: BM25Okapi | None = None
    _doc_ids: list[str] = field(default_factory=list)
    _doc_bm25: BM25Okapi | None = None

    @classmethod
    def build(cls, documents: Mapping[str, str]) -> CorpusIndex:
        idx = cls(dict(documents))
        for doc_id, text in idx.documents.items():
            subject = subject_of(doc_id, text)
            idx._sentences.extend((doc_id, subject, s) for s in split_sentences(text))
        if idx._sentences:
            idx._bm25 = BM25Okapi(
                [content_tokens(f"{sub} {s}") or [""] for _, sub, s in idx._sentences]
            )
        idx._doc_ids = list(idx.documents)
        if idx._doc_ids:
            idx._doc_bm25 = BM25Okapi(
                [content_tokens(idx.documents[d]) or [""] for d in idx._doc_ids]
            )
        return idx

    def __len__(self) -> int:
        return len(self.documents)

    def top_sentences(
        self, terms: Sequence[str], n: int = TOP_SENTENCES
    ) -> list[tuple[str, str, str]]:
        """(doc id, subject, sentence) of the ``n`` best-scoring sentences with any query term."""
        if self._bm25 is None or not terms:
            return []
        scores = np.asarray(self._bm25.get_scores(list(terms)), dtype=np.float64)
        order = np.argsort(-scores, kind="stable")[:n]
        return [self._sentences[i] for i in order if scores[i] > 0]

    def top_documents(self, terms: Sequence[str], n: int = TOP_DOCUMENTS) -> list[str]:
        """Ids of the ``n`` best-scoring documents with any query term."""
        if self._doc_bm25 is None or not terms:
            return []
        scores = np.asarray(self._doc_bm25.get_scores(list(terms)), dtype=np.float64)
        order = np.argsort(-scores, kind="stable")[:n]
        return [self._doc_ids[i] for i in order if scores[i] > 0]


def spec_of(group: SemanticGroup) -> GroupSpec:
    """A generated group's spec: every text form, the SQL answer, the SQL's bound values as the
    entities (what singles out the answer's row) and the SQL itself."""
    return GroupSpec(
        group_id=group.group_id,
        questions=tuple(f.text for f in group.forms),
        expected=group.answer,
        entities=tuple(str(v) for v in group.params.values() if v is not None and str(v).strip()),
        sql=group.sql,
        relevant_doc_ids=tuple(group.relevant_doc_ids),
    )


def subject_of(doc_id: str, text: str) -> str:
    """What a document is about: its id read as words ("project-beacon-campus", "Blue Lagoon
    Resort") and its title line."""
    words = re.sub(r"[-_/.]+", " ", doc_id).strip()
    title = title_of(text)
    return f"{words} :: {title}" if title and title.lower() != words.lower() else words


def query_terms(spec: GroupSpec) -> list[str]:
    """The BM25 query: every form's content words, the entities and the gold answer."""
    text = " ".join([*spec.questions, *spec.question_entities(), *spec.expected.values])
    return content_tokens(text)


def checkable(spec: GroupSpec) -> str | None:
    """Why the group cannot be checked at all (None: it can)."""
    if not spec.questions:
        return "no text form of the group is known"
    if not spec.expected.answerable or not prepare_gold(spec.expected).parts:
        return "no gold answer to look for"
    return None


def check_bm25(spec: GroupSpec, index: CorpusIndex) -> QualityCheck:
    """The BM25 step alone: ``retrieval_or_reader`` when the corpus states the answer beside the
    question's entities, else ``knowledge_gap`` (``unchecked`` when nothing can be looked for)."""
    gid = spec.group_id
    if not len(index):
        return QualityCheck(gid, QualityLabel.UNCHECKED, "none", "no corpus configured")
    why = checkable(spec)
    if why is not None:
        return QualityCheck(gid, QualityLabel.UNCHECKED, "none", why)
    if spec.computed:
        return QualityCheck(
            gid,
            QualityLabel.UNCHECKED,
            "none",
            "a computed answer (an aggregate): no sentence states it; needs the MRC check",
        )
    gold = prepare_gold(spec.expected)
    entities = spec.question_entities()
    top = index.top_sentences(query_terms(spec))
    verdict = states_in([f"{sub} :: {s}" for _, sub, s in top], gold, entities)
    if verdict is Stated.STATED:
        doc_id, sentence = _stating(top, gold, entities)
        return QualityCheck(
            gid,
            QualityLabel.RETRIEVAL_OR_READER,
            "bm25",
            "the corpus states the answer beside the question's entities",
            doc_id,
            sentence[:MAX_EXCERPT] if sentence else None,
        )
    where = (
        "the answer occurs only away from the question's entities"
        if verdict is Stated.ELSEWHERE
        else "the answer occurs in none of the best-matching sentences"
    )
    return QualityCheck(gid, QualityLabel.KNOWLEDGE_GAP, "bm25", where)


def _stating(
    top: Sequence[tuple[str, str, str]], gold: Gold, entities: Sequence[str]
) -> tuple[str | None, str | None]:
    """The first ranked sentence that states the answer beside an entity (the evidence shown)."""
    for doc_id, subject, sentence in top:
        if states_in([sentence], gold, entities[:1], subject) is Stated.STATED:
            return doc_id, sentence
    return (top[0][0], top[0][2]) if top else (None, None)


def mrc_documents(spec: GroupSpec, index: CorpusIndex, n: int = TOP_DOCUMENTS) -> list[str]:
    """The documents the MRC step reads: the dataset's relevant documents first (the paper gives
    the generated document itself), then the best BM25 documents, ``n`` at most."""
    chosen = [d for d in spec.relevant_doc_ids if d in index.documents]
    for d in index.top_documents(query_terms(spec), n):
        if d not in chosen:
            chosen.append(d)
    return chosen[:n]
