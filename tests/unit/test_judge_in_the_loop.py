"""The judge stage beyond the rules, without a network: the LLM tier's reason, the self-audit,
RAGProbe's per-metric evaluator, answer metrics, the reference-free evaluators and the runner's
SelfCheck samples. Over real HTTP (the openai SDK against the local test server) in
``tests/integration/test_llm_in_the_loop.py``."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from groundwatch.adapters.llm.cache import MemoryVerdictCache
from groundwatch.adapters.targets import CallableTarget, TargetError, TargetLimits, TargetReply
from groundwatch.adapters.targets.base import ErrorKind
from groundwatch.contracts import Probe, RagResponse, TargetStatus
from groundwatch.core.model import Expected, Verdict
from groundwatch.core.sampling import in_share
from groundwatch.core.scores import (
    AuditScore,
    EvaluatorCall,
    MetricOutcome,
    RagProbeOutcomes,
    ReferenceFreeScores,
)
from groundwatch.errors import ConfigError
from groundwatch.stages.judge.llm_tier import LlmJudge
from groundwatch.stages.judge.reference_free import ReferenceFreeJudge, ReferenceFreeSettings
from groundwatch.stages.judge.tiered import JudgeSettings, TieredJudge, build_judge
from groundwatch.stages.runner.lanes import Runner, SelfCheckSampling

pytestmark = pytest.mark.unit


class Model:
    """A ChatModel double answering by a function of the prompt; records every prompt."""

    model = "fake-model"

    def __init__(self, answer: Callable[[str], str]) -> None:
        self.answer = answer
        self.prompts: list[str] = []

    async def complete(
        self,
        system: str,
        user: str,
        *,
        temperature: float = 0.0,
        n: int = 1,
        max_tokens: int | None = None,
    ) -> list[str]:
        self.prompts.append(user)
        return [self.answer(user)] * n


def grammar_says(verdict: str) -> Callable[[str], str]:
    return lambda prompt: verdict if prompt.startswith("Evaluate the accuracy") else "Pass"


def judge_with(model: Model, **settings: object) -> TieredJudge:
    s = JudgeSettings(llm_enabled=True, **settings)  # type: ignore[arg-type]
    return TieredJudge(s, LlmJudge(model, MemoryVerdictCache()))


DECIDED = ("Who leads the project?", Expected(values=["Ada Quinn"]), "Ada Quinn leads it.")
VAGUE = ("When did it start?", Expected(values=["2023-04-01"]), "It started in spring 2023.")


async def test_the_llm_decides_what_the_rules_leave_and_says_so() -> None:
    judge = judge_with(Model(grammar_says("Correct")), audit_share=0.0)
    d = await judge.judge(*VAGUE)
    assert (d.verdict, d.tier) == (Verdict.CORRECT, "llm")
    assert d.reason.startswith("llm_verdict: 'Correct'; rules: ")
    assert "coarser_date" in d.reason  # why the rules could not decide stays visible


async def test_without_an_llm_undecided_stays_undecided() -> None:
    judge = TieredJudge(JudgeSettings())
    d = await judge.judge(*VAGUE)
    assert d.verdict is Verdict.UNDECIDED and judge.llm is None
    assert "rules only" in judge.describe and "coverage" in judge.describe


async def test_self_audit_asks_the_llm_about_a_share_of_rule_decided_answers() -> None:
    model = Model(grammar_says("Incorrect"))
    judge = judge_with(model, audit_share=1.0)
    d = await judge.judge(*DECIDED)
    # the rules' verdict stands; the disagreement travels with it
    assert (d.verdict, d.tier) == (Verdict.CORRECT, "contains")
    assert d.scores.audit == AuditScore("contains", False)
    assert d.reason.endswith("audit: the LLM disagrees (incorrect)")
    assert judge.counters.audit == {("contains", "false"): 1}
    assert len(model.prompts) == 1 and "##True Answer##: Ada Quinn" in model.prompts[0]
    again = await judge.judge(*DECIDED)  # the same answer: audited again, from the cache
    assert again.scores.audit == AuditScore("contains", False) and len(model.prompts) == 1
    assert judge.snapshot()["audit_contains_false"] == 2


async def test_audit_share_picks_by_content_and_zero_spends_nothing() -> None:
    model = Model(grammar_says("Correct"))
    off = judge_with(model, audit_share=0.0)
    assert (await off.judge(*DECIDED)).scores.audit is None and not model.prompts
    share = 0.3
    judge = judge_with(model, audit_share=share)
    assert judge.llm is not None
    answers = [f"Ada Quinn leads it ({i})." for i in range(200)]
    audited = 0
    for a in answers:
        d = await judge.judge(DECIDED[0], DECIDED[1], a)
        picked = in_share(judge.llm.key(DECIDED[0], "Ada Quinn", a), share)
        assert (d.scores.audit is not None) is picked
        audited += picked
    assert 30 < audited < 90 and len(model.prompts) == audited


async def test_an_audit_the_llm_cannot_read_is_unknown() -> None:
    judge = judge_with(Model(grammar_says("Maybe")), audit_share=1.0)
    d = await judge.judge(*DECIDED)
    assert d.verdict is Verdict.CORRECT and d.scores.audit == AuditScore("contains", None)
    assert judge.counters.audit == {("contains", "unknown"): 1}


async def test_scenario_probes_are_judged_per_metric_by_the_rules() -> None:
    judge = TieredJudge(JudgeSettings())
    unanswerable = Expected(answerable=False)
    refusal = await judge.judge_scenario(
        "S6", "Who is the CEO of Mars?", unanswerable, "I don't know."
    )
    assert (refusal.verdict, refusal.tier) == (Verdict.CORRECT, "ragprobe")
    passed = MetricOutcome.PASSED
    assert refusal.scores.ragprobe == RagProbeOutcomes(
        explicitness=passed, contradiction=passed, no_question_related_information=passed
    )
    assert refusal.scores.answer is None and refusal.scores.rules is None
    answered = await judge.judge_scenario("S6", "Who is the CEO of Mars?", unanswerable, "Ada.")
    assert answered.verdict is Verdict.INCORRECT
    assert answered.reason.startswith("ragprobe_failed: explicitness")
    assert judge.counters.by_tier["ragprobe"] == 2


async def test_scenario_metrics_the_rules_leave_open_go_to_the_llm() -> None:
    model = Model(lambda p: "Fail" if "Criterion (relevance)" in p else "Pass")
    judge = judge_with(model, audit_share=0.0)
    long_answer = (
        "Ada Quinn leads the project. She joined in 2019. The office moved twice. "
        "Lunch is served at noon."
    )
    d = await judge.judge_scenario("S1", DECIDED[0], DECIDED[1], long_answer)
    assert (d.verdict, d.tier) == (Verdict.INCORRECT, "ragprobe_llm")
    outcomes = d.scores.ragprobe
    assert outcomes is not None and outcomes.relevance is MetricOutcome.FAILED
    assert outcomes.correctness is MetricOutcome.PASSED
    assert d.prompt_version == "ragprobe-metrics-v1"
    without_llm = await TieredJudge(JudgeSettings()).judge_scenario(
        "S1", DECIDED[0], DECIDED[1], long_answer
    )
    assert without_llm.verdict is Verdict.UNDECIDED  # open metrics are never guessed
    assert without_llm.scores.ragprobe is not None
    assert without_llm.scores.ragprobe.relevance is MetricOutcome.OPEN


def response(
    *,
    answer: str | None = "Ada Quinn leads it.",
    retrieved: list[str] | None = None,
    relevant: list[str] | None = None,
    scenario: str = "factual",
    status: TargetStatus = TargetStatus.OK,
    contexts: list[str] | None = None,
    samples: list[str] | None = None,
) -> RagResponse:
    probe = Probe(
        probe_id=uuid.uuid4(),
        run_id="r",
        dataset_id="d",
        group_id="g",
        form_id="f",
        cohort="short",
        scenario=scenario,
        target="t",
        query=DECIDED[0],
        expected=DECIDED[1],
        relevant_doc_ids=relevant or [],
    )
    if status is TargetStatus.ERROR:
        return RagResponse.for_probe(probe, status=status, error_kind="timeout")
    return RagResponse.for_probe(
        probe,
        status=status,
        answer=answer,
        retrieved_ids=retrieved or [],
        contexts=contexts or [],
        samples=samples or [],
    )


async def test_every_answer_is_scored_and_ir_metrics_need_a_ranking() -> None:
    judge = TieredJudge(JudgeSettings(metrics_k=3))
    stage = judge.stage()
    ranked, unranked, failed = await stage.handle(
        [
            response(retrieved=["d9", "d2", "d3"], relevant=["d2"]),
            response(relevant=["d2"]),
            response(status=TargetStatus.ERROR),
        ]
    )
    answer, retrieval = ranked.scores.answer, ranked.scores.retrieval
    assert answer is not None and retrieval is not None
    assert answer.k == retrieval.k == 3 and retrieval.rr == 0.5 and retrieval.recall == 1.0
    assert answer.token_f1 == pytest.approx(2 / 3)  # 2 of 4 tokens, both gold
    assert ranked.scores.rules is not None  # the rules' own detail is kept beside
    assert unranked.scores.retrieval is None and unranked.scores.answer is not None
    assert unranked.scores.answer.bleu is not None
    assert failed.scores.answer is None and failed.scores.retrieval is None
    # the same answer twice: the second one's text scores come from the cache
    assert judge.scorer is not None and (judge.scorer.hits, judge.scorer.misses) == (1, 2)
    (again,) = await stage.handle([response(retrieved=["d9", "d2", "d3"], relevant=["d2"])])
    assert judge.scorer.hits == 3 and again.scores == ranked.scores  # text and IR: both cached
    off = TieredJudge(JudgeSettings(answer_metrics=False)).stage()
    (plain,) = await off.handle([response()])
    assert plain.scores.answer is None and plain.scores.retrieval is None


async def test_scenario_probes_go_through_the_per_metric_evaluator_in_the_stage() -> None:
    stage = TieredJudge(JudgeSettings()).stage()
    (j,) = await stage.handle([response(scenario="S1", answer="Ada Quinn.")])
    assert j.tier == "ragprobe" and j.verdict is Verdict.CORRECT
    assert j.scores.ragprobe is not None
    assert j.scores.ragprobe.correctness is MetricOutcome.PASSED
    assert j.scores.answer is not None and j.scores.answer.exact_match is not None


def rf_model() -> Model:
    def answer(prompt: str) -> str:
        if prompt.startswith("Break the answer"):
            return "Ada Quinn leads the project."
        if prompt.startswith("Natural language inference"):
            return "Yes" if "Ada Quinn leads" in prompt.split("statement:")[0] else "No"
        if prompt.startswith("Query:"):  # SelfCheck-QA
            return "No" if "Answer B: Bob" in prompt else "Yes"
        return "Correct"

    return Model(answer)


async def test_reference_free_evaluators_beside_the_judge() -> None:
    model = rf_model()
    rf = ReferenceFreeJudge(
        ReferenceFreeSettings(reference_free="ragas_fact,selfcheck", reference_free_share=1.0),
        model,
    )
    stage = TieredJudge(JudgeSettings(), reference_free=rf).stage()
    supported, unsupported, disagreeing, scenario = await stage.handle(
        [
            response(contexts=["Ada Quinn leads the Beacon project."], samples=["Ada Quinn"] * 2),
            response(contexts=["Bob runs the depot."]),
            response(contexts=[], samples=["Bob"]),
            response(scenario="S1", contexts=["Ada Quinn leads."], samples=["Ada"]),
        ]
    )
    right, wrong = EvaluatorCall.RIGHT, EvaluatorCall.WRONG
    assert supported.scores.reference_free == ReferenceFreeScores(right, 1.0, right, 1.0)
    unsupported_rf = unsupported.scores.reference_free
    assert unsupported_rf is not None and unsupported_rf.ragas_fact is wrong
    # picked for SelfCheck but shipped without samples: reported as not sampled, not scored
    assert unsupported_rf.selfcheck is EvaluatorCall.NOT_SAMPLED and rf.counters.unsampled == 1
    assert unsupported_rf.selfcheck_agreement is None
    # no context: RAGAS abstains (counted), never guesses; a disagreeing sample: SelfCheck says no
    assert disagreeing.scores.reference_free == ReferenceFreeScores(
        EvaluatorCall.ABSTAINED, None, wrong, 0.0
    )
    assert scenario.scores.reference_free is None  # factual probes only
    assert rf.counters.ragas_fact == 3 and rf.counters.selfcheck == 2


def test_reference_free_settings() -> None:
    s = ReferenceFreeSettings(reference_free=" SelfCheck , ragas_fact,selfcheck")
    assert s.reference_free == ["selfcheck", "ragas_fact"] and s.selfcheck
    with pytest.raises(ValueError, match="unknown evaluator"):
        ReferenceFreeSettings(reference_free="bertscore")
    with pytest.raises(ConfigError, match="GW_REFERENCE_FREE"):
        build_judge(
            JudgeSettings(), reference_free=ReferenceFreeSettings(reference_free="selfcheck")
        )
    assert (
        build_judge(JudgeSettings(), reference_free=ReferenceFreeSettings()).reference_free is None
    )


async def test_runner_ships_selfcheck_samples_from_the_target_under_test() -> None:
    calls: list[tuple[str, float]] = []
    answers = iter(["main", "s1", "s2", "s3"])

    async def target(query: str, temperature: float = 0.0) -> TargetReply:
        calls.append((query, temperature))
        return TargetReply(next(answers))

    runner = Runner(
        {"t": CallableTarget(target)},
        {"t": TargetLimits(concurrency=1)},
        selfcheck=SelfCheckSampling(share=1.0, samples=3),
    )
    from tests.unit._runner_helpers import probe

    resp = await runner.run(probe("t"))
    await runner.aclose()
    assert resp.answer == "main" and resp.samples == ["s1", "s2", "s3"]
    assert [t for _, t in calls] == [0.0, 1.0, 1.0, 1.0]  # the samples at temperature 1.0


async def test_runner_stops_sampling_at_the_first_failure_and_skips_unpicked_probes() -> None:
    state = {"n": 0}

    async def flaky(query: str, temperature: float = 0.0) -> TargetReply:
        state["n"] += 1
        if state["n"] == 3:
            raise TargetError(ErrorKind.HTTP_5XX, "boom")
        return TargetReply(f"a{state['n']}")

    runner = Runner(
        {"t": CallableTarget(flaky)},
        {"t": TargetLimits(concurrency=1, retries=0)},
        selfcheck=SelfCheckSampling(share=1.0, samples=4),
    )
    from tests.unit._runner_helpers import probe

    resp = await runner.run(probe("t"))
    assert resp.status is TargetStatus.OK and resp.samples == ["a2"] and state["n"] == 3
    runner_none = Runner({"t": CallableTarget(flaky)}, selfcheck=SelfCheckSampling(share=0.0))
    resp2 = await runner_none.run(probe("t"))
    assert resp2.samples == []
    await runner.aclose()
    await runner_none.aclose()
