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
does not answer "Which city is P in?". What a whole document is about — its title, its id — counts
as named in each of its sentences ("the project began on …" in P's report). With no entity known,
the gold anywhere in the text counts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import StrEnum

from groundwatch.core.judging.gold import Gold, GoldPart, gold_part, prepare_gold
from groundwatch.core.judging.normalize import fold, normalize
from groundwatch.core.judging.tiers import ParsedResponse, PartStatus
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


def _all_found(ev: ParsedResponse, gold: Gold) -> bool:
    return all(s is PartStatus.FOUND for s in ev.statuses(gold.parts))


def entity_parts(entities: Sequence[str]) -> tuple[tuple[GoldPart, ...], ...]:
    """Each entity prepared like a gold part, so a date or number condition is recognised however
    the text writes it ("2020-09-30" and "30 September 2020"); one 1-tuple per entity."""
    out: dict[str, tuple[GoldPart, ...]] = {}
    for e in entities:
        raw = str(e).strip()
        if raw and normalize(raw):
            out.setdefault(normalize(raw), (gold_part(raw, None),))
    return tuple(out.values())


def _may_hold(low: str, entity: tuple[GoldPart, ...]) -> bool:
    """Cheap pre-check on the folded sentence before it is tokenized: a text entity's last word
    must occur in it (typed entities are always read)."""
    part = entity[0]
    return part.typed or part.last_word in low


def states(text: str, gold: Gold, entities: Sequence[str], subject: str = "") -> Stated:
    """Whether ``text`` states ``gold`` about ``entities`` (see the module docstring); ``subject``
    is what the whole text is about (a document's title), read as part of every sentence."""
    return states_in(split_sentences(text[:MAX_TEXT_CHARS]), gold, entities, subject)


def states_in(
    sentences: Sequence[str], gold: Gold, entities: Sequence[str], subject: str = ""
) -> Stated:
    """:func:`states` over sentences already split. A document's sentences say "the project"
    or "it" about the document's subject, so the subject (its title, its id) counts as mentioned
    in each of them: "Initiated on January 15, 2023, the project …" states the start date of the
    project the document is about.

    The sentences are read together once first, so a text without the gold (the common case of a
    wrong retrieval) costs one pass; sentences are read one by one only when the gold is there.
    """
    prefix = f"{subject} :: " if subject else ""
    whole = ParsedResponse("", gold, prefix + "\n".join(sentences))
    if not _all_found(whole, gold):
        return Stated.ABSENT
    ents = entity_parts(entities)
    if not ents:
        return Stated.STATED
    missing = set(range(len(ents)))
    for sentence in sentences:
        unit = prefix + sentence
        low = fold(unit)
        if not any(_may_hold(low, ents[i]) for i in missing):
            continue
        ev = ParsedResponse("", gold, unit)
        here = {i for i in missing if ev.statuses(ents[i])[0] is PartStatus.FOUND}
        if here and _all_found(ev, gold):
            missing -= here
            if not missing:
                return Stated.STATED
    return Stated.ELSEWHERE


def title_of(text: str) -> str:
    """A document's title: its first line when that is a heading (markdown ``#`` or ``**…**``)."""
    first = text.lstrip().split("\n", 1)[0].strip()
    if len(first) <= 200 and (first.startswith("#") or first.startswith("**")):
        return first.strip("#* ").strip()
    return ""


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
    entities = quoted_entities(question)
    if states("\n\n".join(contexts), gold, ()) is Stated.ABSENT:
        return False
    for ctx in contexts:
        if states(ctx, gold, entities, title_of(ctx)) is Stated.STATED:
            return True
    return None
