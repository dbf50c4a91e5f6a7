"""Linguistic attributes (cohorts) and how each is said: the C_t criteria of the paper.

A :class:`Verbalizer` carries two things: the criteria text the LLM text-template generator is
prompted with (Table 6 for ``short`` and ``long``), and the patterns the offline realizer builds
text templates from. The paper's six verbalizers are built in; more come from configuration
(:func:`verbalizers_from_config`), e.g. a YAML mapping ``{name: {criteria, patterns, min_words}}``.

Pattern fields: ``{answer}`` what is asked ("job title"), ``{entity}`` what the conditions name
("employee"), ``{ref}`` a terse reference ("'[Employee.Name]'"), ``{the_ref}`` a full one ("the
employee named '[Employee.Name]'"). From the schema's own vocabulary (for long forms):
``{entities}`` ("employees"), ``{attrs}`` other things their rows record ("department, office
and hire date"), ``{related}`` tables they are linked to ("projects and clients"),
``{related_clause}`` (", which are linked to the projects and clients,", or empty), ``{kind_noun}``
what kind of value is asked ("date", "number", "value"). Padding entries are patterns too.
The question as a person asks it, by answer type: ``{wh}`` ("when was the employee named
'[Employee.LastName]' hired", "how much does the track named '[Track.Name]' cost") and
``{wh_embedded}`` (its indirect order: "when the employee named '[…]' was hired"); for a yes/no
column ``{state}`` ("discontinued"), with ``{wh}`` "is the product named '[…]' discontinued".
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
    #: patterns for a yes/no column ("is the product named '[…]' discontinued?"); empty: the
    #: patterns that use ``{wh}``/``{wh_embedded}``
    yes_no: tuple[str, ...] = ()


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

#: What long forms add until they are long enough: sentences about the schema itself, filled with
#: the same fields, so the context is the domain's (albums and tracks in a music schema). It is
#: what makes a keyword-overlap retriever stumble on long queries (GRAMMAR §5). The default long
#: patterns name the entity's tables, not its other columns: a question that lists "job title,
#: office and hire date" sends an extractive reader to the wrong sentence of the right document,
#: a reader failure the long cohort is not meant to measure.
LONG_PADDING = (
    "The {entities} are also connected to the {related}.",
    "I only need the {kind_noun} itself, nothing else about it.",
    "It is for a short note that I am writing about the {entities}.",
    "Please keep the reply to that one {kind_noun}.",
    "Nothing else about the {related} matters to me here.",
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
        yes_no=("{ref} {state}?", "is {ref} {state}?", "{ref}: {state} or not?", "{state} {ref}?"),
    ),
    Verbalizer(
        "long",
        LONG_CRITERIA,
        (
            "As I am going through the {entities}{related_clause} I would like you to tell me "
            "the {answer} of {the_ref}, which is a {kind_noun} that I will need for the next "
            "step of what I am doing with them.",
            "Looking at the {entities} and at what is kept about each of them, could you please "
            "find out for me what the {answer} of {the_ref} is, and let me know as soon as you "
            "have it, so that I do not have to ask about it again?",
            "When you look up {the_ref} among all of the {entities} that there are, which "
            "{kind_noun} is it that you find there as the {answer}, and would you be able to "
            "give it to me as it is, if that is at all possible for you?",
            "For {the_ref}, which is one of the {entities}, I am trying to find out the "
            "{answer}, so it would be a great help to me if you could tell me which {kind_noun} "
            "is given for it.",
            "Since each of the {entities} is described by a number of details, I would like "
            "you to find out the {answer} of {the_ref} for me and then tell me what that "
            "{kind_noun} is, if you would be so kind.",
            "I have been looking through the {entities}{related_clause} and I would like to know "
            "{wh_embedded}, since that is the one detail I still need before I can finish what "
            "I am doing.",
            "There is one thing about {the_ref} that I could not find out by myself, namely "
            "{wh_embedded}, and I would be grateful if you could look it up and tell me.",
        ),
        min_words=30,
        padding=LONG_PADDING,
        yes_no=(
            "I have been looking through the {entities}{related_clause} and I would like to know "
            "{wh_embedded}, since that is the one detail I still need before I can go on with "
            "what I am doing.",
            "There is one thing about {the_ref} that I could not find out by myself, namely "
            "{wh_embedded}, so could you please check it and simply tell me yes or no?",
            "Before I go any further with the {entities}, could you please check for me "
            "{wh_embedded} and let me know the answer, because the next step depends on it?",
            "Going through what is kept about each of the {entities}, I would like to find out "
            "{wh_embedded}, and a plain yes or no would be all that I need from you.",
        ),
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
            "{wh}?",
            "Could you tell me {wh_embedded}?",
        ),
        yes_no=(
            "{wh}?",
            "Can you tell me {wh_embedded}?",
            "Do you know {wh_embedded}?",
            "Would you check {wh_embedded}?",
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
            "Tell me {wh_embedded}.",
            "Find out {wh_embedded}.",
        ),
        yes_no=(
            "Tell me {wh_embedded}.",
            "Find out {wh_embedded}.",
            "Check {wh_embedded}.",
            "Confirm {wh_embedded}.",
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
            "Could you kindly let me know {wh_embedded}?",
        ),
        yes_no=(
            "Could you kindly confirm {wh_embedded}?",
            "I would be grateful to learn {wh_embedded}.",
            "Please indicate {wh_embedded}.",
            "May I ask {wh_embedded}?",
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
            "so {wh}?",
        ),
        yes_no=("{wh}?", "quick q: {wh}?", "hey, {wh}?", "any idea {wh_embedded}?"),
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
    allowed = {"criteria", "patterns", "min_words", "padding", "yes_no"}
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
            yes_no=tuple(spec.get("yes_no", prev.yes_no if prev else ())),
        )
    return out
