"""Must show (issue 6): a target that fails 30 % of calls and times out on 10 %.

No error is recorded as a wrong answer, the circuit opens and closes again, and every probe ends
with a response: an answer (ok) or an error with its kind.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter

import pytest

from groundwatch.adapters.targets import (
    BreakerState,
    ErrorKind,
    HttpJsonTarget,
    TargetError,
    TargetLimits,
    TargetReply,
)
from groundwatch.contracts import RagResponse, TargetStatus
from groundwatch.core.model import Verdict
from groundwatch.stages.runner.lanes import Runner
from tests.unit._runner_helpers import probe

pytestmark = pytest.mark.unit


class FlakyRag:
    """Answers correctly, except: 30 % of calls fail (HTTP 5xx), 10 % hang past the timeout."""

    def __init__(self, seed: int, fail: float = 0.30, hang: float = 0.10) -> None:
        self.rng = random.Random(seed)
        self.fail, self.hang = fail, hang
        self.calls = Counter[str]()

    async def ask(self, query: str) -> TargetReply:
        draw = self.rng.random()
        await asyncio.sleep(0.001)
        if draw < self.fail:
            self.calls["fail"] += 1
            raise TargetError(ErrorKind.HTTP_5XX, "HTTP 503")
        if draw < self.fail + self.hang:
            self.calls["hang"] += 1
            await asyncio.sleep(30)
        self.calls["ok"] += 1
        return TargetReply(f"The answer is {query.upper()}.", [f"doc-{query}"], [f"ctx {query}"])


def verdict(response: RagResponse) -> Verdict:
    """The judge's first rule, as it must hold downstream: an error is never judged."""
    if response.status is TargetStatus.ERROR:
        return Verdict.ERROR
    expected = response.expected.values[0]
    return Verdict.CORRECT if expected in (response.answer or "") else Verdict.INCORRECT


@pytest.mark.looptime  # timeouts, backoffs and the breaker's reset on the loop's virtual clock
async def test_flaky_target_errors_are_errors_and_the_circuit_opens_and_closes() -> None:
    flaky = FlakyRag(seed=6)
    limits = TargetLimits(
        concurrency=4,
        rate_per_s=400,  # probes arrive over time, as in continuous probing
        timeout_s=0.05,
        retries=1,
        backoff_initial_s=0.001,
        backoff_max_s=0.01,
        breaker_failures=4,
        breaker_reset_s=0.05,
    )
    probes = [probe("flaky", f"q{i}", answer=f"Q{i}") for i in range(240)]
    clock = asyncio.get_running_loop().time
    async with Runner({"flaky": flaky}, {"flaky": limits}, clock=clock) as runner:
        responses = await asyncio.wait_for(runner.run_many(probes), timeout=30)
        breaker = runner.breaker("flaky")

        # every probe ends with exactly one response, in order
        assert [r.probe_id for r in responses] == [p.probe_id for p in probes]
        kinds = Counter(r.error_kind for r in responses if r.status is TargetStatus.ERROR)
        verdicts = Counter(verdict(r) for r in responses)
        # no error is recorded as a wrong answer: the target never answers wrongly, so any
        # INCORRECT would be a failure mislabelled as an answer
        assert verdicts[Verdict.INCORRECT] == 0
        assert verdicts[Verdict.CORRECT] > 0 and verdicts[Verdict.ERROR] > 0
        for r in responses:
            if r.status is TargetStatus.ERROR:
                assert r.answer is None and r.retrieved_ids == [] and r.contexts == []
                assert r.error_kind in {"http_5xx", "timeout", "circuit_open"}
            else:
                assert r.error_kind is None and r.retrieved_ids == [f"doc-{r.query}"]
        # both failure modes reached the target and were reported by kind
        calls = flaky.calls.total()
        assert 0.2 < flaky.calls["fail"] / calls < 0.4 and 0.05 < flaky.calls["hang"] / calls < 0.15
        assert kinds["http_5xx"] > 0 and kinds["timeout"] > 0 and kinds["circuit_open"] > 0
        # the breaker opened, let a trial through, and closed again
        states = [s for _, s in breaker.transitions]
        assert BreakerState.OPEN in states
        first_open = states.index(BreakerState.OPEN)
        assert BreakerState.HALF_OPEN in states[first_open:]
        assert BreakerState.CLOSED in states[first_open:]

        # once the target recovers, the circuit closes and every probe is answered
        flaky.fail = flaky.hang = 0.0
        await asyncio.sleep(limits.breaker_reset_s * 1.5)  # past the reset: a trial may go
        healed = await runner.run_many([probe("flaky", f"h{i}", answer=f"H{i}") for i in range(20)])
        assert all(verdict(r) is Verdict.CORRECT for r in healed)
        assert breaker.state is BreakerState.CLOSED


