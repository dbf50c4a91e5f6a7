"""One answer's scores (Oro et al.'s metric set) and their running means per target × cohort × scenario."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundwatch.core.answer_scoring import (
    DEFAULT_K,
    MetricMeans,
    RunningMean,
    ScoredAnswer,
    gold_text,
    score_answer,
)

pytestmark = pytest.mark.unit


def test_one_answer_with_gold_and_ranking() -> None:
    m = score_answer("Paris", ["Paris"], retrieved_ids=["d1", "d2", "d1"], relevant_ids={"d2"}, k=2)
    assert (m.exact_match, m.token_f1, m.rouge_l, m.bleu) == (1.0, 1.0, 1.0, 1.0)
    assert (m.recall_at_k, m.precision_at_k, m.ap_at_k, m.reciprocal_rank) == (1.0, 0.5, 0.5, 0.5)
    assert m.ndcg_at_k == pytest.approx(1 / math.log2(3))
    assert m.as_dict() == {
        "exact_match": 1.0,
        "token_f1": 1.0,
        "rouge_l": 1.0,
        "bleu": m.bleu,
        "recall@2": 1.0,
        "precision@2": 0.5,
        "ap@2": 0.5,
        "rr": 0.5,
        "ndcg@2": m.ndcg_at_k,
    }


def test_a_multi_part_gold_is_one_reference_not_alternatives() -> None:
    assert gold_text(["Paris", " ", "France "]) == "Paris, France"
    m = score_answer("Paris", ["Paris", "France"])
    assert m.exact_match == 0.0  # half the answer is not an exact match
    assert m.token_f1 == pytest.approx(2 / 3) and m.rouge_l == pytest.approx(2 / 3)
    assert score_answer("Paris, France", ["Paris", "France"]).exact_match == 1.0


def test_undefined_metrics_are_none_not_zero() -> None:
    unanswerable = score_answer("I don't know", [], retrieved_ids=["d1"], relevant_ids=[])
    assert unanswerable.as_dict() == dict.fromkeys(
        [
            "exact_match",
            "token_f1",
            "rouge_l",
            "bleu",
            "recall@5",
            "precision@5",
            "ap@5",
            "rr",
            "ndcg@5",
        ]
    )
    assert unanswerable.k == DEFAULT_K == 5
    no_ranking = score_answer("x", ["x"], relevant_ids={"d1"})
    assert no_ranking.exact_match == 1.0 and no_ranking.recall_at_k is None
    # a target that retrieved nothing is measured: it found none of the relevant documents
    nothing = score_answer("x", ["x"], retrieved_ids=[], relevant_ids={"d1"}, k=3)
    assert (nothing.recall_at_k, nothing.precision_at_k, nothing.ndcg_at_k) == (0.0, 0.0, 0.0)
    assert score_answer("", ["  "]).token_f1 is None  # a blank gold is no gold
    with pytest.raises(ValueError):
        score_answer("x", ["x"], k=0)


def test_normalization_reaches_em_and_f1() -> None:
    assert score_answer("U.S.", ["US"]).exact_match == 0.0
    assert score_answer("U.S.", ["US"], normalization="squad").exact_match == 1.0


words = st.sampled_from(["the", "cat", "U.S.", "Paris", "東京", "élysée", "", "42", "!"])
texts = st.lists(words, max_size=8).map(" ".join)
ids = st.sampled_from(["d1", "d2", "d3", "d4"])


@settings(max_examples=300, deadline=None)
@given(
    texts,
    st.lists(texts, max_size=3),
    st.one_of(st.none(), st.lists(ids, max_size=6)),
    st.one_of(st.none(), st.sets(ids, max_size=3)),
    st.integers(1, 8),
)
def test_every_metric_is_in_unit_interval_or_none_and_json_ready(
    answer: str, gold: list[str], retrieved: list[str] | None, relevant: set[str] | None, k: int
) -> None:
    d = score_answer(answer, gold, retrieved_ids=retrieved, relevant_ids=relevant, k=k).as_dict()
    assert len(d) == 9
    assert all(v is None or 0.0 <= v <= 1.0 for v in d.values())
    assert (d["exact_match"] is None) == (not gold_text(gold))
    assert (d[f"recall@{k}"] is None) == (retrieved is None or not relevant)
    json.dumps(d, allow_nan=False)


# -- running means ----------------------------------------------------------------------------------
GROUPS = [("t1", "c1", "S1"), ("t1", "c2", "S1"), ("t2", "c1", "S6")]
answers = st.lists(
    st.tuples(
        st.sampled_from(GROUPS),
        st.dictionaries(
            st.sampled_from(["token_f1", "rouge_l", "recall@5"]),
            st.one_of(st.none(), st.floats(0.0, 1.0)),
            min_size=1,
        ),
        st.integers(0, 3),  # which worker counts it
    ),
    max_size=60,
)


@settings(max_examples=400, deadline=None)
@given(answers)
def test_merged_shards_equal_numpy_over_all_answers(
    data: list[tuple[tuple[str, str, str], dict[str, float | None], int]],
) -> None:
    shards = [MetricMeans() for _ in range(4)]
    for group, metrics, shard in data:
        shards[shard].add(group, metrics)
    total = MetricMeans()
    for i, shard in enumerate(shards):
        # one shard travels as JSON, as between processes
        total.merge(MetricMeans.from_dict(json.loads(json.dumps(shard.to_dict()))) if i else shard)
    for group in GROUPS:
        mine = [m for g, m, _ in data if g == group]
        assert total.answers(group) == len(mine)
        for name in ["token_f1", "rouge_l", "recall@5"]:
            seen = [m[name] for m in mine if name in m]
            values = np.array([v for v in seen if v is not None], dtype=float)
            stat = total.get(group, name)
            if not seen:
                assert stat is None
                continue
            assert stat is not None
            assert (stat.count, stat.undefined) == (values.size, len(seen) - values.size)
            if values.size:
                assert abs(stat.mean - float(values.mean())) <= 1e-9
            else:
                assert stat.value is None
            if values.size > 1:
                assert stat.variance is not None
                assert abs(stat.variance - float(values.var(ddof=1))) <= 1e-9
                se = math.sqrt(float(values.var(ddof=1)) / values.size)
                assert stat.std_error is not None and abs(stat.std_error - se) <= 1e-9
            else:
                assert stat.variance is None and stat.std_error is None
    json.dumps(total.rows(), allow_nan=False)
    json.dumps(total.to_dict(), allow_nan=False)


def test_rows_for_the_report_and_prometheus() -> None:
    means = MetricMeans()
    means.add(("t1", "c1", "S1"), score_answer("Paris", ["Paris"]))
    means.add(("t1", "c1", "S1"), score_answer("Rome", ["Paris"]))
    rows = {r["metric"]: r for r in means.rows()}
    assert rows["exact_match"] == {
        "target": "t1",
        "cohort": "c1",
        "scenario": "S1",
        "metric": "exact_match",
        "answers": 2,
        "count": 2,
        "undefined": 0,
        "mean": 0.5,
        "std_error": pytest.approx(0.5),
    }
    assert rows["recall@5"]["count"] == 0 and rows["recall@5"]["undefined"] == 2
    assert rows["recall@5"]["mean"] is None
    assert means.mean(("t1", "c1", "S1"), "token_f1") == 0.5
    assert means.mean(("t9", "c1", "S1"), "token_f1") is None


def test_memory_is_bounded_by_max_groups() -> None:
    means = MetricMeans(("target",), max_groups=2)
    for t in ["a", "b", "c", "c", "a"]:
        means.add((t,), {"f1": 1.0})
    assert len(means) == 2 and means.dropped == 2 and means.answers(("a",)) == 2
    other = MetricMeans(("target",), max_groups=5)
    other.add(("d",), {"f1": 0.0})
    other.add(("b",), {"f1": 0.0})
    means.merge(other)
    assert means.dropped == 3 and means.answers(("b",)) == 2
    assert MetricMeans.from_dict(means.to_dict()).to_dict() == means.to_dict()


def test_bad_input_is_refused() -> None:
    means = MetricMeans()
    with pytest.raises(ValueError, match="finite"):
        means.add(("t", "c", "s"), {"f1": math.nan})
    with pytest.raises(ValueError, match="dimension"):
        means.add(("t", "c"), {"f1": 1.0})
    with pytest.raises(ValueError, match="merge"):
        means.merge(MetricMeans(("target",)))
    with pytest.raises(ValueError):
        MetricMeans(("a", "a"))
    r = RunningMean()
    r.merge(RunningMean())
    assert (r.count, r.value, r.undefined) == (0, None, 0)


def test_a_scored_answer_is_a_plain_value() -> None:
    assert ScoredAnswer(k=3).as_dict()["ndcg@3"] is None
