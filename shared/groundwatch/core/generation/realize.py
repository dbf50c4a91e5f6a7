"""The offline text-template generator g_t: a deterministic realizer.

From a SQL template's parts (what is selected, what the conditions name, the join role) it builds
one text template per verbalizer pattern. Text templates keep the paper's placeholders
(``'[Client.Name]'``) so they can be exported in the GRAMMAR tool's format and filled per fill.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from groundwatch.core.generation.answers import format_value
from groundwatch.core.generation.naming import humanize
from groundwatch.core.generation.templates import SqlTemplate, tokens_in
from groundwatch.core.generation.verbalizers import Verbalizer

_SPACES = re.compile(r"\s+")


def word_count(text: str) -> int:
    """Words as a reader counts them; a placeholder counts as one word."""
    return len(re.sub(r"'?\[[^\]]+\]'?", "X", text).split())


def template_parts(template: SqlTemplate) -> dict[str, str]:
    """The pattern fields for one SQL template (see :mod:`verbalizers`)."""
    slots = template.slots
    quoted = [f"'{s.grammar_token()}'" for s in slots]
    if len(slots) == 1 and slots[0].param in template.identifier_slots:
        ref = quoted[0]
        the_ref = f"the {template.entity} named {quoted[0]}"
    else:
        conds = [f"{humanize(s.column)} {q}" for s, q in zip(slots, quoted, strict=True)]
        ref = f"{template.entity} with " + " and ".join(conds)
        the_ref = f"the {template.entity} whose " + " and whose ".join(
            f"{humanize(s.column)} is {q}" for s, q in zip(slots, quoted, strict=True)
        )
    return {
        "answer": template.answer_label or "value",
        "entity": template.entity or "record",
        "ref": ref,
        "the_ref": the_ref,
    }


def _tidy(text: str) -> str:
    text = _SPACES.sub(" ", text).strip()
    return text[:1].upper() + text[1:] if text[:1].islower() and not text.startswith("'") else text


def realize(template: SqlTemplate, verbalizer: Verbalizer) -> list[str]:
    """Distinct text templates for one SQL template in one cohort, in pattern order.

    Long forms are padded with generic context until they reach ``min_words``; every text template
    carries exactly the SQL template's placeholders (a pattern that would drop one is skipped).
    """
    parts = template_parts(template)
    want = {s.grammar_token() for s in template.slots}
    out: list[str] = []
    for pattern in verbalizer.patterns:
        text = _tidy(pattern.format(**parts))
        pads = iter(verbalizer.padding)
        while word_count(text) < verbalizer.min_words:
            pad = next(pads, None)
            if pad is None:
                break
            text = f"{text} {pad}"
        if word_count(text) < verbalizer.min_words or tokens_in(text) != want:
            continue
        if text not in out:
            out.append(text)
    return out


def compile_text(text_template: str, template: SqlTemplate) -> tuple[str | int, ...]:
    """A text template split into literal parts and slot indexes, so filling is one join.

    Filling a million groups × 2k forms is the hot loop of generation; searching for the tokens
    once per text template instead of once per fill is what keeps it cheap.
    """
    parts: list[str | int] = [text_template]
    for i, s in enumerate(template.slots):
        token = s.grammar_token()
        nxt: list[str | int] = []
        for part in parts:
            if isinstance(part, int):
                nxt.append(part)
                continue
            pieces = part.split(token)
            for j, piece in enumerate(pieces):
                if j:
                    nxt.append(i)
                nxt.append(piece)
        parts = nxt
    return tuple(p for p in parts if p != "")


def fill_compiled(parts: tuple[str | int, ...], values: Sequence[str]) -> str:
    return "".join(values[p] if isinstance(p, int) else p for p in parts)


def fill_text(text_template: str, template: SqlTemplate, params: Mapping[str, Any]) -> str:
    """Substitute a fill's values for the placeholders (Algorithm 1, line 15)."""
    out = text_template
    for s in template.slots:
        out = out.replace(s.grammar_token(), format_value(params[s.param]))
    return out
