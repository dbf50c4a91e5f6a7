"""Reference-free evaluators for GRAMMAR §3's reliability study: RAGAS-Fact and SelfCheck.

Neither needs a gold answer, which is their appeal and (GRAMMAR Table 1) their weakness: both are
optimistic about wrong answers. They are here to reproduce that study against groundwatch's
reference-based verdicts (:func:`groundwatch.core.stats.evaluator_reliability`), not to replace
them.

* **RAGAS-Fact** (Es et al., 2023): the response is split into atomic statements (following Chern
  et al., 2023), each checked against the retrieved context with RAGAS's NLI prompt (GRAMMAR
  Appendix A: verdict Yes / No / Null); faithfulness = supported statements / all statements.
* **SelfCheck** (Manakul et al., 2023) as GRAMMAR adapts it: k stochastic answers (temperature
  1.0) against the main answer (temperature 0.0), each pair compared with the SelfCheck-QA prompt
  (which also shows the query); the response counts as correct only if every sample agrees.

Unreadable LLM verdicts are never guessed: they leave the result undecided and are counted.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from groundwatch.core.judging.normalize import fold
from groundwatch.core.llm import ChatModel, fill
from groundwatch.core.model import Verdict
from groundwatch.errors import GroundwatchError

PROMPT_VERSION = "reference-free-v1"

#: GRAMMAR Appendix A, Table 5, "Ragas" (the quotes as printed in the paper).
RAGAS_NLI_PROMPT = (
    "Natural language inference. Use only \u2019Yes\u2019 (1), \u2019No\u2019 (0) and "
    "\u2019Null\u2019 (-1) as verdict.\n"
    "context: {context}\n"
    "statement: {statement}\n"
    "verdict:"
)

#: GRAMMAR Appendix A, Table 5, "SelfCheck-QA".
SELFCHECK_QA_PROMPT = (
    "Query: {query}\n"
    "Answer A: {answer}\n"
    "Answer B: {stochastic_answer}\n"
    "Do both answers address the query with equivalent meaning?\n"
    "Use only \u201cYes\u201d or \u201cNo\u201d for your evaluation:"
)

#: Project-written statement extraction (the paper defers to Chern et al. for this step).
CLAIMS_PROMPT = (
    "Break the answer below into standalone statements. Each statement holds one atomic fact and "
    "can be understood without the question or the other statements (replace pronouns by the "
    "names they stand for). Write one statement per line and nothing else. If the answer states "
    "no fact (for example, it says it does not know), write nothing.\n"
    "question: {query}\n"
    "answer: {answer}\n"
    "statements:"
)

#: SelfCheck in GRAMMAR §3: four stochastic samples at temperature 1.0.
SELFCHECK_SAMPLES = 4
SAMPLE_TEMPERATURE = 1.0


_OPEN = r"[\s\"'“”‘’(\[*#:]*"  # quotes, brackets, markdown: anything but a sign or a word
_NLI_LEAD = re.compile(rf"^{_OPEN}(?:verdict{_OPEN})?(-1|yes|no|null|1|0)(?!\w|\.\d)")
_YES_NO_LEAD = re.compile(r"^[\W_]*(?:(?:answer|evaluation)\s*[:\-]?[\W_]*)?(yes|no)\b")


def parse_nli(text: str) -> str | None:
    """ "yes", "no" or "null" from a RAGAS NLI reply (words or the paper's 1 / 0 / -1)."""
    m = _NLI_LEAD.match(fold(text).replace("**", "").strip())
    if not m:
        return None
    return {"1": "yes", "0": "no", "-1": "null"}.get(m.group(1), m.group(1))


def parse_yes_no(text: str) -> bool | None:
    m = _YES_NO_LEAD.match(fold(text).replace("**", "").strip())
    return None if m is None else m.group(1) == "yes"


def parse_claims(text: str, max_claims: int) -> list[str]:
    """One statement per line; list markers ("1.", "-", "*") removed, blanks dropped."""
    out = []
    for line in text.splitlines():
        s = re.sub(r"^\s*(?:[-*\u2022]|\d+[.)])\s*", "", line).strip()
        if s and s.lower() not in {"none", "n/a", "statements:"}:
            out.append(s)
    return out[:max_claims]


@dataclass
class Faithfulness:
    """RAGAS-Fact outcome: ``score`` is None when there is nothing (readable) to score."""

    score: float | None
    claims: list[str]
    verdicts: list[str | None]  # "yes" / "no" / "null", None = unreadable
    llm_calls: int = 0
    judge_errors: int = 0
    reason: str = ""

    @property
    def supported(self) -> int:
        return sum(1 for v in self.verdicts if v == "yes")

    def verdict(self, threshold: float = 0.5) -> Verdict:
        """Correct when at least ``threshold`` of the statements are supported by the context."""
        if self.score is None:
            return Verdict.UNDECIDED
        return Verdict.CORRECT if self.score >= threshold else Verdict.INCORRECT


async def ragas_faithfulness(
    client: ChatModel,
    query: str,
    response: str,
    contexts: Sequence[str],
    *,
    max_claims: int = 20,
    max_context_chars: int = 12_000,
) -> Faithfulness:
    """Statements of ``response`` checked against the joined ``contexts``.

    ``Null`` verdicts count as unsupported (in the total, not the numerator), as in RAGAS. An
    unreadable verdict or a failed call leaves the score undecided rather than skewing it.
    """
    try:
        (raw_claims,) = await client.complete(
            "", fill(CLAIMS_PROMPT, query=query, answer=response), temperature=0.0
        )
    except GroundwatchError as exc:
        return Faithfulness(None, [], [], judge_errors=1, reason=f"judge_error: {exc}")
    claims = parse_claims(raw_claims, max_claims)
    if not claims:
        return Faithfulness(None, [], [], llm_calls=1, reason="no_claims")
    context = "\n\n".join(contexts)[:max_context_chars]

    async def check(statement: str) -> str | None:
        prompt = fill(RAGAS_NLI_PROMPT, context=context, statement=statement)
        try:
            (reply,) = await client.complete("", prompt, temperature=0.0, max_tokens=5)
        except GroundwatchError:
            return None
        return parse_nli(reply)

    verdicts = list(await asyncio.gather(*(check(c) for c in claims)))
    errors = sum(1 for v in verdicts if v is None)
    result = Faithfulness(None, claims, verdicts, llm_calls=1 + len(claims), judge_errors=errors)
    if errors:
        result.reason = f"judge_error: {errors} unreadable NLI verdict(s)"
        return result
    result.score = result.supported / len(claims)
    result.reason = f"{result.supported}/{len(claims)} statements supported"
    return result


#: (query, n, temperature) → n answers of the RAG system under evaluation.
Sampler = Callable[[str, int, float], Awaitable[list[str]]]


@dataclass
class SelfCheck:
    verdict: Verdict
    main_answer: str
    samples: list[str]
    agreements: list[bool | None] = field(default_factory=list)  # None = unreadable
    llm_calls: int = 0
    judge_errors: int = 0

    @property
    def agreement_rate(self) -> float | None:
        read = [a for a in self.agreements if a is not None]
        return sum(read) / len(read) if read else None


async def selfcheck(
    client: ChatModel, query: str, main_answer: str, samples: Sequence[str]
) -> SelfCheck:
    """Correct only if every sample has the main answer's meaning; any disagreement: incorrect."""

    async def agree(sample: str) -> bool | None:
        prompt = fill(
            SELFCHECK_QA_PROMPT, query=query, answer=main_answer, stochastic_answer=sample
        )
        try:
            (reply,) = await client.complete("", prompt, temperature=0.0, max_tokens=5)
        except GroundwatchError:
            return None
        return parse_yes_no(reply)

    agreements = list(await asyncio.gather(*(agree(s) for s in samples)))
    if any(a is False for a in agreements):
        verdict = Verdict.INCORRECT
    elif agreements and all(a is True for a in agreements):
        verdict = Verdict.CORRECT
    else:
        verdict = Verdict.UNDECIDED
    return SelfCheck(
        verdict,
        main_answer,
        list(samples),
        agreements,
        llm_calls=len(samples),
        judge_errors=sum(1 for a in agreements if a is None),
    )


async def selfcheck_rag(
    client: ChatModel, sampler: Sampler, query: str, *, k: int = SELFCHECK_SAMPLES
) -> SelfCheck:
    """SelfCheck end to end: the main answer at temperature 0.0, ``k`` samples at 1.0."""
    main, samples = await asyncio.gather(
        sampler(query, 1, 0.0), sampler(query, k, SAMPLE_TEMPERATURE)
    )
    return await selfcheck(client, query, main[0] if main else "", samples)


RAG_SYSTEM_PROMPT = (
    "Answer the question using only the context. Reply with the answer alone, as short as "
    "possible. If the context does not contain the answer, say that you do not know."
)


def llm_rag_sampler(generator: ChatModel, contexts: Sequence[str]) -> Sampler:
    """A :data:`Sampler` for an LLM-backed RAG whose retrieved ``contexts`` are known."""
    context = "\n\n".join(contexts)

    async def sample(query: str, n: int, temperature: float) -> list[str]:
        user = f"Context:\n{context}\n\nQuestion: {query}\nAnswer:"
        return await generator.complete(RAG_SYSTEM_PROMPT, user, temperature=temperature, n=n)

    return sample
