"""Size limits at every edge: request bodies (413), target replies (cut with a flag, or refused),
text fields of the message contracts, and a cut answer is never judged a wrong one."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import httpx
import orjson
import pytest
from fastapi import FastAPI, Request
from pydantic import ValidationError

from groundwatch.adapters.bus.base import Record
from groundwatch.adapters.targets import TargetLimits
from groundwatch.adapters.targets.base import MAX_RETRIEVED_IDS
from groundwatch.adapters.targets.http_json import HttpJsonTarget
from groundwatch.contracts import (
    MAX_CONTEXTS,
    MAX_TEXT,
    DeadLetter,
    Judgement,
    Probe,
    RagResponse,
    TargetStatus,
)
from groundwatch.core.model import Expected, Verdict
from groundwatch.reference_rag.app import create_app as create_rag
from groundwatch.reference_rag.settings import ReferenceRagSettings
from groundwatch.runtime.consume import MAX_DEAD_LETTER_RAW, dead_letter
from groundwatch.runtime.service import MAX_BODY_BYTES, ServiceParts, build_app
from groundwatch.stages.judge.stage import JudgeStage
from groundwatch.stages.judge.tiered import TieredJudge
from groundwatch.stages.runner.lanes import Runner
from tests.unit._rag_corpus import CORPUS

pytestmark = pytest.mark.unit


def probe(query: str = "Where is Acme Robotics headquartered?", gold: str = "Oslo") -> Probe:
    return Probe(
        probe_id=uuid.uuid4(),
        run_id="r",
        dataset_id="d",
        group_id="g",
        form_id="f",
        cohort="short",
        target="t",
        query=query,
        expected=Expected(values=[gold]),
    )


# --------------------------------------------------------------------------- request bodies
def shell_app(seen: list[int]) -> FastAPI:
    """The service shell every service is built on, with one body-reading route."""

    async def bootstrap() -> ServiceParts:  # pragma: no cover - no lifespan in these tests
        raise AssertionError

    def routes(app: FastAPI) -> None:
        @app.post("/echo")
        async def echo(request: Request) -> dict[str, int]:
            body = await request.body()
            seen.append(len(body))
            return {"bytes": len(body)}

    return build_app("test", bootstrap, routes=routes)


def client(app: FastAPI) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://svc")


async def chunks(total: int, size: int = 64 * 1024) -> AsyncIterator[bytes]:
    sent = 0
    while sent < total:
        n = min(size, total - sent)
        sent += n
        yield b"x" * n


async def test_service_shell_refuses_bodies_over_one_mib() -> None:
    seen: list[int] = []
    async with client(shell_app(seen)) as c:
        ok = await c.post("/echo", content=b"x" * MAX_BODY_BYTES)
        declared = await c.post("/echo", content=b"x" * (MAX_BODY_BYTES + 1))
        streamed = await c.post("/echo", content=chunks(4 * MAX_BODY_BYTES))  # no Content-Length
        small_stream = await c.post("/echo", content=chunks(1000))
    assert ok.status_code == 200 and ok.json() == {"bytes": MAX_BODY_BYTES}
    assert declared.status_code == 413 and "larger than" in declared.json()["detail"]
    assert streamed.status_code == 413
    assert small_stream.status_code == 200
    assert seen == [MAX_BODY_BYTES, 1000], "a handler saw an oversize body"


async def test_every_service_app_caps_bodies() -> None:
    from services.analytics.app import create_app as analytics
    from services.analytics.settings import AnalyticsSettings
    from services.generator.app import create_app as generator
    from services.generator.settings import GeneratorSettings
    from services.judge.app import create_app as judge
    from services.judge.settings import JudgeServiceSettings
    from services.rag_runner.app import create_app as runner
    from services.rag_runner.settings import RunnerSettings

    apps = {
        "generator": generator(GeneratorSettings(api_token="limits-test-token")),
        "rag-runner": runner(RunnerSettings()),
        "judge": judge(JudgeServiceSettings()),
        "analytics": analytics(AnalyticsSettings()),
        "reference-rag": create_rag(ReferenceRagSettings(), dict(CORPUS)),
    }
    path = {"generator": "/runs", "reference-rag": "/query"}
    for name, app in apps.items():
        async with client(app) as c:
            r = await c.post(
                path.get(name, "/anything"),
                content=b"{" + b" " * (2 * MAX_BODY_BYTES) + b"}",
                headers={"Authorization": "Bearer limits-test-token"},
            )
        assert r.status_code == 413, (name, r.status_code, r.text[:200])


async def test_reference_rag_answers_normal_queries_and_refuses_huge_ones() -> None:
    async with client(create_rag(ReferenceRagSettings(), dict(CORPUS))) as c:
        ok = await c.post("/query", json={"query": "Where is Acme Robotics headquartered?"})
        big = await c.post("/query", json={"query": "q", "padding": "x" * (MAX_BODY_BYTES + 1)})
        long_query = await c.post("/query", json={"query": "x" * (MAX_TEXT + 1)})
    assert ok.status_code == 200 and "Oslo" in ok.json()["answer"]
    assert big.status_code == 413
    assert long_query.status_code == 422  # the query field itself is capped at MAX_TEXT


# --------------------------------------------------------------------------- target replies
def http_target(body: bytes, max_response_bytes: int = 16 * 1024 * 1024) -> HttpJsonTarget:
    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=body))
    return HttpJsonTarget(
        httpx.AsyncClient(transport=transport),
        "http://target/query",
        max_response_bytes=max_response_bytes,
    )


async def ask(target: HttpJsonTarget, p: Probe) -> RagResponse:
    async with Runner({"t": target}, {"t": TargetLimits(retries=0)}) as runner:
        return await runner.run(p)


async def test_oversize_reply_is_cut_to_the_contract_with_flags() -> None:
    reply = {
        "answer": "Oslo. " + "y" * (MAX_TEXT + 500),
        "retrieved_ids": [f"doc-{i}" for i in range(MAX_RETRIEVED_IDS + 10)],
        "contexts": ["c" * (MAX_TEXT + 5)] * (MAX_CONTEXTS + 7),
    }
    response = await ask(http_target(orjson.dumps(reply)), probe())
    assert response.status is TargetStatus.OK
    assert response.answer_truncated is True
    assert response.answer is not None and len(response.answer) == MAX_TEXT
    assert response.answer.startswith("Oslo. ")
    assert len(response.contexts) == MAX_CONTEXTS
    assert all(len(c) == MAX_TEXT for c in response.contexts)
    assert len(response.retrieved_ids) == MAX_RETRIEVED_IDS
    RagResponse.model_validate_json(response.to_bytes())  # and it still travels


async def test_small_reply_is_not_flagged() -> None:
    body = orjson.dumps({"answer": "Oslo", "retrieved_ids": ["a"], "contexts": ["ctx"]})
    response = await ask(http_target(body), probe())
    assert response.answer == "Oslo" and response.answer_truncated is False


async def test_reply_over_the_byte_cap_is_an_error_not_an_answer() -> None:
    body = orjson.dumps({"answer": "z" * 5000})
    response = await ask(http_target(body, max_response_bytes=4096), probe())
    assert response.status is TargetStatus.ERROR and response.error_kind == "bad_payload"
    assert response.answer is None
    (judgement,) = await JudgeStage(TieredJudge().judge).handle([response])
    assert judgement.verdict is Verdict.ERROR


async def test_cut_answer_without_the_gold_is_undecided_not_incorrect() -> None:
    worker = JudgeStage(TieredJudge().judge)
    # the column's other values ship with the probe: naming one of them is conclusive evidence
    p = probe().model_copy(
        update={"expected": Expected(values=["Oslo"], candidates=[["Bergen", "Tromsø"]])}
    )
    wrong = "It is Bergen. " + "Let me explain. " * 1240
    cut = RagResponse.for_probe(p, status=TargetStatus.OK, answer=wrong, answer_truncated=True)
    whole = RagResponse.for_probe(p, status=TargetStatus.OK, answer=wrong)
    cut_with_gold = RagResponse.for_probe(
        p, status=TargetStatus.OK, answer="It is Oslo. " + "x" * 100, answer_truncated=True
    )
    j_cut, j_whole, j_gold = await worker.handle([cut, whole, cut_with_gold])
    assert j_whole.verdict is Verdict.INCORRECT  # the same text, complete, is a miss
    assert j_cut.verdict is Verdict.UNDECIDED and j_cut.reason.startswith("answer_truncated")
    assert j_gold.verdict is Verdict.CORRECT


# --------------------------------------------------------------------------- contract text caps
@pytest.mark.parametrize(
    "build",
    [
        lambda: probe(query="q" * (MAX_TEXT + 1)),
        lambda: RagResponse.for_probe(probe(), status=TargetStatus.OK, answer="a" * (MAX_TEXT + 1)),
        lambda: RagResponse.for_probe(
            probe(), status=TargetStatus.OK, answer="a", contexts=["c" * (MAX_TEXT + 1)]
        ),
        lambda: RagResponse.for_probe(
            probe(), status=TargetStatus.OK, answer="a", contexts=["c"] * (MAX_CONTEXTS + 1)
        ),
        lambda: Judgement(
            **probe().carried(), verdict=Verdict.CORRECT, tier="t", answer="a" * (MAX_TEXT + 1)
        ),
    ],
    ids=["probe.query", "response.answer", "response.context", "response.contexts", "judgement"],
)
def test_text_fields_are_capped(build: object) -> None:
    with pytest.raises(ValidationError, match="at most"):
        build()  # type: ignore[operator]


def test_text_at_the_cap_is_accepted() -> None:
    assert len(probe(query="q" * MAX_TEXT).query) == MAX_TEXT


def test_dead_letter_keeps_a_bounded_raw_payload_and_error() -> None:
    huge = b"\x00" * (MAX_DEAD_LETTER_RAW + 10)
    rec = Record("gw.probes", 0, 7, b"k", huge)
    letter = dead_letter(rec, "E" * 10_000, "rag-runner")
    assert letter.raw == huge[:MAX_DEAD_LETTER_RAW]
    assert len(letter.error) <= 2000 and f"{len(huge)} bytes" in letter.error
    assert len(letter.to_bytes()) < 1_000_000  # fits the broker's default message size
    small = dead_letter(Record("gw.probes", 0, 8, None, b"{bad"), "boom", "rag-runner")
    assert small.raw == b"{bad" and small.error == "boom"
    assert DeadLetter.model_validate_json(letter.to_bytes()).raw == letter.raw
