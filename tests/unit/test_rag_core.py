from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest

from groundwatch.core.model import DONT_KNOW
from groundwatch.core.retrieval import (
    Bm25Retriever,
    DenseRetriever,
    KeywordOverlapRetriever,
    Retrieved,
    content_tokens,
    sparse_retriever,
    split_sentences,
    tokenize,
)
from groundwatch.reference_rag import ExtractiveReader, FaultSwitches, InjectedFault, RagPipeline
from tests.unit._rag_corpus import CORPUS, LONG_ACME, SHORT_ACME

pytestmark = pytest.mark.unit


def test_tokenize_keeps_numbers_and_drops_punctuation() -> None:
    tokens = tokenize("Budget: $3.5M, due 2024-06-30!")
    assert tokens == ["budget", "3.5m", "due", "2024", "06", "30"]
    assert content_tokens("What is the budget of the project?") == ["budget", "project"]


def test_split_sentences_strips_markdown_and_headings() -> None:
    sentences = split_sentences(CORPUS["client-acme"])
    assert sentences[0] == "Acme Robotics"
    assert "Acme Robotics is headquartered in Oslo." in sentences
    assert all("*" not in s for s in sentences)


def test_keyword_overlap_right_on_short_query_wrong_on_long_query() -> None:
    """GRAMMAR §5: the keyword matcher is outvoted by filler words in long queries."""
    keyword = KeywordOverlapRetriever(CORPUS)
    assert keyword.retrieve(SHORT_ACME, 1)[0].doc_id == "client-acme"
    assert keyword.retrieve(LONG_ACME, 1)[0].doc_id == "records-policy"


def test_bm25_is_not_fooled_by_the_long_query() -> None:
    bm25 = Bm25Retriever(CORPUS)
    assert bm25.retrieve(SHORT_ACME, 1)[0].doc_id == "client-acme"
    assert bm25.retrieve(LONG_ACME, 1)[0].doc_id == "client-acme"


@pytest.mark.parametrize("name", ["keyword", "bm25"])
def test_retrievers_rank_honour_k_exclude_and_skip_non_matching(name: str) -> None:
    retriever = sparse_retriever(name, CORPUS)
    assert len(retriever.retrieve("Acme Borealis client", 1)) == 1
    hits = retriever.retrieve(SHORT_ACME, 3, exclude={"client-acme"})
    assert "client-acme" not in [h.doc_id for h in hits]
    assert retriever.retrieve("zebra xylophone", 3) == []
    scores = [h.score for h in retriever.retrieve("Acme Borealis client Aurp", 3)]
    assert scores == sorted(scores, reverse=True)


def test_sparse_retriever_rejects_unknown_name_and_empty_corpus_is_harmless() -> None:
    with pytest.raises(ValueError, match="unknown sparse retriever"):
        sparse_retriever("tfidf", CORPUS)
    assert Bm25Retriever({}).retrieve("anything", 3) == []
    assert KeywordOverlapRetriever({}).retrieve("anything", 3) == []


class _HashingEmbedder:
    """Bag of content words hashed into 64 dims: similar word sets, similar vectors."""

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), 64), dtype=np.float32)
        for i, text in enumerate(texts):
            for tok in content_tokens(text):
                out[i, sum(map(ord, tok)) % 64] += 1.0
        return out


def test_dense_retriever_ranks_by_best_passage() -> None:
    long_doc = " ".join(["the"] * 400) + " Borealis Foods Lima"
    corpus = {**CORPUS, "long": long_doc}
    dense = DenseRetriever(corpus, _HashingEmbedder())
    assert dense.retrieve("Acme Robotics Oslo", 1)[0].doc_id == "client-acme"
    # the matching words sit in the last passage of a 400-word document and are still found
    top = [h.doc_id for h in dense.retrieve("Borealis Foods Lima", 2)]
    assert set(top) == {"client-borealis", "long"}
    assert dense.retrieve("Acme", 3, exclude={"client-acme"})[0].doc_id != "client-acme"


async def test_extractive_reader_returns_sentence_with_the_answer() -> None:
    reader = ExtractiveReader()
    docs = [Retrieved(d, CORPUS[d], 1.0) for d in ("client-borealis", "client-acme")]
    answer = await reader.read("Which city is Acme Robotics headquartered in?", docs)
    assert answer == "Acme Robotics is headquartered in Oslo."
    manager = await reader.read("Who is the account manager of Borealis Foods?", docs)
    assert "Grace Hopper" in manager


async def test_extractive_reader_says_it_does_not_know() -> None:
    reader = ExtractiveReader()
    docs = [Retrieved("client-acme", CORPUS["client-acme"], 1.0)]
    assert await reader.read("zebra xylophone", docs) == DONT_KNOW
    assert await reader.read("Acme Robotics city", []) == DONT_KNOW
    assert await reader.read("what is the", docs) == DONT_KNOW  # only stop words


def test_drop_fraction_is_stable_and_roughly_proportional() -> None:
    ids = [f"doc-{i}" for i in range(2000)]
    switches = FaultSwitches(drop_fraction=0.25, seed=7)
    dropped = switches.dropped(ids)
    assert dropped == FaultSwitches(drop_fraction=0.25, seed=7).dropped(ids)
    assert 0.2 < len(dropped) / len(ids) < 0.3
    assert dropped != FaultSwitches(drop_fraction=0.25, seed=8).dropped(ids)
    assert FaultSwitches(drop_doc_ids=frozenset({"x"})).dropped(ids) == {"x"}


