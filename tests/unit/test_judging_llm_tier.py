"""The LLM tier without a network: verdict parsing, the prompt, the Judge and its settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundwatch.adapters.llm.cache import MemoryVerdictCache, SqlVerdictCache, cache_key
from groundwatch.app.bootstrap import verdict_cache
from groundwatch.core.judging import JUDGE_ERROR
from groundwatch.core.model import Expected, Verdict
from groundwatch.errors import ConfigError, GroundwatchError
from groundwatch.runtime.settings import load_settings
from groundwatch.stages.judge.llm_tier import (
    GRAMMAR_PROMPT,
    PROMPT_VERSION,
    LlmJudge,
    parse_verdict,
    render_prompt,
)
from groundwatch.stages.judge.tiered import JudgeSettings, TieredJudge, build_judge, gold_text

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ("Correct", Verdict.CORRECT),
        ("Incorrect", Verdict.INCORRECT),
        ("correct.", Verdict.CORRECT),
        ("**Incorrect**", Verdict.INCORRECT),
        ("“Correct”", Verdict.CORRECT),
        ("##Judgement##: Correct", Verdict.CORRECT),
        ("Judgement: Incorrect", Verdict.INCORRECT),
        ("Incorrect. The correct answer is Marie Curie.", Verdict.INCORRECT),
        ("Correct - the response matches the true answer.", Verdict.CORRECT),
        ("The given response is correct.", Verdict.CORRECT),
        ("The given response is not correct.", Verdict.INCORRECT),
        ("The response isn't correct", Verdict.INCORRECT),
        ("  \n Correct\n", Verdict.CORRECT),
        ("", None),
        ("Maybe", None),
        ("Partially correct", None),
        ("It could be correct or incorrect.", None),
        ("Correct or Incorrect", None),
    ],
)
def test_parse_verdict(reply: str, verdict: Verdict | None) -> None:
    assert parse_verdict(reply) is verdict


def test_prompt_is_the_papers_and_safe_with_braces() -> None:
    p = render_prompt("When? {x}", "2023-04-01", "It was {given_response}")
    assert p.startswith(
        "Evaluate the accuracy of the given response in relation to the true answer"
    )
    assert "##Query##: When? {x}\n##True Answer##: 2023-04-01\n" in p
    assert p.endswith("##Given Response##: It was {given_response}\n##Judgement##:")
    assert "{query}" in GRAMMAR_PROMPT  # the template itself is unrendered


def test_cache_key_separates_all_five_parts() -> None:
    base = cache_key("q", "g", "r", "m", "v1")
    assert base != cache_key("q", "g", "r", "m", "v2")
    assert base != cache_key("q", "g", "r", "m2", "v1")
    assert cache_key("a b", "c", "r", "m", "v") != cache_key("a", "b c", "r", "m", "v")


class ScriptedModel:
    """A ChatModel double: replies from a list, records prompts, can fail."""

    def __init__(self, *replies: str | Exception, model: str = "fake-model") -> None:
        self.model = model
        self.replies = list(replies)
        self.prompts: list[str] = []
        self.temperatures: list[float] = []

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
        self.temperatures.append(temperature)
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return [reply] * n


def _judge(model: ScriptedModel, **kw: object) -> TieredJudge:
    settings = JudgeSettings(llm_enabled=True, **kw)  # type: ignore[arg-type]
    return TieredJudge(settings, LlmJudge(model, MemoryVerdictCache()))


VAGUE = ("When did it start?", Expected(values=["2023-04-01"]), "It started in spring 2023.")


async def test_llm_asked_only_when_rules_are_undecided() -> None:
    model = ScriptedModel("Correct")
    judge = _judge(model)
    decided = await judge.judge("Who?", Expected(values=["Ada"]), "It is Ada.")
    assert decided.tier == "contains" and model.prompts == []
    d = await judge.judge(*VAGUE)
    assert (d.verdict, d.tier, d.prompt_version) == (Verdict.CORRECT, "llm", PROMPT_VERSION)
    assert model.temperatures == [0.0]
    assert "##True Answer##: 2023-04-01" in model.prompts[0]
    assert d.scores.llm_call is not None and not d.scores.llm_call.cached
    assert d.scores.rules is not None  # the rules' detail is kept beside the LLM's
    again = await judge.judge(*VAGUE)
    assert again.verdict is Verdict.CORRECT
    assert again.scores.llm_call is not None and again.scores.llm_call.cached
    assert len(model.prompts) == 1  # the second one was a cache hit
    assert judge.llm is not None and judge.llm.counters.cache_hits == 1
    assert judge.snapshot()["tier_llm"] == 2


@pytest.mark.parametrize("failure", ["I am not sure", GroundwatchError("down")])
async def test_unreadable_or_failed_verdict_is_judge_error(failure: str | Exception) -> None:
    judge = _judge(ScriptedModel(failure))
    d = await judge.judge(*VAGUE)
    assert d.verdict is Verdict.UNDECIDED and d.code == JUDGE_ERROR
    assert "coarser_date" in d.reason  # what the rules saw is kept
    assert judge.counters.judge_errors == 1
    assert judge.llm is not None and judge.llm.counters.judge_errors == 1
    assert judge.snapshot()["judge_errors"] == 1


async def test_judge_error_is_not_cached() -> None:
    model = ScriptedModel("???", "Incorrect")
    judge = _judge(model)
    assert (await judge.judge(*VAGUE)).code == JUDGE_ERROR
    assert (await judge.judge(*VAGUE)).verdict is Verdict.INCORRECT
    assert len(model.prompts) == 2


async def test_llm_disabled_or_removed_from_tiers_spends_nothing() -> None:
    model = ScriptedModel()
    off = TieredJudge(JudgeSettings(llm_enabled=False), LlmJudge(model))
    assert (await off.judge(*VAGUE)).verdict is Verdict.UNDECIDED
    no_tier = TieredJudge(
        JudgeSettings(llm_enabled=True, tiers=["refusal", "typed"]), LlmJudge(model)
    )
    assert (await no_tier.judge(*VAGUE)).verdict is Verdict.UNDECIDED
    assert model.prompts == []


def test_dry_run_estimate_counts_distinct_undecided() -> None:
    judge = _judge(ScriptedModel())
    items = [
        VAGUE,
        VAGUE,  # same key: one call
        ("Who?", Expected(values=["Ada"]), "It is Ada."),  # decided by rules: no call
        ("When?", Expected(values=["2024-06-30"]), "By the end of June 2024."),
        ("When?", Expected(values=["2024-06-30"]), None),  # nothing to judge
    ]
    calls, tokens = judge.dry_run_estimate(items)
    assert calls == 2
    assert 2 * len(GRAMMAR_PROMPT) // 4 < tokens < 2 * len(GRAMMAR_PROMPT)
    assert TieredJudge(JudgeSettings()).dry_run_estimate(items) == (0, 0)


def test_gold_text_for_prompt() -> None:
    assert gold_text(Expected(values=["a", "b"])) == "('a', 'b')"
    assert "do not contain" in gold_text(Expected(answerable=False))
    opts = Expected(values=["C"], options=["US", "Canada", "Russia"])
    assert gold_text(opts) == "C) Russia"


def test_settings_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GW_JUDGE_TIERS", "refusal, typed,llm")
    monkeypatch.setenv("GW_JUDGE_LLM_ENABLED", "true")
    s = load_settings(JudgeSettings)
    assert s.tiers == ["refusal", "typed", "llm"] and s.uses_llm
    assert s.deterministic_tiers == ("refusal", "typed")
    monkeypatch.setenv("GW_JUDGE_TIERS", "llm,typed")
    with pytest.raises(ConfigError, match="GW_JUDGE_TIERS"):
        load_settings(JudgeSettings)
    monkeypatch.setenv("GW_JUDGE_TIERS", "typed,magic")
    with pytest.raises(ConfigError, match="unknown judging tier"):
        load_settings(JudgeSettings)


def test_build_judge_rules_only_needs_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GW_JUDGE_LLM_ENABLED", raising=False)
    judge = build_judge(load_settings(JudgeSettings))
    assert judge.llm is None


def test_build_judge_with_the_llm_tier_needs_llm_settings() -> None:
    with pytest.raises(ConfigError, match="GW_JUDGE_LLM_ENABLED"):
        build_judge(JudgeSettings(llm_enabled=True))


def test_the_verdict_cache_is_the_stores_only_for_an_llm_tier_that_caches(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cache.db'}"
    assert verdict_cache(JudgeSettings(), url) is None  # rules only: no cache
    assert verdict_cache(JudgeSettings(llm_enabled=True, llm_cache=False), url) is None
    assert isinstance(verdict_cache(JudgeSettings(llm_enabled=True), url), SqlVerdictCache)
    assert isinstance(verdict_cache(JudgeSettings(llm_enabled=True), None), MemoryVerdictCache)
