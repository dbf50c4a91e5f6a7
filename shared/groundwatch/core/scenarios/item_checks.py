"""Checks every generated item passes before it is kept: JSON that parses, an answer of the right
kind, supported by the chunk it was made from, and not given away by the question.

"Supported" reuses the judge's own reading of a text
(:class:`groundwatch.core.judging.tiers.ParsedResponse`): the chunk is read as if it were a
response to the item, so a number is found as a number and a date as a date whatever their
spelling, and a text answer by containment or, for a paraphrase, by most of its content words.
An item the judge could not recognise in its own source would be a bad probe.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any

import orjson

from groundwatch.core.judging.dates import extract_dates
from groundwatch.core.judging.gold import infer_type, prepare_gold
from groundwatch.core.judging.normalize import normalize, padded
from groundwatch.core.judging.numbers import parse_gold_number
from groundwatch.core.judging.tiers import ParsedResponse, PartStatus, token_prf
from groundwatch.core.model import AnswerType, Expected
from groundwatch.core.scenarios.chunking import TIME

#: Share of a text answer's content words a chunk must hold when it paraphrases the answer.
MIN_TOKEN_RECALL = 0.8

_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$", re.I)


class Drop(StrEnum):
    """Why a generated item was not kept; counted per scenario."""

    LLM_ERROR = "llm_error"
    INVALID_JSON = "invalid_json"
    MISSING_FIELDS = "missing_fields"
    NOT_A_NUMBER = "not_a_number"
    NOT_A_DATETIME = "not_a_datetime"
    UNSUPPORTED = "answer_not_in_source"
    ANSWER_IN_QUESTION = "answer_in_question"
    BAD_OPTIONS = "bad_options"
    TOO_FEW_PARTS = "too_few_parts"
    DUPLICATE_ANSWERS = "duplicate_answers"
    SAME_DOCUMENT = "parts_from_one_document"
    ANSWERABLE = "answerable_in_corpus"
    NOT_IN_CORPUS = "answer_not_in_corpus"
    TOO_FEW_DISTRACTORS = "too_few_distractors"
    NAME_EXISTS = "name_exists"
    NO_QUESTION = "no_question"


def extract_json_object(text: str) -> dict[str, Any] | None:
    """The JSON object a model replied with, tolerating a code fence or words around it."""
    body = _FENCE.sub("", text.strip())
    for candidate in (body, body[body.find("{") : body.rfind("}") + 1]):
        if not candidate:
            continue
        try:
            value = orjson.loads(candidate)
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    return None


def answer_type(answer: str) -> AnswerType:
    return infer_type(answer)


def is_number_answer(answer: str) -> bool:
    """Exactly one number (with separators, unit or scale) and nothing else of substance."""
    return parse_gold_number(answer) is not None and answer_type(answer) is AnswerType.NUMBER


def is_datetime_answer(answer: str) -> bool:
    return bool(extract_dates(answer)) or TIME.search(answer) is not None


def supported(answer: str, source: str, kind: AnswerType | None = None) -> bool:
    """Whether ``source`` states ``answer`` (typed for numbers and dates, else by containment or
    by :data:`MIN_TOKEN_RECALL` of its content words)."""
    gold = prepare_gold(Expected(values=[answer], types=[kind] if kind else []))
    if not gold.parts:
        return False
    ev = ParsedResponse("", gold, source)
    for part, status in zip(gold.parts, ev.statuses(gold.parts), strict=True):
        if status is PartStatus.FOUND:
            continue
        if part.typed or not part.content:
            return False
        _, recall, _ = token_prf(part.content, ev.toks)
        if recall < MIN_TOKEN_RECALL:
            return False
    return True


def mentions(text: str, phrase: str) -> bool:
    """``phrase`` occurs in ``text`` on word boundaries, after normalization."""
    p = normalize(phrase)
    return bool(p) and padded(p) in padded(normalize(text))


def contained_either_way(a: str, b: str) -> bool:
    """One text contains the other on word boundaries: options "Engineer" and "Senior Engineer"
    could not both be told apart in a response, so they never stand side by side."""
    na, nb = normalize(a), normalize(b)
    return na == nb or padded(na) in padded(nb) or padded(nb) in padded(na)


def str_field(data: dict[str, Any], name: str) -> str | None:
    """A non-empty string field (numbers are accepted and written as text)."""
    v = data.get(name)
    if isinstance(v, int | float) and not isinstance(v, bool):
        v = str(v)
    if not isinstance(v, str) or not v.strip():
        return None
    return v.strip()
