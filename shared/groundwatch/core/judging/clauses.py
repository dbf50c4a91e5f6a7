"""The clauses of an answer that speak of the asked entity, where it speaks of several.

"For AP-4322 it is Oskar Berg, and for AP-4544 it is Ivo Brandt." states one value per entity;
the answer's claim about the asked entity is the first clause alone, and the value beside the
other entity is that entity's, not a rival of the gold (nor, when it equals the gold, the gold
said of the asked one). A clause that names no entity continues the one before it ("The ward
of Jana Kral is Oncology; it is on floor 5."); clauses before any entity is named are the
answer's preamble ("According to the records, …") and are kept with the asked entity's.
"""

from __future__ import annotations

import re
from collections.abc import Callable

#: Where one entity's statement may end and another's begin: a comma, semicolon or colon
#: before a space, a sentence end, or a contrasting conjunction. A comma inside a number
#: ("12,000") is no boundary (a space after it is required), nor is the full stop of an initial
#: or a title ("J. R. Smith", "Dr. Lind"): a sentence ends after two lower-case letters or
#: digits, before a capital.
_BOUNDARY = re.compile(
    r"[,;:]\s+|(?<=[a-z0-9][a-z0-9)])[.!?]\s+(?=[A-Z])|\s+(?i:while|whereas|but|unlike)\s+"
)


def has_boundary(text: str) -> bool:
    """Whether ``text`` has more than one clause (one scan, before any entity is looked for)."""
    return _BOUNDARY.search(text) is not None


def clauses(text: str) -> list[str]:
    """``text`` split at its clause boundaries (the boundaries dropped, none empty)."""
    return [c for c in _BOUNDARY.split(text) if c and not c.isspace()]


def asked_entity_text(text: str, names: Callable[[str], tuple[bool, bool, bool]]) -> str | None:
    """The clauses of ``text`` about the asked entity, joined, or None where the answer does
    not state something of another entity in a clause of its own.

    ``names(clause)`` says whether a clause names the asked entity, whether it names another
    one, and whether it says anything beside the names. A clause naming both gives no split
    (the answer's own structure does not say which value is whose), nor does a clause that is
    a name alone (a list of entities, "Projects of Harrowgate: Beacon Campus; Willow Tower.",
    states nothing of each): None, as when no clause names another entity or none names the
    asked one."""
    parts = clauses(text)
    if len(parts) < 2:
        return None
    kept: list[str] = []
    owner: str | None = None  # "asked", "other", or None before any entity is named
    asked_seen = other_seen = False
    for clause in parts:
        asked, other, said = names(clause)
        if (asked and other) or ((asked or other) and not said):
            return None
        if asked:
            owner, asked_seen = "asked", True
        elif other:
            owner, other_seen = "other", True
        if owner != "other":
            kept.append(clause)
    if not (asked_seen and other_seen):
        return None
    return ", ".join(c.rstrip(".!? ") for c in kept) + "."
