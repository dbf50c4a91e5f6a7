"""The LLM-only baseline target over the real ``openai`` SDK against a local fake server."""

from __future__ import annotations

import pytest

from groundwatch.adapters.targets import ErrorKind, TargetError, TargetLimits
from groundwatch.adapters.targets.config import build_targets, parse_targets
from groundwatch.contracts import TargetStatus
from groundwatch.stages.runner.lanes import Runner
from tests.fakes import FakeOpenAIServer, Reply
from tests.unit._runner_helpers import probe

pytestmark = pytest.mark.integration


def _targets(server: FakeOpenAIServer) -> dict[str, object]:
    configs = parse_targets(
        [
            {
                "name": "llm-only",
                "type": "openai_chat",
                "model": "fake-model",
                "base_url": server.base_url,
                "limits": {"timeout_s": 5, "retries": 1, "backoff_initial_s": 0.01},
            }
        ]
    )
    targets, _ = build_targets(configs, env={})
    return dict(targets)


async def test_baseline_asks_the_model_without_context(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script(Reply.text("  Paris  "))
    target = _targets(fake_openai)["llm-only"]
    reply = await target.ask("What is the capital of France?")  # type: ignore[attr-defined]
    assert (reply.answer, reply.retrieved_ids, reply.contexts) == ("Paris", [], [])
    body = fake_openai.requests[0].body
    assert body["model"] == "fake-model" and body["temperature"] == 0.0
    assert body["messages"][-1] == {"role": "user", "content": "What is the capital of France?"}
    assert "I don't know." in body["messages"][0]["content"]


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        (Reply.status_code(503), ErrorKind.HTTP_5XX),
        (Reply.status_code(429, retry_after=0), ErrorKind.RATE_LIMITED),
        (Reply.status_code(401), ErrorKind.HTTP_4XX),
        (Reply.malformed(), ErrorKind.BAD_PAYLOAD),
    ],
)
async def test_llm_failures_become_kinds(
    fake_openai: FakeOpenAIServer, reply: Reply, kind: ErrorKind
) -> None:
    fake_openai.script(reply)
    with pytest.raises(TargetError) as err:
        await _targets(fake_openai)["llm-only"].ask("q")  # type: ignore[attr-defined]
    assert err.value.kind is kind
    assert len(fake_openai.requests) == 1  # the client does not retry: the runner does


async def test_runner_retries_the_baseline_once(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script(Reply.status_code(503), Reply.text("Paris"))
    targets = _targets(fake_openai)
    limits = {"llm-only": TargetLimits(retries=1, backoff_initial_s=0.01)}
    async with Runner(targets, limits) as runner:  # type: ignore[arg-type]
        response = await runner.run(probe("llm-only", "capital of France?", answer="Paris"))
    assert response.status is TargetStatus.OK and response.answer == "Paris"
    assert len(fake_openai.requests) == 2
