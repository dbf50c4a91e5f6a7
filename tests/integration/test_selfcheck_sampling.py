"""Issue 31: SelfCheck samples as the paper does (GRAMMAR §3: four answers at temperature 1.0).

The extra answers were asked of the target the ordinary way — temperature 0 for an openai_chat
target, nothing at all for http_json — so a deterministic target repeated itself, every sample
agreed and SelfCheck called every answer right (agreement 1.000, wrong-answer recall 0.000). The
target here is a chat model over real HTTP that knows some facts and guesses the others: at
temperature 0 its guess is always the same, at 1.0 it varies, as a model's does when it does
not know. Sampled at 1.0, SelfCheck catches the guesses; a target that cannot be sampled is
reported as not sampled, never scored.
"""

from __future__ import annotations

import random
from typing import Any

import httpx
import pytest

from groundwatch.adapters.llm.client import LlmClient, LlmSettings
from groundwatch.adapters.targets import CallableTarget, HttpJsonTarget, OpenAIChatTarget
from groundwatch.adapters.targets.base import sampler_of
from groundwatch.adapters.targets.config import build_target, parse_targets
from groundwatch.adapters.targets.limits import TargetLimits
from groundwatch.core.judging import Decision
from groundwatch.core.model import Verdict
from groundwatch.core.score_tallies import ScoreTallies
from groundwatch.core.scores import SELFCHECK, EvaluatorCall, ReferenceFreeScores, Scores
from groundwatch.errors import ConfigError
from groundwatch.stages.judge.reference_free import ReferenceFreeJudge, ReferenceFreeSettings
from groundwatch.stages.runner.lanes import Runner, SelfCheckSampling
from tests.fakes import FakeOpenAIServer, fake_openai, fake_openai_server  # noqa: F401
from tests.unit._runner_helpers import probe

pytestmark = pytest.mark.integration

KNOWN = {"Capital of Norway?": "Oslo", "Capital of Peru?": "Lima", "Capital of Latvia?": "Riga"}
UNKNOWN = ["Capital of Atlantis?", "Capital of Lemuria?", "Capital of Mu?"]
GUESSES = ["Paris", "Rome", "Vienna", "Cairo", "Quito", "Hanoi", "Accra", "Bern"]


def model(body: dict[str, Any]) -> str:
    """The target model and the SelfCheck-QA evaluator in one stand-in."""
    prompt = str(body["messages"][-1]["content"])
    if prompt.startswith("Query:"):  # SelfCheck-QA: equivalent meaning?
        a = prompt.split("Answer A:", 1)[1].split("Answer B:", 1)[0].strip()
        b = prompt.split("Answer B:", 1)[1].split("Do both", 1)[0].strip()
        return "Yes" if a == b else "No"
    if prompt in KNOWN:
        return KNOWN[prompt]
    if float(body.get("temperature") or 0.0) == 0.0:
        return GUESSES[len(prompt) % len(GUESSES)]  # greedy: always the same guess
    return random.choice(GUESSES)  # sampled: the guess varies


def _llm(server: FakeOpenAIServer) -> LlmClient:
    return LlmClient(
        LlmSettings(base_url=server.base_url, api_key="k", model="m", requests_per_second=0)
    )


async def _selfcheck_codes(
    target: Any, evaluator: LlmClient
) -> tuple[dict[str, EvaluatorCall | None], Runner]:
    """Every question through the runner (SelfCheck sampling on all of them, 4 samples) and
    the judge's SelfCheck evaluator: SelfCheck's call per question."""
    runner = Runner(
        {"t": target},
        {"t": TargetLimits(concurrency=4, timeout_s=10)},
        selfcheck=SelfCheckSampling(1.0, 4),
    )
    judge = ReferenceFreeJudge(
        ReferenceFreeSettings(reference_free="selfcheck", reference_free_share=1.0), evaluator
    )
    codes: dict[str, EvaluatorCall | None] = {}
    try:
        for question in [*KNOWN, *UNKNOWN]:
            response = await runner.run(probe("t", question, KNOWN.get(question, "none")))
            scores = await judge(response, Decision(Verdict.UNDECIDED, "test", "test"))
            assert scores.reference_free is not None
            codes[question] = scores.reference_free.selfcheck
    finally:
        await runner.aclose()
    return codes, runner


