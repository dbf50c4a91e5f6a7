"""The judge's fast metrics against the reference implementations, bit for bit.

:mod:`groundwatch.core.metrics_fast` re-derives ROUGE-L's LCS, sentence BLEU's arithmetic and the
IR metrics for speed; here every one is compared with :mod:`groundwatch.core.metrics` (which wraps
``rouge-score``, ``sacrebleu`` and trec_eval-checked code) on the demo's real answers and on random
text and rankings, with equality, not a tolerance.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundwatch.core.metrics import bleu, ir_metrics, rouge_l
from groundwatch.core.metrics_fast import ir_scores, lcs_length, rouge_l_f1, sentence_bleu

pytestmark = pytest.mark.unit

WORDS = [
    "the", "a", "cat", "sat", "on", "mat", "U.S.", "US", "e-mail", "don't", "Paris", "paris,",
    "(1999)", "1999", "3.14", "1,000", "Élysée", "naïve", "東京", "日本", "Москва", "—", ".", ",",
    "&amp;", "<skipped>", "-\n", "x-1", "", "!?", "Acme", "Widgets", "founded", "in",
]  # fmt: skip
phrases = st.lists(st.sampled_from(WORDS), max_size=30).map(" ".join)
texts = st.one_of(phrases, st.text(max_size=60))


def _lcs_table(a: list[str], b: list[str]) -> int:
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            if a[i - 1] == b[j - 1]:
                table[i][j] = table[i - 1][j - 1] + 1
            else:
                table[i][j] = max(table[i - 1][j], table[i][j - 1])
    return table[-1][-1]


@settings(max_examples=1500, deadline=None)
@given(
    st.lists(st.sampled_from("abcde"), max_size=70), st.lists(st.sampled_from("abcde"), max_size=70)
)
def test_bit_parallel_lcs_is_the_dynamic_programme(a: list[str], b: list[str]) -> None:
    assert lcs_length(a, b) == _lcs_table(a, b) == lcs_length(b, a)


@settings(max_examples=1500, deadline=None)
@given(texts, texts)
def test_rouge_l_equals_rouge_score(prediction: str, reference: str) -> None:
    assert rouge_l_f1(prediction, reference) == rouge_l(prediction, reference).f1


@settings(max_examples=1500, deadline=None)
@given(texts, texts)
def test_sentence_bleu_equals_sacrebleu(prediction: str, reference: str) -> None:
    assert sentence_bleu(prediction, reference) == bleu(prediction, [reference])


DOC_IDS = [f"d{i}" for i in range(8)] + ["é1", "東京"]


@settings(max_examples=2000, deadline=None)
@given(
    st.lists(st.sampled_from(DOC_IDS), max_size=15),
    st.sets(st.sampled_from(DOC_IDS), max_size=6),
    st.integers(min_value=1, max_value=20),
)
def test_ir_scores_equal_ir_metrics(retrieved: list[str], relevant: set[str], k: int) -> None:
    ref = ir_metrics(retrieved, relevant, k)
    assert ir_scores(retrieved, relevant, k) == (
        ref[f"recall@{k}"],
        ref[f"precision@{k}"],
        ref[f"ap@{k}"],
        ref["rr"],
        ref[f"ndcg@{k}"],
    )


def test_real_answers_of_the_reference_rag() -> None:
    """Long extractive answers against short and list golds: where the LCS table was slowest."""
    answers = [
        "Harrowgate Rail Partners signed the Beacon Campus Extension contract in March 2021, "
        "with a budget of 4,250,000 euros; the project manager is Ada Quinn.",
        "I don't know.",
        "The Cedar Depot Renewal started on 2019-04-01 and ended on 2020-11-30.",
    ]
    golds = ["Harrowgate Rail Partners", "2021-03-15", "4250000", "Ada Quinn, Beacon Campus"]
    for a in answers:
        for g in golds:
            assert rouge_l_f1(a, g) == rouge_l(a, g).f1
            assert sentence_bleu(a, g) == bleu(a, [g])
    with pytest.raises(ValueError):
        ir_scores(["d1"], {"d1"}, 0)
