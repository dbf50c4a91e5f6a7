"""Every metric and interval against its reference implementation, on thousands of random cases.

Oracles: ``pytrec_eval`` (trec_eval's C code) for the IR metrics, ``sacrebleu`` for BLEU (corpus
BLEU rebuilt from per-sentence statistics, so the reference-stream plumbing is checked), Google's
``rouge-score`` for ROUGE-L, the official SQuAD v2.0 script's steps for EM/F1 in ``squad`` mode,
and ``statsmodels`` for the Wilson and Wald intervals, those of an evaluator's reliability
included. The cases include empty lists, K beyond the list, repeated ids, tied and negative
grades, and Unicode. Tolerance: 1e-9.

Set ``GW_ORACLE_REPORT=path.json`` to write the number of cases and the largest difference seen
per metric.
"""

from __future__ import annotations

import json
import os
import re
import string
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence

import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer
from sacrebleu.metrics.bleu import BLEU
from statsmodels.stats.proportion import proportion_confint

from groundwatch.core.metrics import (
    RougeTokenizer,
    average_precision,
    bleu,
    corpus_bleu,
    exact_match,
    mean_average_precision,
    mean_reciprocal_rank,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
    rouge_l,
    token_prf,
)
from groundwatch.core.stats import evaluator_reliability, wilson_ci, z_interval

pytestmark = pytest.mark.unit

TOL = 1e-9
MAX_DIFF: dict[str, float] = defaultdict(float)
CASES: Counter[str] = Counter()


