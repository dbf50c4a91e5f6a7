"""RAGProbe metric sets per scenario (deterministic parts, then the LLM for what stays open), and
the reference-free evaluators of GRAMMAR §3, with a scripted chat model."""

from __future__ import annotations

import pytest

from groundwatch.adapters.llm.cache import MemoryVerdictCache
from groundwatch.core.model import Expected, Verdict
from groundwatch.core.ragprobe_metrics import (
    ANSWERABLE_METRICS,
    UNANSWERABLE_METRICS,
    RagProbeMetric,
    deterministic_metrics,
    metrics_for,
    probe_verdict,
)
from groundwatch.errors import GroundwatchError
from groundwatch.stages.judge.evaluators import (
    RAGAS_NLI_PROMPT,
    SELFCHECK_QA_PROMPT,
    llm_rag_sampler,
    parse_claims,
    parse_nli,
    ragas_faithfulness,
    selfcheck,
    selfcheck_rag,
)
from groundwatch.stages.judge.ragprobe_llm import RagProbeJudge, parse_pass_fail

pytestmark = pytest.mark.unit

M = RagProbeMetric


class Scripted:
    """Chat model double: replies by a rule on the prompt, records every call."""

    def __init__(self, rule: dict[str, str] | None = None, default: str = "Pass") -> None:
        self.model = "fake"
        self.rule = rule or {}
        self.default = default
        self.calls: list[tuple[str, str, float, int]] = []

    async def complete(
        self,
        system: str,
        user: str,
        *,
        temperature: float = 0.0,
        n: int = 1,
        max_tokens: int | None = None,
    ) -> list[str]:
        self.calls.append((system, user, temperature, n))
        for needle, reply in self.rule.items():
            if needle in user:
                if reply == "RAISE":
                    raise GroundwatchError("down")
                return [reply] * n
        return [self.default] * n


def test_metric_sets_per_scenario() -> None:
    answerable = Expected(values=["x"])
    for s in ("S1", "S2", "S3", "S4", "S5", "factual"):
        assert metrics_for(s, answerable) == ANSWERABLE_METRICS
    assert metrics_for("S6", answerable) == UNANSWERABLE_METRICS
    assert metrics_for("S1", Expected(answerable=False)) == UNANSWERABLE_METRICS


def test_answerable_correct_short_answer_passes_every_metric() -> None:
    r = deterministic_metrics("S2", "When?", Expected(values=["1966"]), "It was 1966.")
    assert {m: x.passed for m, x in r.items()} == dict.fromkeys(ANSWERABLE_METRICS, True)
    assert probe_verdict({m: x.passed for m, x in r.items()}) is Verdict.CORRECT


def test_answerable_refusal_fails() -> None:
    r = deterministic_metrics("S1", "How many?", Expected(values=["384570"]), "I don't know.")
    assert r[M.CORRECTNESS].passed is False
    assert r[M.COMPLETENESS].passed is False and r[M.RELEVANCE].passed is False
    assert probe_verdict({m: x.passed for m, x in r.items()}) is Verdict.INCORRECT


def test_answerable_wrong_number_fails_consistency() -> None:
    r = deterministic_metrics("S1", "How many?", Expected(values=["384570"]), "It was 12,000.")
    assert r[M.CORRECTNESS].passed is False and r[M.CONSISTENCY].passed is False


def test_combined_question_missing_a_part_fails_completeness() -> None:
    exp = Expected(values=["Chamonix", "Babe Ruth"])
    # A part not named at all is not proven missing (it may be said in other words): undecided.
    r = deterministic_metrics("S5", "Where …? Who …?", exp, "The games took place in Chamonix.")
    assert r[M.COMPLETENESS].passed is None
    # Another value of the part's column in its place is proof.
    grounded = exp.model_copy(update={"candidates": [[], ["Lou Gehrig", "Ty Cobb"]]})
    r = deterministic_metrics(
        "S5", "Where …? Who …?", grounded, "The games took place in Chamonix; Ty Cobb won."
    )
    assert r[M.COMPLETENESS].passed is False


@pytest.mark.parametrize(
    ("response", "explicit", "contradiction", "no_info"),
    [
        ("Sorry, the system doesn't know the answer.", True, True, True),
        ("Quantum mechanics is the physics of small things.", False, True, False),
        ("I don't know. Quantum mechanics studies atoms.", True, None, None),
    ],
)
def test_unanswerable_metrics(
    response: str, explicit: bool, contradiction: bool | None, no_info: bool | None
) -> None:
    r = deterministic_metrics(
        "S6", "Explain quantum mechanics?", Expected(answerable=False), response
    )
    assert r[M.EXPLICITNESS].passed is explicit
    assert r[M.CONTRADICTION].passed is contradiction
    assert r[M.NO_QUESTION_RELATED_INFORMATION].passed is no_info


def test_probe_fails_if_any_metric_fails() -> None:
    assert probe_verdict({M.CORRECTNESS: True, M.RELEVANCE: False}) is Verdict.INCORRECT
    assert probe_verdict({M.CORRECTNESS: True, M.RELEVANCE: None}) is Verdict.UNDECIDED
    assert probe_verdict({}) is Verdict.UNDECIDED


@pytest.mark.parametrize(
    ("reply", "passed"),
    [("Pass", True), ("fail.", False), ("**Pass**", True), ("Verdict: Fail", False),
     ("The answer passes.", True), ("unsure", None), ("pass or fail", None)],
)  # fmt: skip
def test_parse_pass_fail(reply: str, passed: bool | None) -> None:
    assert parse_pass_fail(reply) is passed


