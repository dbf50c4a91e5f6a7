"""Reference-free evaluators and RAGProbe's LLM-judged metrics over real HTTP (fake server)."""

from __future__ import annotations

from typing import Any

import pytest

from groundwatch.adapters.llm.client import LlmClient, LlmSettings
from groundwatch.core.model import Expected, Verdict
from groundwatch.core.ragprobe_metrics import RagProbeMetric
from groundwatch.stages.judge.evaluators import (
    llm_rag_sampler,
    ragas_faithfulness,
    selfcheck_rag,
)
from groundwatch.stages.judge.ragprobe_llm import RagProbeJudge
from tests.fakes import FakeOpenAIServer, Reply, fake_openai, fake_openai_server  # noqa: F401

pytestmark = pytest.mark.integration


def _client(server: FakeOpenAIServer) -> LlmClient:
    return LlmClient(
        LlmSettings(
            base_url=server.base_url,
            api_key="k",
            model="m",
            requests_per_second=0,
            backoff_initial=0.01,
            backoff_max=0.02,
        )
    )


def _last_user(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


async def test_ragas_faithfulness_over_http(fake_openai: FakeOpenAIServer) -> None:  # noqa: F811
    def responder(body: dict[str, Any]) -> str:
        prompt = _last_user(body)
        if prompt.startswith("Break the answer"):
            return "1. The client is Blue Horizon Hotels.\n2. The resort is in Fiji."
        return "Yes" if "statement: The client" in prompt else "No"

    fake_openai.responder = responder
    fake_openai.script(Reply.status_code(429, retry_after=0))  # the first call is throttled once
    client = _client(fake_openai)
    f = await ragas_faithfulness(
        client, "Client?", "Blue Horizon Hotels, in Fiji.", ["Blue Horizon Hotels is the client."]
    )
    assert f.score == pytest.approx(0.5) and f.verdicts == ["yes", "no"]
    assert client.counters.rate_limited == 1 and client.counters.calls == 3
    nli = [_last_user(r.body) for r in fake_openai.requests][2:]
    assert all("context: Blue Horizon Hotels is the client." in p for p in nli)
    await client.aclose()


async def test_selfcheck_over_http(fake_openai: FakeOpenAIServer) -> None:  # noqa: F811
    def responder(body: dict[str, Any]) -> str:
        prompt = _last_user(body)
        if prompt.startswith("Context:"):
            return "Ada" if body["temperature"] == 0.0 else "Ada Lovelace"
        return "Yes"

    fake_openai.responder = responder
    client = _client(fake_openai)
    r = await selfcheck_rag(client, llm_rag_sampler(client, ["Ada leads."]), "Who leads?")
    assert r.verdict is Verdict.CORRECT and r.samples == ["Ada Lovelace"] * 4
    temps = sorted((b.body["temperature"], b.body.get("n", 1)) for b in fake_openai.requests[:2])
    assert temps == [(0.0, 1), (1.0, 4)]
    await client.aclose()


async def test_ragprobe_metrics_over_http(fake_openai: FakeOpenAIServer) -> None:  # noqa: F811
    fake_openai.responder = lambda body: (
        "Fail" if "(no question related information)" in _last_user(body) else "Pass"
    )
    client = _client(fake_openai)
    ev = await RagProbeJudge(client).evaluate(
        "S6",
        "Explain quantum mechanics?",
        Expected(answerable=False),
        "I don't know. Quantum mechanics studies atoms.",
    )
    assert len(fake_openai.requests) == 2
    assert ev.verdict is Verdict.INCORRECT
    assert ev.failed == [RagProbeMetric.NO_QUESTION_RELATED_INFORMATION]
    await client.aclose()
