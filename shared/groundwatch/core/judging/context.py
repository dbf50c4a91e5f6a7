"""Whether a text states the gold answer about the question's entities: the one predicate behind
two checks.

* the judge stage's ``context_has_answer``, a bounded summary of the retrieved contexts (the
  texts themselves never travel past the judge), which context comparison uses when ids cannot
  decide (GRAMMAR §4.3, :func:`groundwatch.core.tagging.judge_retrieval`);
* the data-quality check (:mod:`groundwatch.core.data_quality`), which asks the same question of
  the whole corpus: is a claimed knowledge gap really absent from the documents?

A text *states* the answer when one of its sentences holds every part of the gold answer (each
answer column; dates compared as dates, numbers as numbers, by the judge's own matching) together
with each of the question's entities — the values that single out the answer's row (the quoted
names of a generated question, or the SQL's bound parameters when they are known). One sentence,
because a fact is stated where the entity and the value meet: "The city of project P is Leeds."
A document that names the entity in one sentence and "Leeds" in another (another project's city)
does not answer "Which city is P in?". With no entity known, the gold anywhere in the text counts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import StrEnum

from groundwatch.core.judging.gold import Gold, prepare_gold
from groundwatch.core.judging.normalize import fold, normalize, padded
from groundwatch.core.judging.tiers import Evidence, PartStatus
from groundwatch.core.model import Expected
from groundwatch.core.retrieval.text import split_sentences

#: Quoted names in a question: 'Blue Horizon Hotels', "Leeds" or typographic quotes; an apostrophe
#: inside a word (O'Neil, client's) is no quote.
_QUOTED = re.compile(
    r"(?<![A-Za-z0-9])'([^'\n]{1,200})'(?![A-Za-z0-9])|\"([^\"\n]{1,200})\"|‘([^’\n]{1,200})’|“([^”\n]{1,200})”"
)
#: Bound on the text a summary reads (the contract keeps at most 50 × 20 000 characters).
MAX_TEXT_CHARS = 200_000


class Stated(StrEnum):
    """How a text relates to the gold answer of a question."""

    STATED = "stated"  # a sentence holds every gold part with every entity
    ELSEWHERE = "elsewhere"  # every gold part occurs, but never beside the entities
    ABSENT = "absent"  # some gold part occurs nowhere in the text


def quoted_entities(question: str) -> tuple[str, ...]:
    """The quoted names of a question, in order, without duplicates."""
    out: dict[str, None] = {}
    for m in _QUOTED.finditer(question):
        name = next(g for g in m.groups() if g is not None).strip()
        if name and normalize(name):
            out[name] = None
    return tuple(out)


def _all_found(ev: Evidence, gold: Gold) -> bool:
    return all(s is PartStatus.FOUND for s in ev.statuses(gold.parts))


def _has_entity(ev: Evidence, entity_norm: str) -> bool:
    return padded(entity_norm) in ev.pad


def states(text: str, gold: Gold, entities: Sequence[str]) -> Stated:
    """Whether ``text`` states ``gold`` about ``entities`` (see the module docstring).

    The whole text is read once first, so a text without the gold (the common case of a wrong
    retrieval) costs one pass; sentences are read only when the gold is somewhere in it.
    """
    text = text[:MAX_TEXT_CHARS]
    whole = Evidence("", gold, text)
    if not _all_found(whole, gold):
        return Stated.ABSENT
    norms = [n for n in (normalize(e) for e in entities) if n]
    if not norms:
        return Stated.STATED
    missing = set(norms)
    for sentence in split_sentences(text):
        low = fold(sentence)
        if not any(n.rsplit(" ", 1)[-1] in low for n in missing):
            continue  # cheap pre-check before tokenizing the sentence
        ev = Evidence("", gold, sentence)
        here = {n for n in missing if _has_entity(ev, n)}
        if here and _all_found(ev, gold):
            missing -= here
            if not missing:
                return Stated.STATED
    return Stated.ELSEWHERE


def gold_in_contexts(expected: Expected, contexts: Sequence[str], question: str) -> bool | None:
    """The judge stage's summary of the retrieved texts for one response.

    ``True``: the contexts state the gold answer about the question's quoted entities — the
    retrieval was sufficient. ``False``: there are contexts and some part of the gold occurs in
    none of them — insufficient. ``None``: no contexts, no gold to look for (an unanswerable
    question), or the gold occurs only away from the question's entities (a value that also
    belongs to another row proves nothing either way).
    """
    if not contexts or not expected.answerable:
        return None
    gold = prepare_gold(expected)
    if not gold.parts:
        return None
    verdict = states("\n\n".join(contexts), gold, quoted_entities(question))
    if verdict is Stated.STATED:
        return True
    if verdict is Stated.ABSENT:
        return False
    return None
