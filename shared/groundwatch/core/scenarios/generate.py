"""RAGProbe's Q&A generator (§4.1): scenario items from a document corpus through an LLM.

For each scenario: sample documents, chunk them, sample the chunk sets, prompt the model with the
scenario's prompt (one-shot, three-shot, or sequential), and validate what comes back. Everything
the model writes is untrusted: a reply must be a JSON object of the right shape, its answer of the
right kind (a number for S1, a date or time for S2, exactly one right option for S3, two or more
distinct parts for S4/S5) and stated in the chunk it was made from. The sequential S6 asks for a
question the passage does not answer, retrieves over the whole corpus with BM25 and keeps the
question only if a second prompt finds no answer in what was retrieved. An item that fails any
check is dropped and counted by reason; a failed or malformed call never stops the run.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from groundwatch.core.judging.dates import parse_gold_date
from groundwatch.core.judging.gold import prepare_gold
from groundwatch.core.judging.numbers import parse_gold_number
from groundwatch.core.llm import ChatModel
from groundwatch.core.model import AnswerType, Expected, SemanticGroup
from groundwatch.core.retrieval.retrievers import Bm25Retriever
from groundwatch.core.scenarios.chunking import (
    Chunk,
    chunk_corpus,
    sample_contexts,
    sample_documents,
)
from groundwatch.core.scenarios.item_checks import (
    Drop,
    answer_type,
    contained_either_way,
    extract_json_object,
    is_datetime_answer,
    mentions,
    str_field,
    supported,
)
from groundwatch.core.scenarios.items import (
    EXPECTED_REFUSAL,
    LETTERS,
    ScenarioRun,
    options_text,
    scenario_group,
    scenario_group_id,
)
from groundwatch.core.scenarios.spec import AnswerShape, Chunking, ScenarioSpec
from groundwatch.errors import GroundwatchError

PROMPT_VERSION = "ragprobe-scenarios-v1"
#: Completion budget of one generation call (a JSON object with up to three question/answer pairs).
MAX_TOKENS = 700


class _Dropped(Exception):
    """An item failed a check; carries the reason it is counted under."""

    def __init__(self, reason: Drop) -> None:
        super().__init__(reason.value)
        self.reason = reason


def render_prompt(template: str, values: Mapping[str, str]) -> str:
    """Fill ``{name}`` fields by plain replacement: prompts hold JSON braces ``str.format`` would
    trip over, and a field a template does not use is simply not there."""
    out = template
    for name, value in values.items():
        out = out.replace("{" + name + "}", value)
    return out


def render_context(chunks: Sequence[Chunk], *, numbered: bool = False) -> str:
    """One chunk as it is; several (or any for a multi-part scenario, whose answers name their
    passage) as numbered passages."""
    if len(chunks) == 1 and not numbered:
        return chunks[0].text
    return "\n\n".join(f"Passage {i}:\n{c.text}" for i, c in enumerate(chunks, 1))


def render_examples(spec: ScenarioSpec) -> str:
    blocks = [
        f"Example passage:\n{e.context}\nExample reply:\n{orjson.dumps(e.output).decode()}"
        for e in spec.prompting.examples
    ]
    return "\n\n".join(blocks)


@dataclass
class CorpusScenarioGenerator:
    """Scenario items from ``corpus`` (document id → text) through ``client``.

    ``verify_k`` passages are retrieved for S6's verification step; ``concurrency`` contexts are
    in flight at once (the client applies its own rate limits under that).
    """

    client: ChatModel
    corpus: Mapping[str, str]
    seed: int = 0
    dataset_id: str = "scenarios"
    verify_k: int = 5
    concurrency: int = 8
    temperature: float = 0.0
    model: str = ""

    def __post_init__(self) -> None:
        self._chunks: dict[Chunking, dict[str, list[Chunk]]] = {}
        self._retrievers: dict[Chunking, Bm25Retriever] = {}

    def chunks(self, chunking: Chunking) -> dict[str, list[Chunk]]:
        got = self._chunks.get(chunking)
        if got is None:
            got = self._chunks[chunking] = chunk_corpus(self.corpus, chunking)
        return got

    def retriever(self, chunking: Chunking) -> Bm25Retriever:
        """BM25 over every chunk of the corpus: the "whole corpus" S6 is verified against."""
        got = self._retrievers.get(chunking)
        if got is None:
            index = {c.chunk_id: c.text for cs in self.chunks(chunking).values() for c in cs}
            got = self._retrievers[chunking] = Bm25Retriever(index)
        return got

    async def generate(
        self, specs: Sequence[ScenarioSpec], *, max_items: int | None = None
    ) -> ScenarioRun:
        run = ScenarioRun()
        for spec in specs:
            await self._scenario(spec, run, max_items if max_items is not None else spec.max_items)
        return run

    async def _scenario(self, spec: ScenarioSpec, run: ScenarioRun, limit: int) -> None:
        rng = random.Random(f"{self.seed}:{spec.id}")
        docs = sample_documents(self.corpus, spec.document_sampling, rng)
        contexts = sample_contexts(self.chunks(spec.chunking), docs, spec.chunk_sampling, rng)
        if not contexts:
            run.note(spec.id, "no chunk passed the chunk sampling filter")
            return
        for start in range(0, len(contexts), self.concurrency):
            if run.kept(spec.id) >= limit:
                return
            batch = contexts[start : start + self.concurrency]
            results = await asyncio.gather(*(self._one(spec, c) for c in batch))
            for result in results:
                if run.kept(spec.id) >= limit:
                    return
                if isinstance(result, Drop):
                    run.drop(spec.id, result)
                else:
                    run.keep(result)

    async def _ask(self, system: str, user: str) -> dict[str, Any]:
        try:
            replies = await self.client.complete(
                system, user, temperature=self.temperature, max_tokens=MAX_TOKENS
            )
        except GroundwatchError as exc:
            raise _Dropped(Drop.LLM_ERROR) from exc
        data = extract_json_object(replies[0] if replies else "")
        if data is None:
            raise _Dropped(Drop.INVALID_JSON)
        return data

    async def _one(self, spec: ScenarioSpec, context: list[Chunk]) -> SemanticGroup | Drop:
        step = spec.prompting.steps[0]
        values = {
            "context": render_context(context, numbered=spec.answer is AnswerShape.MULTI_PART),
            "examples": render_examples(spec),
            "count": str(spec.chunk_sampling.count),
            "options": str(spec.grounded.options if spec.grounded else 4),
        }
        try:
            data = await self._ask(step.system, render_prompt(step.user, values))
            if spec.answer is AnswerShape.UNANSWERABLE:
                return await self._unanswerable(spec, context, data, values)
            return self._answerable(spec, context, data)
        except _Dropped as d:
            return d.reason

    # ------------------------------------------------------------------ answerable (S1–S5)
    def _answerable(
        self, spec: ScenarioSpec, context: list[Chunk], data: dict[str, Any]
    ) -> SemanticGroup:
        shape = spec.answer
        if shape is AnswerShape.MULTIPLE_CHOICE:
            return self._multiple_choice(spec, context[0], data)
        if shape is AnswerShape.MULTI_PART:
            return self._multi_part(spec, context, data)
        question, answer = str_field(data, "question"), str_field(data, "answer")
        if question is None or answer is None:
            raise _Dropped(Drop.MISSING_FIELDS)
        chunk = context[0]
        if shape is AnswerShape.NUMBER:
            if parse_gold_number(answer) is None:
                raise _Dropped(Drop.NOT_A_NUMBER)
            kind = AnswerType.NUMBER
        elif shape is AnswerShape.DATETIME:
            if not is_datetime_answer(answer):
                raise _Dropped(Drop.NOT_A_DATETIME)
            kind = AnswerType.DATE if parse_gold_date(answer) else answer_type(answer)
        else:
            kind = answer_type(answer)
        if mentions(question, answer):
            raise _Dropped(Drop.ANSWER_IN_QUESTION)
        if not supported(answer, chunk.text, kind):
            raise _Dropped(Drop.UNSUPPORTED)
        return self._item(spec, question, Expected(values=[answer], types=[kind]), [chunk], answer)

    def _multiple_choice(
        self, spec: ScenarioSpec, chunk: Chunk, data: dict[str, Any]
    ) -> SemanticGroup:
        question = str_field(data, "question")
        raw_options, raw_answer = data.get("options"), str_field(data, "answer")
        if question is None or raw_answer is None or not isinstance(raw_options, dict | list):
            raise _Dropped(Drop.MISSING_FIELDS)
        if isinstance(raw_options, dict):
            keys = [str(k).strip().upper().rstrip(")") for k in raw_options]
            if keys != list(LETTERS[: len(keys)]):
                raise _Dropped(Drop.BAD_OPTIONS)
            items: list[Any] = list(raw_options.values())
        else:
            items = list(raw_options)
        options = [str(o).strip() for o in items]
        want = spec.grounded.options if spec.grounded else len(options)
        if len(options) != want or len(options) < 2 or not all(options):
            raise _Dropped(Drop.BAD_OPTIONS)
        if any(contained_either_way(a, b) for i, a in enumerate(options) for b in options[i + 1 :]):
            raise _Dropped(Drop.BAD_OPTIONS)
        letter = raw_answer.strip().upper().rstrip(")").strip()
        if letter in LETTERS[: len(options)]:
            idx = LETTERS.index(letter)
        else:  # the answer given as the option's text
            matches = [i for i, o in enumerate(options) if contained_either_way(o, raw_answer)]
            if len(matches) != 1:
                raise _Dropped(Drop.BAD_OPTIONS)
            idx = matches[0]
        correct = options[idx]
        if mentions(question, correct):
            raise _Dropped(Drop.ANSWER_IN_QUESTION)
        if not supported(correct, chunk.text, answer_type(correct)):
            raise _Dropped(Drop.UNSUPPORTED)
        expected = Expected(values=[correct], types=[answer_type(correct)], options=options)
        if prepare_gold(expected).correct_option != idx:
            raise _Dropped(Drop.BAD_OPTIONS)
        return self._item(
            spec,
            options_text(question, options),
            expected,
            [chunk],
            f"{LETTERS[idx]}) {correct}",
            {"correct_option": LETTERS[idx], "options": options},
        )

    def _multi_part(
        self, spec: ScenarioSpec, context: list[Chunk], data: dict[str, Any]
    ) -> SemanticGroup:
        raw = data.get("questions")
        if not isinstance(raw, list):
            raise _Dropped(Drop.MISSING_FIELDS)
        parts: list[tuple[str, str, Chunk]] = []
        for entry in raw:
            if not isinstance(entry, dict):
                raise _Dropped(Drop.MISSING_FIELDS)
            q, a = str_field(entry, "question"), str_field(entry, "answer")
            if q is None or a is None:
                raise _Dropped(Drop.MISSING_FIELDS)
            where = entry.get("passage")
            named = (
                [context[where - 1]]
                if isinstance(where, int) and 1 <= where <= len(context)
                else []
            )
            # the passage the model named, else any passage of the context that states it
            source = next(
                (c for c in [*named, *context] if supported(a, c.text, answer_type(a))), None
            )
            if source is None:
                raise _Dropped(Drop.UNSUPPORTED)
            parts.append((q, a, source))
        if len(parts) < 2:
            raise _Dropped(Drop.TOO_FEW_PARTS)
        answers = [a for _, a, _ in parts]
        if any(contained_either_way(x, y) for i, x in enumerate(answers) for y in answers[i + 1 :]):
            raise _Dropped(Drop.DUPLICATE_ANSWERS)
        question = " ".join(q for q, _, _ in parts)
        if any(mentions(question, a) for a in answers):
            raise _Dropped(Drop.ANSWER_IN_QUESTION)
        one_doc = len({c.doc_id for _, _, c in parts}) < 2
        if spec.chunk_sampling.combine == "across_documents" and one_doc:
            raise _Dropped(Drop.SAME_DOCUMENT)
        expected = Expected(values=answers, types=[answer_type(a) for a in answers])
        sources = list({c.chunk_id: c for _, _, c in parts}.values())
        return self._item(
            spec,
            question,
            expected,
            sources,
            "; ".join(answers),
            {"parts": [{"question": q, "answer": a, "chunk_id": c.chunk_id} for q, a, c in parts]},
        )

    def _item(
        self,
        spec: ScenarioSpec,
        question: str,
        expected: Expected,
        chunks: Sequence[Chunk],
        expected_response: str,
        extra: dict[str, Any] | None = None,
    ) -> SemanticGroup:
        ids = [c.chunk_id for c in chunks]
        return scenario_group(
            spec,
            group_id=scenario_group_id(spec.id, {"chunks": ids, "question": question}),
            question=question,
            expected=expected,
            provenance={
                "source": "corpus",
                "chunks": [c.provenance() for c in chunks],
                "expected_response": expected_response,
                "prompting": spec.prompting.strategy,
                "prompt_version": PROMPT_VERSION,
                "model": self.model,
                **(extra or {}),
            },
            dataset_id=self.dataset_id,
            relevant_doc_ids=[c.doc_id for c in chunks],
        )

    # ------------------------------------------------------------------ unanswerable (S6)
    async def _unanswerable(
        self,
        spec: ScenarioSpec,
        context: list[Chunk],
        data: dict[str, Any],
        values: dict[str, str],
    ) -> SemanticGroup:
        question = str_field(data, "question")
        if question is None:
            raise _Dropped(Drop.NO_QUESTION)
        retrieved = self.retriever(spec.chunking).retrieve(question, self.verify_k)
        passages = "\n\n".join(f"Passage {i}:\n{r.text}" for i, r in enumerate(retrieved, 1))
        answerable: bool | None = None
        for step in spec.prompting.steps[1:]:
            later = {**values, "question": question, "passages": passages or "(none retrieved)"}
            verdict = await self._ask(step.system, render_prompt(step.user, later))
            flag = verdict.get("answerable")
            if not isinstance(flag, bool):
                raise _Dropped(Drop.MISSING_FIELDS)
            answerable = flag or bool(answerable)
        if answerable:
            raise _Dropped(Drop.ANSWERABLE)
        gid = scenario_group_id(spec.id, {"question": question, "from": context[0].chunk_id})
        return scenario_group(
            spec,
            group_id=gid,
            question=question,
            expected=Expected(answerable=False),
            provenance={
                "source": "corpus",
                "inspired_by": [c.provenance() for c in context],
                "chunks": [],
                "verification": {
                    "retriever": "bm25",
                    "k": self.verify_k,
                    "retrieved_chunks": [r.doc_id for r in retrieved],
                    "answerable": False,
                },
                "expected_response": EXPECTED_REFUSAL,
                "prompting": spec.prompting.strategy,
                "prompt_version": PROMPT_VERSION,
                "model": self.model,
            },
            dataset_id=self.dataset_id,
        )