@pytest.fixture(scope="module", autouse=True)
def _oracle_report() -> Iterator[None]:
    yield
    path = os.environ.get("GW_ORACLE_REPORT")
    if path:
        summary = {m: {"cases": CASES[m], "max_abs_diff": MAX_DIFF[m]} for m in sorted(CASES)}
        with open(path, "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=1)


def check(metric: str, ours: float | None, reference: float | None) -> None:
    assert (ours is None) == (reference is None), f"{metric}: {ours} vs {reference}"
    if ours is None or reference is None:
        return
    diff = abs(ours - reference)
    MAX_DIFF[metric] = max(MAX_DIFF[metric], diff)
    CASES[metric] += 1
    assert diff <= TOL, f"{metric}: ours {ours!r}, reference {reference!r}"


# -- IR metrics against trec_eval ------------------------------------------------------------------
DOC_IDS = [f"d{i}" for i in range(8)] + ["é1", "東京", "naïve-doc", "d 9"]
ranked_ids = st.lists(st.sampled_from(DOC_IDS), max_size=15)  # repeats on purpose
relevant_ids = st.sets(st.sampled_from(DOC_IDS), max_size=8)
cutoffs = st.integers(min_value=1, max_value=20)  # often beyond the list


def trec_eval(
    runs: Sequence[tuple[Sequence[str], Mapping[str, int]]], measures: set[str]
) -> list[dict[str, float]]:
    """trec_eval's measures for ranked lists, one query per (ranking, qrels) pair.

    A trec_eval run holds each document once with a score, so a ranking becomes strictly
    decreasing scores over its first occurrences (groundwatch's convention for repeats). Every
    query also gets one unretrieved, judged non-relevant document, which changes no measure: a
    query needs a judgement to be evaluated, and trec_eval sizes its per-grade table by the
    highest grade, so qrels whose grades are all below -1 crash it (trec_eval reads a negative
    grade as "in the pool, unjudged": no gain, like groundwatch's grades <= 0).
    """
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q, (ranking, grades) in enumerate(runs):
        docs = list(dict.fromkeys(ranking))
        run[f"q{q}"] = {d: float(len(docs) - i) for i, d in enumerate(docs)}
        qrels[f"q{q}"] = {"<judged non-relevant>": 0, **grades}
    result = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    return [result[f"q{q}"] for q in range(len(runs))]


@settings(max_examples=2000, deadline=None)
@given(ranked_ids, relevant_ids, cutoffs)
def test_binary_ir_metrics_match_trec_eval(
    retrieved: list[str], relevant: set[str], k: int
) -> None:
    (ref,) = trec_eval(
        [(retrieved, dict.fromkeys(relevant, 1))],
        {f"P.{k}", f"recall.{k}", f"map_cut.{k}", "map", "recip_rank", f"ndcg_cut.{k}"},
    )
    check("precision@k", precision_at_k(retrieved, relevant, k), ref[f"P_{k}"])
    check("recall@k", recall_at_k(retrieved, relevant, k), ref[f"recall_{k}"])
    check("ap@k", average_precision(retrieved, relevant, k), ref[f"map_cut_{k}"])
    check("ap", average_precision(retrieved, relevant), ref["map"])
    check("rr", reciprocal_rank(retrieved, relevant), ref["recip_rank"])
    check("ndcg@k (binary)", ndcg_at_k(retrieved, relevant, k), ref[f"ndcg_cut_{k}"])


@settings(max_examples=1200, deadline=None)
@given(
    ranked_ids,
    st.dictionaries(st.sampled_from(DOC_IDS), st.integers(min_value=-2, max_value=3), max_size=10),
    cutoffs,
)
def test_graded_ndcg_matches_trec_eval(
    retrieved: list[str], grades: dict[str, int], k: int
) -> None:
    # small grade range: tied grades are common; negative grades are "harmful" judgements
    (ref,) = trec_eval([(retrieved, grades)], {f"ndcg_cut.{k}"})
    ours = ndcg_at_k(retrieved, {d: float(g) for d, g in grades.items()}, k)
    check("ndcg@k (graded)", ours, ref[f"ndcg_cut_{k}"])
    assert 0.0 <= ours <= 1.0


@settings(max_examples=600, deadline=None)
@given(st.lists(st.tuples(ranked_ids, relevant_ids), max_size=6), cutoffs)
def test_map_and_mrr_match_trec_eval_means(runs: list[tuple[list[str], set[str]]], k: int) -> None:
    if not runs:
        assert mean_average_precision(runs, k) == mean_reciprocal_rank(runs) == 0.0
        return
    refs = trec_eval(
        [(ranking, dict.fromkeys(rel, 1)) for ranking, rel in runs],
        {f"map_cut.{k}", "map", "recip_rank"},
    )

    def mean(measure: str) -> float:
        return float(pytrec_eval.compute_aggregated_measure(measure, [r[measure] for r in refs]))

    check("map@k", mean_average_precision(runs, k), mean(f"map_cut_{k}"))
    check("map", mean_average_precision(runs), mean("map"))
    check("mrr", mean_reciprocal_rank(runs), mean("recip_rank"))


# -- EM / F1 against the SQuAD v2.0 evaluation script ---------------------------------------------
def squad_script_normalize(s: str) -> str:
    """``normalize_answer`` of the official script, step by step: lower, punctuation, articles,
    white space."""

    def remove_articles(text: str) -> str:
        return re.sub(re.compile(r"\b(a|an|the)\b", re.UNICODE), " ", text)

    def remove_punc(text: str) -> str:
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return " ".join(remove_articles(remove_punc(s.lower())).split())


def squad_script_f1(gold: str, pred: str) -> float:
    """``compute_f1`` of the official v2.0 script (no-answer agrees only with no-answer)."""
    gold_toks = squad_script_normalize(gold).split() if gold else []
    pred_toks = squad_script_normalize(pred).split() if pred else []
    if not gold_toks or not pred_toks:
        return float(gold_toks == pred_toks)
    same = sum((Counter(gold_toks) & Counter(pred_toks)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_toks), same / len(gold_toks)
    return 2 * precision * recall / (precision + recall)


WORDS = [
    "the", "a", "An", "cat", "cats", "sat", "on", "mat", "U.S.", "US", "e-mail", "email", "don't",
    "running", "runs", "Paris", "paris,", "(1999)", "1999", "3.14", "Élysée", "elysee", "naïve",
    "東京", "は", "日本", "Москва", "ελλάδα", "हिन्दी", "ภาษาไทย", "—", "«quote»", "", "!?", "_x_",
]  # fmt: skip
phrases = st.lists(st.sampled_from(WORDS), max_size=12).map(" ".join)
any_text = st.one_of(phrases, st.text(max_size=40))


@settings(max_examples=1500, deadline=None)
@given(any_text, any_text)
def test_squad_mode_matches_the_official_script(prediction: str, gold: str) -> None:
    check(
        "exact_match (squad)",
        exact_match(prediction, gold, normalization="squad"),
        float(squad_script_normalize(gold) == squad_script_normalize(prediction)),
    )
    check(
        "token_f1 (squad)",
        token_prf(prediction, gold, normalization="squad").f1,
        squad_script_f1(gold, prediction),
    )


# -- BLEU against sacrebleu --------------------------------------------------------------------------
references = st.lists(phrases, min_size=1, max_size=4)


@settings(max_examples=800, deadline=None)
@given(phrases, references)
def test_sentence_bleu_matches_sacrebleu(prediction: str, refs: list[str]) -> None:
    reference = BLEU(effective_order=True).sentence_score(prediction, refs).score / 100
    ours = bleu(prediction, refs)
    check("bleu", ours, reference)
    assert 0.0 <= ours <= 1.0  # sacrebleu can say 100.00000000000004


@settings(max_examples=600, deadline=None)
@given(st.lists(st.tuples(phrases, references), min_size=1, max_size=5))
def test_corpus_bleu_sums_per_sentence_statistics(pairs: list[tuple[str, list[str]]]) -> None:
    # corpus BLEU by definition: n-gram matches, totals and lengths summed over the sentences,
    # each sentence scored against only its own references (no reference streams, no padding)
    correct, total = [0] * 4, [0] * 4
    sys_len = ref_len = 0
    for prediction, refs in pairs:
        s = BLEU().corpus_score([prediction], [[r] for r in refs])
        correct = [a + b for a, b in zip(correct, s.counts, strict=True)]
        total = [a + b for a, b in zip(total, s.totals, strict=True)]
        sys_len += s.sys_len
        ref_len += s.ref_len
    reference = BLEU.compute_bleu(correct, total, sys_len, ref_len, smooth_method="exp")
    ours = corpus_bleu([p for p, _ in pairs], [r for _, r in pairs])
    check("corpus_bleu", ours, reference.score / 100)
    assert 0.0 <= ours <= 1.0


# -- ROUGE-L against rouge-score ---------------------------------------------------------------------
ROUGE = {stem: rouge_scorer.RougeScorer(["rougeL"], use_stemmer=stem) for stem in (False, True)}
ascii_text = st.one_of(
    st.text(alphabet=string.printable, max_size=60),
    st.lists(st.sampled_from([w for w in WORDS if w.isascii()]), max_size=12).map(" ".join),
)


@settings(max_examples=1200, deadline=None)
@given(ascii_text, ascii_text, st.booleans())
def test_rouge_l_is_rouge_score_on_ascii(prediction: str, reference: str, stem: bool) -> None:
    ours = rouge_l(prediction, reference, stem=stem)
    tokenize = RougeTokenizer(stem).tokenize
    if not tokenize(prediction) and not tokenize(reference):
        assert ours.f1 == 1.0  # documented: two empty answers agree; rouge-score says 0
        return
    ref = ROUGE[stem].score(reference, prediction)["rougeL"]
    check("rouge_l precision", ours.precision, ref.precision)
    check("rouge_l recall", ours.recall, ref.recall)
    check("rouge_l f1", ours.f1, ref.fmeasure)


@settings(max_examples=1000, deadline=None)
@given(any_text, any_text)
def test_rouge_l_is_rouge_scores_lcs_on_unicode_tokens(prediction: str, reference: str) -> None:
    # rouge-score cannot read these tokens, so each distinct one becomes an ASCII word: what is
    # compared is rouge-score's LCS and P/R/F over our token sequences
    tokenize = RougeTokenizer().tokenize
    pred_toks, ref_toks = tokenize(prediction), tokenize(reference)
    ours = rouge_l(prediction, reference)
    if not pred_toks and not ref_toks:
        assert ours.f1 == 1.0
        return
    words: dict[str, str] = {}

    def ascii_words(toks: list[str]) -> str:
        return " ".join(words.setdefault(t, f"w{len(words)}") for t in toks)

    ref = ROUGE[False].score(ascii_words(ref_toks), ascii_words(pred_toks))["rougeL"]
    check("rouge_l f1 (unicode)", ours.f1, ref.fmeasure)
    check("rouge_l precision (unicode)", ours.precision, ref.precision)
    check("rouge_l recall (unicode)", ours.recall, ref.recall)


# -- intervals and evaluator reliability against statsmodels -----------------------------------------
confidences = st.one_of(
    st.sampled_from([0.8, 0.9, 0.95, 0.99]), st.floats(min_value=0.5, max_value=0.999)
)


@st.composite
def counts(draw: st.DrawFn) -> tuple[int, int]:
    n = draw(st.one_of(st.integers(1, 30), st.integers(1, 100_000)))
    k = draw(st.one_of(st.sampled_from([0, n]), st.integers(0, n)))  # 0/n and n/n often
    return k, n


@settings(max_examples=1500, deadline=None)
@given(counts(), confidences)
def test_intervals_match_statsmodels(kn: tuple[int, int], confidence: float) -> None:
    k, n = kn
    wilson, wald = wilson_ci(k, n, confidence), z_interval(k, n, confidence)
    assert wilson is not None and wald is not None
    lo, hi = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
    check("wilson low", wilson[0], float(lo))
    check("wilson high", wilson[1], float(hi))
    lo, hi = proportion_confint(k, n, alpha=1 - confidence, method="normal")
    check("wald low", wald[0], max(0.0, float(lo)))  # ours is clipped to [0, 1]
    check("wald high", wald[1], min(1.0, float(hi)))


def statsmodels_ci(k: int, n: int, confidence: float, method: str) -> tuple[float, float] | None:
    if n == 0:
        return None
    if method == "wilson":
        lo, hi = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
        return float(lo), float(hi)
    lo, hi = proportion_confint(k, n, alpha=1 - confidence, method="normal")  # Wald
    return max(0.0, float(lo)), min(1.0, float(hi))


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), st.sampled_from([True, False, None])), max_size=60),
    confidences,
    st.sampled_from(["wilson", "wald"]),
)
def test_reliability_matches_statsmodels(
    pairs: list[tuple[bool, bool | None]], confidence: float, method: str
) -> None:
    truth = [t for t, _ in pairs]
    said = [p for _, p in pairs]
    r = evaluator_reliability(truth, said, confidence, interval=method)  # type: ignore[arg-type]
    decided = [(t, p) for t, p in pairs if p is not None]
    cells = Counter(decided)  # (truth, said) -> count: the confusion table
    tp, fp = cells[True, True], cells[False, True]
    fn, tn = cells[True, False], cells[False, False]
    assert (r.true_positive, r.false_positive, r.false_negative, r.true_negative) == (
        tp,
        fp,
        fn,
        tn,
    )
    assert (r.n, r.abstained) == (len(decided), len(pairs) - len(decided))
    for name, k, n in [
        ("precision", tp, tp + fp),
        ("recall", tp, tp + fn),
        ("error_precision", tn, tn + fn),
        ("error_recall", tn, tn + fp),
        ("agreement", tp + tn, len(decided)),
    ]:
        check(f"reliability {name}", getattr(r, name), k / n if n else None)
        ci, ref = getattr(r, f"{name}_ci"), statsmodels_ci(k, n, confidence, method)
        assert (ci is None) == (ref is None)
        if ci is not None and ref is not None:
            check(f"reliability {name} ci ({method})", ci[0], ref[0])
            check(f"reliability {name} ci ({method})", ci[1], ref[1])
