"""Answer and IR metrics against known values (hand-computed, or published with the library)."""

from __future__ import annotations

import math

import pytest

from groundwatch.core.metrics import (
    average_precision,
    bleu,
    corpus_bleu,
    exact_match,
    ir_metrics,
    mean_average_precision,
    mean_reciprocal_rank,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
    reliability,
    rouge_l,
    token_prf,
)

pytestmark = pytest.mark.unit


def test_exact_match_normalizes() -> None:
    assert exact_match("The Cat.", "cat") == 1.0
    assert exact_match("Élysées", "elysees") == 1.0
    assert exact_match("a cat", "the dog") == 0.0


def test_token_prf_squad_style() -> None:
    prf = token_prf("the cat sat", "the cat sat on the mat")  # articles dropped
    assert (prf.precision, prf.recall) == (1.0, 0.5)
    assert prf.f1 == pytest.approx(2 / 3)
    # multiset counting: a repeated word matches only as often as the reference has it
    prf = token_prf("cat cat cat", "cat dog")
    assert (prf.precision, prf.recall) == (pytest.approx(1 / 3), 0.5)
    assert token_prf("", "").f1 == 1.0
    assert token_prf("x", "").f1 == 0.0
    assert token_prf("dog", "cat").f1 == 0.0


def test_bleu_matches_sacrebleus_published_example() -> None:
    # sacrebleu's README example: BLEU = 48.53 for this system against two reference streams
    sys_out = ["The dog bit the man.", "It wasn't surprising.", "The man had just bitten him."]
    ref_a = ["The dog bit the man.", "It was not unexpected.", "The man bit him first."]
    ref_b = ["The dog had bit the man.", "No one was surprised.", "The man had bitten the dog."]
    refs = [[a, b] for a, b in zip(ref_a, ref_b, strict=True)]
    assert corpus_bleu(sys_out, refs) == pytest.approx(0.4853, abs=5e-5)
    assert bleu("The dog bit the man.", ["The dog bit the man."]) == pytest.approx(1.0)
    assert bleu("completely different words", ["The dog bit the man."]) < 0.1
    with pytest.raises(ValueError):
        corpus_bleu(["a"], [])


def test_rouge_l_is_lcs_based() -> None:
    # LCS("the cat is on the mat", "the cat sat on the mat") = "the cat on the mat" = 5 tokens
    prf = rouge_l("the cat is on the mat", "the cat sat on the mat")
    assert prf.precision == pytest.approx(5 / 6)
    assert prf.recall == pytest.approx(5 / 6)
    prf = rouge_l("the cat", "the cat sat on the mat")
    assert (prf.precision, prf.recall) == (pytest.approx(1.0), pytest.approx(2 / 6))


RETRIEVED = ["d1", "d2", "d3", "d4", "d5"]
RELEVANT = {"d1", "d3", "d6"}


def test_ir_metrics_known_values() -> None:
    assert recall_at_k(RETRIEVED, RELEVANT, 5) == pytest.approx(2 / 3)
    assert recall_at_k(RETRIEVED, RELEVANT, 1) == pytest.approx(1 / 3)
    assert precision_at_k(RETRIEVED, RELEVANT, 5) == pytest.approx(2 / 5)
    assert precision_at_k(["d1"], RELEVANT, 3) == pytest.approx(1 / 3)  # empty slots are misses
    assert average_precision(RETRIEVED, RELEVANT) == pytest.approx((1 / 1 + 2 / 3) / 3)
    assert reciprocal_rank(RETRIEVED, RELEVANT) == 1.0
    assert reciprocal_rank(["x", "y", "d3"], RELEVANT) == pytest.approx(1 / 3)
    ideal = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at_k(RETRIEVED, RELEVANT, 5) == pytest.approx((1 + 1 / math.log2(4)) / ideal)
    assert ndcg_at_k(["d1", "d3", "d6"], RELEVANT, 3) == pytest.approx(1.0)


def test_ndcg_graded_wikipedia_example() -> None:
    # Wikipedia "Discounted cumulative gain": DCG6 = 6.861, IDCG6 = 8.740, nDCG6 = 0.785
    grades = {"d1": 3, "d2": 2, "d3": 3, "d4": 0, "d5": 1, "d6": 2, "d7": 3, "d8": 2}
    assert ndcg_at_k(["d1", "d2", "d3", "d4", "d5", "d6"], grades, 6) == pytest.approx(
        6.861 / 8.740, abs=1e-3
    )


def test_map_mrr_and_edge_cases() -> None:
    runs = [(["a", "b"], {"b"}), (["c"], {"x"})]
    assert mean_reciprocal_rank(runs) == pytest.approx(0.25)
    assert mean_average_precision(runs) == pytest.approx(0.25)
    assert mean_average_precision([]) == 0.0
    assert recall_at_k(["a"], set(), 1) == 0.0
    assert ndcg_at_k(["a"], set(), 3) == 0.0
    # repeats collapse first (chunks of one document are one document), then the cut at k
    assert recall_at_k(["a", "a", "b"], {"a", "b"}, 2) == 1.0
    assert precision_at_k(["a", "a"], {"a"}, 2) == 0.5
    with pytest.raises(ValueError):
        precision_at_k(["a"], {"a"}, 0)
    m = ir_metrics(RETRIEVED, RELEVANT, 3)
    assert set(m) == {"recall@3", "precision@3", "ap@3", "rr", "ndcg@3"}
    assert m["ap@3"] == pytest.approx((1 + 2 / 3) / 3)


def test_reliability_as_in_grammar_section_3() -> None:
    truth = [True, True, False, False, True]
    predicted = [True, False, True, None, True]
    r = reliability(truth, predicted)
    assert r.precision == pytest.approx(2 / 3)  # one wrong answer judged correct: optimistic
    assert r.recall == pytest.approx(2 / 3)  # one right answer judged wrong: cynical
    assert (r.n, r.abstained) == (4, 1)
    with pytest.raises(ValueError):
        reliability([True], [])
