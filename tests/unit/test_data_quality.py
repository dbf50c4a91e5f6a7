"""The data-quality check of gap groups (GRAMMAR 002 Appendix I): knowledge gap or a failure to
use what the corpus holds."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from groundwatch.adapters.llm.client import LlmClient, LlmSettings
from groundwatch.app.embedded import EmbeddedPipeline, reference_runner
from groundwatch.core.data_quality import (
    CorpusIndex,
    GroupSpec,
    QualityLabel,
    check_bm25,
    spec_of,
)
from groundwatch.core.model import Expected, SemanticGroup
from groundwatch.demo import DemoDomain, demo_dataset
from groundwatch.reference_rag.app import create_app
from groundwatch.reference_rag.llm_reader import LlmReader
from groundwatch.reference_rag.settings import ReferenceRagSettings
from groundwatch.report.build import report_from_tagger
from groundwatch.report.html import render_html
from groundwatch.report.text import render_text
from groundwatch.stages.analytics.data_quality import DataQualityChecker
from tests.fakes import FakeOpenAIServer, Reply

pytestmark = pytest.mark.unit

CORPUS = {
    "project-harbour-works": (
        "**Project report: Harbour Works**\n\n"
        "The project Harbour Works is located in the city of Leeds. "
        "The start date of the project Harbour Works was 2020-09-30. "
        "The client of the project Harbour Works is Bluefen Water Authority."
    ),
    "Blue Lagoon Resort": (
        "The ambitious construction of the resort embarked on its journey on the 1st of April,"
        " 2023. The project is located in the Maldives."
    ),
    "client-bluefen-water-authority": (
        "**Client profile: Bluefen Water Authority**\n\nBluefen Water Authority is a client."
        " The account manager of Bluefen Water Authority is Rowena Northcott."
    ),
}


def spec(
    question: str, answer: str, entities: tuple[str, ...] = (), sql: str | None = None
) -> GroupSpec:
    return GroupSpec("g", (question,), Expected(values=[answer]), entities, sql)


@pytest.fixture(scope="module")
def index() -> CorpusIndex:
    return CorpusIndex.build(CORPUS)


def test_a_stated_fact_is_no_knowledge_gap(index: CorpusIndex) -> None:
    r = check_bm25(spec("City of 'Harbour Works'", "Leeds"), index)
    assert r.label is QualityLabel.RETRIEVAL_OR_READER and r.method == "bm25"
    assert r.doc_id == "project-harbour-works" and r.excerpt and "Leeds" in r.excerpt
    # a date however written; the document's title stands for "the project"
    r = check_bm25(spec("Start date of 'Blue Lagoon Resort'", "2023-04-01"), index)
    assert r.label is QualityLabel.RETRIEVAL_OR_READER, r
    # the SQL's bound values as entities (no quotes needed)
    r = check_bm25(spec("Start of Harbour Works?", "2020-09-30", ("Harbour Works",)), index)
    assert r.label is QualityLabel.RETRIEVAL_OR_READER


def test_a_missing_fact_is_a_knowledge_gap(index: CorpusIndex) -> None:
    r = check_bm25(spec("End date of 'Harbour Works'", "2022-01-31"), index)
    assert r.label is QualityLabel.KNOWLEDGE_GAP and "none of the best-matching" in r.reason
    # the value is in the corpus, but never beside the entity: another row's fact
    r = check_bm25(spec("City of 'Blue Lagoon Resort'", "Leeds"), index)
    assert r.label is QualityLabel.KNOWLEDGE_GAP and "away from" in r.reason
    # a row singled out by two values needs each of them beside the answer
    two = spec("Which project is in 'Leeds' for 'Acme'?", "Harbour Works", ("Leeds", "Acme"))
    assert check_bm25(two, index).label is QualityLabel.KNOWLEDGE_GAP


def test_what_cannot_be_checked_is_unchecked(index: CorpusIndex) -> None:
    empty = CorpusIndex.build({})
    assert check_bm25(spec("City of 'Harbour Works'", "Leeds"), empty).label is (
        QualityLabel.UNCHECKED
    )
    unanswerable = GroupSpec("g", ("q",), Expected(values=[], answerable=False))
    assert check_bm25(unanswerable, index).label is QualityLabel.UNCHECKED
    count = spec("How many projects?", "3", sql="SELECT COUNT(*) FROM projects")
    r = check_bm25(count, index)
    assert r.label is QualityLabel.UNCHECKED and "computed" in r.reason


def test_the_mrc_check_reads_what_the_sentence_test_misses(fake_openai: FakeOpenAIServer) -> None:
    """Appendix I: an LLM given the best documents answers the question; right → the corpus has
    the fact (here in words the sentence test cannot match), wrong → a knowledge gap; an LLM
    failure keeps the BM25 label."""
    reader = LlmReader(
        LlmClient(LlmSettings(base_url=fake_openai.base_url, api_key="test", max_retries=0))
    )
    quality = DataQualityChecker(CORPUS, reader=reader.read)
    paraphrase = GroupSpec(
        "para", ("Who looks after 'Bluefen Water Authority'?",), Expected(values=["R. Northcott"])
    )
    missing = GroupSpec("miss", ("End date of 'Harbour Works'",), Expected(values=["2022-01-31"]))
    fake_openai.script(Reply.text("R. Northcott"), Reply.text("I don't know."))
    got = asyncio.run(quality.check_many([paraphrase, missing]))
    assert got["para"].label is QualityLabel.RETRIEVAL_OR_READER
    assert got["para"].method == "bm25+mrc"
    assert got["miss"].label is QualityLabel.KNOWLEDGE_GAP and got["miss"].method == "bm25+mrc"
    prompt = fake_openai.requests[0].body["messages"][-1]["content"]
    assert "client-bluefen-water-authority" in prompt  # the best document was read
    # cached per group: no second call
    asyncio.run(quality.check(paraphrase))
    assert len(fake_openai.requests) == 2
    fake_openai.script(Reply.status_code(500))
    failing = DataQualityChecker(CORPUS, reader=reader.read)
    assert asyncio.run(failing.check(missing)).method == "bm25"


# ------------------------------------------------------------------------------ on the demo
@pytest.fixture(scope="module")
def demo() -> Iterator[tuple[DemoDomain, list[SemanticGroup]]]:
    yield demo_dataset(3, ("short", "long"))


def run_demo(
    domain: DemoDomain, groups: list[SemanticGroup], settings: ReferenceRagSettings
) -> tuple[set[str], DataQualityChecker, str]:
    """One cycle against the reference RAG with the data-quality check on the demo corpus;
    returns the knowledge-gap groups, the checker and the report text."""

    async def go() -> tuple[set[str], DataQualityChecker, str]:
        quality = DataQualityChecker(domain.documents)
        runner, close = reference_runner(create_app(settings, domain.documents))
        pipeline = EmbeddedPipeline(groups, runner, on_stop=[close], data_quality=quality)
        await pipeline.start()
        try:
            result = await pipeline.run(1)
            await pipeline.analytics.check_all_gaps()
        finally:
            await pipeline.stop()
        report = report_from_tagger(result.tagger, data_quality=quality.results())
        assert "Data quality of gap groups" in render_html(report)
        return result.tagger.knowledge_gaps("reference"), quality, render_text(report)

    return asyncio.run(go())


def test_every_injected_gap_is_a_knowledge_gap_of_the_corpus(
    demo: tuple[DemoDomain, list[SemanticGroup]],
) -> None:
    domain, groups = demo
    injected = domain.injected_gap_group_ids(groups)
    gaps, quality, text = run_demo(domain, groups, ReferenceRagSettings())
    # exact both ways: every fact left out of the corpus is found, and nothing else is (a
    # neighbouring document's equal value or an undecidable wording must not hide one)
    assert injected and gaps == injected, (injected - gaps, gaps - injected)
    for gid in injected:
        check = quality.known(gid)
        assert check is not None and check.label is QualityLabel.KNOWLEDGE_GAP, (gid, check)
    assert "Data quality of gap groups" in text
    # the check is about the corpus, not the run: every present fact is found in it
    index = CorpusIndex.build(domain.documents)
    for g in groups:
        label = check_bm25(spec_of(g), index).label
        want = (
            QualityLabel.KNOWLEDGE_GAP
            if g.group_id in injected
            else (QualityLabel.RETRIEVAL_OR_READER)
        )
        assert label is want, (g.sql, g.params, g.answer.values)


def test_a_gap_made_by_breaking_the_reader_is_retrieval_or_reader(
    demo: tuple[DemoDomain, list[SemanticGroup]],
) -> None:
    """The reference reader is broken for one document (fault switch ``unread_doc_ids``): the
    document is still retrieved and returned, never read. Its facts become gap groups of the
    system — and the check says the corpus has them."""
    domain, groups = demo
    injected = domain.injected_gap_group_ids(groups)
    broken = "project-beacon-campus-extension"
    assert broken in domain.documents
    settings = ReferenceRagSettings(rag_unread_doc_ids=[broken])
    gaps, quality, text = run_demo(domain, groups, settings)
    assert injected <= gaps, injected - gaps
    made = gaps - injected
    assert made, "breaking the reader made no new gap"
    on_broken = {g.group_id for g in groups if domain.doc_ids_for(g) == [broken]}
    assert made & on_broken
    for gid in made:
        check = quality.known(gid)
        assert check is not None and check.label is QualityLabel.RETRIEVAL_OR_READER, gid
    for gid in injected:
        check = quality.known(gid)
        assert check is not None and check.label is QualityLabel.KNOWLEDGE_GAP
    assert "the corpus does answer" in text
