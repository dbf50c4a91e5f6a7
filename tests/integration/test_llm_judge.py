"""The LLM path for real: the ``openai`` SDK against a local OpenAI-compatible server.

Prompts, verdict parsing, retries on 429/5xx/timeouts, the concurrency and rate limits, the
verdict cache in a real SQLite database, and ``judge_error`` on garbage all run over HTTP.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select

from groundwatch.adapters.db.engine import make_engine
from groundwatch.adapters.db.tables import Base, LlmCacheRow
from groundwatch.adapters.llm.cache import SqlVerdictCache
from groundwatch.adapters.llm.client import LlmClient, LlmError, LlmSettings
from groundwatch.core.judging import JUDGE_ERROR
from groundwatch.core.model import Expected, Verdict
from groundwatch.stages.judge.llm_tier import PROMPT_VERSION, LlmJudge
from groundwatch.stages.judge.tiered import JudgeSettings, TieredJudge
from tests.fakes import FakeOpenAIServer, Reply, fake_openai, fake_openai_server  # noqa: F401

pytestmark = pytest.mark.integration

VAGUE = ("When did the project start?", Expected(values=["2023-04-01"]), "In spring 2023.")


def _settings(server: FakeOpenAIServer, **kw: object) -> LlmSettings:
    base: dict[str, object] = {
        "base_url": server.base_url,
        "api_key": "test-key",
        "model": "judge-model",
        "timeout": 5.0,
        "max_retries": 3,
        "backoff_initial": 0.01,
        "backoff_max": 0.05,
        "requests_per_second": 0,
    }
    return LlmSettings(**(base | kw))  # type: ignore[arg-type]


def _judge(client: LlmClient, cache: SqlVerdictCache | None = None) -> TieredJudge:
    return TieredJudge(JudgeSettings(llm_enabled=True), LlmJudge(client, cache))


@pytest.fixture
def sqlite_cache(tmp_path: Path) -> SqlVerdictCache:
    engine = make_engine(f"sqlite:///{tmp_path / 'cache.db'}")
    Base.metadata.create_all(engine, tables=[LlmCacheRow.__table__])  # type: ignore[list-item]
    return SqlVerdictCache(engine)


async def test_prompt_and_verdict_over_http(fake_openai: FakeOpenAIServer) -> None:  # noqa: F811
    fake_openai.script(Reply.text("Correct"))
    client = LlmClient(_settings(fake_openai))
    d = await _judge(client).judge(*VAGUE)
    assert (d.verdict, d.tier, d.prompt_version) == (Verdict.CORRECT, "llm", PROMPT_VERSION)
    (req,) = fake_openai.requests
    assert req.body["model"] == "judge-model"
    assert req.body["temperature"] == 0.0
    assert [m["role"] for m in req.body["messages"]] == ["user"]
    prompt = req.body["messages"][0]["content"]
    assert prompt.startswith("Evaluate the accuracy of the given response")
    assert "##Query##: When did the project start?" in prompt
    assert "##True Answer##: 2023-04-01" in prompt
    assert prompt.endswith("##Given Response##: In spring 2023.\n##Judgement##:")
    assert client.counters.calls == 1 and client.counters.prompt_tokens > 0
    await client.aclose()


async def test_429s_back_off_and_are_counted(fake_openai: FakeOpenAIServer) -> None:  # noqa: F811
    fake_openai.script(
        Reply.status_code(429, retry_after=0),
        Reply.status_code(429),
        Reply.status_code(503),
        Reply.text("Incorrect"),
    )
    client = LlmClient(_settings(fake_openai))
    d = await _judge(client).judge(*VAGUE)
    assert d.verdict is Verdict.INCORRECT
    c = client.counters
    assert (c.rate_limited, c.attempts, c.retries, c.calls, c.errors) == (2, 4, 3, 1, 0)
    assert len(fake_openai.requests) == 4
    await client.aclose()


async def test_retry_after_is_honoured(fake_openai: FakeOpenAIServer) -> None:  # noqa: F811
    fake_openai.script(Reply.status_code(429, retry_after=0.3), Reply.text("Correct"))
    client = LlmClient(_settings(fake_openai, backoff_max=1.0))
    await client.complete("", "x")
    first, second = fake_openai.requests
    assert second.arrived - first.arrived >= 0.28
    await client.aclose()


async def test_timeouts_are_retried(fake_openai: FakeOpenAIServer) -> None:  # noqa: F811
    fake_openai.script(Reply.delayed(2.0), Reply.text("Correct"))
    client = LlmClient(_settings(fake_openai, timeout=0.3))
    assert await client.complete("", "x") == ["Correct"]
    assert client.counters.timeouts == 1 and client.counters.retries == 1
    await client.aclose()


async def test_exhausted_retries_become_judge_error(fake_openai: FakeOpenAIServer) -> None:  # noqa: F811
    fake_openai.script(*[Reply.status_code(500)] * 3)
    client = LlmClient(_settings(fake_openai, max_retries=2))
    with pytest.raises(LlmError):
        await client.complete("", "x")
    fake_openai.script(*[Reply.status_code(500)] * 3)
    judge = _judge(client)
    d = await judge.judge(*VAGUE)
    assert d.verdict is Verdict.UNDECIDED and d.code == JUDGE_ERROR
    assert client.counters.errors == 2
    assert judge.counters.judge_errors == 1
    await client.aclose()


@pytest.mark.parametrize("reply", [Reply.text("I cannot say."), Reply.malformed(), Reply.text("")])
async def test_garbage_output_is_judge_error(fake_openai: FakeOpenAIServer, reply: Reply) -> None:  # noqa: F811
    fake_openai.script(reply)
    client = LlmClient(_settings(fake_openai))
    judge = _judge(client)
    d = await judge.judge(*VAGUE)
    assert d.verdict is Verdict.UNDECIDED and d.code == JUDGE_ERROR, d
    assert d.prompt_version == PROMPT_VERSION
    assert judge.snapshot()["judge_errors"] == 1
    await client.aclose()


async def test_cache_hit_sends_no_request(
    fake_openai: FakeOpenAIServer,  # noqa: F811
    sqlite_cache: SqlVerdictCache,
    tmp_path: Path,
) -> None:
    fake_openai.script(Reply.text("Correct"))
    client = LlmClient(_settings(fake_openai))
    first = await _judge(client, sqlite_cache).judge(*VAGUE)
    assert first.verdict is Verdict.CORRECT
    assert first.scores.llm_call is not None and not first.scores.llm_call.cached
    # a new judge process: empty in-memory layer, same database
    engine = make_engine(f"sqlite:///{tmp_path / 'cache.db'}")
    fresh = _judge(client, SqlVerdictCache(engine))
    second = await fresh.judge(*VAGUE)
    assert second.verdict is Verdict.CORRECT
    assert second.scores.llm_call is not None and second.scores.llm_call.cached
    assert len(fake_openai.requests) == 1
    assert fresh.llm is not None and fresh.llm.counters.cache_hits == 1
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(LlmCacheRow)).scalar_one() == 1
    # another model or prompt version is another key: asked again
    fake_openai.script(Reply.text("Incorrect"))
    other = LlmClient(_settings(fake_openai, model="other-model"))
    third = await _judge(other, SqlVerdictCache(engine)).judge(*VAGUE)
    assert third.verdict is Verdict.INCORRECT and len(fake_openai.requests) == 2
    await client.aclose()
    await other.aclose()


async def test_concurrency_limit(fake_openai: FakeOpenAIServer) -> None:  # noqa: F811
    fake_openai.script(*[Reply.delayed(0.2, "Correct")] * 6)
    client = LlmClient(_settings(fake_openai, max_concurrency=2))
    results = await asyncio.gather(*(client.complete("", f"q{i}") for i in range(6)))
    assert results == [["Correct"]] * 6
    assert fake_openai.max_in_flight == 2
    await client.aclose()


async def test_rate_limit(fake_openai: FakeOpenAIServer) -> None:  # noqa: F811
    client = LlmClient(_settings(fake_openai, requests_per_second=10, burst=1, max_concurrency=8))
    started = time.monotonic()
    await asyncio.gather(*(client.complete("", f"q{i}") for i in range(6)))
    elapsed = time.monotonic() - started
    arrivals = sorted(r.arrived for r in fake_openai.requests)
    assert elapsed >= 0.45  # 5 waits of 0.1 s after the first token
    assert arrivals[-1] - arrivals[0] >= 0.45
    await client.aclose()


async def test_n_samples_and_a_server_that_ignores_n(fake_openai: FakeOpenAIServer) -> None:  # noqa: F811
    client = LlmClient(_settings(fake_openai))
    fake_openai.script(Reply(choices=["a", "b", "c"]))
    assert await client.complete("sys", "x", n=3, temperature=1.0) == ["a", "b", "c"]
    body = fake_openai.requests[0].body
    assert body["n"] == 3 and body["temperature"] == 1.0
    assert body["messages"][0] == {"role": "system", "content": "sys"}
    fake_openai.script(Reply(choices=["a"]), Reply(choices=["b", "c"]))
    assert await client.complete("", "x", n=3) == ["a", "b", "c"]
    await client.aclose()


def test_one_client_across_event_loops(fake_openai: FakeOpenAIServer) -> None:  # noqa: F811
    """A CLI may call asyncio.run more than once with the same client."""
    client = LlmClient(_settings(fake_openai))
    assert asyncio.run(client.complete("", "a")) == ["Correct"]
    assert asyncio.run(client.complete("", "b")) == ["Correct"]
    asyncio.run(client.aclose())


async def test_identical_questions_in_flight_share_one_call(
    fake_openai: FakeOpenAIServer,  # noqa: F811
) -> None:
    fake_openai.script(Reply.delayed(0.2, "Correct"))
    client = LlmClient(_settings(fake_openai))
    judge = _judge(client)
    decisions = await asyncio.gather(*(judge.judge(*VAGUE) for _ in range(5)))
    assert {d.verdict for d in decisions} == {Verdict.CORRECT}
    assert len(fake_openai.requests) == 1
    assert judge.llm is not None and judge.llm.counters.shared == 4
    # a decision each; the scores they share are immutable (no shared mutable state)
    assert len({id(d) for d in decisions}) == 5
    assert all(d.scores == decisions[0].scores for d in decisions)
    with pytest.raises(AttributeError):
        decisions[0].scores.llm_call = None  # type: ignore[misc]
    await client.aclose()