async def test_reference_rag_with_error_switch_through_the_production_path() -> None:
    """The demo's path: Runner → HttpJsonTarget → httpx.ASGITransport → reference RAG app."""
    import httpx

    from groundwatch.reference_rag.app import create_app
    from groundwatch.reference_rag.settings import ReferenceRagSettings
    from tests.unit._rag_corpus import CORPUS

    settings = ReferenceRagSettings(rag_retriever="bm25", rag_error_rate=0.3, rag_seed=3)
    app = create_app(settings, dict(CORPUS))
    limits = TargetLimits(retries=0, breaker_failures=1000, concurrency=4)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as client:
        target = HttpJsonTarget(client, "http://rag/query")
        async with Runner({"rag": target}, {"rag": limits}) as runner:
            probes = [
                probe("rag", "Which city is Acme Robotics headquartered in?", answer="Oslo")
                for _ in range(60)
            ]
            responses = await runner.run_many(probes)
    errors = [r for r in responses if r.status is TargetStatus.ERROR]
    assert 5 <= len(errors) <= 35
    assert {r.error_kind for r in errors} == {"http_5xx"}
    assert all(verdict(r) is Verdict.CORRECT for r in responses if r.status is TargetStatus.OK)
    assert all(r.retrieved_ids[0] == "client-acme" for r in responses if r.answer)


class OneBadFact:
    """Answers every query but those of one semantic group, which always get an HTTP 500."""

    async def ask(self, query: str) -> TargetReply:
        if query.startswith("bad"):
            raise TargetError(ErrorKind.HTTP_5XX, "HTTP 500 from the target")
        return TargetReply(answer=query.upper(), retrieved_ids=[f"doc-{query}"])


async def test_one_fact_failing_in_every_form_does_not_open_the_circuit() -> None:
    """Six forms of one group failing in a row are that fact's failure, not the target's: the
    probes after them are asked, not refused as circuit_open (a user's run lost 312 of 444)."""
    limits = TargetLimits(concurrency=1, retries=0, breaker_failures=5, breaker_reset_s=60)
    bad = [probe("t", f"bad {i}") for i in range(6)]
    bad = [p.model_copy(update={"group_id": "g-bad"}) for p in bad]  # one group, six forms
    good = [probe("t", f"q{i}", answer=f"Q{i}") for i in range(30)]
    async with Runner({"t": OneBadFact()}, {"t": limits}) as runner:
        responses = await runner.run_many([*bad, *good])
        assert runner.breaker("t").state is BreakerState.CLOSED
    kinds = Counter(r.error_kind for r in responses)
    assert kinds == Counter({None: 30, "http_5xx": 6})


async def test_failures_across_groups_still_open_the_circuit() -> None:
    limits = TargetLimits(concurrency=1, retries=0, breaker_failures=5, breaker_reset_s=60)
    probes = [probe("t", f"bad {i}") for i in range(12)]  # twelve groups, all failing
    async with Runner({"t": OneBadFact()}, {"t": limits}) as runner:
        responses = await runner.run_many(probes)
    kinds = Counter(r.error_kind for r in responses)
    assert kinds == Counter({"http_5xx": 5, "circuit_open": 7})
