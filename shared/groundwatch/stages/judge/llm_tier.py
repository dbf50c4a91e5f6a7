"""The LLM judge tier: GRAMMAR's reference-based prompt ("Ours", Appendix A, Table 5).

Asked only about what the deterministic tiers left undecided. Temperature 0, a verdict cache, and
the prompt version on every decision make a run reproducible. A verdict that cannot be read, or a
call that fails after its retries, is never guessed and never dropped: it becomes ``undecided``
with reason ``judge_error`` and is counted.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import asdict, dataclass

from groundwatch.adapters.llm.cache import CachedVerdict, VerdictCache, cache_key
from groundwatch.core.judging import JUDGE_ERROR, Decision
from groundwatch.core.judging.normalize import fold
from groundwatch.core.llm import NamedChatModel
from groundwatch.core.model import Verdict
from groundwatch.core.scores import NO_SCORES, LlmCallScores, Scores
from groundwatch.errors import BudgetExhausted, GroundwatchError

#: Bump whenever a character of the prompt changes: it is part of every cache key and judgement.
PROMPT_VERSION = "grammar-ours-v1"

#: GRAMMAR Appendix A, Table 5, "Ours" — verbatim (with the paper's typographic quotes).
GRAMMAR_PROMPT = (
    "Evaluate the accuracy of the given response in relation to the true answer for the specified "
    "query. After evaluating, provide a judgement as either \u201cCorrect\u201d or "
    "\u201cIncorrect\u201d based on whether the ##Given Response## accurately matches the "
    "##True Answer##.\n"
    "##Query##: {query}\n"
    "##True Answer##: {true_answer}\n"
    "##Given Response##: {given_response}\n"
    "##Judgement##:"
)

#: Room for "Correct", "Incorrect." or a short sentence around it; the prompt asks for one word.
MAX_VERDICT_TOKENS = 20


def render_prompt(query: str, true_answer: str, given_response: str) -> str:
    # str.replace, not str.format: a brace in a response must not break (or inject into) the prompt
    return (
        GRAMMAR_PROMPT.replace("{query}", query)
        .replace("{true_answer}", true_answer)
        .replace("{given_response}", given_response)
    )


_NEGATED = r"(?:not|isn't|is not|wasn't|was not|n't)\s+(?:entirely\s+|fully\s+|quite\s+)?correct"
_WORD = re.compile(rf"\b(?:{_NEGATED}|incorrect|correct)\b")
_LEAD = re.compile(
    rf"^[\W_]*(?:(?:final\s+)?(?:judge?ment|verdict|answer|evaluation)\s*(?:is)?\s*[:\-]?[\W_]*)?"
    rf"({_NEGATED}|incorrect|correct)\b"
)
_ECHO = re.compile(r"\b(?:in)?correct\s*(?:or|/)\s*(?:in)?correct\b")
_HEDGED = re.compile(r"\b(?:partially|partly|mostly|somewhat|largely)\s+correct\b")


def parse_verdict(text: str) -> Verdict | None:
    """ "Correct"/"Incorrect" from a model's reply, or None when the reply does not say which.

    The first word decides ("Incorrect. The correct answer is …" is incorrect); otherwise the
    reply must use only one of the two (negations such as "not correct" count as incorrect).
    A hedge ("partially correct") or a reply naming both is unreadable, not guessed.
    """
    t = fold(text).replace("**", "").replace("##", " ").strip()
    if not t:
        return None
    if _HEDGED.search(t) or _ECHO.search(t):
        return None
    m = _LEAD.match(t)
    if m:
        return Verdict.CORRECT if m.group(1) == "correct" else Verdict.INCORRECT
    said = {Verdict.CORRECT if w == "correct" else Verdict.INCORRECT for w in _WORD.findall(t)}
    return said.pop() if len(said) == 1 else None


@dataclass
class LlmJudgeCounters:
    asked: int = 0  # decisions requested of this tier
    llm_calls: int = 0  # verdicts paid for (cache misses that reached the model)
    cache_hits: int = 0
    shared: int = 0  # answered by an identical question already in flight
    judge_errors: int = 0  # unreadable verdicts + failed calls
    unparseable: int = 0
    failed_calls: int = 0
    budget_refused: int = 0  # not asked: the run's LLM budget was spent

    def snapshot(self) -> dict[str, int]:
        return asdict(self)


class LlmJudge:
    """One LLM verdict per (query, gold, response), cached, with its prompt version."""

    def __init__(
        self,
        client: NamedChatModel,
        cache: VerdictCache | None = None,
        *,
        prompt_version: str = PROMPT_VERSION,
        max_tokens: int = MAX_VERDICT_TOKENS,
    ) -> None:
        self.client = client
        self.cache = cache
        self.prompt_version = prompt_version
        self.max_tokens = max_tokens
        self.counters = LlmJudgeCounters()
        self._inflight: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Task[Decision]]] = {}

    def key(self, query: str, gold: str, response: str) -> str:
        return cache_key(query, gold, response, self.client.model, self.prompt_version)

    async def judge(self, query: str, gold: str, response: str) -> Decision:
        """The LLM's verdict; identical questions in flight at once share one call."""
        self.counters.asked += 1
        key = self.key(query, gold, response)
        loop = asyncio.get_running_loop()
        pending = self._inflight.get(key)
        if pending is not None and pending[0] is loop:
            self.counters.shared += 1
            task = pending[1]
        else:
            task = loop.create_task(self._judge(key, query, gold, response))
            self._inflight[key] = (loop, task)
            task.add_done_callback(lambda t: self._forget(key, t))
        d = await asyncio.shield(task)
        # every caller gets its own decision (the scores are immutable, so they are shared)
        return Decision(d.verdict, d.tier, d.reason, d.scores, d.prompt_version)

    def _forget(self, key: str, task: asyncio.Task[Decision]) -> None:
        if self._inflight.get(key, (None, None))[1] is task:
            del self._inflight[key]

    async def _judge(self, key: str, query: str, gold: str, response: str) -> Decision:
        if self.cache is not None:
            hit = await self.cache.get(key)
            if hit is not None:
                self.counters.cache_hits += 1
                return self._decision(hit.verdict, hit.raw, cached=True, latency=hit.latency_s)
        started = time.perf_counter()
        try:
            replies = await self.client.complete(
                "",
                render_prompt(query, gold, response),
                temperature=0.0,
                max_tokens=self.max_tokens,
            )
        except GroundwatchError as exc:
            if isinstance(exc, BudgetExhausted):  # not a failure: the run's own limit
                self.counters.budget_refused += 1
                return Decision(
                    Verdict.UNDECIDED, "llm", f"llm_budget: {exc}", NO_SCORES, self.prompt_version
                )
            self.counters.failed_calls += 1
            return self._error(f"call failed: {exc}")
        latency = time.perf_counter() - started
        self.counters.llm_calls += 1
        raw = replies[0] if replies else ""
        verdict = parse_verdict(raw)
        if verdict is None:
            self.counters.unparseable += 1
            return self._error(f"unparseable verdict {raw[:200]!r}")
        if self.cache is not None:
            await self.cache.put(
                CachedVerdict(key, self.client.model, self.prompt_version, verdict, raw,
                              latency_s=latency)
            )  # fmt: skip
        return self._decision(verdict, raw, cached=False, latency=latency)

    def _decision(self, verdict: Verdict, raw: str, *, cached: bool, latency: float) -> Decision:
        return Decision(
            verdict,
            "llm",
            f"llm_verdict: {raw.strip()[:200]!r}",
            Scores(llm_call=LlmCallScores(cached, latency)),
            prompt_version=self.prompt_version,
        )

    def _error(self, detail: str) -> Decision:
        self.counters.judge_errors += 1
        return Decision(
            Verdict.UNDECIDED, "llm", f"{JUDGE_ERROR}: {detail}", NO_SCORES, self.prompt_version
        )
