"""Explicit refusals: "the passage does not contain…", "I don't know", "I'm unable to assist".

For an answerable probe a refusal is wrong; for an unanswerable one (RAGProbe S6) it is the only
right answer — RAGProbe's *explicitness* metric. The patterns read folded text (lowercase, ASCII
quotes), so "I couldn’t find" and "I couldn't find" are the same.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_NEG = r"(?:do not|does not|did not|don't|doesn't|didn't|cannot|can't|can not|could not|couldn't|was not able to|wasn't able to|am not able to|are not able to|is not able to|unable to|not able to|am unable to|was unable to|is unable to|are unable to)"  # noqa: E501
_SOURCE = (
    r"(?:passage|passages|text|texts|context|contexts|document|documents|information|info|data|"
    r"records|sources?|excerpt|article|report|reports|materials?|database|knowledge base)"
)
_VERB_SAY = r"(?:contain|mention|provide|include|specify|state|say|give|indicate|list|show|reference|cover|have)"  # noqa: E501

_PATTERNS = [
    r"\b(?:do not|does not|don't|doesn't|dont|doesnt) know\b",
    r"\b(?:i am|i'm|im) not (?:sure|certain|aware)\b",
    r"\bno idea\b",
    rf"\b(?:i|we) {_NEG} (?:find|locate|identify|determine|answer|provide|assist|help|access|"
    r"say|tell|confirm|retrieve|give|see|verify|know|offer|share|disclose|comment)\b",
    r"\b(?:i|we) (?:do not|don't|did not|didn't) (?:have|possess|see|find)\b[^.]{0,40}?"
    r"\b(?:information|info|access|data|details|knowledge|record|records|mention|context|answer)\b",
    rf"\b(?:the |this |that |these |those |provided |given |available |above |retrieved )+{_SOURCE}"
    rf"(?: provided| given| available| above)? (?:does not|doesn't|do not|don't|did not|didn't)"
    rf" (?:explicitly |specifically |directly |clearly )?{_VERB_SAY}",
    r"\b(?:is|are|was|were) not (?:explicitly |specifically |directly |clearly )?"
    r"(?:mentioned|specified|provided|stated|given|available|included|listed|found|known|"
    r"disclosed|indicated|present|described|documented|identified|specified)\b",
    r"\bno (?:specific |relevant |further |available |such |explicit |direct |mention of )?"
    r"(?:information|mention|data|details|record|records|reference|indication|answer)\b",
    r"\bthere (?:is|are|was|were) no\b",
    r"\b(?:not|insufficient) (?:enough|sufficient) (?:information|context|data|details)\b",
    r"\binsufficient (?:information|context|data|details)\b",
    r"\b(?:is|are|remains?) (?:unknown|unclear|not clear|not known|unavailable)\b",
    r"\b(?:not possible|impossible) to (?:determine|answer|say|tell|know|find|identify)\b",
    r"\bunable to (?:answer|assist|help|provide|determine|find|locate|identify)\b",
    r"\b(?:does|do) not (?:appear|seem) to (?:be|exist|have)\b",
    r"\bcannot be (?:determined|answered|found|identified|provided)\b",
    r"\b(?:i|we) (?:have|had) no (?:information|access|data|details|knowledge|record)\b",
]
_REFUSAL = re.compile("|".join(f"(?:{p})" for p in _PATTERNS))

#: A whole response that is nothing but a null answer.
_NULL_ANSWERS = frozenset(
    {"n/a", "na", "none", "null", "unknown", "no answer", "not available", "no information",
     "not applicable", "i don't know", "i do not know", "-", "?", "no data", "not found"}
)  # fmt: skip

#: Every refusal pattern contains one of these words ("t" is what "n't" tokenizes to); most answers
#: contain none, and a set test on the tokens is far cheaper than the full pattern.
_TRIGGERS = frozenset(
    {"not", "t", "no", "unable", "unknown", "unclear", "unavailable", "impossible",
     "insufficient", "cannot", "idea", "sure", "certain", "aware", "dont", "cant", "couldnt",
     "doesnt", "didnt", "wasnt", "isnt", "arent", "n", "na", "none", "null", "nothing"}
)  # fmt: skip

#: Sentence ends, for telling "I can't answer that." from "I can't answer that, but it is X."
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True, slots=True)
class Refusal:
    """A detected refusal: the matched phrase and how much else the response says."""

    phrase: str
    span: tuple[int, int]
    other_sentences: int


def detect_refusal(folded_text: str, toks: Sequence[str] | None = None) -> Refusal | None:
    """The first refusal phrase in already-folded text, or None.

    ``toks`` (the text's tokens, if the caller has them) lets most answers skip the pattern.

    ``other_sentences`` counts sentences without any refusal phrase: RAGProbe's *contradiction*
    (refusing, then answering anyway) needs more than a refusal sentence to happen at all.
    """
    # Every null answer that has a token has a trigger among them ("n/a" is "n"): an answer
    # with tokens and no trigger is neither, and most answers are ruled out by that one test.
    if toks and _TRIGGERS.isdisjoint(toks):
        return None
    stripped = folded_text.strip().strip(".!").strip()
    if stripped in _NULL_ANSWERS:
        return Refusal(stripped, (0, len(folded_text)), 0)
    if toks is not None and _TRIGGERS.isdisjoint(toks):
        return None
    m = _REFUSAL.search(folded_text)
    if m is None:
        return None
    sentences = [s for s in _SENTENCE.split(folded_text.strip()) if s]
    other = sum(1 for s in sentences if not _REFUSAL.search(s))
    return Refusal(m.group(0), m.span(), other)


def count_sentences(text: str) -> int:
    """Sentences in a text (split after ``.``, ``!`` or ``?`` followed by white space)."""
    return sum(1 for s in _SENTENCE.split(text.strip()) if s) or 1


def is_refusal(folded_text: str) -> bool:
    return detect_refusal(folded_text) is not None