async def test_llm_decides_only_open_metrics_and_probe_fails_on_one() -> None:
    model = Scripted({"(contradiction)": "Fail"}, default="Pass")
    judge = RagProbeJudge(model, MemoryVerdictCache())
    ev = await judge.evaluate(
        "S6", "Explain quantum mechanics?", Expected(answerable=False),
        "I don't know. Quantum mechanics studies atoms.",
    )  # fmt: skip
    assert ev.llm_calls == 2  # contradiction and no-question-related-information were open
    assert all("The documents do not contain the answer" in c[1] for c in model.calls)
    assert ev.metrics[M.CONTRADICTION].passed is False
    assert ev.verdict is Verdict.INCORRECT and ev.failed == [M.CONTRADICTION]
    again = await judge.evaluate(
        "S6", "Explain quantum mechanics?", Expected(answerable=False),
        "I don't know. Quantum mechanics studies atoms.",
    )  # fmt: skip
    assert again.cache_hits == 2 and again.llm_calls == 0


async def test_unreadable_metric_keeps_probe_undecided() -> None:
    model = Scripted(default="hmm")
    exp = Expected(values=["2023-04-01"])
    ev = await RagProbeJudge(model).evaluate("S2", "When?", exp, "In spring 2023, I think.")
    assert ev.verdict is Verdict.UNDECIDED
    assert ev.judge_errors and all(ev.metrics[m].passed is None for m in ev.judge_errors)


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [("Yes", "yes"), ("No.", "no"), ("Null", "null"), ("1", "yes"), ("-1", "null"),
     ("0", "no"), ("verdict: yes", "yes"), ("maybe", None)],
)  # fmt: skip
def test_parse_nli(reply: str, verdict: str | None) -> None:
    assert parse_nli(reply) == verdict


def test_parse_claims() -> None:
    assert parse_claims("1. A is B.\n- C is D.\n\n* E.\n", 10) == ["A is B.", "C is D.", "E."]
    assert parse_claims("", 10) == []


async def test_ragas_faithfulness_score_is_supported_over_total() -> None:
    claims = "The client is Blue Horizon Hotels.\nThe resort is in Fiji.\nIt opened in 2020."
    model = Scripted(
        {
            "Break the answer": claims,
            "statement: The client": "Yes",
            "statement: The resort": "No",
            "statement: It opened": "Null",
        }
    )
    f = await ragas_faithfulness(model, "Client?", "…", ["context text"])
    assert f.claims == claims.splitlines() and f.verdicts == ["yes", "no", "null"]
    assert f.score == pytest.approx(1 / 3) and f.llm_calls == 4
    assert f.verdict(0.5) is Verdict.INCORRECT and f.verdict(0.3) is Verdict.CORRECT
    nli = [c[1] for c in model.calls if c[1].startswith("Natural language inference")]
    assert nli[0] == RAGAS_NLI_PROMPT.replace("{context}", "context text").replace(
        "{statement}", "The client is Blue Horizon Hotels."
    )


async def test_ragas_faithfulness_never_guesses() -> None:
    none = await ragas_faithfulness(Scripted({"Break the answer": ""}), "q", "I don't know", ["c"])
    assert none.score is None and none.verdict() is Verdict.UNDECIDED and none.reason == "no_claims"
    garbled = Scripted({"Break the answer": "A.\nB.", "statement: A": "Yes", "statement: B": "??"})
    g = await ragas_faithfulness(garbled, "q", "r", ["c"])
    assert g.score is None and g.judge_errors == 1
    down = await ragas_faithfulness(Scripted({"Break the answer": "RAISE"}), "q", "r", ["c"])
    assert down.score is None and down.judge_errors == 1


async def test_selfcheck_correct_only_if_all_samples_agree() -> None:
    agree = Scripted(default="Yes")
    r = await selfcheck(agree, "Who?", "Ada", ["Ada", "It is Ada", "Ada L.", "Ada"])
    assert r.verdict is Verdict.CORRECT and r.agreement_rate == 1.0 and r.llm_calls == 4
    assert agree.calls[0][1] == SELFCHECK_QA_PROMPT.replace("{query}", "Who?").replace(
        "{answer}", "Ada"
    ).replace("{stochastic_answer}", "Ada")
    one_off = Scripted({"Answer B: Bob": "No"}, default="Yes")
    assert (await selfcheck(one_off, "Who?", "Ada", ["Ada", "Bob"])).verdict is Verdict.INCORRECT
    unread = Scripted(default="Perhaps")
    r = await selfcheck(unread, "Who?", "Ada", ["Ada"])
    assert r.verdict is Verdict.UNDECIDED and r.judge_errors == 1


async def test_selfcheck_rag_samples_at_temperature_one() -> None:
    generator = Scripted(default="Ada")
    judge = Scripted(default="Yes")
    r = await selfcheck_rag(judge, llm_rag_sampler(generator, ["Ada leads."]), "Who leads?")
    assert r.verdict is Verdict.CORRECT and len(r.samples) == 4
    temps = sorted((t, n) for _, _, t, n in generator.calls)
    assert temps == [(0.0, 1), (1.0, 4)]
    assert "Context:\nAda leads." in generator.calls[0][1]
