"""Chunking and sampling (RAGProbe constructs 1–3) and the checks generated items must pass."""

from __future__ import annotations

import itertools
import random

import pytest

from groundwatch.core.model import AnswerType
from groundwatch.core.scenarios.chunking import (
    Chunk,
    chunk_corpus,
    has_datetime,
    has_number,
    sample_contexts,
    sample_documents,
    split_text,
)
from groundwatch.core.scenarios.item_checks import (
    contained_either_way,
    extract_json_object,
    is_datetime_answer,
    supported,
)
from groundwatch.core.scenarios.spec import Chunking, ChunkSampling, DocumentSampling

pytestmark = pytest.mark.unit


def test_split_respects_size_and_carries_overlap() -> None:
    lines = [f"line {i:02d} " + "x" * 20 for i in range(12)]  # 28 characters each
    chunks = split_text("\n".join(lines), Chunking(chunk_size=100, chunk_overlap=30))
    assert all(len(c) <= 100 for c in chunks)
    assert len(chunks) > 3
    for a, b in itertools.pairwise(chunks):
        # the next chunk starts with the previous chunk's last line (28 + 0 <= 30 overlap)
        assert b.split("\n")[0] == a.split("\n")[-1]
    # every line is in some chunk, in order
    joined = [ln for c in chunks for ln in c.split("\n")]
    assert list(dict.fromkeys(joined)) == lines


def test_split_keeps_an_oversized_piece_whole_and_drops_blank_pieces() -> None:
    long = "y" * 250
    chunks = split_text(f"short\n\n\n{long}\nend", Chunking(chunk_size=100, chunk_overlap=10))
    assert long in chunks
    assert "" not in chunks and chunks[0] == "short"


def test_filters_find_numbers_and_dates_or_times() -> None:
    assert has_number("The attendance was 384,570.")
    assert not has_number("No figures here at all.")
    assert has_datetime("It opened on 14 May 2019.")
    assert has_datetime("The train leaves at 14:30.")
    assert has_datetime("Doors open at 7 pm")
    assert not has_datetime("It has 240 employees.")


def _corpus() -> dict[str, str]:
    return {
        f"doc{i}": "\n".join(f"Doc {i} paragraph {j} has {j * 7} items." for j in range(4))
        for i in range(6)
    }


def test_document_and_chunk_sampling_are_seeded_and_follow_the_strategy() -> None:
    chunks = chunk_corpus(_corpus(), Chunking(chunk_size=40, chunk_overlap=0))
    assert all(len(cs) == 4 for cs in chunks.values())
    docs = sample_documents(chunks, DocumentSampling(n=3), random.Random(1))
    assert len(docs) == 3
    assert docs == sample_documents(chunks, DocumentSampling(n=3), random.Random(1))
    assert sample_documents(chunks, DocumentSampling(strategy="iterative"), random.Random(1)) == [
        f"doc{i}" for i in range(6)
    ]
    single = sample_contexts(chunks, docs, ChunkSampling(per_document=2), random.Random(2))
    assert len(single) == 6 and all(len(c) == 1 for c in single)
    every = sample_contexts(chunks, docs, ChunkSampling(strategy="iterative"), random.Random(2))
    assert len(every) == 12
    same = sample_contexts(
        chunks, docs, ChunkSampling(combine="same_document", count=3), random.Random(3)
    )
    assert len(same) == 3
    assert all(len(c) == 3 and len({x.doc_id for x in c}) == 1 for c in same)
    across = sample_contexts(
        chunks, docs, ChunkSampling(combine="across_documents", count=3), random.Random(4)
    )
    assert len(across) == 3
    assert all(len({x.doc_id for x in c}) == 3 for c in across)


def test_number_filter_leaves_out_chunks_without_numbers() -> None:
    chunks = {
        "a": [Chunk("a", 0, "No digits here."), Chunk("a", 1, "It cost 40 euros.")],
        "b": [Chunk("b", 0, "Nothing to count.")],
    }
    got = sample_contexts(
        chunks, ["a", "b"], ChunkSampling(strategy="iterative", filter="number"), random.Random(0)
    )
    assert [[c.chunk_id for c in ctx] for ctx in got] == [["a#1"]]


@pytest.mark.parametrize(
    ("reply", "parsed"),
    [
        ('{"question": "q", "answer": "1"}', {"question": "q", "answer": "1"}),
        ('```json\n{"question": "q"}\n```', {"question": "q"}),
        ('Sure! Here it is: {"question": "q"} Hope that helps.', {"question": "q"}),
        ("{this is not json", None),
        ('["a", "list"]', None),
        ("", None),
    ],
)
def test_json_replies_are_extracted_or_refused(reply: str, parsed: object) -> None:
    assert extract_json_object(reply) == parsed


def test_answer_support_is_typed_and_tolerates_paraphrase() -> None:
    text = (
        "Over its seven games the 1982 series drew 384,570 spectators. It began on 12 October 1982."
    )
    assert supported("384570", text, AnswerType.NUMBER)
    assert supported("384,570", text)
    assert not supported("384,000", text, AnswerType.NUMBER)
    assert supported("1982-10-12", text, AnswerType.DATE)
    assert not supported("1982-10-13", text, AnswerType.DATE)
    assert supported("seven games", text)
    assert not supported("nine innings", text)
    assert is_datetime_answer("12 October 1982") and is_datetime_answer("14:30")
    assert not is_datetime_answer("seven")


def test_options_that_contain_each_other_cannot_stand_together() -> None:
    assert contained_either_way("Engineer", "Senior Engineer")
    assert contained_either_way("Lisbon", "lisbon")
    assert not contained_either_way("Lisbon", "Oslo")