def test_error_rate_draws() -> None:
    rng = random.Random(1)
    assert not any(FaultSwitches(error_rate=0.0).fails(rng) for _ in range(100))
    assert all(FaultSwitches(error_rate=1.0).fails(rng) for _ in range(100))
    share = sum(FaultSwitches(error_rate=0.3).fails(rng) for _ in range(5000)) / 5000
    assert 0.27 < share < 0.33


@pytest.mark.looptime  # a virtual loop clock: the added latency is exact whatever the load
async def test_pipeline_applies_fault_switches() -> None:
    pipeline = RagPipeline(CORPUS, Bm25Retriever(CORPUS), ExtractiveReader())
    result = await pipeline.answer("Which city is Acme Robotics headquartered in?")
    assert result.retrieved_ids[0] == "client-acme"
    assert "Oslo" in result.answer
    assert result.contexts[0] == CORPUS["client-acme"]

    pipeline.faults = FaultSwitches(top_k=1, drop_doc_ids=frozenset({"client-acme"}))
    gap = await pipeline.answer("Which city is Acme Robotics headquartered in?")
    assert "client-acme" not in gap.retrieved_ids
    assert len(gap.retrieved_ids) <= 1
    assert "Oslo" not in gap.answer

    pipeline.faults = FaultSwitches(error_rate=1.0)
    with pytest.raises(InjectedFault):
        await pipeline.answer("Acme")

    pipeline.faults = FaultSwitches(added_latency_s=0.05)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await asyncio.gather(*(pipeline.answer("Acme") for _ in range(5)))
    # slept concurrently, not serially (five in a row would take 0.25 s)
    assert loop.time() - started == pytest.approx(0.05, abs=1e-3)


async def test_corpus_idf_discounts_boilerplate_and_quotes_pin_the_entity() -> None:
    boiler = "Progress on this project is reported to the management team at each review meeting."
    names = ["Saltire Hall", "Cedar Depot", "Falcon Dam", "Summit Works", "Aurora Array", "Quay"]
    corpus = {
        f"p{i}": f"The budget of the project {name} is {i}00 euros. {boiler}"
        for i, name in enumerate(names * 2)
    }
    query = (
        "Before the review meeting, the management team asks: what is the budget reported for "
        "the project named Saltire Hall?"
    )
    docs = [Retrieved(d, corpus[d], 1.0) for d in ("p3", "p0")]
    answer = "The budget of the project Saltire Hall is 000 euros."
    # weights from the retrieved sentences alone: the boilerplate sentence wins
    assert "management" in await ExtractiveReader().read(query, docs)
    # weights from the corpus: boilerplate is everywhere, so the entity's sentence wins
    assert await ExtractiveReader(corpus).read(query, docs) == answer
    # a quoted name pins the sentence that holds it, whatever the weights
    quoted = query.replace("named Saltire Hall", "named 'Saltire Hall'")
    assert await ExtractiveReader().read(quoted, docs) == answer


def test_keyword_retriever_ranks_exactly_as_intersecting_every_document() -> None:
    """The postings index gives the ranking of the plain definition: score = distinct query
    words in the document, ties in corpus order, nothing without a shared word, ``exclude``
    skipped — on the demo corpus, for every demo question."""
    import random

    from groundwatch.core.retrieval.retrievers import KeywordOverlapRetriever, Retrieved
    from groundwatch.core.retrieval.text import tokenize
    from groundwatch.demo import demo_dataset

    domain, groups = demo_dataset()
    corpus = dict(domain.documents)
    retriever = KeywordOverlapRetriever(corpus)
    ids = list(corpus)
    vocab = [frozenset(tokenize(corpus[d])) for d in ids]

    def plain(query: str, k: int, exclude: frozenset[str]) -> list[Retrieved]:
        words = set(tokenize(query))
        scored = sorted(
            ((len(words & v), i) for i, v in enumerate(vocab)), key=lambda x: (-x[0], x[1])
        )
        return [
            Retrieved(ids[i], corpus[ids[i]], float(n))
            for n, i in scored
            if n > 0 and ids[i] not in exclude
        ][:k]

    rng = random.Random(7)
    queries = [*[f.text for g in groups for f in g.forms][:600], "", "zzz unknown words"]
    for query in queries:
        exclude = frozenset(rng.sample(ids, 3)) if rng.random() < 0.3 else frozenset()
        k = rng.choice([1, 3, 10])
        assert retriever.retrieve(query, k, exclude=exclude) == plain(query, k, exclude), query


async def test_a_quoted_name_is_never_answered_about_another_entity() -> None:
    """A question about 'Juniper Masterplan' whose retrieval found only Marble Masterplan's
    report: the reader used to answer "The status of the project Marble Masterplan is active.",
    which a judge takes for a right answer when both happen to be active (it hid a fact left out
    of the demo corpus). A sentence naming none of the quoted names is about something else."""
    corpus = {
        "marble": "The status of the project Marble Masterplan is active. It is in Cork.",
        "staff": "Ada Lovelace works in the department Research. Her office is Lisbon.",
    }
    reader = ExtractiveReader(corpus)
    docs = [Retrieved("marble", corpus["marble"], 1.0)]
    assert await reader.read("Status of 'Juniper Masterplan'", docs) == DONT_KNOW
    assert await reader.read("Status of 'Marble Masterplan'", docs) == (
        "The status of the project Marble Masterplan is active."
    )
    # two quoted conditions: a sentence holding one of them still answers
    staff = [Retrieved("staff", corpus["staff"], 1.0)]
    answer = await reader.read("Who works in department 'Research' and office 'Lisbon'?", staff)
    assert "Ada Lovelace" in answer