async def test_selfcheck_samples_at_temperature_one_and_catches_guesses(
    fake_openai: FakeOpenAIServer,  # noqa: F811
) -> None:
    fake_openai.responder = model
    random.seed(31)
    client = _llm(fake_openai)
    target = OpenAIChatTarget(client)  # answers at 0.0, samples at 1.0 by default
    codes, _ = await _selfcheck_codes(target, client)
    assert all(codes[q] is EvaluatorCall.RIGHT for q in KNOWN)  # every sample agrees
    assert all(codes[q] is EvaluatorCall.WRONG for q in UNKNOWN)  # it guesses: one disagrees
    temperatures = [r.body.get("temperature") for r in fake_openai.requests]
    assert temperatures.count(1.0) == 4 * len(codes)  # four samples per question, at 1.0
    # the old way — samples asked as the answer is, at 0.0 — agrees with every guess
    greedy = OpenAIChatTarget(client, sample_temperature=0.0)
    assert sampler_of(greedy) is None
    await client.aclose()


async def test_a_target_that_cannot_sample_is_reported_not_scored(
    fake_openai: FakeOpenAIServer,  # noqa: F811
) -> None:
    fake_openai.responder = model
    client = _llm(fake_openai)
    deterministic = CallableTarget(lambda q: KNOWN.get(q, "Paris"))  # no temperature: no samples
    assert sampler_of(deterministic) is None
    codes, runner = await _selfcheck_codes(deterministic, client)
    assert set(codes.values()) == {EvaluatorCall.NOT_SAMPLED}
    assert not any(str(p).startswith("Query:") for p in fake_openai.prompts)  # nothing asked
    assert runner._lanes["t"].unsampleable == len(codes)
    # the report counts them apart from calls and abstentions
    quality = ScoreTallies()
    for q in codes:
        quality.add(_Scored(Verdict.CORRECT if q in KNOWN else Verdict.INCORRECT, codes[q]))
    counts = quality.evaluators[("t", SELFCHECK)]
    assert counts.unsampled == len(codes) and counts.abstained == 0 and counts.true_positive == 0

    # a callable that takes a temperature is sampled with temperature=1.0
    seen: list[float] = []

    def answer(question: str, temperature: float = 0.0) -> str:
        seen.append(temperature)
        return KNOWN.get(question) or (random.choice(GUESSES) if temperature else "Paris")

    codes, _ = await _selfcheck_codes(CallableTarget(answer), client)
    assert seen.count(1.0) == 4 * len(codes)
    assert all(codes[q] is EvaluatorCall.WRONG for q in UNKNOWN)
    await client.aclose()


class _Scored:
    target, cohort, scenario = "t", "short", "factual"

    def __init__(self, verdict: Verdict, call: EvaluatorCall | None) -> None:
        self.verdict = verdict
        self.scores = Scores(reference_free=ReferenceFreeScores(selfcheck=call))


async def test_an_http_target_declares_how_it_is_sampled() -> None:
    """``sampling: {body: …, params: …}`` in the targets file: merged into the JSON body and
    added to the URL of the sample requests only."""
    seen: list[tuple[str, dict[str, Any]]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        import json

        body = json.loads(request.content)
        seen.append((str(request.url), body))
        hot = body.get("temperature", 0) > 0 and request.url.params.get("mode") == "sample"
        answer = random.choice(GUESSES) if hot else "Paris"
        return httpx.Response(200, json={"answer": answer})

    (config,) = parse_targets(
        [
            {
                "name": "rag",
                "type": "http_json",
                "url": "http://rag.test/ask?v=1",
                "body": {"q": "{query}", "temperature": 0},
                "sampling": {"body": {"temperature": 1.0}, "params": {"mode": "sample"}},
            }
        ]
    )
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        target = build_target(config, http_client=http)
        assert isinstance(target, HttpJsonTarget) and target.can_sample
        await target.ask("Capital of Mu?")
        sample = sampler_of(target)
        assert sample is not None
        await sample("Capital of Mu?")
    (ask_url, ask_body), (sample_url, sample_body) = seen
    assert ask_url == "http://rag.test/ask?v=1" and ask_body == {
        "q": "Capital of Mu?",
        "temperature": 0,
    }
    assert sample_url == "http://rag.test/ask?v=1&mode=sample"
    assert sample_body == {"q": "Capital of Mu?", "temperature": 1.0}
    # without `sampling` an http_json target is not sampled
    (plain,) = parse_targets([{"name": "p", "type": "http_json", "url": "http://x/{query}"}])
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        assert sampler_of(build_target(plain, http_client=http)) is None
    with pytest.raises(ConfigError, match=r"sampling: .*give body or params"):
        parse_targets(
            [{"name": "p", "type": "http_json", "url": "http://x/{query}", "sampling": {}}]
        )
