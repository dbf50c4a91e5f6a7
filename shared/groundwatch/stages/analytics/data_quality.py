"""Running the data-quality check of gap groups (GRAMMAR 002 Appendix I) where the results are.

The pure check (BM25 over the corpus's sentences, :mod:`groundwatch.core.data_quality`) answers
most groups; this module adds what needs I/O — the paper's reading-comprehension check through an
LLM reader, when one is configured — and keeps the labels: a group's label depends only on the
corpus and the group's question and answer, so it is computed once per (group, answer version)
and reused by every report, every scrape and every target.

The checker is handed its specs by whoever knows the groups: the demo and ``groundwatch run`` from
their semantic groups (with the SQL's bound values as entities), the analytics service from the
judgements it stored (the questions and the expected answer; the quoted names as entities).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence

from groundwatch.core.data_quality import (
    CorpusIndex,
    GroupSpec,
    QualityCheck,
    QualityLabel,
    QualityResults,
    check_bm25,
    mrc_documents,
)
from groundwatch.core.judging import judge_deterministic
from groundwatch.core.model import Verdict
from groundwatch.core.retrieval import Retrieved

log = logging.getLogger(__name__)

#: Reads documents for a question (``LlmReader.read``): the MRC model.
MrcReader = Callable[[str, Sequence[Retrieved]], Awaitable[str]]
#: Checks kept at most (a label is a few hundred bytes; groups beyond are re-checked when asked).
MAX_KEPT = 200_000


class DataQualityChecker:
    """Labels gap groups ``knowledge_gap`` / ``retrieval_or_reader`` / ``unchecked``.

    ``documents`` is the corpus the system under test answers from (None: not configured, every
    group ``unchecked``); ``reader`` the MRC model (None: the BM25 step alone).
    """

    def __init__(
        self,
        documents: Mapping[str, str] | None,
        *,
        reader: MrcReader | None = None,
    ) -> None:
        self.index = CorpusIndex.build(documents or {})
        self.reader = reader
        self._checks: dict[str, tuple[int, QualityCheck]] = {}

    @property
    def configured(self) -> bool:
        return len(self.index) > 0

    def known(self, group_id: str, version: int = 1) -> QualityCheck | None:
        got = self._checks.get(group_id)
        return got[1] if got is not None and got[0] == version else None

    def results(self) -> QualityResults:
        return QualityResults(
            checks={g: c for g, (_, c) in self._checks.items()},
            corpus_documents=len(self.index),
            mrc=self.reader is not None,
        )

    async def check(self, spec: GroupSpec) -> QualityCheck:
        """The group's label: cached per answer version; BM25 first, then MRC if configured."""
        version = spec.expected.version
        cached = self.known(spec.group_id, version)
        if cached is not None:
            return cached
        result = check_bm25(spec, self.index)
        if self.reader is not None and self.configured and _needs_reading(result, spec):
            result = await self._mrc(spec, result)
        if len(self._checks) >= MAX_KEPT:
            self._checks.pop(next(iter(self._checks)))
        self._checks[spec.group_id] = (version, result)
        return result

    async def check_many(self, specs: Iterable[GroupSpec]) -> dict[str, QualityCheck]:
        """Every spec's label; the BM25 steps run in a worker thread (they are CPU work)."""
        todo = [s for s in specs if self.known(s.group_id, s.expected.version) is None]
        if todo and self.reader is None:
            done = await asyncio.to_thread(lambda: [check_bm25(s, self.index) for s in todo])
            for spec, result in zip(todo, done, strict=True):
                self._checks[spec.group_id] = (spec.expected.version, result)
        else:
            for spec in todo:
                await self.check(spec)
        return {s.group_id: c for s in specs if (c := self.known(s.group_id, s.expected.version))}

    async def _mrc(self, spec: GroupSpec, bm25: QualityCheck) -> QualityCheck:
        """Appendix I: an LLM reads the best-matching documents; a correct answer (by the rules
        judge) means the corpus has the fact in words the sentence test did not match."""
        assert self.reader is not None
        docs = [Retrieved(d, self.index.documents[d], 0.0) for d in mrc_documents(spec, self.index)]
        if not docs:
            return bm25
        question = min(spec.questions, key=len)  # the plainest form of the question
        try:
            answer = await self.reader(question, docs)
        except Exception as exc:  # an LLM outage leaves the BM25 label, never a wrong one
            log.warning("MRC check of group %s failed: %s", spec.group_id, exc)
            return bm25
        decision = judge_deterministic(question, spec.expected, answer)
        if decision.verdict is Verdict.CORRECT:
            return QualityCheck(
                spec.group_id,
                QualityLabel.RETRIEVAL_OR_READER,
                "bm25+mrc",
                f"an LLM reading the best-matching documents answered it: {answer[:120]!r}",
                docs[0].doc_id,
                None,
            )
        return QualityCheck(
            spec.group_id,
            QualityLabel.KNOWLEDGE_GAP,
            "bm25+mrc",
            f"{bm25.reason}; an LLM reading the best-matching documents did not answer it"
            f" ({decision.verdict.value}: {answer[:80]!r})",
        )


def _needs_reading(result: QualityCheck, spec: GroupSpec) -> bool:
    """BM25 found no statement (or could not look, for a computed answer): the MRC step decides."""
    return result.label is QualityLabel.KNOWLEDGE_GAP or (
        result.label is QualityLabel.UNCHECKED and spec.computed
    )
