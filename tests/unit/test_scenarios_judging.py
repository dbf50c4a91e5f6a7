"""Scenario-aware judging: the judge's tiers on the scenario shapes (one correct option; every
part of a multi-part question; only a bare refusal for S6) and each scenario's acceptable
metrics as its YAML chooses them."""

from __future__ import annotations

from typing import Any

import pytest

from groundwatch.adapters.scenario_files import builtin_scenarios
from groundwatch.core.judging import judge_deterministic
from groundwatch.core.model import Expected, Verdict
from groundwatch.core.ragprobe_metrics import RagProbeMetric as M
from groundwatch.core.scenarios.items import options_text
from groundwatch.core.scenarios.scenario_judge import scenario_metrics, scenario_verdict
from groundwatch.core.scenarios.spec import parse_scenario
from groundwatch.stages.judge.tiered import gold_text

pytestmark = pytest.mark.unit

C, W, U = Verdict.CORRECT, Verdict.INCORRECT, Verdict.UNDECIDED
OPTIONS = ["Lisbon", "Rotterdam", "Tallinn", "Valletta"]
MC = Expected(values=["Tallinn"], options=OPTIONS)
MC_Q = options_text("Which office is Dagny Holloway based in?", OPTIONS)


@pytest.mark.parametrize(
    ("response", "verdict"),
    [
        ("C", C),  # the letter alone: "c" is no article, but …
        ("A", W),  # … "a" is one, and a bare "A" must still pick option A, not read as empty
        ("a)", W),
        ("(C)", C),
        ("C) Tallinn", C),
        ("Dagny Holloway is based in the Tallinn office.", C),
        ("The answer is B.", W),
        ("Lisbon or Tallinn, I am not sure.", U),
    ],
)
def test_multiple_choice_has_exactly_one_right_option(response: str, verdict: Verdict) -> None:
    assert judge_deterministic(MC_Q, MC, response).verdict is verdict
    assert gold_text(MC) == "C) Tallinn"


def test_a_bare_letter_a_is_an_answer_not_an_empty_response() -> None:
    gold_a = Expected(values=["Lisbon"], options=OPTIONS)
    d = judge_deterministic(MC_Q, gold_a, "A")
    assert (d.verdict, d.tier) == (C, "options")
    assert judge_deterministic(MC_Q, gold_a, "a.").verdict is C
    assert judge_deterministic(MC_Q, gold_a, " ").verdict is W  # still empty


MULTI = Expected(values=["2450000", "2021-03-04", "Leeds"])
MULTI_Q = "What is the budget of X? When did X start? In which city is X?"


@pytest.mark.parametrize(
    ("response", "verdict", "complete"),
    [
        ("X has a budget of 2,450,000 euros, started on 4 March 2021 and is in Leeds.", C, True),
        # a text part left out: incomplete, but its absence alone is no evidence of a wrong
        # answer for the judge (it may be said in other words), so the judge leaves it undecided
        ("The budget is 2450000. It started on 2021-03-04.", U, None),
        ("It is in Leeds and started on 2021-03-04.", W, False),
        ("The budget is 2450000, it started on 2021-03-05, in Leeds.", W, False),
    ],
)
def test_multi_part_is_complete_only_with_every_part(
    response: str, verdict: Verdict, complete: bool | None
) -> None:
    assert judge_deterministic(MULTI_Q, MULTI, response).verdict is verdict, response
    s4 = builtin_scenarios()["S4"]
    metrics = scenario_metrics(s4, MULTI_Q, MULTI, response)
    assert metrics[M.COMPLETENESS].passed is complete
    expected_verdict = U if complete is None else C if complete else W
    assert scenario_verdict(s4, MULTI_Q, MULTI, response) is expected_verdict


def test_multi_part_with_another_city_of_the_column_is_wrong() -> None:
    grounded = MULTI.model_copy(update={"candidates": [[], [], ["York", "Leeds", "Hull"]]})
    d = judge_deterministic(
        MULTI_Q, grounded, "The budget is 2450000, it began 2021-03-04 in York."
    )
    assert (d.verdict, d.code) == (W, "other_value")
    d = judge_deterministic(MULTI_Q, grounded, "The budget is 2450000. It started on 2021-03-04.")
    assert d.verdict is U


UNANSWERABLE = Expected(answerable=False)
S6_Q = "Do you know the budget of 'Harbour Data Hall'?"


@pytest.mark.parametrize(
    ("response", "verdict", "metric_verdict"),
    [
        ("I don't know.", C, C),
        ("The documents do not mention Harbour Data Hall.", C, C),
        ("The approved budget of the project Harbour Solar Array is 1875000 euros.", W, W),
        # a refusal that goes on to answer is never passed by the rules
        ("I don't know. The budget of Harbour Data Hall is 1875000 euros.", U, U),
        ("", W, W),
    ],
)
def test_s6_passes_only_on_an_explicit_refusal_without_an_answer(
    response: str, verdict: Verdict, metric_verdict: Verdict
) -> None:
    assert judge_deterministic(S6_Q, UNANSWERABLE, response).verdict is verdict
    s6 = builtin_scenarios()["S6"]
    assert set(scenario_metrics(s6, S6_Q, UNANSWERABLE, response)) == {
        M.EXPLICITNESS,
        M.CONTRADICTION,
        M.NO_QUESTION_RELATED_INFORMATION,
    }
    assert scenario_verdict(s6, S6_Q, UNANSWERABLE, response) is metric_verdict
    # what the LLM tier is told for an S6 probe rules out "refuse, then answer anyway"
    assert "does not go on to answer" in gold_text(UNANSWERABLE)


def test_a_scenario_counts_only_its_own_acceptable_metrics() -> None:
    spec: dict[str, Any] = {
        "id": "S7",
        "name": "Numbers, correctness only",
        "answer": "number",
        "prompting": {
            "strategy": "one_shot",
            "examples": [{"context": "c", "output": {"question": "q", "answer": "1"}}],
            "steps": [{"user": "{context}"}],
        },
        "acceptable_metrics": ["correctness"],
    }
    s7 = parse_scenario(spec)
    exp = Expected(values=["384570"])
    q = "What was the attendance?"
    # a long, correct answer: relevance and consistency would need a reader, correctness does not
    long = "It was 384,570. The series went to seven games. Many fans travelled. It was cold."
    assert list(scenario_metrics(s7, q, exp, long)) == [M.CORRECTNESS]
    assert scenario_verdict(s7, q, exp, long) is C
    assert scenario_verdict(builtin_scenarios()["S1"], q, exp, long) is U
