"""SQL templates (tpl_sql): one query semantics with named placeholders, plus the parts the
realizer needs to say it in words.

The SQL is stored in named-parameter form (``WHERE name = :name``) so values are always bound by the
driver, never pasted into SQL. The GRAMMAR tool writes the same templates with quoted bracket
placeholders (``WHERE Name = '[Client.Name]'``); :meth:`SqlTemplate.grammar_sql` and
:func:`groundwatch.core.generation.grammar_format` convert between the two.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Literal

import sqlglot
from sqlglot import exp

from groundwatch.core.model import AnswerType

Origin = Literal["rule", "llm", "import"]
Kind = Literal["single", "pair", "join", "chain", "link", "child", "aggregate", "other"]
OnMultiple = Literal["reject", "drop"]

_PLAIN_IDENT = re.compile(r"[a-z_][a-z0-9_]*")
_RESERVED = frozenset(
    [
        "all",
        "and",
        "as",
        "asc",
        "by",
        "case",
        "check",
        "column",
        "create",
        "default",
        "delete",
        "desc",
        "distinct",
        "drop",
        "else",
        "end",
        "from",
        "group",
        "having",
        "in",
        "index",
        "insert",
        "into",
        "is",
        "join",
        "key",
        "limit",
        "not",
        "null",
        "offset",
        "on",
        "or",
        "order",
        "primary",
        "references",
        "select",
        "table",
        "then",
        "to",
        "union",
        "update",
        "user",
        "using",
        "values",
        "when",
        "where",
        "with",
    ]
)


def ident(name: str) -> exp.Identifier:
    """An identifier, quoted only when the name needs it (mixed case, spaces, reserved words)."""
    quoted = not _PLAIN_IDENT.fullmatch(name) or name in _RESERVED
    return exp.Identifier(this=name, quoted=quoted)


def render(tree: exp.Expression, dialect: str) -> str:
    """SQL text in ``dialect`` with placeholders kept as ``:name`` (SQLAlchemy's bind style).

    sqlglot would print a PostgreSQL placeholder as ``%(name)s``; the stored form must be the same
    for every backend, because the group id hashes it.
    """

    def keep(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Placeholder) and node.name:
            return exp.Var(this=f":{node.name}")
        return node

    return tree.transform(keep, copy=True).sql(dialect=dialect)


def parse_one(sql: str, dialect: str) -> exp.Expression:
    tree = sqlglot.parse_one(sql, read=dialect)
    assert isinstance(tree, exp.Expression)
    return tree


@dataclass(frozen=True, slots=True)
class Slot:
    """A placeholder: bind parameter ``param`` stands for a value of ``table.column``."""

    param: str
    table: str
    column: str
    alias: str
    token: str = ""

    def grammar_token(self) -> str:
        """The paper's placeholder, e.g. ``[Client.Name]`` (text templates carry it quoted)."""
        return self.token or f"[{self.table}.{self.column}]"


@dataclass(frozen=True, slots=True)
class Selected:
    """One projected column: part of the answer."""

    table: str
    column: str
    alias: str
    kind: AnswerType | None = AnswerType.TEXT
    agg: str = ""
    #: a yes/no column (:attr:`ColumnInfo.flag`): its 0/1 (or boolean) answer reads "yes"/"no"
    flag: bool = False


@dataclass(frozen=True, slots=True)
class JoinInfo:
    """A one-hop join along ``fk_table.fk_column → ref_table.ref_column``.

    ``forward``: conditions on the referencing row, answer from the referenced one ("director of
    project X"); ``reverse``: conditions on the referenced row ("project of client X").
    """

    fk_table: str
    fk_column: str
    ref_table: str
    ref_column: str
    role: str
    direction: Literal["forward", "reverse"] = "forward"


@dataclass(frozen=True, slots=True)
class SqlTemplate:
    """A validated SQL template and the words for it.

    ``answer_label`` names what is asked ("job title", "director"), ``entity`` the thing the
    conditions identify ("project"). ``on_multiple`` says what the singular-answer check does with a
    fill that has several answers: drop that fill, or reject the whole template. ``refs`` is the
    (terse, full) way to name what the placeholders identify, when the generator that wrote the
    template knows better than the generic wording (a link table's two ends, a child row of a
    named parent); None lets the realizer derive it from the slots. ``wh`` is the question as a
    person would ask it, direct and embedded ("how many tracks are in playlist '[…]'", "how
    many tracks are in playlist '[…]'"), when the generator knows a better one than the
    realizer's wording by answer type; it carries the same placeholders.
    """

    sql: str
    slots: tuple[Slot, ...]
    selected: tuple[Selected, ...]
    tables: tuple[str, ...]
    origin: Origin = "rule"
    kind: Kind = "single"
    answer_label: str = ""
    entity: str = ""
    join: JoinInfo | None = None
    on_multiple: OnMultiple = "drop"
    identifier_slots: tuple[str, ...] = field(default_factory=tuple)
    refs: tuple[str, str] | None = None
    wh: tuple[str, str] | None = None

    @property
    def template_id(self) -> str:
        return hashlib.sha256(" ".join(self.sql.split()).encode()).hexdigest()[:16]

    @property
    def params(self) -> tuple[str, ...]:
        return tuple(s.param for s in self.slots)

    @property
    def tokens(self) -> dict[str, str]:
        """Paper placeholder → bind parameter."""
        return {s.grammar_token(): s.param for s in self.slots}

    def grammar_sql(self) -> str:
        """The template in the GRAMMAR tool's format: ``... WHERE Name = '[Client.Name]';``."""
        out = self.sql
        for s in sorted(self.slots, key=lambda s: -len(s.param)):
            out = re.sub(rf":{re.escape(s.param)}\b", f"'{s.grammar_token()}'", out)
        return out.rstrip(";") + ";"


def assign_tokens(slots: list[Slot]) -> tuple[Slot, ...]:
    """Give every slot a distinct paper token; a self-join's second slot uses its alias."""
    seen: dict[str, int] = {}
    for s in slots:
        base = f"[{s.table}.{s.column}]"
        seen[base] = seen.get(base, 0) + 1
    out = []
    for s in slots:
        base = f"[{s.table}.{s.column}]"
        token = base if seen[base] == 1 else f"[{s.alias}.{s.column}]"
        out.append(Slot(s.param, s.table, s.column, s.alias, token))
    return tuple(out)


TEXT_TOKEN = re.compile(r"\[([^\[\]\.]+)\.([^\[\]]+)\]")


def tokens_in(text: str) -> set[str]:
    """The paper placeholders a text template carries."""
    return {m.group(0) for m in TEXT_TOKEN.finditer(text)}
