"""Linguistic attributes (cohorts) and how each is said: the C_t criteria of the paper.

A :class:`Verbalizer` carries two things: the criteria text the LLM text-template generator is
prompted with (Table 6 for ``short`` and ``long``), and the patterns the offline realizer builds
text templates from. The paper's six verbalizers are built in; more come from configuration
(:func:`verbalizers_from_config`), e.g. a YAML mapping ``{name: {criteria, patterns, min_words}}``.

Pattern fields: ``{answer}`` what is asked ("job title"), ``{entity}`` what the conditions name
("employee"), ``{ref}`` a terse reference ("'[Employee.Name]'"), ``{the_ref}`` a full one ("the
employee named '[Employee.Name]'").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from groundwatch.errors import ConfigError


@dataclass(frozen=True, slots=True)
class Verbalizer:
    """One cohort's way of asking: its name, criteria for the LLM, patterns for the realizer."""

    name: str
    criteria: str
    patterns: tuple[str, ...]
    min_words: int = 0
    padding: tuple[str, ...] = ()


SHORT_CRITERIA = (
    "Short and Clear: Keep your queries short and straightforward. Cut down on words and skip "
    "parts of speech, such as conjunctions and articles. It's okay to use fragmented phrases as "
    "long as they still convey the full meaning. Valid examples: \"client of '[Project.Name]'\" or "
    '"client for \'[Project.Name]\'"; Invalid Examples: "Find the client of a project named '
    "'[Project.Name]'.\""
)
LONG_CRITERIA = (
    "Complex Sentence Structure: Ensure your queries are always in complete sentences. Opt for "
    "longer, more complex sentence structures, incorporating elements of speech like conjunctions "
    "and articles for fuller expression. Each query should be at least 30 words long. You can add "
    "context and background information to the query."
)

#: Generic context, drawn from how people talk about their records, that long forms add. It is
#: what makes a keyword-overlap retriever stumble on long queries (GRAMMAR §5).
LONG_PADDING = (
    "This detail is needed for the summary that the team is preparing for the next review meeting.",
    "Please use the information that is kept in our records and documents for this purpose.",
)

DEFAULT_VERBALIZERS: tuple[Verbalizer, ...] = (
    Verbalizer(
        "short",
        SHORT_CRITERIA,
        (
            "{answer} of {ref}",
            "{ref} {answer}",
            "{answer} for {ref}",
            "look up {answer}, {ref}",
            "{answer} linked to {ref}",
            "get {answer} of {ref}",
        ),
    ),
    Verbalizer(
        "long",
        LONG_CRITERIA,
        (
            "I am currently putting together an overview of the work that we have been doing with "
            "our clients and colleagues, and for that summary I would like to know what the "
            "{answer} of {the_ref} is, according to the information that we have in our records.",
            "As part of the regular review of our records, which the team carries out before every "
            "planning meeting with the management, could you please tell me the {answer} that has "
            "been registered for {the_ref} in the documents that we keep?",
            "For a report that is being prepared for the management team about the state of all "
            "of the current and past work of the company, we need to find out the {answer} of "
            "{the_ref}, so please look it up in the documents for us.",
            "Before the next meeting with the people who are involved in our day to day "
            "operations, I would like to double check one detail in our records, namely the "
            "{answer} of {the_ref}, exactly as it is listed in the company information.",
            "Our team has been asked by the management to update the information that is kept "
            "about the company and its work, and one of the open points on the list is the "
            "{answer} of {the_ref}, which we would like you to find.",
        ),
        min_words=30,
        padding=LONG_PADDING,
    ),
    Verbalizer(
        "interrogative",
        "Questions: phrase every query as a direct question ending with a question mark, "
        "starting with a question word or an auxiliary verb.",
        (
            "What is the {answer} of {the_ref}?",
            "Which {answer} is recorded for {the_ref}?",
            "Do you know the {answer} of {ref}?",
            "Can you tell me the {answer} for {ref}?",
            "What {answer} does {the_ref} have?",
        ),
    ),
    Verbalizer(
        "directives",
        "Directives: phrase every query as an imperative instruction that starts with a verb and "
        "ends with a period; no question marks.",
        (
            "Find the {answer} of {the_ref}.",
            "Look up the {answer} for {ref}.",
            "Report the {answer} of {the_ref}.",
            "Retrieve the {answer} recorded for {ref}.",
            "State the {answer} of {the_ref}.",
        ),
    ),
    Verbalizer(
        "formal",
        "Formal register: polite, impersonal, complete sentences with formal vocabulary; no "
        "contractions, no slang.",
        (
            "Kindly provide the {answer} associated with {the_ref}.",
            "I would be grateful if you could indicate the {answer} of {the_ref}.",
            "Please be so kind as to specify the {answer} on record for {the_ref}.",
            "May I request the {answer} pertaining to {the_ref}?",
            "I would appreciate being informed of the {answer} of {the_ref}.",
        ),
    ),
    Verbalizer(
        "casual",
        "Casual register: relaxed, conversational wording as in a chat message; contractions and "
        "informal openers are welcome.",
        (
            "hey, what's the {answer} of {ref}?",
            "quick one: {answer} for {ref}?",
            "any idea what the {answer} of {ref} is?",
            "just wondering, what's the {answer} for {ref}?",
            "so what's the {answer} of {ref} again?",
        ),
    ),
)


def default_verbalizers() -> dict[str, Verbalizer]:
    return {v.name: v for v in DEFAULT_VERBALIZERS}


def verbalizers_from_config(
    config: Mapping[str, Mapping[str, Any]], base: Mapping[str, Verbalizer] | None = None
) -> dict[str, Verbalizer]:
    """Add or override verbalizers from a mapping (e.g. parsed YAML).

    Each entry: ``criteria`` (str, for the LLM path), ``patterns`` (list of str, for the offline
    realizer), optional ``min_words`` and ``padding``. Unknown keys are refused, so a typo does not
    silently produce a cohort without patterns.
    """
    out = dict(base if base is not None else default_verbalizers())
    allowed = {"criteria", "patterns", "min_words", "padding"}
    for name, spec in config.items():
        unknown = set(spec) - allowed
        if unknown:
            raise ConfigError(f"verbalizer {name!r}: unknown keys {sorted(unknown)}")
        prev = out.get(name)
        patterns: Sequence[str] = spec.get("patterns", prev.patterns if prev else ())
        criteria = spec.get("criteria", prev.criteria if prev else "")
        if not patterns and not criteria:
            raise ConfigError(f"verbalizer {name!r} needs patterns or criteria")
        out[name] = Verbalizer(
            name=name,
            criteria=str(criteria),
            patterns=tuple(str(p) for p in patterns),
            min_words=int(spec.get("min_words", prev.min_words if prev else 0)),
            padding=tuple(spec.get("padding", prev.padding if prev else ())),
        )
    return out
