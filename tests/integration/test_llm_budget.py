"""Issue 31: LLM spend under control — the expected calls and cost before a run, a budget that
stops asking (what the model would decide stays undecided, and the run says so), and the spend
(calls, tokens, cost) in the report and on /metrics. Over real HTTP against the local fake
OpenAI-compatible server."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from typer.testing import CliRunner

from groundwatch.adapters.db.datasets import write_jsonl
from groundwatch.adapters.llm.cache import MemoryVerdictCache
from groundwatch.adapters.llm.client import LlmBudgetExhausted, LlmClient, LlmLedger, LlmSettings
from groundwatch.cli.main import app
from groundwatch.runtime.judging import register_judge_telemetry
from groundwatch.stages.judge.reference_free import ReferenceFreeSettings
from groundwatch.stages.judge.spend import estimate_llm_calls
from groundwatch.stages.judge.tiered import JudgeSettings, build_judge
from tests.fakes import FakeOpenAIServer, fake_openai, fake_openai_server  # noqa: F401

pytestmark = pytest.mark.integration


def _settings(server: FakeOpenAIServer, **kw: object) -> LlmSettings:
    return LlmSettings(
        base_url=server.base_url,
        api_key="k",
        model="gpt-4o-mini",
        requests_per_second=0,
        backoff_initial=0.01,
        backoff_max=0.02,
        **kw,  # type: ignore[arg-type]
    )


async def test_the_budget_stops_asking_and_the_ledger_prices_the_tokens(
    fake_openai: FakeOpenAIServer,  # noqa: F811
) -> None:
    ledger = LlmLedger(max_calls=3)
    client = LlmClient(_settings(fake_openai), ledger=ledger)
    for _ in range(3):
        assert await client.complete("", "one two three four") == ["Correct"]
    with pytest.raises(LlmBudgetExhausted, match="budget of 3 calls is spent"):
        await client.complete("", "one more")
    assert len(fake_openai.requests) == 3  # the refused request was never sent
    assert (ledger.calls, ledger.refused) == (3, 1)
    assert (ledger.prompt_tokens, ledger.completion_tokens) == (12, 3)
    # gpt-4o-mini: $0.15 per 1M prompt tokens, $0.60 per 1M completion tokens
    assert ledger.cost_usd == pytest.approx((12 * 0.15 + 3 * 0.60) / 1e6)
    # a second client of the same run shares the ledger, so the budget bounds the run
    other = LlmClient(_settings(fake_openai), ledger=ledger)
    with pytest.raises(LlmBudgetExhausted):
        await other.complete("", "x")
    await client.aclose()
    await other.aclose()


def test_prices_come_from_the_table_and_gw_llm_prices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GW_LLM_PRICES", '{"my-local-model": [0.0, 0.0], "gpt-4o": [1, 2]}')
    monkeypatch.setenv("GW_LLM_BUDGET", "40")
    s = LlmSettings(model="gpt-4o")
    assert s.price == (1.0, 2.0) and s.budget == 40
    assert LlmSettings(model="gpt-4o-mini").price == (0.15, 0.60)  # the built-in table stays
    assert LlmSettings(model="unheard-of").price is None


def test_the_estimate_counts_each_feature() -> None:
    from groundwatch.demo import demo_dataset

    _, groups = demo_dataset(1, ("short", "long"))
    forms = sum(len(g.forms) for g in groups)
    est = estimate_llm_calls(
        groups,
        2,
        judge=JudgeSettings(llm_enabled=True, audit_share=0.1),
        reference_free=ReferenceFreeSettings(
            reference_free="selfcheck", reference_free_share=0.5, selfcheck_samples=4
        ),
        cycles=3,
        sampled_targets=1,
        model="gpt-4o-mini",
        price=(0.15, 0.60),
        budget=100,
    )
    by = {f.feature: f.calls for f in est.features}
    probes = forms * 2 * 3
    assert by["LLM judge tier"] == probes and by["self-audit"] == round(probes * 0.1)
    assert by["SelfCheck"] == round(probes * 0.5 / 2) * 4  # one of two targets can be sampled
    assert est.calls == sum(by.values()) and est.cost_usd is not None and est.cost_usd > 0
    lines = est.lines()
    assert lines[0].startswith(f"LLM calls this run: at most {est.calls:,}")
    assert "gpt-4o-mini prices" in lines[1] and "stops the run's LLM use after 100" in lines[2]
    rules_only = estimate_llm_calls(groups, 1, judge=JudgeSettings(), reference_free=None)
    assert rules_only.lines() == []


def test_run_says_the_estimate_stops_at_the_budget_and_reports_the_spend(
    fake_openai: FakeOpenAIServer,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from groundwatch.demo import demo_dataset

    _, groups = demo_dataset(1, ("short",))
    dataset = tmp_path / "d.jsonl"
    write_jsonl(groups[:20], dataset)
    targets = tmp_path / "t.yaml"
    targets.write_text(
        "targets: [{name: bot, type: callable, callable: 'tests.integration.test_llm_budget:bot'}]"
    )
    monkeypatch.setenv("GW_JUDGE_LLM_ENABLED", "true")
    monkeypatch.setenv("GW_JUDGE_TIERS", "llm")  # every answer to the LLM tier
    monkeypatch.setenv("GW_JUDGE_AUDIT_SHARE", "0")
    monkeypatch.setenv("GW_LLM_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("GW_LLM_REQUESTS_PER_SECOND", "0")
    report = tmp_path / "r.json"
    res = CliRunner().invoke(
        app,
        ["run", "--dataset", str(dataset), "--targets", str(targets), "--once",
         "--database-url", f"sqlite:///{tmp_path}/s.db", "--max-llm-calls", "7",
         "--json", str(report)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    probes = sum(len(g.forms) for g in groups[:20])
    assert f"LLM calls this run: at most {probes:,} (LLM judge tier ≤ {probes:,})" in res.output
    assert "LLM cost at gpt-4o-mini prices: at most ≈ $" in res.output
    assert "LLM budget: 7 calls; it stops the run's LLM use after 7 of them" in res.output
    assert len(fake_openai.requests) == 7
    assert re.search(
        r"warning: the LLM budget of 7 calls is spent: \d+ requests were not sent", res.output
    )
    spend = orjson.loads(report.read_bytes())["llm_spend"]
    assert spend["calls"] == 7 and spend["refused"] == probes - 7 and spend["budget"] == 7
    assert spend["prompt_tokens"] > 0 and spend["cost_usd"] > 0
    assert "LLM spend (gpt-4o-mini): 7 calls of a budget of 7" in res.output
    numbers = orjson.loads(report.read_bytes())["targets"]["bot"]["cohorts"]["short"]
    assert numbers["undecided"] == probes - 7  # not asked: undecided, never guessed


def bot(question: str) -> str:
    return "It is in the records."


async def test_spend_and_budget_on_metrics(fake_openai: FakeOpenAIServer) -> None:  # noqa: F811
    ledger = LlmLedger(max_calls=2)
    judge = build_judge(
        JudgeSettings(llm_enabled=True, tiers=["llm"]),
        client=LlmClient(_settings(fake_openai), ledger=ledger),
        cache=MemoryVerdictCache(),
    )
    assert judge.llm is not None
    client = judge.llm.client
    for q in ("a", "b"):
        await client.complete("", q)
    with pytest.raises(LlmBudgetExhausted):
        await client.complete("", "c")
    registry = CollectorRegistry()
    register_judge_telemetry(registry, judge)
    text = generate_latest(registry).decode()
    assert "groundwatch_llm_calls_total 2.0" in text
    assert "groundwatch_llm_budget_calls 2.0" in text
    assert "groundwatch_llm_budget_refused_total 1.0" in text
    cost = float(re.search(r"^groundwatch_llm_cost_usd_total (\S+)", text, re.M).group(1))  # type: ignore[union-attr]
    assert cost == pytest.approx(ledger.cost_usd) and cost > 0
    await judge.aclose()
