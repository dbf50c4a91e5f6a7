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
``{related_clause}`` (", which are linked to the projects and clients,", or empty: schema
words no user writes, kept for configured patterns only), ``{kind_noun}`` what kind of value is
asked ("date", "number", "value"), ``{its}`` the possessive for one of the rows ("its", "their"
for a person), ``{be}`` and ``{be_short}`` the verb agreeing with the attribute ("is"/"'s";
"are" for a plural noun such as "tags"). Padding entries are patterns too.
The question as a person asks it, by answer type: ``{wh}`` ("when was the employee named
'[Employee.LastName]' hired", "how much does the track named '[Track.Name]' cost") and
``{wh_embedded}`` (its indirect order: "when the employee named '[…]' was hired") and
``{wh_short}`` (with the terse reference: "when was '[Employee.LastName]' hired"); for a yes/no
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

#: What long forms add until they are long enough: sentences about the schema itself and about
#: what the user is doing, filled with the same fields, so the context is the domain's (albums
#: and tracks in a music schema). It is what makes a keyword-overlap retriever stumble on long
#: queries (GRAMMAR §5). The default long patterns name the entity's tables, not its other
#: columns: a question that lists "job title, office and hire date" sends an extractive reader
#: to the wrong sentence of the right document, a reader failure the long cohort is not meant
#: to measure. They read as a user at work (comparing, filling in a spreadsheet, checking a
#: draft), never as customer-service phrasing ("let me know as soon as you have it", "if you
#: would be so kind"): that is what a corpus's own boilerplate says ("we will let you know as
#: soon as we have it"), and a reader that matches words then answers the boilerplate.
LONG_PADDING = (
    "The {entities} are also connected to the {related}, but those are not what this is about.",
    "A short answer with just the {kind_noun} is enough for me.",
    "I am putting the {entities} into a spreadsheet, and this cell is still empty.",
    "My comparison of the {entities} stays incomplete until I have it.",
)

DEFAULT_VERBALIZERS: tuple[Verbalizer, ...] = (
    Verbalizer(
        "short",
        SHORT_CRITERIA,
        (
            "{answer} of {ref}",
            "{ref} {answer}",
            "{answer} for {ref}",
            "{wh_short}?",
            "{answer} of {ref}?",
            "{ref}: {answer}?",
            "{ref} {answer}?",
        ),
        yes_no=(
            "{ref} {state}?",
            "is {ref} {state}?",
            "{ref} {state} or not?",
            "{ref} {state}: yes or no?",
        ),
    ),
    Verbalizer(
        "long",
        LONG_CRITERIA,
        (
            "I am comparing a few of the {entities} side by side, and for {the_ref} there is "
            "still a piece missing from what I have, namely the {answer}; could you tell me?",
            "While I was filling in a table about the {entities}, I got stuck, since the papers "
            "in front of me do not show {wh_embedded}.",
            "Going through all of the {entities} in turn, I have now got as far as {the_ref}, "
            "and before moving on to the rest I would rather confirm {its} {answer}.",
            "Earlier today someone told me {wh_embedded}, but it has slipped my mind since, so "
            "could you remind me?",
            "For a comparison of the {entities} that I am drafting at the moment, I want to "
            "double-check the {answer} of {the_ref}, as the {kind_noun} in my draft might no "
            "longer be correct.",
            "I have been looking through the {entities} for a while now, and I am curious "
            "{wh_embedded}, because that is the last blank left in my spreadsheet.",
            "Checking what I jotted down about the {entities}, I realised that I never found out "
            "{wh_embedded}: what is the answer, as a single {kind_noun}?",
        ),
        min_words=30,
        padding=LONG_PADDING,
        yes_no=(
            "I have been looking through the {entities} for a while, and I am trying to "
            "establish {wh_embedded}, since my spreadsheet has a yes/no column for it.",
            "I could not figure out by myself {wh_embedded}, and for the spreadsheet about the "
            "{entities} that I am filling in, a plain yes or no is enough.",
            "Before comparing the {entities} any further, I want to check {wh_embedded}, because "
            "the rest of my overview depends on it.",
            "Going through the {entities} in turn, I have got to the point where I am unsure "
            "{wh_embedded}, so is it yes or no?",
        ),
    ),
    Verbalizer(
        "interrogative",
        "Questions: phrase every query as a direct question ending with a question mark, "
        "starting with a question word or an auxiliary verb.",
        (
            "What {be} the {answer} of {the_ref}?",
            "Which {answer} {be} recorded for {the_ref}?",
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
            "hey, what{be_short} the {answer} of {ref}?",
            "quick one: {answer} for {ref}?",
            "any idea what the {answer} of {ref} {be}?",
            "just wondering, what{be_short} the {answer} for {ref}?",
            "so what{be_short} the {answer} of {ref} again?",
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
