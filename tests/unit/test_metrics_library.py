"""Answer and IR metrics against known values (hand-computed, or published with the library).

The randomized comparisons with the reference libraries are in ``test_metrics_oracles.py``.
"""

from __future__ import annotations

import math

import pytest

from groundwatch.core.metrics import (
    RougeTokenizer,
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
    rouge_l,
    squad_normalize,
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


def test_ap_at_k_divides_by_all_relevant_like_trec_eval() -> None:
    # issue 18: min(|rel|, k) gave 1.0; trec_eval map_cut_1, ranx and ir-measures give 0.5
    assert average_precision(["d1", "d4"], {"d1", "d4"}, k=1) == 0.5
    assert average_precision(["d1", "d4"], {"d1", "d4"}, k=2) == 1.0
    assert mean_average_precision([(["d1", "d4"], {"d1", "d4"})], k=1) == 0.5


def test_ndcg_negative_grades_gain_nothing() -> None:
    # issue 18: a negative gain gave -0.369; trec_eval ndcg_cut_2 gives 1/log2(3) = 0.631
    assert ndcg_at_k(["a", "b"], {"a": -1, "b": 1}, 2) == pytest.approx(1 / math.log2(3))
    assert ndcg_at_k(["a"], {"a": -2, "b": 0}, 1) == 0.0
    assert ndcg_at_k(["b", "a"], {"a": -1, "b": 1}, 2) == 1.0


def test_corpus_bleu_uneven_references_keep_the_brevity_penalty() -> None:
    # issue 18: padding with "" added a zero-length reference (brevity penalty off) -> 1.000
    preds = ["the cat sat on the mat", "hello"]
    refs = [["the cat sat on the mat", "a cat sat on a mat"], ["hello world how are you"]]
    assert corpus_bleu(preds, refs) == pytest.approx(0.5647181220077595, abs=1e-12)


def test_bleu_without_references_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="reference"):
        bleu("x", [])
    with pytest.raises(ValueError, match="reference"):
        corpus_bleu(["x", "y"], [["x"], []])
    with pytest.raises(ValueError, match="prediction"):
        corpus_bleu([], [])


def test_rouge_l_reads_non_latin_and_accented_text() -> None:
    assert rouge_l("東京", "東京").f1 == 1.0  # issue 18: was 0
    # one CJK character per token: "東京" is 2 of the 8 tokens of "Tokyo is Japan's capital"
    prf = rouge_l("東京", "東京は日本の首都")
    assert (prf.precision, prf.recall) == (1.0, 2 / 8)
    assert rouge_l("Ελλάδα", "ελλαδα").f1 == 1.0  # case and accents folded, like EM
    assert rouge_l("café crème", "cafe creme").f1 == 1.0  # not cut into "caf", "cr", "me"
    assert rouge_l("Москва столица", "столица России").f1 == pytest.approx(0.5)
    assert RougeTokenizer().tokenize("2024年 コーヒー") == ["2024", "年", "コ", "ー", "ヒ", "ー"]
    # a mark never splits a word (the shared normaliser may fold a diacritic mark away)
    assert len(RougeTokenizer().tokenize("हिन्दी भाषा")) == 2
    assert RougeTokenizer(stem=True).tokenize("Running dogs") == ["run", "dog"]


def test_rouge_l_of_two_empty_answers_agrees_like_em_and_f1() -> None:
    # issue 18: rouge_l("", "") was 0 while EM and token F1 give 1
    assert rouge_l("", "").f1 == exact_match("", "") == token_prf("", "").f1 == 1.0
    assert rouge_l("...", "").f1 == 1.0  # no token on either side
    assert rouge_l("x", "").f1 == rouge_l("", "x").f1 == 0.0


def test_squad_normalization_mode() -> None:
    # the default mode splits at punctuation (documented); "squad" deletes it like the script
    assert exact_match("U.S.", "US") == 0.0
    assert exact_match("U.S.", "US", normalization="squad") == 1.0
    assert squad_normalize("The  Eiffel-Tower, Paris!") == "eiffeltower paris"
    assert squad_normalize("Élysée") == "élysée"  # the script keeps accents
    assert exact_match("Élysée", "elysee", normalization="squad") == 0.0
    prf = token_prf("the U.S. army", "US army", normalization="squad")
    assert prf.f1 == 1.0
    assert token_prf("", "", normalization="squad").f1 == 1.0  # SQuAD v2.0: both empty agree
    assert token_prf("a", "", normalization="squad").f1 == 1.0  # "a" normalizes to nothing
    with pytest.raises(ValueError):
        exact_match("x", "x", normalization="bogus")  # type: ignore[arg-type]
